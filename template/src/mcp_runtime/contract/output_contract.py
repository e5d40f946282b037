"""The output contract: what a tool's return annotation promises, and how each answer is built.

A tool annotated ``-> XResult | ToolError`` (or ``-> XResult``) advertises an
``outputSchema`` derived from the annotation: object-rooted, never wrapped in
``{"result": ...}``, ``NotRequired`` keys absent from ``required``, every
non-recursive ``$ref`` inlined. Each value the tool returns is validated strictly
against the annotation before it is sent; undeclared keys are dropped, and a value
that breaks the annotation answers ``isError`` without it.
"""

import dataclasses
import json
import logging
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python
from typing_extensions import TypeAliasType

from mcp_runtime.contract.tool_result import ToolError

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "OutputContract",
    "SchemaUnavailableError",
    "deeper_than",
    "describe_validation_error",
    "error_result",
    "inline_refs",
    "property_names",
    "schema_depth",
    "time_types_without_offset",
    "unserializable",
]

logger = logging.getLogger(__name__)

# JSON has no NaN or infinity: refuse them rather than send a null the schema forbids.
PAYLOAD_CONFIG = ConfigDict(allow_inf_nan=False, ser_json_inf_nan="constants")
DEFAULT_MAX_DEPTH = 64
# A result's text block: json.dumps(payload, ensure_ascii=False, allow_nan=False).
RESULT_TEXT = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


class SchemaUnavailableError(Exception):
    """The result type has a key whose type has no JSON schema."""


def payload_adapter(result_type: type) -> TypeAdapter[Any]:
    """A validator and serializer of ``result_type`` values, refusing NaN and infinity.

    The type alias only carries the configuration: a TypedDict takes none directly,
    and the alias leaves no trace in the schema or in error locations.
    """
    alias = TypeAliasType(f"{result_type.__name__}Payload", result_type)  # type: ignore[misc]
    return TypeAdapter(alias, config=PAYLOAD_CONFIG)  # type: ignore[arg-type]


@dataclass(frozen=True)
class OutputContract:
    """What a tool's return annotation promises, and how each result is checked."""

    tool: str
    annotation: str
    allows_tool_error: bool
    result: TypeAdapter[Any]
    schema: dict[str, Any]
    key_names: frozenset[str]
    depth: int | None

    @classmethod
    def derive(
        cls, tool: str, result_type: type, *, allows_tool_error: bool, annotation: str
    ) -> "OutputContract":
        """The contract of ``-> result_type`` (``| ToolError`` when allowed).

        Raises :class:`SchemaUnavailableError` when a key's type has no JSON schema.
        """
        try:
            adapter = payload_adapter(result_type)
            schema = inline_refs(adapter.json_schema())
        except Exception as exc:
            raise SchemaUnavailableError(str(exc).splitlines()[0]) from exc
        if allows_tool_error:
            definitions = schema.pop("$defs", None)
            schema = {"type": "object", "oneOf": [schema, ERROR_SCHEMA]}
            if definitions is not None:
                schema["$defs"] = definitions
        return cls(
            tool=tool,
            annotation=annotation,
            allows_tool_error=allows_tool_error,
            result=adapter,
            schema=schema,
            key_names=frozenset(property_names(schema)),
            depth=schema_depth(schema),
        )

    def to_call_result(
        self, value: object, *, max_depth: int = DEFAULT_MAX_DEPTH
    ) -> CallToolResult:
        """Validate ``value`` and answer with it, or answer ``isError`` without it.

        What is sent is JSON every client can read: valid Unicode, no NaN, and no
        deeper than ``max_depth`` levels of objects and arrays.
        """
        is_tool_error = self.allows_tool_error and isinstance(value, dict) and "error" in value
        adapter = ERROR_ADAPTER if is_tool_error else self.result
        try:
            validated = adapter.validate_python(value, strict=True)
        except ValidationError as exc:
            return self._violation(describe_validation_error(exc, self.key_names))
        try:
            payload = adapter.dump_python(validated, mode="json")
        except (PydanticSerializationError, ValueError, TypeError, RecursionError) as exc:
            return self._violation(self._unserializable(validated, exc))
        if (self.depth is None or self.depth > max_depth) and deeper_than(payload, max_depth):
            return self._violation(
                f"the result is nested deeper than {max_depth} levels of objects and arrays"
            )
        try:
            text = RESULT_TEXT.encode(payload)
            text.encode("utf-8")
        except (ValueError, TypeError, RecursionError) as exc:  # UnicodeEncodeError included
            return self._violation(self._unserializable(payload, exc))
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structuredContent=payload,
            isError=is_tool_error,
        )

    def _unserializable(self, value: object, exc: BaseException) -> str:
        """Where in ``value`` a value has no JSON form, and what it is, never the value."""
        found = unserializable(value, self.key_names)
        if found is None:
            return f"a value cannot be serialized as JSON ({type(exc).__name__})"
        path, problem = found
        return f"{path or '(the result)'}: {problem}"

    def _violation(self, problems: str) -> CallToolResult:
        message = (
            f"Tool '{self.tool}' returned a result that breaks its annotation "
            f"`{self.annotation}`: {problems}"
        )
        logger.error("%s", message)
        return error_result(message)


