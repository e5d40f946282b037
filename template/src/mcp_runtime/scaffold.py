"""Scaffold toolsets and tools that keep the contract from their first commit.

Run through ``scripts/new-toolset NAME`` and ``scripts/new-tool TOOLSET NAME``.
Every file is planned first and written only once the input is known good; then
the startup gate runs on the result, and any failure restores every file as it
was. Bad input exits 2 with a message and writes nothing.
"""

import argparse
import ast
import importlib
import json
import keyword
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from mcp_runtime.contract_snapshot import SNAPSHOT, read_snapshot, render
from mcp_runtime.toolsets import Service, ServiceNotFoundError, find_service

__all__ = ["main"]


class ScaffoldError(Exception):
    """Bad input: the message says what was wrong and how to fix it."""


@dataclass(frozen=True)
class Names:
    """Every name a new tool needs, derived from one normalised identifier."""

    tool: str

    @property
    def result_class(self) -> str:
        return "".join(part.capitalize() for part in self.tool.split("_")) + "Result"

    @property
    def words(self) -> str:
        return self.tool.replace("_", " ")


def normalise(text: str, what: str) -> str:
    """``Weather Data``, ``weather-data`` and ``weather_data`` all give ``weather_data``."""
    name = re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")
    if not text.strip():
        raise ScaffoldError(f"The {what} name is empty: give a name such as 'weather data'.")
    if not name:
        raise ScaffoldError(
            f"The {what} name {text!r} has no letter or digit to build a Python name from: "
            "use letters, digits, spaces, '-' or '_'."
        )
    if not name[0].isalpha():
        raise ScaffoldError(
            f"The {what} name {text!r} gives {name!r}, which cannot be a Python identifier: "
            "start it with a letter."
        )
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise ScaffoldError(
            f"The {what} name {text!r} gives {name!r}, a Python keyword: choose another name, "
            f"such as '{name}_tools'."
        )
    if name in sys.stdlib_module_names:
        raise ScaffoldError(
            f"The {what} name {text!r} gives {name!r}, which shadows the standard library "
            f"module '{name}': choose another name, such as '{name}_tools'."
        )
    return name


@dataclass
class Plan:
    """Files to write (path to new content), the new tools, and what to tell the user."""

    writes: dict[Path, str]
    summary: list[str]
    tools: list[str]


def plan_toolset(service: Service, text: str) -> Plan:
    """Plan a new toolset module with one example tool, and its test file."""
    module = normalise(text, "toolset")
    folder = toolsets_folder(service)
    toolset = module.replace("_", "-")
    if (folder / f"{module}.py").exists() or (folder / module).exists():
        raise ScaffoldError(
            f"The toolset '{toolset}' already exists ({relative(folder / f'{module}.py')}): "
            f"add a tool to it with `scripts/new-tool {toolset} NAME`, or choose another name."
        )
    names = Names(module)
    check_tool_name_is_free(service, names.tool)
    source = (
        TOOLSET_HEADER.substitute(toolset=toolset)
        + tool_source(names, toolset)
        + (f"\n\nTOOLS = [{names.tool}]\n")
    )
    test_path, test_source = plan_test(service, module, names, toolset)
    path = folder / f"{module}.py"
    return Plan(
        writes={path: source, test_path: test_source},
        summary=[
            f"Normalised {text!r} to the toolset '{toolset}' (module {module}.py).",
            f"Created the toolset '{toolset}':",
            f"  {relative(path)}  with the tool '{names.tool}'",
            f"  {relative(test_path)}  its tests",
            f"  {SNAPSHOT.as_posix()}  the published contract, with the new tool",
        ],
        tools=[names.tool],
    )


