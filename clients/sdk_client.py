"""The MCP Python SDK's 2.x client against a rendered service over streamable HTTP.

In each of its modes: ``legacy`` (``initialize``, 2025-11-25), ``auto`` (``server/discover``,
else ``initialize``) and pinned to 2026-07-28. The client checks every
``structuredContent`` against the tool's ``outputSchema`` itself, so each successful
call here has been validated by a client nobody in this project wrote. Run it in the
service's environment:

    MCP_CLIENT_CHECK=JSON uv run --project SERVICE python sdk_client.py URL

``MCP_CLIENT_CHECK`` (``check_service.py`` sets it): ``auth``, the credential to send
(``headers``) and what whoami answers with it (``account``, or null). Exit status 0 when
every check passes; otherwise 1, each failure naming the mode and the tool.
"""

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

MODES = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}
GREETING = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
failures: list[str] = []


async def check(mode: str, subject: str, body: Callable[[], Awaitable[None]]) -> None:
    try:
        await body()
    except Exception as exc:  # the check reports any failure, whatever its kind
        failures.append(f"python sdk client ({mode}): {subject}: {type(exc).__name__}: {exc}")
        print(f"FAIL python sdk client ({mode}): {subject}: {type(exc).__name__}: {exc}")
    else:
        print(f"ok   python sdk client ({mode}): {subject}")


def text_of(result: CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, TextContent), block
    return block.text


def client(url: str, mode: Any, headers: dict[str, str]) -> Client:
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode=mode, cache=None)


async def check_mode(url: str, mode: str, setup: dict[str, Any]) -> None:
    async with client(url, mode, setup["headers"]) as session:

        async def revision() -> None:
            assert session.protocol_version == MODES[mode], session.protocol_version

        async def listing() -> None:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            expected = ["hello", "prepare_report", "read_data", "retrieve_records", "whoami"]
            assert sorted(tools) == expected, sorted(tools)
            for tool in tools.values():
                assert (tool.output_schema or {}).get("type") == "object", tool.name

        async def hello() -> None:
            result = await session.call_tool("hello", {"name": "Ada"})
            assert (result.is_error, result.structured_content) == (False, GREETING)
            assert json.loads(text_of(result)) == GREETING

        async def tool_error() -> None:
            result = await session.call_tool("hello", {"name": " "})
            assert result.is_error is True
            assert (result.structured_content or {}).get("error") == "invalid_argument"

        async def whoami() -> None:
            result = await session.call_tool("whoami", {})
            assert result.is_error is False, text_of(result)
            assert (result.structured_content or {}).get("account") == setup["account"]

        await check(mode, "connect: the revision", revision)
        await check(mode, "tools/list: every output schema", listing)
        await check(mode, "hello: a typed result", hello)
        await check(mode, "hello: a returned ToolError", tool_error)
        if setup["account"] is not None:
            await check(mode, "whoami: with the credential", whoami)
    if setup["auth"] == "demo-header":
        async with client(url, mode, {}) as anonymous:

            async def without() -> None:
                result = await anonymous.call_tool("whoami", {})
                assert result.is_error is True
                assert "x-demo-token" in text_of(result)

            await check(mode, "whoami: without its header", without)
    if setup["auth"] == "oauth":

        async def refused() -> None:
            # The client has no sign-in here: it stops at the service's 401 (which it
            # reports as an error of its own), and the 401 points at the metadata.
            connected = False
            try:
                async with client(url, mode, {}) as anonymous:
                    await anonymous.list_tools()
                    connected = True
            except Exception:  # refused, whatever the client makes of the 401
                pass
            assert not connected, "connected without a token"
            async with httpx2.AsyncClient() as http:
                answer = await http.post(url, json={}, headers={"accept": "application/json"})
            assert answer.status_code == 401, answer.status_code
            assert "resource_metadata=" in answer.headers["www-authenticate"]

        await check(mode, "without a token: refused", refused)


async def main(url: str) -> int:
    setup = json.loads(os.environ["MCP_CLIENT_CHECK"])
    for mode in MODES:
        await check_mode(url, mode, setup)
    if failures:
        print(f"{len(failures)} check(s) failed:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    print(f"python sdk client: {len(MODES)} modes, every check passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1])))