def error_result(message: str) -> CallToolResult:
    """An ``isError`` answer with ``message`` as its only content."""
    return CallToolResult(content=[TextContent(type="text", text=message)], isError=True)


def describe_validation_error(exc: ValidationError, key_names: frozenset[str]) -> str:
    """Key paths and expected types from a pydantic error, never the offending values.

    A path names declared keys only (``key_names``); any other step (a dict's key,
    which is data, a list index, a union arm) shows as ``*``.
    """
    problems = []
    for error in exc.errors(include_input=False, include_url=False):
        path = ".".join(part if part in key_names else "*" for part in map(str, error["loc"]))
        problems.append(f"{path or '(the result)'}: {error['msg']}")
    return "; ".join(problems)


def unserializable(value: object, key_names: frozenset[str]) -> tuple[str, str] | None:
    """The key path to the first value in ``value`` that has no JSON form, and what it is.

    The path names declared keys only (``key_names``); other keys and list indices
    show as ``*``. None when every value has a JSON form.
    """
    pending: list[tuple[object, tuple[str, ...], frozenset[int]]] = [(value, (), frozenset())]
    while pending:
        item, path, outer = pending.pop()
        children = _children(item, key_names)
        if children is not None:
            if id(item) in outer:
                return ".".join(path), "a value that contains itself"
            inner = outer | {id(item)}
            pending.extend((child, (*path, step), inner) for step, child in reversed(children))
            continue
        problem = _leaf_problem(item)
        if problem is not None:
            return ".".join(path), problem
    return None


def _children(item: object, key_names: frozenset[str]) -> list[tuple[str, object]] | None:
    """The named parts of a container (a dict, list, model or dataclass); None for a leaf."""
    if isinstance(item, dict):
        return [(key if key in key_names else "*", child) for key, child in item.items()]
    if isinstance(item, list | tuple | set | frozenset):
        return [("*", child) for child in item]
    if isinstance(item, BaseModel):
        return [
            (name if name in key_names else "*", getattr(item, name, None))
            for name in type(item).model_fields
        ]
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return [
            (part.name if part.name in key_names else "*", getattr(item, part.name, None))
            for part in dataclasses.fields(item)
        ]
    return None