def plan_tool(service: Service, toolset_text: str, text: str) -> Plan:
    """Plan one more tool in an existing toolset module, and its test file."""
    module = re.sub(r"[^a-z0-9]+", "_", toolset_text.strip().lower()).strip("_")
    folder = toolsets_folder(service)
    path = folder / f"{module}.py"
    if not module or not path.is_file():
        known = ", ".join(sorted(p.stem.replace("_", "-") for p in toolset_modules(folder)))
        raise ScaffoldError(
            f"There is no toolset {toolset_text!r}: the service has {known or 'none'}. "
            "Create one with `scripts/new-toolset NAME`."
        )
    toolset = module.replace("_", "-")
    names = Names(normalise(text, "tool"))
    check_tool_name_is_free(service, names.tool)
    original = path.read_text()
    tree = ast.parse(original)
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    for taken in (names.tool, names.result_class):
        if taken in defined:
            raise ScaffoldError(
                f"{relative(path)} already defines {taken!r}: choose another tool name."
            )
    tools_list = next(
        (
            node
            for node in tree.body
            if isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["TOOLS"]
            and isinstance(node.value, ast.List)
        ),
        None,
    )
    if tools_list is None or tools_list.end_lineno is None:
        raise ScaffoldError(
            f"{relative(path)} has no `TOOLS = [...]` list literal to add the tool to: "
            "write `TOOLS = [...]` at module level, or add the tool by hand."
        )
    assert isinstance(tools_list.value, ast.List)
    lines = original.splitlines(keepends=True)
    listed = [ast.get_source_segment(original, item) or "" for item in tools_list.value.elts]
    imports_end = max(
        (
            node.end_lineno or 0
            for node in tree.body
            if isinstance(node, ast.Import | ast.ImportFrom) and node.lineno < tools_list.lineno
        ),
        default=0,
    )
    head = "".join(lines[:imports_end])
    body = "".join(lines[imports_end : tools_list.lineno - 1]).rstrip("\n")
    after = "".join(lines[tools_list.end_lineno :])
    source = (
        head
        + missing_imports(tree)
        + body
        + "\n\n\n"
        + tool_source(names, toolset)
        + f"\n\nTOOLS = [{', '.join([*listed, names.tool])}]\n"
        + after
    )
    test_path, test_source = plan_test(service, module, names, toolset)
    return Plan(
        writes={path: source, test_path: test_source},
        summary=[
            f"Added the tool '{names.tool}' to the toolset '{toolset}':",
            f"  {relative(path)}  the tool, listed in TOOLS",
            f"  {relative(test_path)}  its tests",
            f"  {SNAPSHOT.as_posix()}  the published contract, with the new tool",
        ],
        tools=[names.tool],
    )


def plan_test(service: Service, module: str, names: Names, toolset: str) -> tuple[Path, str]:
    path = Path.cwd() / "tests" / f"test_{names.tool}.py"
    if path.exists():
        raise ScaffoldError(
            f"{relative(path)} already exists: choose another tool name, or move that file."
        )
    source = TEST_TEMPLATE.substitute(
        module=f"{service.toolsets_package}.{module}",
        tool=names.tool,
        toolset=toolset,
        words=names.words,
    )
    return path, source


def tool_source(names: Names, toolset: str) -> str:
    return TOOL_TEMPLATE.substitute(
        tool=names.tool,
        result=names.result_class,
        words=names.words,
        toolset=toolset,
    )


def missing_imports(tree: ast.Module) -> str:
    """Import lines the tool template needs and ``tree`` lacks (ruff sorts them after)."""
    imported: set[tuple[str, str]] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            imported |= {(node.module, alias.name) for alias in node.names}
    needed = [
        ("typing", "Annotated"),
        ("typing", "NotRequired"),
        ("langchain_core.tools", "tool"),
        ("pydantic", "Field"),
        ("mcp_runtime", "ToolError"),
        ("mcp_runtime", "ToolResult"),
    ]
    return "".join(
        f"from {module} import {name}\n"
        for module, name in needed
        if (module, name) not in imported
    )


def check_tool_name_is_free(service: Service, tool: str) -> None:
    toolsets, _ = service.load_toolsets()
    for toolset in toolsets:
        if any(existing.name == tool for existing in toolset.tools):
            raise ScaffoldError(
                f"The tool name '{tool}' is already used by the toolset '{toolset.name}': "
                "tool names are unique across the service; choose another name."
            )


