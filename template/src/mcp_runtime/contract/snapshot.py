"""The published contract, and what a change to it does to the clients that call it.

The contract is every tool's name, title, description, ``inputSchema``,
``outputSchema``, ``annotations``, ``execution`` (whether it runs as a task) and
``_meta``, as ``tools/list`` advertises them, and the OAuth ``scopes`` a call needs,
kept in ``contract/tools.json`` (sorted, so that a diff reads well). :func:`compare`
classifies each difference between the committed snapshot and the live service:

- breaking: a tool removed (or renamed); an argument removed, added as required,
  made required, or its type or its bounds (``maxLength``, ``pattern``, ...) narrowed
  or changed; a result key removed, its type changed, or its bounds widened or
  changed; the ToolError arm removed; a tool turned destructive (``readOnlyHint`` true
  to false, or ``destructiveHint`` false to true), not idempotent (``idempotentHint``
  true to false) or open-world (``openWorldHint`` false to true); a scope newly
  required; a task tool made a plain one, or a tool that may run as a task made one
  that must (``execution.taskSupport``: optional to required, or no longer optional or
  required);
- compatible: a new tool; a new optional argument; a widened argument type, or its
  bounds widened; a new result key (``NotRequired``), or a result key's bounds
  narrowed; a ToolError arm added; a description, title or ``_meta`` changed; an
  argument's or result key's description, title or examples, or an argument's
  default, changed; the reverse of each breaking hint change; a scope dropped; a plain
  tool that may now run as a task, or a task tool no longer required to; and any other
  difference of a schema, named as such (the contract matches its snapshot only when
  every field does).

A snapshot recorded before tools had metadata has no title, annotations, ``_meta``
or scopes: it is read as what clients saw then (no title, no ``_meta``, no scope,
and the MCP default of each hint), so every difference there is compatible until
``contract --write`` records the metadata.
"""

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_runtime.contract.served_tool import ContractTool
from mcp_runtime.sdk import MCPServer, served_tools

__all__ = [
    "SNAPSHOT",
    "Difference",
    "compare",
    "contract_of",
    "live_contract",
    "read_snapshot",
    "record",
    "render",
    "report",
]

SNAPSHOT = Path("contract") / "tools.json"
# What only describes a schema to a reader: reported as wording, never as a type change.
IGNORED = {"description", "title", "examples", "default"}
# What bounds the values of a type without changing it: compared on their own.
BOUNDS = {
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "multipleOf",
    "pattern",
    "format",
    "uniqueItems",
}
# Lists whose order is part of what they say (a tuple's items); every other list is a set.
ORDERED_LISTS = {"prefixItems"}
# Top-level fields of an entry that the rules compare by themselves.
ENTRY_METADATA = {"title", "description", "annotations", "scopes", "execution", "_meta"}
# What a client assumes of a hint a tool does not serve (the MCP specification's defaults).
HINT_DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}
# Each hint's change that breaks a client relying on it: (from, to, what it means).
HINT_BREAKS = {
    "readOnlyHint": (True, False, "no longer read-only: it may change its environment"),
    "destructiveHint": (False, True, "now destructive: it may delete or overwrite data"),
    "idempotentHint": (True, False, "no longer idempotent: a repeated call may do more"),
    "openWorldHint": (False, True, "now open-world: it may reach external systems"),
}
HINT_EASES = {
    "readOnlyHint": "now read-only",
    "destructiveHint": "no longer destructive",
    "idempotentHint": "now idempotent",
    "openWorldHint": "no longer open-world",
}


@dataclass(frozen=True)
class Difference:
    """One difference between the snapshot and the live contract, in a reviewer's words."""

    tool: str
    path: str
    change: str
    before: str
    after: str
    breaking: bool

    def __str__(self) -> str:
        where = f"{self.tool}: {self.path}" if self.path else self.tool
        return f"{where}: {self.change} (before: {self.before}; after: {self.after})"


def breaking(tool: str, path: str, change: str, before: str, after: str) -> Difference:
    """A difference that breaks the tool's clients."""
    return Difference(tool, path, change, before, after, breaking=True)


def compatible(tool: str, path: str, change: str, before: str, after: str) -> Difference:
    """A difference the tool's clients keep working through."""
    return Difference(tool, path, change, before, after, breaking=False)


