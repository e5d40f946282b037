"""The servers the streamable HTTP rows of ``contract_cost.py`` load, as app factories.

Each serves the same tool, ``hello``, statelessly at ``/mcp`` (``service_with_data``
serves data inline and by link instead, ``service_keeping`` keeps a file or a stream,
and ``file_response`` is the floor of a download: Starlette's ``FileResponse``);
``contract_cost.py`` runs each in a process of its own, pinned to one core, under the
same uvicorn:

    python -m uvicorn --factory http_targets:NAME --app-dir benchmarks --port PORT
"""

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NotRequired

from langchain_core.tools import tool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import Route

from mcp_runtime import DataLink, ToolResult, keep_data, keep_data_async, tool_metadata
from mcp_runtime.config.settings import load_settings
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.observability.logs import configure_logging
from mcp_runtime.sdk import MCPServer
from mcp_runtime.serving.http_app import process_app
from mcp_runtime.serving.server import build_server

GREETING = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}


class HelloResult(ToolResult):
    """A greeting."""

    greeting: NotRequired[str]


async def greet_async(name: str) -> HelloResult:
    """Greet a person by name."""
    return HelloResult(message=f"Hello, {name}!", greeting=f"Hello, {name}!")


BARE_ANSWER = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "content": [{"type": "text", "text": json.dumps(GREETING)}],
            "structuredContent": GREETING,
            "isError": False,
        },
    }
).encode()


async def _bare(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BARE_ANSWER})


def bare() -> Any:
    """The floor: reads the body and answers a fixed JSON-RPC result."""
    return _bare


def _native() -> MCPServer:
    server = MCPServer("native")
    server.add_tool(greet_async, name="hello", structured_output=True)
    return server


def sdk_json() -> Any:
    """The SDK's MCPServer answering one JSON body (``json_response=True``)."""
    return _native().streamable_http_app(stateless_http=True, json_response=True)


def sdk_sse() -> Any:
    """The SDK's MCPServer answering SSE (its default)."""
    return _native().streamable_http_app(stateless_http=True)


def fastmcp() -> Any:
    """fastmcp 4.x serving the same function statelessly."""
    from fastmcp import FastMCP  # type: ignore[import-not-found]

    server = FastMCP("fastmcp")
    server.tool(greet_async, name="hello")
    return server.http_app(path="/mcp", stateless_http=True)


def service() -> Any:
    """The service: the same function as a LangChain tool, through the runtime, as the
    environment's settings say (``MCP_AUTH`` and the rest), in a process set up as
    ``serve`` sets up each of its own: its logging (a line per call), then its app."""
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    toolset = Toolset("hello", (tool("hello")(greet_async),))
    return process_app(settings, build_server([toolset], name="contract", settings=settings))


def service_with_tasks() -> Any:
    """The service with ``hello`` and a task tool of the same function, ``long_hello``
    (a task when the client asks), as the environment's settings say: the tasks rows
    serve two of it on one Redis (``MCP_TASKS_URL``, ``MCP_TASK_KEYS``)."""
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    long_hello = tool_metadata(task="optional")(tool("long_hello")(greet_async))
    toolset = Toolset("hello", (tool("hello")(greet_async), long_hello))
    return process_app(settings, build_server([toolset], name="contract", settings=settings))


class InlineResult(ToolResult):
    """Megabytes of text, inline."""

    data: NotRequired[str]


class LinkedResult(ToolResult):
    """Megabytes of text, kept for the caller and linked."""

    file: NotRequired[DataLink]


def text_of(megabytes: int) -> str:
    """``megabytes`` million characters of CSV-like text."""
    line = "12345,rainfall,0.25\n"
    return (line * (megabytes * 1_000_000 // len(line) + 1))[: megabytes * 1_000_000]


async def inline(megabytes: int) -> InlineResult:
    """Answer ``megabytes`` of text inline."""
    return InlineResult(message=f"{megabytes} MB", data=text_of(megabytes))


async def linked(megabytes: int) -> LinkedResult:
    """Keep ``megabytes`` of text for the caller, and link it."""
    file = keep_data(text_of(megabytes), name="rows.csv", media_type="text/csv")
    return LinkedResult(message=f"{megabytes} MB", file=file)


def service_with_data() -> Any:
    """The service with ``inline`` and ``linked``, as the environment's settings say (the
    large-results rows raise ``MCP_MAX_RESULT_BYTES``, so that 100 MB answers inline)."""
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    toolset = Toolset("data", (tool("inline")(inline), tool("linked")(linked)))
    return process_app(settings, build_server([toolset], name="contract", settings=settings))


async def keep_file(path: str) -> LinkedResult:
    """Keep the file at ``path`` for the caller, and link it."""
    file = await keep_data_async(Path(path), name=Path(path).name)
    return LinkedResult(message=f"kept {path}", file=file)


async def _block_after_block(megabytes: int) -> AsyncIterator[bytes]:
    block = bytes(range(256)) * 4096  # one MiB
    for _ in range(megabytes):
        yield block


async def keep_stream(megabytes: int) -> LinkedResult:
    """Keep ``megabytes`` MiB an async iterator yields, a MiB at a time, and link them."""
    file = await keep_data_async(_block_after_block(megabytes), name="stream.bin")
    return LinkedResult(message=f"kept {megabytes} MiB", file=file)


def service_keeping() -> Any:
    """The service with ``keep_file`` and ``keep_stream``, as the environment's settings
    say (where data is kept: ``MCP_DATA_URL``, its ledger on ``MCP_TASKS_URL``)."""
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    tools = (tool("keep_file")(keep_file), tool("keep_stream")(keep_stream))
    return process_app(
        settings, build_server([Toolset("keeping", tools)], name="data", settings=settings)
    )


async def _file(request: Request) -> FileResponse:
    return FileResponse(request.query_params["path"])


def file_response() -> Any:
    """The floor of a download: Starlette's ``FileResponse`` of ``GET /file?path=...``."""
    return Starlette(routes=[Route("/file", _file)])
