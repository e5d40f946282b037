"""Tools read the headers of their own request, also under concurrent requests."""

import json
import logging
import socket
import threading
from collections.abc import Iterator
from typing import NotRequired
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
import uvicorn
from langchain_core.tools import tool

from mcp_runtime import ToolResult, request_header, using_headers
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.serving.http_app import build_app
from mcp_runtime.serving.server import build_server
from mcp_runtime.testing import connect_http, free_port

pytestmark = pytest.mark.anyio


class CallerResult(ToolResult):
    """The caller named by the x-caller header."""

    caller: NotRequired[str]
    has_secret: NotRequired[bool]


@tool
async def caller() -> CallerResult:
    """Say who is calling, from the x-caller header."""
    await anyio.sleep(0.01)  # let concurrent calls interleave
    name = request_header("x-caller") or "nobody"
    has_secret = request_header("x-secret") is not None
    return CallerResult(message=f"called by {name}", caller=name, has_secret=has_secret)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """A real uvicorn server on a loopback port serving the ``caller`` tool."""
    port = free_port()
    server = build_server([Toolset("headers", (caller,))], name="headers")
    config = uvicorn.Config(build_app(server), host="127.0.0.1", port=port, log_level="warning")
    uvicorn_server = uvicorn.Server(config)
    thread = threading.Thread(target=uvicorn_server.run, daemon=True)
    thread.start()
    while not uvicorn_server.started:
        if not thread.is_alive():
            pytest.fail("the test server did not start")
        threading.Event().wait(0.02)
    yield f"http://127.0.0.1:{port}/mcp"
    uvicorn_server.should_exit = True
    thread.join(timeout=10)


async def test_each_concurrent_request_sees_its_own_header(url: str) -> None:
    answers: dict[str, object] = {}

    async def call_as(name: str) -> None:
        async with connect_http(url, headers={"x-caller": name}) as session:
            result = await session.call_tool("caller", {})
            answers[name] = result.structured_content

    names = [f"user-{index}" for index in range(20)]
    async with anyio.create_task_group() as group:
        for name in names:
            group.start_soon(call_as, name)
    assert answers == {
        name: {"message": f"called by {name}", "caller": name, "has_secret": False}
        for name in names
    }


async def test_header_values_are_never_logged(url: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        async with connect_http(url, headers={"x-secret": "s3cret-token-value"}) as session:
            result = await session.call_tool("caller", {})
    assert result.structured_content == {
        "message": "called by nobody",
        "caller": "nobody",
        "has_secret": True,
    }
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "caller" in logged  # the call itself was logged at DEBUG
    assert "s3cret-token-value" not in logged


async def test_a_refused_host_or_origin_is_named_with_its_setting_and_no_other_value(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The answer and the log line name the refused Host or Origin, which the operator adds
    to the setting they name; a value that is not a host name is never repeated."""
    ping = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    refused = {
        "mcp.example.com": {"host": "mcp.example.com"},
        "origin": {"origin": "http://evil.example"},
        "no host name": {"host": "s3cret value/with spaces"},
    }
    with caplog.at_level(logging.DEBUG):
        async with httpx2.AsyncClient() as client:
            answers = {
                case: await client.post(url, content=ping, headers={**headers, **header})
                for case, header in refused.items()
            }
    assert {case: answer.status_code for case, answer in answers.items()} == {
        "mcp.example.com": 421,
        "origin": 403,
        "no host name": 421,
    }
    assert answers["mcp.example.com"].json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "Refused: this service does not answer to the Host header "
            "'mcp.example.com'. If clients reach it by that name, add it to the service's "
            "setting MCP_ALLOWED_HOSTS (host:port, or host:* for any port).",
        },
    }
    assert "the Origin header 'http://evil.example'" in answers["origin"].text
    assert "MCP_ALLOWED_ORIGINS (scheme://host:port)" in answers["origin"].text
    assert "the Host header (not a host name)" in answers["no host name"].text
    logged = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert logged == [
        "Refused a request: its Host header 'mcp.example.com' is not in MCP_ALLOWED_HOSTS; "
        "add it there (host:port, or host:* for any port) if clients reach the service by "
        "that name",
        "Refused a request: its Origin header 'http://evil.example' is not in "
        "MCP_ALLOWED_ORIGINS; add it there (scheme://host:port) if clients reach the service "
        "by that name",
        "Refused a request: its Host header (not a host name) is not in MCP_ALLOWED_HOSTS; "
        "add it there (host:port, or host:* for any port) if clients reach the service by "
        "that name",
    ]
    assert "s3cret" not in "\n".join(record.getMessage() for record in caplog.records)


def test_a_request_without_a_host_header_is_refused_saying_so(url: str) -> None:
    """HTTP/1.0 allows a request without a Host: refused, asked to send one."""
    address = urlsplit(url)
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    head = (
        f"POST {address.path} HTTP/1.0\r\ncontent-type: application/json\r\n"
        f"accept: application/json, text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection((address.hostname, address.port), timeout=10) as connection:
        connection.sendall(head.encode() + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    status, _, payload = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 421 "), status
    assert json.loads(payload)["error"]["message"] == (
        "Refused: the request has no Host header; send the service's host name"
    )


async def test_without_a_request_every_header_is_absent() -> None:
    assert await caller.ainvoke({}) == {
        "message": "called by nobody",
        "caller": "nobody",
        "has_secret": False,
    }


async def test_using_headers_serves_direct_calls() -> None:
    with using_headers({"X-Caller": "agent", "x-secret": "s"}):
        assert await caller.ainvoke({}) == {
            "message": "called by agent",
            "caller": "agent",
            "has_secret": True,
        }