def toolsets_folder(service: Service) -> Path:
    package = importlib.import_module(service.toolsets_package)
    return Path(next(iter(package.__path__)))


def toolset_modules(folder: Path) -> list[Path]:
    return [path for path in folder.glob("*.py") if not path.name.startswith("_")]


def relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def apply(plan: Plan, service: Service) -> None:
    """Write every planned file, tidy and gate them, record the new tools in the contract
    snapshot; restore everything on any failure."""
    snapshot = Path.cwd() / SNAPSHOT
    touched = [*plan.writes, snapshot]
    originals = {path: path.read_bytes() if path.exists() else None for path in touched}
    try:
        for path, source in plan.writes.items():
            path.write_text(source)
        tidy(list(plan.writes))
        listing = verify(service)
        record(snapshot, listing, plan.tools)
    except BaseException:
        for path, content in originals.items():
            if content is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(content)
        raise


def record(snapshot: Path, listing: list[dict[str, Any]], tools: Sequence[str]) -> None:
    """Add ``tools`` to the contract snapshot, leaving every other entry as it was."""
    live = {entry["name"]: entry for entry in contract_of_listing(listing)["tools"]}
    recorded = read_snapshot(snapshot) if snapshot.is_file() else contract_of_listing(listing)
    entries = {entry["name"]: entry for entry in recorded["tools"]}
    entries |= {name: live[name] for name in tools}
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    snapshot.write_text(render({"tools": sorted(entries.values(), key=lambda e: e["name"])}))


