"""A service whose calls stay in flight until the test lets them go, for the shutdown tests.

Run as a script, it serves through :func:`mcp_runtime.serving.serve`, exactly as the
``serve`` command does (signals, draining, worker processes), with the app factory
:func:`app`. ``SLOW_SERVICE_DIR`` names a folder: each call writes ``started-NAME``
there when it starts, and answers once the file ``release`` exists.
"""

import os
import time
from pathlib import Path

import anyio
from langchain_core.tools import tool

from mcp_runtime import ToolResult
from mcp_runtime.http_app import ServiceApp, http_app
from mcp_runtime.logs import configure_logging
from mcp_runtime.server import create_server
from mcp_runtime.serving import serve
from mcp_runtime.settings import load_settings
from mcp_runtime.toolsets import Toolset

POLL_SECONDS = 0.02


def _folder() -> Path:
    return Path(os.environ["SLOW_SERVICE_DIR"])


@tool
async def hold(name: str) -> ToolResult:
    """Answer once the test releases the call."""
    (_folder() / f"started-{name}").touch()
    while not (_folder() / "release").exists():
        await anyio.sleep(POLL_SECONDS)
    return ToolResult(message=f"released {name}")


@tool
def hold_thread(name: str) -> ToolResult:
    """Answer once the test releases the call, holding a tool thread until then."""
    (_folder() / f"started-{name}").touch()
    while not (_folder() / "release").exists():
        time.sleep(POLL_SECONDS)
    return ToolResult(message=f"released {name}")


def app() -> ServiceApp:
    """The app factory: the slow toolset, as the environment's settings say."""
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    toolset = Toolset("slow", (hold, hold_thread))
    return http_app(create_server("slow-service", [toolset], settings=settings), settings)


if __name__ == "__main__":
    serve(load_settings(), "slow_service:app")
