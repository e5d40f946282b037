"""Update migration: the MCP SDK's 1.x server name in a team's tests.

Run by ``copier update`` after the update (a ``_migrations`` entry of copier.yml), in
the service's folder:

    sdk2_names.py

Services rendered before the runtime's fixtures moved to its pytest plugin (template
0.9) hold a tests/conftest.py, and tests written by that release's scripts/new-toolset,
that import the server's type from ``mcp.server.fastmcp``: the SDK's 2.x line, which
the runtime now runs on, removed that module. In the team's tests (tests/, not
tests/runtime/), that one import line, which the template wrote, imports the same type
under the same name from the runtime (``from mcp_runtime.sdk import MCPServer as
FastMCP``: the runtime's own ``FastMCP`` is a former name, which warns), placed among the
file's runtime imports in sorted order, so the file imports and its lint passes. A
file without that line is left as it is.
"""

import re
from pathlib import Path

TESTS = Path("tests")
OLD = "from mcp.server.fastmcp import FastMCP\n"
NEW = "from mcp_runtime.sdk import MCPServer as FastMCP\n"
RUNTIME_IMPORT = re.compile(r"^from (mcp_runtime(?:\.\w+)*) import ")


def module_of(line: str) -> str:
    """The runtime module a ``from mcp_runtime... import`` line imports from; else ""."""
    found = RUNTIME_IMPORT.match(line)
    return found[1] if found else ""


def moved(text: str) -> tuple[str, bool]:
    """``text`` with the import moved; whether it landed among the runtime's imports."""
    lines = text.replace(OLD, "", 1).splitlines(keepends=True)
    runtime = [i for i, line in enumerate(lines) if module_of(line)]
    if not runtime:
        return text.replace(OLD, NEW, 1), False
    first_block = [runtime[0]]
    for index in runtime[1:]:
        if index != first_block[-1] + 1:
            break
        first_block.append(index)
    after = [i for i in first_block if module_of(lines[i]) > "mcp_runtime.sdk"]
    position = after[0] if after else first_block[-1] + 1
    lines.insert(position, NEW)
    return "".join(lines), True


def main() -> None:
    if not TESTS.is_dir():
        return
    for path in sorted(TESTS.rglob("*.py")):
        if "runtime" in path.relative_to(TESTS).parts:
            continue
        text = path.read_text()
        if OLD not in text:
            continue
        text, sorted_in = moved(text)
        path.write_text(text)
        print(f"{path}: the SDK's 1.x server name now comes from mcp_runtime.sdk")
        if not sorted_in:
            print(f"{path}: sort its imports again: uv run ruff check --fix {path}")


if __name__ == "__main__":
    main()
