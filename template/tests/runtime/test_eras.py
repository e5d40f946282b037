"""One endpoint, both eras of the protocol: clients of 2025-11-25 (``initialize``, a
session) and of 2026-07-28 (stateless: each request carries its revision), through the
SDK's own client in each mode and over raw HTTP, against a real ``serve`` process.

Each guarantee that a client sees is checked in both: the listing with every output
schema, typed results the client validates, ``ToolError`` as ``isError``, progress
before the result, a call cancelled when its client gives up (its cleanup runs), the
front's refusals, and OAuth's 401 with its metadata.
"""

import json
import sys
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_runtime.contract.toolsets import find_service
from mcp_runtime.devtools.local_issuer import LocalIssuer
from mcp_runtime.testing import Mode, RunningServer, connect_http, run_server, serve_http

pytestmark = pytest.mark.anyio

SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
MODES: list[Mode] = ["legacy", "2026-07-28"]
REVISIONS = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
STEPS = 3
WAIT_SECONDS = 30.0
MODERN = "2026-07-28"
CAPABILITIES = {"io.modelcontextprotocol/protocolVersion": MODERN}


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, Path]]:
    """The slow test service, every toolset of it, as its own process without auth."""
    folder = tmp_path_factory.mktemp("slow")
    env = {"SLOW_SERVICE_DIR": str(folder), "MCP_TOOLSETS": "slow,counting", "MCP_AUTH": "none"}
    with run_server(SLOW_SERVICE, env=env) as server:
        yield server, folder


def modern_request(method: str, params: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    """A 2026-07-28 request: its revision and capabilities in ``_meta``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**params, "_meta": meta},
    }


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    """The headers a 2026-07-28 request carries: its revision, method and name."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
    }
    return headers | ({"mcp-name": name} if name is not None else {})


@pytest.mark.parametrize("mode", MODES)
async def test_each_era_lists_the_schemas_and_gets_typed_results(
    slow: tuple[RunningServer, Path], mode: Mode
) -> None:
    server, _ = slow
    async with connect_http(server.url, mode=mode) as session:
        listing = await session.list_tools()
        counted = await session.call_tool("count_up", {"steps": STEPS})
        refused = await session.call_tool("count_up", {"steps": "many"})
        revision = session.client.protocol_version
    assert revision == REVISIONS[mode]
    schemas = {tool.name: tool.output_schema for tool in listing.tools}
    assert sorted(schemas) == ["count_up", "count_up_thread", "hold", "hold_thread"]
    assert all(schema and schema["type"] == "object" for schema in schemas.values())
    assert (counted.is_error, counted.structured_content) == (False, {"message": "counted to 3"})
    assert refused.is_error is True
    assert refused.structured_content is None


