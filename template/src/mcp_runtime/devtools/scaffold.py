"""Scaffold toolsets and tools that keep the contract from their first commit.

Run through ``scripts/new-toolset NAME`` and ``scripts/new-tool TOOLSET NAME`` (either
with ``--task optional`` or ``--task required`` for a task tool, and ``--keeps-data`` for
a tool that keeps a file of any size for its caller).
Every file is planned first and written only once the input is known good; then
the service's ``contract --write TOOL`` runs on the result (the startup gate, then
the new tools recorded in the contract snapshot), and any failure restores every
file as it was. Bad input exits 2 with a message and writes nothing. The code
written comes from :mod:`mcp_runtime.devtools.scaffold_texts`.
"""

import argparse
import ast
import importlib
import keyword
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_runtime.contract.snapshot import SNAPSHOT
from mcp_runtime.contract.tool_metadata import TASK_SUPPORT
from mcp_runtime.contract.toolsets import Service, ServiceNotFoundError, find_service, toolset_name
from mcp_runtime.devtools.scaffold_texts import (
    DATA_CALL_TEST,
    DATA_TOOL,
    DATA_TOOL_TESTS,
    IMPORTED,
    PLAIN_CALL_TEST,
    TASK_ONLY_TEST,
    TASK_TOOL,
    TASK_TOOL_TESTS,
    TOOL,
    TOOL_TESTS,
    TOOLSET,
)

__all__ = ["main"]


class ScaffoldError(Exception):
    """Bad input: the message says what was wrong and how to fix it."""


class GateFailedError(Exception):
    """The scaffolded service does not pass the startup gate, or its contract was not
    recorded."""


@dataclass(frozen=True)
class Names:
    """Every name a new tool needs, derived from one normalised identifier."""

    tool: str

    @property
    def result_class(self) -> str:
        return "".join(part.capitalize() for part in self.tool.split("_")) + "Result"

    @property
    def records(self) -> str:
        return f"{self.tool}_records"

    @property
    def words(self) -> str:
        return self.tool.replace("_", " ")

    @property
    def store(self) -> str:
        """The example data store of a tool that keeps data."""
        return f"{self.tool}_store"

    @property
    def store_class(self) -> str:
        return self.result_class.removesuffix("Result") + "Store"

    @property
    def request(self) -> str:
        """The checkpoint's type of a tool that keeps data."""
        return self.result_class.removesuffix("Result") + "Request"


@dataclass
class Plan:
    """Files to write (path to new content), the new tools, and what to tell the user."""

    writes: dict[Path, str]
    summary: list[str]
    tools: list[str]


def normalise(text: str, what: str) -> str:
    """``Weather Data``, ``weather-data`` and ``weather_data`` all give ``weather_data``."""
    name = module_of(text)
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
    if name in IMPORTED:
        raise ScaffoldError(
            f"The {what} name {text!r} gives {name!r}, which would hide `{name}` "
            f"({IMPORTED[name]}): choose another name, such as '{name}_tools'."
        )
    return name


