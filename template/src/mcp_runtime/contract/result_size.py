"""Tools whose answer may stream a result larger than a stream carries: named at startup.

A call that reports progress to a client that asked for it is answered as a server-sent
event stream, and the result is one event of it, which the Python clients (the MCP
SDK's, fastmcp's) read only up to 1 MiB; fastmcp's ``Client`` asks for progress on every
call. A result over ``MCP_MAX_STREAMED_RESULT_BYTES`` is then answered
``result_too_large``, after the work is done. :func:`streamed_size_warnings` names each
tool that can end so, before any call: one that calls ``report_progress`` in its own
code, may be called without a task (it is not ``task="required"``: a task's result is
read as one JSON body), and whose result's data keys (``message`` aside: it is a
sentence) are not bounded by its ``outputSchema`` within a third of the limit (the
result travels twice, as ``structuredContent`` and as its JSON in the text, where
escaping can double it).

A schema bounds the JSON it accepts when every string has a ``maxLength`` (or is an
enum, a constant, a date or a UUID), every array a ``maxItems``, and every object only
its declared properties (as the runtime sends a result: undeclared keys are dropped);
numbers, booleans and null are bounded. ``Field(max_length=...)`` sets both.
"""

import ast
import inspect
import json
import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

__all__ = ["json_size_bound", "oversized_data", "reports_progress", "streamed_size_warnings"]

# Bytes of JSON for what a schema bounds by its kind alone.
NUMBER_BYTES = 32
BOUNDED_FORMATS = {"date-time": 40, "date": 12, "time": 28, "uuid": 38, "duration": 64}
# Between two items or members, and between a key and its value: ", " and ": ".
SEPARATOR = 2
# A string's JSON: its quotes, and at most 6 bytes a character (a \u escape).
QUOTES, BYTES_PER_CHARACTER = 2, 6
# The answer around the result's two copies: its content item, the JSON-RPC envelope.
ENVELOPE_BYTES = 1024


