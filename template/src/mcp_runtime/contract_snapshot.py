"""The published contract, and what a change to it does to the clients that call it.

The contract is every tool's name, description, ``inputSchema`` and
``outputSchema``, as ``tools/list`` advertises them, kept in ``contract/tools.json``
(sorted, so that a diff reads well). :func:`compare` classifies each difference
between the committed snapshot and the live service:

- breaking: a tool removed (or renamed); an argument removed, added as required,
  made required, or its type narrowed or changed; a result key removed or its
  type changed; the ToolError arm removed;
- compatible: a new tool; a new optional argument; a widened argument type; a new
  result key (``NotRequired``); a ToolError arm added; a description changed.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "SNAPSHOT",
    "Difference",
    "compare",
    "contract_of",
    "read_snapshot",
    "record",
    "render",
    "report",
]

SNAPSHOT = Path("contract") / "tools.json"
IGNORED = {"description", "title"}


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


def contract_of(tools: Iterable[Any]) -> dict[str, Any]:
    """The contract of ``tools`` (``tools/list`` entries), sorted by tool name."""
    entries = [
        {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": tool.inputSchema,
            "outputSchema": tool.outputSchema,
        }
        for tool in tools
    ]
    return {"tools": sorted(entries, key=lambda entry: str(entry["name"]))}


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
        found.append(Difference(name, "", "tool removed (or renamed)", "served", "absent", True))
    for name in sorted(new.keys() - old.keys()):
        found.append(Difference(name, "", "new tool", "absent", "served", False))
    for name in sorted(old.keys() & new.keys()):
        was, now = old[name], new[name]
        if was.get("description") != now.get("description"):
            was_text, now_text = _brief(was.get("description")), _brief(now.get("description"))
            found.append(
                Difference(name, "description", "description changed", was_text, now_text, False)
            )
        found += _arguments(name, was.get("inputSchema") or {}, now.get("inputSchema") or {})
        found += _results(name, was.get("outputSchema") or {}, now.get("outputSchema") or {})
    return found


def _arguments(tool: str, was: dict[str, Any], now: dict[str, Any]) -> list[Difference]:
    found = []
    old, new = was.get("properties", {}), now.get("properties", {})
    old_required, new_required = set(was.get("required", [])), set(now.get("required", []))
    for name in sorted(old.keys() - new.keys()):
        found.append(
            Difference(
                tool, f"argument {name}", "argument removed", _shown(old[name]), "absent", True
            )
        )
    for name in sorted(new.keys() - old.keys()):
        required = name in new_required
        change = "argument added as required" if required else "optional argument added"
        found.append(
            Difference(tool, f"argument {name}", change, "absent", _shown(new[name]), required)
        )
    for name in sorted(old.keys() & new.keys()):
        path = f"argument {name}"
        if name in new_required and name not in old_required:
            found.append(
                Difference(tool, path, "argument made required", "optional", "required", True)
            )
        elif name in old_required and name not in new_required:
            found.append(
                Difference(tool, path, "argument made optional", "required", "optional", False)
            )
        before, after = _accepted(old[name]), _accepted(new[name])
        if before == after:
            continue
        if before < after:
            found.append(
                Difference(tool, path, "type widened", _shown(old[name]), _shown(new[name]), False)
            )
        elif after < before:
            found.append(
                Difference(tool, path, "type narrowed", _shown(old[name]), _shown(new[name]), True)
            )
        else:
            found.append(
                Difference(tool, path, "type changed", _shown(old[name]), _shown(new[name]), True)
            )
    return found


def _results(tool: str, was: dict[str, Any], now: dict[str, Any]) -> list[Difference]:
    found = []
    old_result, old_error = _arms(was)
    new_result, new_error = _arms(now)
    if old_error and not new_error:
        found.append(
            Difference(
                tool, "result", "ToolError arm removed", "XResult | ToolError", "XResult", True
            )
        )
    if new_error and not old_error:
        found.append(
            Difference(
                tool, "result", "ToolError arm added", "XResult", "XResult | ToolError", False
            )
        )
    old_keys, new_keys = old_result.get("properties", {}), new_result.get("properties", {})
    for key in sorted(old_keys.keys() - new_keys.keys()):
        found.append(
            Difference(
                tool,
                f"result key {key}",
                "result key removed",
                _shown(old_keys[key]),
                "absent",
                True,
            )
        )
    for key in sorted(new_keys.keys() - old_keys.keys()):
        found.append(
            Difference(
                tool,
                f"result key {key}",
                "result key added",
                "absent",
                _shown(new_keys[key]),
                False,
            )
        )
    for key in sorted(old_keys.keys() & new_keys.keys()):
        if _canonical(old_keys[key]) != _canonical(new_keys[key]):
            found.append(
                Difference(
                    tool,
                    f"result key {key}",
                    "result key type changed",
                    _shown(old_keys[key]),
                    _shown(new_keys[key]),
                    True,
                )
            )
    return found


def _arms(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The result arm of an output schema, and whether it has a ToolError arm."""
    arms = schema.get("oneOf") or schema.get("anyOf")
    if not arms:
        return schema, False
    result: dict[str, Any] = next((arm for arm in arms if arm.get("title") != "ToolError"), {})
    return result, any(arm.get("title") == "ToolError" for arm in arms)


def _canonical(schema: Any) -> Any:
    """``schema`` without titles and descriptions, with ``required`` and unions sorted."""
    if isinstance(schema, list):
        items = [_canonical(item) for item in schema]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if not isinstance(schema, dict):
        return schema
    return {key: _canonical(value) for key, value in schema.items() if key not in IGNORED}


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
            rest = {k: v for k, v in schema.items() if k not in IGNORED | {"type"}}
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
    flat = " ".join(str(text or "").split())
    return json.dumps(flat if len(flat) <= 60 else flat[:57] + "...")


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
