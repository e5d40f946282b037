"""The runtime's layout: each part imports only the parts below it.

A service's tools import :mod:`mcp_runtime`, and its tests :mod:`mcp_runtime.testing`;
the runtime's parts are its own. What ships (every part but ``devtools``) never imports
the developer tooling, which the wheel and the image leave out.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "src" / "mcp_runtime"
BELOW_SERVING = {
    "sdk",
    "config",
    "observability",
    "auth",
    "data",
    "execution",
    "contract",
    "tasks",
}
# Each part, and the other parts it may import. The public modules are parts too:
# ``api`` is mcp_runtime/__init__.py and __main__.py, ``testing`` is mcp_runtime/testing.py.
MAY_IMPORT: dict[str, set[str]] = {
    "sdk": set(),
    "config": set(),
    "observability": {"sdk", "config"},
    "auth": {"sdk", "config"},
    "data": {"config", "observability"},
    "execution": {"sdk", "config", "observability", "data"},
    "contract": {"sdk", "config", "observability", "auth", "data", "execution"},
    "tasks": {"sdk", "config", "observability", "auth", "data", "execution", "contract"},
    "serving": BELOW_SERVING,
    "api": BELOW_SERVING | {"serving"},
    "devtools": BELOW_SERVING | {"serving", "api", "testing"},
    "testing": {"sdk", "devtools"},
}
PUBLIC = {"__init__": "api", "__main__": "api", "testing": "testing", "sdk": "sdk"}
# The SDK's parts (mcp_runtime/sdk/): each module, and the parts of the runtime that may
# import it, so that each use of the SDK's server is reached only where it is needed.
# (The package itself names the server and its tools for a service's own code: every
# part may import it.)
SDK_MODULES: dict[str, set[str]] = {
    "seams": set(),  # the SDK's private parts: reached through the other modules only
    "context": {"observability", "auth", "execution", "contract", "tasks", "serving"},
    "tools": {"contract", "serving"},
    "hooks": {"tasks", "serving"},
    "log_rewrites": {"observability"},
    "server": {"serving"},
    "http": {"serving"},
    "bearer": {"serving"},
    "tasks": {"tasks"},
    "direct": {"serving"},
}
# Within the SDK's parts, a module imports only those before it here.
SDK_ORDER = list(SDK_MODULES)


def part_of_file(path: Path) -> str:
    """The part a module of the runtime belongs to."""
    relative = path.relative_to(RUNTIME)
    return relative.parts[0] if len(relative.parts) > 1 else PUBLIC.get(path.stem, path.stem)


def part_of_module(name: str) -> str:
    """The part an imported ``mcp_runtime...`` module belongs to."""
    parts = name.split(".")
    if len(parts) == 1:
        return "api"
    return PUBLIC.get(parts[1], parts[1])


def imports(path: Path) -> list[tuple[int, str]]:
    """The line and module name of each absolute import in a file (``from mcp_runtime
    import part`` names the part)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "mcp_runtime":  # `from mcp_runtime import part` names a part
                known = {alias.name for alias in node.names} & set(MAY_IMPORT)
                found += [(node.lineno, f"mcp_runtime.{name}") for name in sorted(known)]
                found += [(node.lineno, "mcp_runtime")] * (len(node.names) > len(known))
            else:
                found.append((node.lineno, node.module))
    return found


def runtime_imports(path: Path) -> list[tuple[int, str]]:
    """The line and module name of each import of the runtime in a file."""
    return [(line, name) for line, name in imports(path) if name.split(".")[0] == "mcp_runtime"]


MODULES = sorted(RUNTIME.rglob("*.py"))


def test_every_module_is_in_a_known_part() -> None:
    unknown = {str(path.relative_to(RUNTIME)) for path in MODULES} - {
        str(path.relative_to(RUNTIME)) for path in MODULES if part_of_file(path) in MAY_IMPORT
    }
    assert unknown == set(), (
        "in no part of the runtime: a service's own modules belong in its own package, and "
        "a new part of the runtime in MAY_IMPORT, with the parts it may import"
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(RUNTIME)))
def test_a_part_imports_only_the_parts_below_it(path: Path) -> None:
    part = part_of_file(path)
    allowed = MAY_IMPORT.get(part, set()) | {part}
    wrong = [
        f"line {line}: {name} ({part_of_module(name)})"
        for line, name in runtime_imports(path)
        if part_of_module(name) not in allowed
    ]
    assert wrong == [], f"{part} may import only {sorted(allowed)}"