def module_of(text: str) -> str:
    """The module name a toolset or tool name gives: lowercase, runs of other characters ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")


def plan_toolset(
    service: Service, text: str, task: str | None = None, keeps_data: bool = False
) -> Plan:
    """Plan a new toolset module with one example tool, and its test file."""
    module = normalise(text, "toolset")
    toolset = toolset_name(module)
    folder = toolsets_folder(service)
    path = folder / f"{module}.py"
    if path.exists() or (folder / module).exists():
        raise ScaffoldError(
            f"The toolset '{toolset}' already exists ({relative(path)}): add a tool to it "
            f"with `scripts/new-tool {toolset} NAME`, or choose another name."
        )
    names = Names(module)
    check_tool_name_is_free(service, names.tool)
    test_path, test_source = plan_test(service, module, names, task, keeps_data)
    source = TOOLSET.substitute(
        toolset=toolset,
        tool=names.tool,
        tool_code=tool_code(names, task, keeps_data),
        standard_imports=standard_import_lines(keeps_data),
        runtime_import=runtime_import(runtime_names(task, keeps_data)),
    )
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


def plan_tool(
    service: Service,
    toolset_text: str,
    text: str,
    task: str | None = None,
    keeps_data: bool = False,
) -> Plan:
    """Plan one more tool in an existing toolset module, and its test file."""
    module = module_of(toolset_text)
    folder = toolsets_folder(service)
    path = folder / f"{module}.py"
    if not module or not path.is_file():
        known = ", ".join(sorted(toolset_name(p.stem) for p in toolset_modules(folder)))
        raise ScaffoldError(
            f"There is no toolset {toolset_text!r}: the service has {known or 'none'}. "
            "Create one with `scripts/new-toolset NAME`."
        )
    toolset = toolset_name(module)
    names = Names(normalise(text, "tool"))
    check_tool_name_is_free(service, names.tool)
    original = path.read_text()
    tree = ast.parse(original)
    defined = bound_names(tree)
    taken_names = (names.tool, names.result_class, names.records, names.store)
    for taken in (*taken_names, names.store_class, names.request):
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
        + missing_imports(tree, task, keeps_data)
        + body
        + "\n\n\n"
        + tool_code(names, task, keeps_data)
        + f"\n\nTOOLS = [{', '.join([*listed, names.tool])}]\n"
        + after
    )
    test_path, test_source = plan_test(service, module, names, task, keeps_data)
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


def plan_test(
    service: Service,
    module: str,
    names: Names,
    task: str | None = None,
    keeps_data: bool = False,
) -> tuple[Path, str]:
    """The team's test file for a new tool, ``tests/test_<tool>.py``; refused if it exists."""
    path = Path.cwd() / "tests" / f"test_{names.tool}.py"
    if path.exists():
        raise ScaffoldError(
            f"{relative(path)} already exists: choose another tool name, or move that file."
        )
    package = f"{service.toolsets_package}.{module}"
    return path, tool_tests(package, names, toolset_name(module), task, keeps_data)


def tool_code(names: Names, task: str | None = None, keeps_data: bool = False) -> str:
    """The code of the tool ``names.tool``; a task tool when ``task`` is given; one that
    keeps data for its caller with ``keeps_data``."""
    if keeps_data:
        task_line = f'    task="{task}",\n' if task else ""
        return DATA_TOOL.substitute(
            tool=names.tool,
            result=names.result_class,
            words=names.words,
            task=task_line,
            store=names.store,
            store_class=names.store_class,
            request=names.request,
        )
    if task is None:
        return TOOL.substitute(
            tool=names.tool, result=names.result_class, words=names.words, task=""
        )
    return TASK_TOOL.substitute(
        tool=names.tool, result=names.result_class, words=names.words, task=f'    task="{task}",\n'
    )


def tool_tests(
    module: str, names: Names, toolset: str, task: str | None = None, keeps_data: bool = False
) -> str:
    """The tests of the tool ``names.tool`` of ``module`` (a full module name); of a task
    tool when ``task`` is given; of one that keeps data with ``keeps_data``."""
    arguments = '{"keys": ["example", "example"]}' if task else '{"key": "example"}'
    if keeps_data:
        arguments = '{"dataset": "example", "rows": 2}'
    if task == "required":
        call_test = TASK_ONLY_TEST.substitute(tool=names.tool, arguments=arguments)
        imported = "from mcp import MCPError\n"
    else:
        listed = (
            "    assert entry.execution is not None\n"
            f'    assert entry.execution.task_support == "{task}"\n'
            if task
            else ""
        )
        call = DATA_CALL_TEST if keeps_data else PLAIN_CALL_TEST
        call_test = call.substitute(tool=names.tool, listed=listed, arguments=arguments)
        imported = "from jsonschema import Draft202012Validator\n"
        if keeps_data:
            imported += "from mcp.types import TextResourceContents\n"
    tests = DATA_TOOL_TESTS if keeps_data else TASK_TOOL_TESTS if task else TOOL_TESTS
    return tests.substitute(
        module=module,
        tool=names.tool,
        toolset=toolset,
        words=names.words,
        imported=imported,
        call_test=call_test,
        arguments=arguments,
        store=names.store,
    )