def json_size_bound(
    schema: Mapping[str, Any],
    defs: Mapping[str, Any] | None = None,
    within: frozenset[str] = frozenset(),
) -> int | None:
    """The most bytes of JSON a value that ``schema`` accepts takes, or None when it sets
    no bound; ``$ref`` is resolved in ``defs`` (the schema's own ``$defs`` when None), and
    one met again ``within`` itself (a recursive type) bounds nothing."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        target = defs.get(name)
        if target is None or name in within:
            return None
        return json_size_bound(target, defs, within | {name})
    if "const" in schema:
        return len(json.dumps(schema["const"]).encode())
    if "enum" in schema:
        return max((len(json.dumps(value).encode()) for value in schema["enum"]), default=4)
    arms = schema.get("anyOf") or schema.get("oneOf")
    if arms:
        return _largest(json_size_bound(arm, defs, within) for arm in arms)
    kinds = schema.get("type")
    if kinds is None:
        return None  # any value
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return _largest(_bound_of_kind(kind, schema, defs, within) for kind in kinds)


def _bound_of_kind(
    kind: str, schema: Mapping[str, Any], defs: Mapping[str, Any], within: frozenset[str]
) -> int | None:
    if kind in ("integer", "number"):
        return NUMBER_BYTES
    if kind in ("boolean", "null"):
        return 5
    if kind == "string":
        if "maxLength" in schema:
            return QUOTES + BYTES_PER_CHARACTER * int(schema["maxLength"])
        return BOUNDED_FORMATS.get(str(schema.get("format")))
    if kind == "array":
        return _array_bound(schema, defs, within)
    if kind == "object":
        extra = schema.get("additionalProperties")
        if extra not in (None, False) or "patternProperties" in schema:
            return None  # keys of any name
        return _properties_bound(schema.get("properties", {}), defs, within)
    return None


def _array_bound(
    schema: Mapping[str, Any], defs: Mapping[str, Any], within: frozenset[str]
) -> int | None:
    """An array's: its tuple's items (``prefixItems``), then at most ``maxItems`` in all,
    each as ``items`` bounds it (``items: false``: none more)."""
    prefix = schema.get("prefixItems", [])
    if not isinstance(prefix, list):
        return None
    bounds = [
        json_size_bound(item, defs, within) if isinstance(item, Mapping) else None
        for item in prefix
    ]
    if None in bounds:
        return None
    total = 2 + sum(bound + SEPARATOR for bound in bounds if bound is not None)
    items = schema.get("items", {})
    more = None if "maxItems" not in schema else max(0, int(schema["maxItems"]) - len(prefix))
    if items is False or more == 0:
        return total
    item = json_size_bound(items, defs, within) if isinstance(items, Mapping) else None
    return None if more is None or item is None else total + more * (item + SEPARATOR)


def _properties_bound(
    properties: Mapping[str, Any], defs: Mapping[str, Any], within: frozenset[str] = frozenset()
) -> int | None:
    total = 2
    for key, value in properties.items():
        bound = json_size_bound(value, defs, within)
        if bound is None:
            return None
        total += len(json.dumps(key).encode()) + 2 * SEPARATOR + bound
    return total


def _largest(bounds: Iterable[int | None]) -> int | None:
    found = list(bounds)
    return None if not found or None in found else max(b for b in found if b is not None)


def oversized_data(output_schema: Mapping[str, Any], limit: int) -> str | None:
    """Why the data keys of ``output_schema``'s result arm may take more than a third of
    ``limit`` bytes (the result travels twice, and escaping may double its text), in a
    reader's words; None when they cannot."""
    defs = output_schema.get("$defs", {})
    arms = output_schema.get("oneOf") or output_schema.get("anyOf") or [output_schema]
    result: Mapping[str, Any] = next((a for a in arms if a.get("title") != "ToolError"), {})
    if "$ref" in result:
        result = defs.get(str(result["$ref"]).rsplit("/", 1)[-1], {})
    data = {key: value for key, value in result.get("properties", {}).items() if key != "message"}
    bounds = {key: json_size_bound(value, defs) for key, value in data.items()}
    unbounded = sorted(key for key, bound in bounds.items() if bound is None)
    if unbounded:
        named = ", ".join(f"`{key}`" for key in unbounded)
        return f"its data keys {named} set no bound on their size"
    total = _properties_bound(data, defs) or 0
    if 3 * total + ENVELOPE_BYTES <= limit:
        return None
    large = sorted((key for key, bound in bounds.items() if (bound or 0) > NUMBER_BYTES), key=str)
    named = ", ".join(f"`{key}`" for key in large)
    return f"its data keys ({named}) may take {total} bytes of JSON, which an answer carries twice"


def reports_progress(tool: BaseTool) -> bool:
    """Whether ``tool``'s own code calls ``report_progress`` (False when its source cannot
    be read)."""
    if isinstance(tool, StructuredTool):
        functions = [tool.coroutine or tool.func]
    else:
        functions = [getattr(type(tool), "_arun", None), getattr(type(tool), "_run", None)]
    for function in functions:
        try:
            source = textwrap.dedent(inspect.getsource(function))  # type: ignore[arg-type]
            tree = ast.parse(source)
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = node.func
                name = called.attr if isinstance(called, ast.Attribute) else None
                name = called.id if isinstance(called, ast.Name) else name
                if name == "report_progress":
                    return True
    return False


def streamed_size_warnings(tools: Iterable[Any], limit: int) -> list[str]:
    """A warning for each of ``tools`` (served tools: ``name``, ``output_schema``, ``task``
    and ``caller.tool``) whose streamed answer may carry more than ``limit`` bytes."""
    warnings = []
    for served in tools:
        if served.task == "required" or not served.output_schema:
            continue
        try:
            why = oversized_data(served.output_schema, limit)
            if why is None or not reports_progress(served.caller.tool):
                continue
        except Exception:  # advice only: a schema it cannot read never stops a start
            continue
        warnings.append(
            f"tool {served.name} reports progress, and its result may be larger than a "
            f"streamed answer carries (MCP_MAX_STREAMED_RESULT_BYTES, {limit} bytes: {why}): "
            "a call whose client asks "
            "for progress (fastmcp's Client asks on every call) is answered as a stream, "
            "whose one event the Python clients read only up to 1 MiB, so a larger result "
            "is answered result_too_large after the work is done. Make it a task tool "
            '(task="required": a task\'s result is read as one JSON body), bound its data '
            "keys (Field(max_length=...)) or answer in pages, or stop reporting progress "
            '(docs/long-calls.md, "Progress and large results")'
        )
    return warnings