SDK_PARTS = sorted((RUNTIME / "sdk").glob("*.py"))


def test_every_module_of_the_sdks_parts_is_known() -> None:
    modules = {path.stem for path in SDK_PARTS} - {"__init__"}
    assert modules == set(SDK_MODULES), "a module of mcp_runtime/sdk/ belongs in SDK_MODULES"


SDK_MODULE_LINES = 300


@pytest.mark.parametrize("path", SDK_PARTS, ids=lambda path: path.name)
def test_each_of_the_sdks_parts_is_small(path: Path) -> None:
    """A module of ``sdk/`` holds one concern: past the limit, split it by concern."""
    lines = len(path.read_text().splitlines())
    assert lines <= SDK_MODULE_LINES, f"{path.name} has {lines} lines"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(RUNTIME)))
def test_each_of_the_sdks_parts_is_imported_only_where_it_is_needed(path: Path) -> None:
    part = part_of_file(path)
    if part == "sdk":
        before = SDK_ORDER[: SDK_ORDER.index(path.stem)] if path.stem in SDK_ORDER else SDK_ORDER
        allowed = {f"mcp_runtime.sdk.{module}" for module in before}
    else:
        allowed = {
            f"mcp_runtime.sdk.{module}" for module, users in SDK_MODULES.items() if part in users
        }
    wrong = [
        f"line {line}: {name}"
        for line, name in runtime_imports(path)
        if name.startswith("mcp_runtime.sdk.") and name not in allowed
    ]
    assert wrong == [], f"{part} may import only {sorted(allowed)} of the SDK's parts"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(RUNTIME)))
def test_only_the_sdks_parts_import_the_sdks_server(path: Path) -> None:
    """The MCP SDK's server side (``mcp.server``, ``mcp.shared``) is reached through
    ``mcp_runtime.sdk`` alone; protocol types and the client side are public and stable."""
    if part_of_file(path) == "sdk":
        return
    wrong = [
        f"line {line}: {name}"
        for line, name in imports(path)
        if name.split(".")[:2] in (["mcp", "server"], ["mcp", "shared"])
    ]
    assert wrong == [], "import it from the SDK's parts, mcp_runtime.sdk"


def test_building_the_server_imports_no_task_engine() -> None:
    """Docket, the task engine (a fifth of the runtime's import time), is imported when the
    task store first opens: never by a command that only builds the server (``check``,
    ``schema``, ``contract``), nor by a process that has served no task yet."""
    program = (
        "import sys\n"
        "from mcp_runtime import build_server\n"
        "server = build_server()\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'docket'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert done.stdout == "[]\n"


def module_name(path: Path) -> str:
    """The dotted name of a module of the runtime."""
    parts = ("mcp_runtime", *path.relative_to(RUNTIME).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_modules_of_the_runtime_import_each_other_in_a_circle() -> None:
    """Each module imports only modules that do not import it back, directly or through
    others, counting imports made only for type checking and inside functions: a circle
    means two modules are one concern, or a base class is doing a dependency's work."""
    names = {module_name(path): path for path in MODULES}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets = set()
        for _, imported in runtime_imports(path):
            while imported and imported not in names:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(f"{imported}."):
                targets.add(imported)
        graph[name] = targets
    circles = []
    for start in sorted(graph):
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        seen: set[str] = set()
        while stack:
            current, route = stack.pop()
            for target in sorted(graph[current]):
                if target == start:
                    circles.append(" -> ".join([*route, start]))
                elif target not in seen and target > start:
                    seen.add(target)
                    stack.append((target, [*route, target]))
    assert circles == [], "modules that import each other: make one of them a dependency"