def bound_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level: definitions, assignments, imports."""
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {
                name.id
                for target in targets
                for name in ast.walk(target)
                if isinstance(name, ast.Name)
            }
    return bound


def runtime_names(task: str | None = None, keeps_data: bool = False) -> list[str]:
    """What the tool's code imports from ``mcp_runtime``, sorted as ruff sorts them."""
    names = ["ToolError", "ToolResult", "tool_metadata"]
    if keeps_data:
        names += ["DataLink", "keep_data_async", "reserve_data_async"]
    if keeps_data or task:
        names += ["last_checkpoint", "report_progress", "save_checkpoint"]
    return sorted(names, key=lambda name: (not name[0].isupper(), name))


def standard_imports(keeps_data: bool = False) -> list[tuple[str, str | None]]:
    """What the tool's code imports from the standard library: ``(module, name)``, or
    ``(module, None)`` for ``import module``."""
    needed: list[tuple[str, str | None]] = [("typing", "Annotated"), ("typing", "NotRequired")]
    if keeps_data:
        needed += [("asyncio", None), ("time", None), ("collections.abc", "AsyncIterator")]
        needed += [("typing", "TypedDict")]
    return needed


def standard_import_lines(keeps_data: bool = False) -> str:
    """The standard library's imports of a new toolset module, as ruff sorts them."""
    needed = standard_imports(keeps_data)
    plain = sorted(module for module, name in needed if name is None)
    named: dict[str, list[str]] = {}
    for module, name in needed:
        if name is not None:
            named.setdefault(module, []).append(name)
    lines = [f"import {module}" for module in plain]
    lines += [
        f"from {module} import {', '.join(sorted(named[module]))}" for module in sorted(named)
    ]
    return "\n".join(lines)


def runtime_import(names: list[str]) -> str:
    """The import of ``names`` from ``mcp_runtime``, on one line when it fits."""
    line = f"from mcp_runtime import {', '.join(names)}"
    if len(line) <= 100:
        return line
    return "from mcp_runtime import (\n" + "".join(f"    {name},\n" for name in names) + ")"