def contract_of(
    tools: Iterable[Any], scopes: Mapping[str, Sequence[str]] | None = None
) -> dict[str, Any]:
    """The contract of ``tools`` (``tools/list`` entries) and the ``scopes`` each tool
    requires (by name), sorted by tool name."""
    entries = []
    for tool in tools:
        entry = {
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "inputSchema": tool.input_schema,
            "outputSchema": tool.output_schema,
            "annotations": tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if tool.annotations
            else {},
            "scopes": sorted((scopes or {}).get(tool.name, ())),
        }
        execution = getattr(tool, "execution", None)
        if execution is not None and execution.task_support is not None:
            entry["execution"] = {"taskSupport": execution.task_support}
        if tool.meta:
            entry["_meta"] = tool.meta
        entries.append(entry)
    return {"tools": sorted(entries, key=lambda entry: str(entry["name"]))}


def live_contract(server: MCPServer) -> dict[str, Any]:
    """The contract ``server`` serves: its ``tools/list`` but the runtime's own tools (whose
    contract is the runtime's), with each tool's scopes."""
    own = [tool for tool in served_tools(server) if getattr(tool, "runtime_owned", False)]
    runtime = {tool.name for tool in own}
    listed = [tool for tool in asyncio.run(server.list_tools()) if tool.name not in runtime]
    scopes = {
        tool.name: tool.scopes for tool in served_tools(server) if isinstance(tool, ContractTool)
    }
    return contract_of(listed, scopes)


def record(recorded: dict[str, Any], live: dict[str, Any], tools: Iterable[str]) -> dict[str, Any]:
    """``recorded`` with the live contract of ``tools``; every other tool stays as recorded."""
    wanted = set(tools)
    entries = {entry["name"]: entry for entry in recorded.get("tools", [])}
    entries |= {entry["name"]: entry for entry in live["tools"] if entry["name"] in wanted}
    return {"tools": sorted(entries.values(), key=lambda entry: str(entry["name"]))}