@pytest.mark.parametrize("mode", MODES)
async def test_an_endpoint_that_keeps_sessions_serves_both_eras(tmp_path: Path, mode: Mode) -> None:
    """``MCP_STATELESS=false``: a 2025 client's session lives in the SDK's streaming app
    (its requests, with their progress, and its DELETE reach it), and a 2026-07-28 client
    is answered as on a stateless endpoint."""
    env = {"SLOW_SERVICE_DIR": str(tmp_path), "MCP_TOOLSETS": "counting", "MCP_AUTH": "none"}
    reports: list[float] = []

    async def record(progress: float, total: float | None, message: str | None) -> None:
        reports.append(progress)

    with run_server(SLOW_SERVICE, env=env | {"MCP_STATELESS": "false"}) as server:
        async with connect_http(server.url, mode=mode) as session:
            counted = await session.call_tool(
                "count_up", {"steps": STEPS}, progress_callback=record
            )
            again = await session.call_tool("count_up", {"steps": 1})
        opened = httpx2.post(
            server.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            },
            headers={"accept": "application/json, text/event-stream"},
            timeout=30,
        )
        session_id = opened.headers.get("mcp-session-id")
        closed = httpx2.delete(server.url, headers={"mcp-session-id": session_id or ""})
    assert (counted.is_error, counted.structured_content) == (False, {"message": "counted to 3"})
    assert again.structured_content == {"message": "counted to 1"}
    assert reports == [1, 2, 3]
    assert opened.status_code == 200
    assert session_id
    assert closed.status_code == 200


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool", ["count_up", "count_up_thread"])
async def test_each_era_gets_every_progress_report_before_the_result(
    slow: tuple[RunningServer, Path], mode: Mode, tool: str
) -> None:
    server, _ = slow
    reports: list[tuple[float, float | None, str | None]] = []

    async def record(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async with connect_http(server.url, mode=mode) as session:
        result = await session.call_tool(tool, {"steps": STEPS}, progress_callback=record)
        before_the_result = list(reports)
    assert result.is_error is False
    assert before_the_result == [
        (step, STEPS, f"step {step} of {STEPS}") for step in range(1, STEPS + 1)
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_whose_client_gives_up_is_cancelled_and_cleans_up(
    slow: tuple[RunningServer, Path], mode: Mode
) -> None:
    """2025: the client sends ``notifications/cancelled``; 2026: it closes the stream."""
    server, folder = slow
    name = f"gives-up-{mode}"
    async with (
        connect_http(server.url, mode=mode) as session,
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(session.call_tool, "hold", {"name": name})
        with anyio.fail_after(WAIT_SECONDS):
            while not (folder / f"started-{name}").exists():
                await anyio.sleep(0.02)
        tasks.cancel_scope.cancel()
    deadline = time.monotonic() + WAIT_SECONDS
    while not (folder / f"cancelled-{name}").exists():
        assert time.monotonic() < deadline, f"the call was not cancelled:\n{server.log()}"
        await anyio.sleep(0.02)


async def test_server_info_names_the_service_and_its_version() -> None:
    """``initialize``'s ``serverInfo`` (2025), and the ``serverInfo`` stamp in the ``_meta``
    of ``server/discover``'s result (2026-07-28, SEP-2575): the service's name, and its
    distribution's version."""
    name = find_service().name
    expected = {"name": name, "version": metadata.version(name)}
    assert expected["version"] != ""
    with serve_http(env={"MCP_AUTH": "none"}) as url:
        async with connect_http(url, mode="legacy") as session:
            info = session.client.server_info
        discover = modern_request("server/discover", {})
        discovered = httpx2.post(url, headers=modern_headers("server/discover"), json=discover)
    assert info is not None
    assert info.model_dump(exclude_none=True) == expected
    result = json.loads(discovered.text.split("data: ", 1)[-1])["result"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == expected


def test_server_discover_offers_the_stateless_revision(slow: tuple[RunningServer, Path]) -> None:
    server, _ = slow
    answer = httpx2.post(
        server.url,
        headers=modern_headers("server/discover"),
        json=modern_request("server/discover", {}),
    )
    assert answer.status_code == 200, answer.text
    result = json.loads(answer.text.split("data: ", 1)[-1])["result"]
    assert MODERN in result["supportedVersions"]
    assert result["capabilities"]["tools"] is not None
    assert "mcp-session-id" not in answer.headers


def test_a_malformed_call_is_refused_400_naming_the_field(
    slow: tuple[RunningServer, Path],
) -> None:
    """The front refuses it before the SDK: from 2026-07-28 invalid params answer 400."""
    server, _ = slow
    body = modern_request("tools/call", {"name": "hold", "arguments": ["not", "an", "object"]})
    answer = httpx2.post(server.url, headers=modern_headers("tools/call", "hold"), json=body)
    assert answer.status_code == 400
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32602,
            "message": "Invalid params of tools/call: `arguments` must be an object of the "
            "tool's arguments by name, not an array",
        },
    }


def test_a_posted_cancel_of_the_stateless_revision_is_answered_202(
    slow: tuple[RunningServer, Path],
) -> None:
    server, _ = slow
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "_meta": CAPABILITIES},
    }
    answer = httpx2.post(server.url, headers=modern_headers("notifications/cancelled"), json=cancel)
    assert (answer.status_code, answer.content) == (202, b"")


@pytest.mark.parametrize("revision", ["2025-11-25", MODERN])
def test_under_oauth_each_era_is_refused_401_with_the_metadata(
    oauth_issuer: LocalIssuer, revision: str
) -> None:
    resource = "https://slow.example.com/mcp"
    with run_server(SLOW_SERVICE, env=oauth_issuer.environment(resource)) as server:
        headers = modern_headers("tools/list") | {"mcp-protocol-version": revision}
        answer = httpx2.post(server.url, headers=headers, json=modern_request("tools/list", {}))
    assert answer.status_code == 401
    metadata = "https://slow.example.com/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata}"' in answer.headers["www-authenticate"]
