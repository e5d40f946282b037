"""Update migration: the MCP SDK's 1.x server name in a team's tests/conftest.py.

Run by ``copier update`` after the update (a ``_migrations`` entry of copier.yml), in
the service's folder:

    sdk2_names.py

Services rendered before the runtime's fixtures moved to its pytest plugin (template
0.9) hold a tests/conftest.py, the team's file, that imports the server's type from
``mcp.server.fastmcp``: the SDK's 2.x line, which the runtime now runs on, removed that
module. The one import line the template wrote there is moved to the runtime's name for
the same type (``mcp_runtime.sdk.FastMCP``), in the runtime's import section, so the
file imports and its lint passes. A conftest.py without that line is left as it is.
"""

from pathlib import Path

CONFTEST = Path("tests") / "conftest.py"
OLD = "from mcp.server.fastmcp import FastMCP\n"
NEW = "from mcp_runtime.sdk import FastMCP\n"
RUNTIME_IMPORT = "from mcp_runtime import build_server\n"


def main() -> None:
    if not CONFTEST.is_file():
        return
    text = CONFTEST.read_text()
    if OLD not in text:
        return
    if RUNTIME_IMPORT in text:
        text = text.replace(OLD, "", 1).replace(RUNTIME_IMPORT, RUNTIME_IMPORT + NEW, 1)
    else:
        text = text.replace(OLD, NEW, 1)
        print(f"{CONFTEST}: sort its imports again: uv run ruff check --fix {CONFTEST}")
    CONFTEST.write_text(text)
    print(f"{CONFTEST}: the SDK's 1.x server name now comes from mcp_runtime.sdk")


if __name__ == "__main__":
    main()