def render(contract: dict[str, Any]) -> str:
    """The snapshot's text: stable key order, two-space indent, a final newline."""
    return json.dumps(contract, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_snapshot(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[Difference]:
    """Every difference from ``before`` (the snapshot) to ``after`` (the live contract)."""
    old = {entry["name"]: entry for entry in before.get("tools", [])}
    new = {entry["name"]: entry for entry in after.get("tools", [])}
    found: list[Difference] = []
    for name in sorted(old.keys() - new.keys()):
        found.append(breaking(name, "", "tool removed (or renamed)", "served", "absent"))
    for name in sorted(new.keys() - old.keys()):
        found.append(compatible(name, "", "new tool", "absent", "served"))
    for name in sorted(old.keys() & new.keys()):
        was, now = old[name], new[name]
        of_tool = []
        if was.get("description") != now.get("description"):
            was_text, now_text = _brief(was.get("description")), _brief(now.get("description"))
            of_tool.append(
                compatible(name, "description", "description changed", was_text, now_text)
            )
        of_tool += _arguments(name, was.get("inputSchema") or {}, now.get("inputSchema") or {})
        of_tool += _results(name, was.get("outputSchema") or {}, now.get("outputSchema") or {})
        structural = [d for d in of_tool if d.change not in WORDING_CHANGES]
        of_tool += _metadata(name, was, now)
        of_tool += _wording(name, was, now)
        if not structural and _residue(was) != _residue(now):
            of_tool.append(compatible(name, "", OTHER_DETAILS, "as recorded", "as served"))
        found += of_tool
    return found


# What a difference is called that no rule above classifies.
OTHER_DETAILS = (
    "another detail of its schemas changed (such as a pattern, a format, a bound or a "
    "definition): check that its clients still fit it"
)
# The parts of an argument's or a result key's schema that only describe it to a reader.
WORDING = ("description", "title", "examples")


def _wording(tool: str, was: dict[str, Any], now: dict[str, Any]) -> list[Difference]:
    """Changed descriptions, titles and examples of arguments, of the result and of its
    keys, and changed defaults of arguments: compatible, as the clients' calls and the
    results they read keep their shape."""
    old_input, new_input = was.get("inputSchema") or {}, now.get("inputSchema") or {}
    old_args, new_args = old_input.get("properties", {}), new_input.get("properties", {})
    old_result, _ = _arms(was.get("outputSchema") or {})
    new_result, _ = _arms(now.get("outputSchema") or {})
    old_keys, new_keys = old_result.get("properties", {}), new_result.get("properties", {})
    found = _facets(tool, "result", "result", old_result, new_result, WORDING)
    for name in sorted(old_args.keys() & new_args.keys()):
        facets = (*WORDING, "default")
        found += _facets(
            tool, f"argument {name}", "argument", old_args[name], new_args[name], facets
        )
    for key in sorted(old_keys.keys() & new_keys.keys()):
        found += _facets(
            tool, f"result key {key}", "result key", old_keys[key], new_keys[key], WORDING
        )
    return found


def _facets(
    tool: str,
    path: str,
    what: str,
    was: dict[str, Any],
    now: dict[str, Any],
    facets: Sequence[str],
) -> list[Difference]:
    """A compatible difference for each of ``facets`` that differs between two schemas."""
    return [
        compatible(
            tool,
            path,
            f"{what} {facet} changed",
            _shown_value(was.get(facet)),
            _shown_value(now.get(facet)),
        )
        for facet in facets
        if was.get(facet) != now.get(facet)
    ]


def _shown_value(value: object) -> str:
    """A facet's value in a reviewer's words: absent, a text clipped, or its JSON."""
    if value is None:
        return "absent"
    if isinstance(value, str):
        return _brief(value)
    return _clip(json.dumps(value, sort_keys=True, ensure_ascii=False))


def _residue(entry: dict[str, Any]) -> str:
    """What of a contract entry no rule compares, as JSON: its schemas without their wording
    and bounds, and without the fields the rules compare by themselves (a field empty, or
    absent from an older snapshot, is the same)."""
    kept = {
        key: value
        for key, value in entry.items()
        if key not in ENTRY_METADATA and value not in (None, {}, [])
    }
    return json.dumps(_canonical(kept, dropped=IGNORED | BOUNDS), sort_keys=True)


# The tool's own wording, compared before the rules of its schemas: no change of shape.
WORDING_CHANGES = {"description changed"}


# What a change of ``execution.taskSupport`` does to a client: (before, after) -> meaning,
# breaking. A tool without the field is never a task ("forbidden").
TASK_CHANGES = {
    ("forbidden", "optional"): ("may now run as a task", False),
    ("forbidden", "required"): (
        "now runs only as a task: a client that does not call it as one is refused",
        True,
    ),
    ("optional", "required"): (
        "now runs only as a task: a client that does not call it as one is refused",
        True,
    ),
    ("optional", "forbidden"): (
        "no longer runs as a task: a client that calls it as one is refused",
        True,
    ),
    ("required", "forbidden"): (
        "no longer runs as a task: a client that calls it as one is refused",
        True,
    ),
    ("required", "optional"): ("may now also be called without a task", False),
}


def _task_support(tool: str, was: dict[str, Any], now: dict[str, Any]) -> list[Difference]:
    """The difference of ``execution.taskSupport``, if any."""
    before = (was.get("execution") or {}).get("taskSupport") or "forbidden"
    after = (now.get("execution") or {}).get("taskSupport") or "forbidden"
    if before == after:
        return []
    change, breaks = TASK_CHANGES.get((before, after), ("task support changed", True))
    return [Difference(tool, "execution taskSupport", change, before, after, breaking=breaks)]


def _metadata(tool: str, was: dict[str, Any], now: dict[str, Any]) -> list[Difference]:
    """Differences of title, hints, scopes and ``_meta``. An entry recorded before tools
    had metadata is read as what clients saw then: no title, the MCP default of each
    hint, no scope, no ``_meta``."""
    unrecorded = "annotations" not in was
    found = []
    if was.get("title") != now.get("title"):
        before = "not recorded" if unrecorded else _brief(was.get("title") or "")
        found.append(compatible(tool, "title", "title changed", before, _brief(now.get("title"))))
    old_hints, new_hints = was.get("annotations") or {}, now.get("annotations") or {}
    for hint, default in HINT_DEFAULTS.items():
        before, after = old_hints.get(hint, default), new_hints.get(hint, default)
        if before == after:
            continue
        breaking_from, breaking_to, meaning = HINT_BREAKS[hint]
        breaks = (before, after) == (breaking_from, breaking_to)
        shown = json.dumps(before)
        found.append(
            Difference(
                tool,
                f"annotation {hint}",
                meaning if breaks else HINT_EASES[hint],
                f"not recorded, read as {shown}" if unrecorded else shown,
                json.dumps(after),
                breaking=breaks,
            )
        )
    old_scopes, new_scopes = set(was.get("scopes") or ()), set(now.get("scopes") or ())
    for scope in sorted(new_scopes - old_scopes):
        change = "scope now required: a caller's token without it is refused"
        found.append(breaking(tool, f"scope {scope}", change, "not required", "required"))
    for scope in sorted(old_scopes - new_scopes):
        change = "scope no longer required"
        found.append(compatible(tool, f"scope {scope}", change, "required", "not required"))
    found += _task_support(tool, was, now)
    old_meta, new_meta = was.get("_meta") or {}, now.get("_meta") or {}
    if old_meta != new_meta:
        found.append(
            compatible(
                tool,
                "_meta",
                "_meta changed",
                _clip(json.dumps(old_meta, sort_keys=True, ensure_ascii=False)),
                _clip(json.dumps(new_meta, sort_keys=True, ensure_ascii=False)),
            )
        )
    return found


def _arguments(tool: str, was: dict[str, Any], now: dict[str, Any]) -> list[Difference]:
    found = []
    old, new = was.get("properties", {}), now.get("properties", {})
    old_required, new_required = set(was.get("required", [])), set(now.get("required", []))
    for name in sorted(old.keys() - new.keys()):
        found.append(
            breaking(tool, f"argument {name}", "argument removed", _shown(old[name]), "absent")
        )
    for name in sorted(new.keys() - old.keys()):
        required = name in new_required
        change = "argument added as required" if required else "optional argument added"
        found.append(
            Difference(
                tool, f"argument {name}", change, "absent", _shown(new[name]), breaking=required
            )
        )
    for name in sorted(old.keys() & new.keys()):
        path = f"argument {name}"
        if name in new_required and name not in old_required:
            found.append(breaking(tool, path, "argument made required", "optional", "required"))
        elif name in old_required and name not in new_required:
            found.append(compatible(tool, path, "argument made optional", "required", "optional"))
        before, after = _accepted(old[name]), _accepted(new[name])
        if before == after:
            found += _argument_bounds(tool, path, old[name], new[name])
            continue
        if before < after:
            found.append(
                compatible(tool, path, "type widened", _shown(old[name]), _shown(new[name]))
            )
        elif after < before:
            found.append(
                breaking(tool, path, "type narrowed", _shown(old[name]), _shown(new[name]))
            )
        else:
            found.append(breaking(tool, path, "type changed", _shown(old[name]), _shown(new[name])))
    return found


def _results(tool: str, was: dict[str, Any], now: dict[str, Any]) -> list[Difference]:
    found = []
    old_result, old_error = _arms(was)
    new_result, new_error = _arms(now)
    if old_error and not new_error:
        found.append(
            breaking(tool, "result", "ToolError arm removed", "XResult | ToolError", "XResult")
        )
    if new_error and not old_error:
        found.append(
            compatible(tool, "result", "ToolError arm added", "XResult", "XResult | ToolError")
        )
    old_keys, new_keys = old_result.get("properties", {}), new_result.get("properties", {})
    for key in sorted(old_keys.keys() - new_keys.keys()):
        found.append(
            breaking(
                tool, f"result key {key}", "result key removed", _shown(old_keys[key]), "absent"
            )
        )
    for key in sorted(new_keys.keys() - old_keys.keys()):
        found.append(
            compatible(
                tool, f"result key {key}", "result key added", "absent", _shown(new_keys[key])
            )
        )
    for key in sorted(old_keys.keys() & new_keys.keys()):
        if _canonical(old_keys[key]) != _canonical(new_keys[key]):
            found.append(
                breaking(
                    tool,
                    f"result key {key}",
                    "result key type changed",
                    _shown(old_keys[key]),
                    _shown(new_keys[key]),
                )
            )
            continue
        before, after = _bounds(old_keys[key]), _bounds(new_keys[key])
        if before != after:
            tighter = _bounds_moved(before, after) == "tighter"
            change = (
                "result key bounds narrowed: its values stay within what clients got"
                if tighter
                else "result key bounds widened or changed: a client that relies on them may break"
            )
            found.append(
                Difference(
                    tool,
                    f"result key {key}",
                    change,
                    _shown_bounds(before),
                    _shown_bounds(after),
                    breaking=not tighter,
                )
            )
    return found


def _argument_bounds(
    tool: str, path: str, was: dict[str, Any], now: dict[str, Any]
) -> list[Difference]:
    """The difference of an argument's bounds, if any: looser admits every call it did."""
    before, after = _bounds(was), _bounds(now)
    if before == after:
        return []
    looser = _bounds_moved(before, after) == "looser"
    change = (
        "argument bounds widened"
        if looser
        else "argument bounds narrowed or changed: a call within the old bounds may be refused"
    )
    shown = _shown_bounds(before), _shown_bounds(after)
    return [Difference(tool, path, change, *shown, breaking=not looser)]


def _arms(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The result arm of an output schema, and whether it has a ToolError arm."""
    arms = schema.get("oneOf") or schema.get("anyOf")
    if not arms:
        return schema, False
    result: dict[str, Any] = next((arm for arm in arms if arm.get("title") != "ToolError"), {})
    return result, any(arm.get("title") == "ToolError" for arm in arms)


def _canonical(schema: Any, dropped: frozenset[str] | set[str] = IGNORED | BOUNDS) -> Any:
    """``schema``'s shape: without the keys ``dropped`` (its wording and bounds), with
    ``required``, unions and every other list but a tuple's items sorted."""
    if isinstance(schema, list):
        items = [_canonical(item, dropped) for item in schema]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if not isinstance(schema, dict):
        return schema
    return {
        key: [_canonical(item, dropped) for item in value]
        if key in ORDERED_LISTS and isinstance(value, list)
        else _canonical(value, dropped)
        for key, value in schema.items()
        if key not in dropped
    }


def _bounds(schema: Any, path: str = "") -> dict[str, Any]:
    """Each bound of ``schema``, by where it is (``maxItems``, ``items.maxLength``, ...)."""
    found: dict[str, Any] = {}
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            found |= _bounds(item, f"{path}{index}.")
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if key in BOUNDS:
                found[f"{path}{key}"] = value
            elif key not in IGNORED:
                found |= _bounds(value, f"{path}{key}.")
    return found


def _bounds_moved(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Whether bounds went ``looser`` (every change admits more values), ``tighter`` (every
    change admits fewer), or ``changed`` (a pattern or format changed, or both ways)."""
    ways = set()
    for path in before.keys() | after.keys():
        was, now = before.get(path), after.get(path)
        if was == now:
            continue
        keyword = path.rsplit(".", 1)[-1]
        numeric = isinstance(was, int | float) and isinstance(now, int | float)
        if keyword.startswith(("max", "exclusiveMax")) and (now is None or numeric):
            ways.add("looser" if now is None or now > was else "tighter")
        elif keyword.startswith(("min", "exclusiveMin")) and (now is None or numeric):
            ways.add("looser" if now is None or now < was else "tighter")
        elif now is None:
            ways.add("looser")  # a pattern, format or multiple dropped
        elif was is None:
            ways.add("tighter")
        else:
            ways.add("changed")
    return ways.pop() if len(ways) == 1 else "changed"


def _shown_bounds(bounds: dict[str, Any]) -> str:
    """Bounds in a reviewer's words."""
    if not bounds:
        return "no bound"
    return _clip(", ".join(f"{path} {json.dumps(value)}" for path, value in sorted(bounds.items())))


def _accepted(schema: dict[str, Any]) -> frozenset[str]:
    """What a schema accepts, as a set of kinds, so that widening is a superset."""
    if "enum" in schema:
        return frozenset(f"={json.dumps(value, sort_keys=True)}" for value in schema["enum"])
    if "const" in schema:
        return frozenset({f"={json.dumps(schema['const'], sort_keys=True)}"})
    union = schema.get("anyOf") or schema.get("oneOf")
    if union:
        return frozenset().union(*(_accepted(arm) for arm in union))
    kinds = schema.get("type")
    if kinds is None:
        return frozenset({"*"})
    kinds = kinds if isinstance(kinds, list) else [kinds]
    accepted: set[str] = set()
    for kind in kinds:
        if kind in ("array", "object"):
            rest = {k: v for k, v in schema.items() if k not in IGNORED | BOUNDS | {"type"}}
            accepted.add(f"{kind}:{json.dumps(_canonical(rest), sort_keys=True)}")
        elif kind == "number":
            accepted |= {"number", "integer"}
        else:
            accepted.add(kind)
    return frozenset(accepted)


def _shown(schema: dict[str, Any]) -> str:
    """A schema in a reviewer's words: its type, or its union of types, or its values."""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    union = schema.get("anyOf") or schema.get("oneOf")
    if union:
        return " | ".join(_shown(arm) for arm in union)
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_shown(schema.get('items', {}))}"
    return " | ".join(kind) if isinstance(kind, list) else str(kind)


def _brief(text: object) -> str:
    return json.dumps(_clip(" ".join(str(text or "").split())))


def _clip(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def report(differences: list[Difference], write_command: str) -> str:
    """The differences grouped as breaking and compatible, with what to do next."""
    breaking = [d for d in differences if d.breaking]
    compatible = [d for d in differences if not d.breaking]
    if not differences:
        return "The live contract matches the snapshot."
    lines = []
    if breaking:
        lines.append(f"Breaking changes ({len(breaking)}): clients that call these tools break")
        lines += [f"  - {difference}" for difference in breaking]
    if compatible:
        lines.append(f"Compatible changes ({len(compatible)}): existing clients keep working")
        lines += [f"  - {difference}" for difference in compatible]
    lines.append(
        f"If these changes are intended, record them: `{write_command}`, and commit "
        f"{SNAPSHOT.as_posix()} with them."
    )
    return "\n".join(lines)