def contract_of_listing(listing: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("name", "description", "inputSchema", "outputSchema")
    return {"tools": [{key: entry.get(key) for key in keys} for entry in listing]}


def tidy(paths: Sequence[Path]) -> None:
    """Sort imports and format the written files with ruff, when it is installed."""
    ruff = shutil.which("ruff")
    if ruff is None:
        return
    files = [str(path) for path in paths]
    subprocess.run([ruff, "check", "--quiet", "--fix", "--select", "I", *files], check=True)
    subprocess.run([ruff, "format", "--quiet", *files], check=True)


def verify(service: Service) -> list[dict[str, Any]]:
    """Run the startup gate on the whole service, in a fresh interpreter; the tools/list."""
    gate = subprocess.run(
        [sys.executable, "-m", "mcp_runtime", "schema"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if gate.returncode != 0:
        raise GateFailedError(gate.stdout + gate.stderr)
    tools: list[dict[str, Any]] = json.loads(gate.stdout)["tools"]
    return tools


class GateFailedError(Exception):
    """The scaffolded service does not pass the startup gate."""


def main(argv: Sequence[str] | None = None) -> int:
    """``new-toolset NAME`` or ``new-tool TOOLSET NAME``; return the exit status."""
    args = parser().parse_args(argv)
    try:
        service = find_service()
        if args.command == "new-toolset":
            plan = plan_toolset(service, args.name)
        else:
            plan = plan_tool(service, args.toolset, args.name)
        apply(plan, service)
    except (ScaffoldError, ServiceNotFoundError) as exc:
        print(f"error: {exc}\nNothing was written.", file=sys.stderr)
        return 2
    except (GateFailedError, subprocess.CalledProcessError, OSError) as exc:
        print(f"error: the scaffold failed, and every file was restored:\n{exc}", file=sys.stderr)
        return 1
    print("\n".join(plan.summary))
    print(NEXT_STEPS.format(service=service.name))
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="mcp_runtime.scaffold", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    toolset = commands.add_parser(
        "new-toolset",
        prog="scripts/new-toolset",
        description=NEW_TOOLSET_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    toolset.add_argument("name", metavar="NAME", help="the toolset's name, such as 'Weather Data'")
    tool = commands.add_parser(
        "new-tool",
        prog="scripts/new-tool",
        description=NEW_TOOL_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tool.add_argument("toolset", metavar="TOOLSET", help="a toolset, such as weather-data")
    tool.add_argument("name", metavar="NAME", help="the new tool's name, such as 'forecast'")
    return top


NEW_TOOLSET_HELP = """\
Create a toolset: src/<package>/toolsets/<name>.py with one example tool that
keeps the typed-return contract, and tests/test_<name>.py with its tests. The
toolset is served and tested at once: no registration, no other file to edit.

NAME is normalised: 'Weather Data', 'weather-data' and 'weather_data' all give
the module weather_data.py, served as the toolset 'weather-data', whose first
tool is named weather_data. The script says what it chose.

Refused, with exit status 2 and nothing written: an empty name, one that cannot
become a Python identifier, a Python keyword, a standard library module name, an
existing toolset, or a tool name already in use. If anything fails after that
(the startup gate on the result, a write), every file is restored: exit status 1.

Next: edit the tool, then `uv run pytest`, `scripts/lint`, and commit.
"""

NEW_TOOL_HELP = """\
Add a tool to an existing toolset: a result type, the tool function and its
entry in the toolset's TOOLS list, plus tests/test_<name>.py. The same rules and
guarantees as scripts/new-toolset apply (see its --help).
"""

NEXT_STEPS = """
Next:
  1. Replace the example data and logic with your own (keep the annotation).
  2. uv run {service} contract --write    # record the tool's final contract
  3. uv run pytest && scripts/lint
  4. uv run {service} schema    # the outputSchema clients will see
"""

TOOLSET_HEADER = Template('''"""The ${toolset} toolset."""

from typing import Annotated, NotRequired

from langchain_core.tools import tool
from pydantic import Field

from mcp_runtime import ToolError, ToolResult

''')

TOOL_TEMPLATE = Template('''
# Example data: replace with the real source (a database, an API client, ...).
${tool}_records: dict[str, str] = {"example": "The example ${words} record."}


class ${result}(ToolResult):
    """One ${words} record, found by its key."""

    key: NotRequired[str]
    record: NotRequired[str]


@tool
def ${tool}(
    key: Annotated[str, Field(description="The key of the record to fetch, such as 'example'.")],
) -> ${result} | ToolError:
    """Fetch one ${words} record by its key.

    Use it when the user asks for a ${words} record by name. An unknown key
    answers a `not_found` error that lists the keys there are.
    """
    wanted = key.strip().lower()
    record = ${tool}_records.get(wanted)
    if record is None:
        known = ", ".join(sorted(${tool}_records))
        return ToolError(
            error="not_found",
            detail=f"No ${words} record has the key {key!r}: use one of {known}.",
        )
    return ${result}(message=f"{wanted}: {record}", key=wanted, record=record)
''')

TEST_TEMPLATE = Template('''"""The ${tool} tool of the ${toolset} toolset."""

import pytest
from jsonschema import Draft202012Validator
from mcp.server.fastmcp import FastMCP

from mcp_runtime import is_error
from mcp_runtime.testing import connect
from ${module} import ${tool}

EXPECTED = {
    "message": "example: The example ${words} record.",
    "key": "example",
    "record": "The example ${words} record.",
}


def test_${tool}_finds_a_record() -> None:
    assert ${tool}.invoke({"key": "Example "}) == EXPECTED


def test_${tool}_unknown_key_is_not_found() -> None:
    result = ${tool}.invoke({"key": "missing"})
    assert is_error(result)
    assert result["error"] == "not_found"


@pytest.mark.anyio
async def test_${tool}_over_mcp_matches_its_schema(server: FastMCP) -> None:
    async with connect(server) as session:
        listing = await session.list_tools()
        result = await session.call_tool("${tool}", {"key": "example"})
    entry = next(tool for tool in listing.tools if tool.name == "${tool}")
    assert entry.outputSchema is not None
    Draft202012Validator(entry.outputSchema).validate(result.structuredContent)
    assert result.isError is False
    assert result.structuredContent == EXPECTED
''')

if __name__ == "__main__":
    raise SystemExit(main())