def _leaf_problem(item: object) -> str | None:
    """Why a single value has no JSON form; None when it has one."""
    if isinstance(item, float):
        return None if math.isfinite(item) else "NaN or infinity, which JSON cannot carry"
    if isinstance(item, bytes | bytearray):
        try:
            bytes(item).decode("utf-8")
        except UnicodeDecodeError:
            return "bytes that are not UTF-8 text"
        return None
    if isinstance(item, str):
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            return "a string is not valid Unicode (it holds a lone surrogate, such as '\\ud800')"
        return None
    if item is None or isinstance(item, bool | int):
        return None
    try:
        to_jsonable_python(item)
    except (PydanticSerializationError, ValueError, TypeError, RecursionError):
        return f"a value of type {type(item).__name__}, which has no JSON form"
    return None


def time_types_without_offset(adapter: TypeAdapter[Any]) -> set[str]:
    """The time types in ``adapter``'s type that accept values without a UTC offset."""
    return {
        f"`{node['type']}`"
        for node in _mappings(adapter.core_schema)
        if node.get("type") in ("datetime", "time") and node.get("tz_constraint") in (None, "naive")
    }


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every non-recursive ``$ref`` replaced by its definition.

    Clients validate ``structuredContent`` with many different validators; a
    self-contained schema is the one they all read alike. Recursive types keep
    their ``$ref`` and the ``$defs`` it needs.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})
    kept: set[str] = set()

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/$defs/"):
            name = reference.removeprefix("#/$defs/")
            if name in seen:
                kept.add(name)
                return node
            siblings = {k: resolve(v, seen) for k, v in node.items() if k not in {"$ref", "$defs"}}
            return {**resolve(definitions[name], (*seen, name)), **siblings}
        return {k: resolve(v, seen) for k, v in node.items() if k != "$defs"}

    inlined: dict[str, Any] = resolve(schema, ())
    if kept:
        inlined["$defs"] = {name: resolve(definitions[name], (name,)) for name in sorted(kept)}
    return inlined


def schema_depth(schema: object) -> int | None:
    """The deepest nesting of objects and arrays a value of ``schema`` can have; None if any.

    Recursive schemas (``$ref``) and free-form values (``Any``, a bare ``dict``) have
    no bound; their results are measured one by one.
    """
    if not isinstance(schema, dict) or "$ref" in schema:
        return None
    arms = [arm for key in ("anyOf", "oneOf", "allOf") for arm in schema.get(key, [])]
    kind = schema.get("type")
    if arms:  # a value is one of the arms
        children, own = arms, 0
    elif kind == "object":
        properties, extra = schema.get("properties"), schema.get("additionalProperties")
        if not isinstance(properties, dict) and not isinstance(extra, dict):
            return None
        children = [*(properties or {}).values(), *([extra] if isinstance(extra, dict) else [])]
        own = 1
    elif kind == "array":
        children, own = [schema.get("items"), *schema.get("prefixItems", [])], 1
    elif kind is None and not {"enum", "const"} & schema.keys():
        return None  # accepts any value
    else:
        children, own = [], 0
    depth = 0
    for child in children:
        if child is None:
            continue
        child_depth = schema_depth(child)
        if child_depth is None:
            return None
        depth = max(depth, child_depth)
    return own + depth


def deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels deep."""
    if isinstance(value, dict):
        children: Iterable[object] = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return False
    if limit < 1:
        return True
    for child in children:
        if isinstance(child, dict | list) and deeper_than(child, limit - 1):
            return True
    return False


def property_names(schema: object) -> set[str]:
    """Every key an object in ``schema`` declares, at any depth."""
    names: set[str] = set()
    for node in _mappings(schema):
        properties = node.get("properties")
        if isinstance(properties, dict):
            names.update(properties)
    return names


def _mappings(tree: object) -> Iterator[dict[Any, Any]]:
    """Every dict in a tree of dicts, lists and tuples (a JSON or a core schema)."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            yield node
            pending.extend(node.values())
        elif isinstance(node, list | tuple):
            pending.extend(node)


# The ToolError arm, built once for every tool that declares it.
ERROR_ADAPTER = payload_adapter(ToolError)
ERROR_SCHEMA = inline_refs(ERROR_ADAPTER.json_schema())
