"""What the image installs: the runtime without its developer tooling, which still serves.

The image installs the service's wheel (``uv sync --no-editable``), which leaves out the
runtime's scaffolds, test helpers and pytest plugin (``pyproject.toml``'s wheel
``exclude``); the tests and scripts use them from ``src/``.
"""

import sys
import tomllib
from pathlib import Path

import httpx2

from mcp_runtime.testing import run_server

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "src" / "mcp_runtime"
DEVELOPER_TOOLING = ["mcp_runtime.testing"] + [
    f"mcp_runtime.devtools.{path.stem}".removesuffix(".__init__")
    for path in sorted((RUNTIME / "devtools").glob("*.py"))
]


def test_the_wheel_leaves_out_the_developer_tooling() -> None:
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    excluded = wheel["targets"]["wheel"]["exclude"]
    assert excluded == ["src/mcp_runtime/devtools", "src/mcp_runtime/testing.py"]


def test_the_service_serves_without_its_developer_tooling() -> None:
    blocked = "".join(f"sys.modules[{name!r}] = None; " for name in DEVELOPER_TOOLING)
    code = (
        f"import sys; {blocked}from mcp_runtime.serving.cli import main; sys.exit(main(['serve']))"
    )
    with run_server([sys.executable, "-c", code], env={"MCP_AUTH": "none"}) as server:
        ready = httpx2.get(f"{server.base_url}/readyz")
        healthy = httpx2.get(f"{server.base_url}/healthz")  # the image's health check
        assert (ready.status_code, healthy.status_code) == (200, 200), server.log()
