"""Update migration: a service follows the runtime's modules into its parts.

Run by ``copier update`` after the update (a ``_migrations`` entry of copier.yml), in
the service's folder, with the new release's template clone and the old release:

    runtime_parts.py TEMPLATE_CLONE OLD_RELEASE

Releases before the runtime was split into parts held its 30 modules side by side in
``src/mcp_runtime/``; each now lives in a part (``MOVED``). Two things follow them:

- A module the team had edited (its committed text differs from the old release's) is
  removed by the update, as every file the new release no longer renders is: its edits
  are merged three ways into the module's new place, as ``move_runtime_tests.py`` does
  for the runtime's tests. Where both changed the same lines, the file shows a conflict.
- The team's own Python files (all but ``src/mcp_runtime/`` and ``tests/runtime/``) that
  name a moved module (``from mcp_runtime.settings import ...``, or a dotted name in a
  string) name its new place; the runtime's block of ``from mcp_runtime...`` imports is
  sorted again, as the service's lint sorts it. Other files are left byte for byte.

It acts only on a service whose last commit has the old layout (``src/mcp_runtime/server.py``),
and never rewrites a name of the new layout, so it runs once.
"""

import ast
import re
import sys
from pathlib import Path

from move_runtime_tests import follow, git

RUNTIME = Path("src/mcp_runtime")
MOVED = {
    "auth": "auth.oauth",
    "cli": "serving.cli",
    "contract_snapshot": "contract.snapshot",
    "contract_tool": "contract.served_tool",
    "gate": "contract.gate",
    "http_app": "serving.http_app",
    "in_flight": "execution.in_flight",
    "logs": "observability.logs",
    "metrics": "observability.metrics",
    "oauth_testing": "devtools.local_issuer",
    "output_contract": "contract.output_contract",
    "progress": "execution.progress",
    "pytest_plugin": "devtools.pytest_plugin",
    "request_headers": "auth.request_headers",
    "scaffold": "devtools.scaffold",
    "scaffold_texts": "devtools.scaffold_texts",
    "server": "serving.server",
    "serving": "serving.processes",
    "settings": "config.settings",
    "tool_metadata": "contract.tool_metadata",
    "tool_result": "contract.tool_result",
    "tool_threads": "execution.tool_threads",
    "toolsets": "contract.toolsets",
    "tracing": "observability.tracing",
    "violations": "contract.violations",
}
# Two old modules share their name with the part they moved into: a name that goes on
# into one of that part's modules or packages (those of this release's runtime, beside
# this hook) is already in the new layout.
PARTS = Path(__file__).resolve().parent.parent / "template" / "src" / "mcp_runtime"
PART_MODULES = {
    part: "|".join(
        sorted(
            {new.split(".")[1] for new in MOVED.values() if new.startswith(f"{part}.")}
            | {
                module.name.split(".")[0]
                for module in (PARTS / part).iterdir()
                if not module.name.startswith("_")
            }
        )
    )
    for part in ("auth", "serving")
}
OLD_NAME = re.compile(
    r"\bmcp_runtime\.(?:"
    + "|".join(
        rf"{old}(?!\.(?:{PART_MODULES[old]})\b)" if old in PART_MODULES else rf"{old}\b"
        for old in sorted(MOVED, key=len, reverse=True)
    )
    + r")"
)


def renamed(text: str) -> str:
    """``text`` with each dotted name of a moved module naming its new place."""
    return OLD_NAME.sub(lambda found: f"mcp_runtime.{MOVED[found[0].split('.')[1]]}", text)


def runtime_module(node: ast.stmt) -> str:
    """The module a top-level ``from mcp_runtime... import`` imports from; else ""."""
    if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
        return ""
    return node.module if node.module.split(".")[0] == "mcp_runtime" else ""


def one_statement(text: str, length: int = 100) -> str:
    """An import statement, one name a line if it is on one line longer than ``length``."""
    line = text.rstrip("\r\n")
    end = text[len(line) :] or "\n"
    head, _, names = line.partition(" import ")
    if "\n" in line or "\r" in line or len(line) <= length or "(" in names or "#" in names:
        return text
    listed = "".join(f"    {name.strip()},{end}" for name in names.split(","))
    return f"{head} import ({end}{listed}){end}"


def physical_lines(text: str) -> list[str]:
    """``text``'s lines as Python counts them (ended by \\n, \\r\\n or \\r), with their ends."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def sorted_runtime_imports(text: str) -> str:
    """``text`` with each run of top-level ``from mcp_runtime...`` imports in module order."""
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return text
    lines = physical_lines(text)
    runs: list[list[ast.stmt]] = []
    for index, node in enumerate(body):
        if not runtime_module(node):
            continue
        previous = body[index - 1] if index else None
        if previous and runtime_module(previous) and previous.end_lineno == node.lineno - 1:
            runs[-1].append(node)
        else:
            runs.append([node])
    for run in reversed(runs):
        first, last = run[0].lineno - 1, run[-1].end_lineno or run[-1].lineno
        run.sort(key=lambda node: runtime_module(node).lower())
        statements = [one_statement("".join(lines[n.lineno - 1 : n.end_lineno])) for n in run]
        lines[first:last] = statements
    return "".join(lines)


def team_files() -> list[Path]:
    """The Python files the service's last commit holds that are the team's: all but the
    runtime and its tests."""
    listed = (git("ls-files", "-z", "--", "*.py") or b"").decode(errors="surrogateescape")
    owned = (RUNTIME, Path("tests/runtime"))
    paths = [Path(name) for name in listed.split("\0") if name]
    return [
        path
        for path in sorted(paths)
        if path.is_file() and not any(path.is_relative_to(folder) for folder in owned)
    ]


def carry_edited_modules(template: Path, release: str) -> None:
    """Merge the team's edits of a moved runtime module into the module's new place."""
    for old, new in sorted(MOVED.items()):
        path = RUNTIME / f"{old}.py"
        moved = RUNTIME / f"{new.replace('.', '/')}.py"
        follow(path, f"template/{path}", moved, template, release)


def main(template: Path, release: str) -> int:
    if git("cat-file", "-e", f"HEAD:./{RUNTIME}/server.py") is None:
        return 0  # the service was on the runtime's parts already, or has no runtime
    carry_edited_modules(template, release)
    for path in team_files():
        try:
            text = path.read_bytes().decode()
        except UnicodeDecodeError:
            print(f"{path}: not UTF-8, left as it is", file=sys.stderr)
            continue
        changed = renamed(text)
        if changed != text:
            path.write_bytes(sorted_runtime_imports(changed).encode())
            print(f"{path}: now imports the runtime's modules from their parts", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]), sys.argv[2]))