def missing_imports(tree: ast.Module, task: str | None = None, keeps_data: bool = False) -> str:
    """Import lines the tool's code needs and ``tree`` lacks (ruff sorts them after)."""
    imported: set[tuple[str, str | None]] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            imported |= {(node.module, alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {(alias.name, None) for alias in node.names}
    needed = standard_imports(keeps_data)
    needed += [("langchain_core.tools", "tool"), ("pydantic", "Field")]
    needed += [("mcp_runtime", name) for name in runtime_names(task, keeps_data)]
    return "".join(
        f"import {module}\n" if name is None else f"from {module} import {name}\n"
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


def apply(plan: Plan) -> None:
    """Write every planned file, tidy them, gate the service and record the new tools in
    the contract snapshot; restore everything on any failure."""
    touched = [*plan.writes, Path.cwd() / SNAPSHOT]
    originals = {path: path.read_bytes() if path.exists() else None for path in touched}
    try:
        for path, source in plan.writes.items():
            path.write_text(source)
        tidy(list(plan.writes))
        gate_and_record(plan.tools)
    except BaseException:
        for path, content in originals.items():
            if content is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(content)
        raise


def tidy(paths: Sequence[Path]) -> None:
    """Sort imports and format the written files with ruff, when it is installed."""
    ruff = shutil.which("ruff")
    if ruff is None:
        return
    files = [str(path) for path in paths]
    subprocess.run([ruff, "check", "--quiet", "--fix", "--select", "I", *files], check=True)
    subprocess.run([ruff, "format", "--quiet", *files], check=True)


def gate_and_record(tools: Sequence[str]) -> None:
    """Run ``contract --write TOOL...`` in a fresh interpreter, which imports the new code:
    the startup gate on the whole service, then the new tools recorded in the snapshot."""
    command = [sys.executable, "-m", "mcp_runtime", "contract", "--write", *tools]
    written = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if written.returncode != 0:
        raise GateFailedError(written.stdout + written.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """``new-toolset NAME`` or ``new-tool TOOLSET NAME``; return the exit status."""
    args = parser().parse_args(argv)
    try:
        service = find_service()
        if args.command == "new-toolset":
            plan = plan_toolset(service, args.name, args.task, args.keeps_data)
        else:
            plan = plan_tool(service, args.toolset, args.name, args.task, args.keeps_data)
        apply(plan)
    except (ScaffoldError, ServiceNotFoundError) as exc:
        print(f"error: {exc}\nNothing was written.", file=sys.stderr)
        return 2
    except (GateFailedError, subprocess.CalledProcessError, OSError) as exc:
        print(f"error: the scaffold failed, and every file was restored:\n{exc}", file=sys.stderr)
        return 1
    print("\n".join(plan.summary))
    print(NEXT_STEPS.format(service=service.name, tools=" ".join(plan.tools)))
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="mcp_runtime.devtools.scaffold", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    toolset = commands.add_parser(
        "new-toolset",
        prog="scripts/new-toolset",
        description=NEW_TOOLSET_HELP.format(imported=", ".join(IMPORTED)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    toolset.add_argument("name", metavar="NAME", help="the toolset's name, such as 'Weather Data'")
    toolset.add_argument("--task", choices=TASK_SUPPORT, help=TASK_HELP)
    toolset.add_argument("--keeps-data", action="store_true", help=KEEPS_DATA_HELP)
    tool = commands.add_parser(
        "new-tool",
        prog="scripts/new-tool",
        description=NEW_TOOL_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tool.add_argument("toolset", metavar="TOOLSET", help="a toolset, such as weather-data")
    tool.add_argument("name", metavar="NAME", help="the new tool's name, such as 'forecast'")
    tool.add_argument("--task", choices=TASK_SUPPORT, help=TASK_HELP)
    tool.add_argument("--keeps-data", action="store_true", help=KEEPS_DATA_HELP)
    return top


TASK_HELP = (
    "make the tool a task tool: a client may call it as an MCP task, a long job it polls "
    "(optional), or only as one (required); see docs/long-calls.md"
)

KEEPS_DATA_HELP = (
    "make the tool one that retrieves a file of any size from a data store that queues "
    "requests (it reserves the file's size, submits once, polls, and streams the file into "
    "kept data) and links it from its result; see docs/large-results.md"
)

NEW_TOOLSET_HELP = """\
Create a toolset: src/<package>/toolsets/<name>.py with one example tool that
keeps the typed-return contract, and tests/test_<name>.py with its tests. The
toolset is served and tested at once: no registration, no other file to edit.
The new tool is recorded in the published contract, contract/tools.json.

NAME is normalised: 'Weather Data', 'weather-data' and 'weather_data' all give
the module weather_data.py, served as the toolset 'weather-data', whose first
tool is named weather_data. The script says what it chose.

Refused, with exit status 2 and nothing written: an empty name, one that cannot
become a Python identifier, a Python keyword, a name the generated code imports
({imported}), and anything that would overwrite the service's own
files: an existing toolset, an existing tests/test_<name>.py, or a tool name
already in use. If anything fails after that (the startup gate on the result, a
write), every file is restored: exit status 1.

Next: edit the tool, then `uv run pytest`, `scripts/lint`, and commit.
"""

NEW_TOOL_HELP = """\
Add a tool to an existing toolset: a result type, the tool function and its
entry in the toolset's TOOLS list, plus tests/test_<name>.py, and the tool's
entry in contract/tools.json. The same rules and guarantees as
scripts/new-toolset apply (see its --help).

With --task optional, a client may call the tool as an MCP task, a long job it
polls; with --task required, only as one (see docs/long-calls.md). With
--keeps-data, the tool keeps a file of any size for its caller and links it from
its result (see docs/large-results.md).
"""

NEXT_STEPS = """
Next:
  1. Replace the example data and logic with your own (keep the annotation).
  2. uv run {service} contract --write {tools}    # record the tool's final contract
  3. uv run pytest && scripts/lint
  4. uv run {service} schema    # the outputSchema clients will see
"""

if __name__ == "__main__":
    raise SystemExit(main())
