"""Data a tool keeps for its caller, served over HTTP by the slow test service as a real
process: each caller reads only its own (another's answers as unknown data does, in
``resources/read``, in ``read_data`` and in the download), ``GET /data/<id>`` with
``Range`` requests, a result of megabytes after progress reports read by the SDK's
client on its defaults in both eras, and data kept on Redis across a restart."""

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import redis

from mcp_runtime.testing import LocalIssuer, RunningServer, connect_http, run_server

SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
RESOURCE = "https://data.example.com/mcp"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
LEGACY = "2025-11-25"


def kept_content(size: int, text: bool) -> bytes:
    """What the slow service's ``kept`` keeps (its ``kept_content``)."""
    if text:
        return "".join(f"{row},\u00e9\n" for row in range(size)).encode()
    return (bytes(range(256)) * (size // 256 + 1))[:size]


@pytest.fixture(scope="module")
def guarded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LocalIssuer, RunningServer]]:
    """The slow service's ``data`` toolset under ``MCP_AUTH=oauth``."""
    with LocalIssuer() as issuer:
        env = {
            "SLOW_SERVICE_DIR": str(tmp_path_factory.mktemp("data")),
            "MCP_TOOLSETS": "data",
            **issuer.environment(RESOURCE),
        }
        with run_server(SLOW_SERVICE, env=env) as server:
            yield issuer, server


def bearer(issuer: LocalIssuer, subject: str) -> dict[str, str]:
    token = issuer.token(subject=subject, audience=RESOURCE, expires_in=600)
    return {"authorization": f"Bearer {token}"}


def rpc(
    server: RunningServer, method: str, params: dict[str, Any], headers: dict[str, str]
) -> httpx2.Response:
    """``method`` as a stateless 2025-11-25 client sends it; the HTTP answer."""
    sent = HEADERS | {"mcp-protocol-version": LEGACY} | headers
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx2.post(server.url, json=body, headers=sent, timeout=30)


def keep(server: RunningServer, headers: dict[str, str], **arguments: Any) -> dict[str, Any]:
    answer = rpc(server, "tools/call", {"name": "kept", "arguments": arguments}, headers)
    result: dict[str, Any] = answer.json()["result"]
    assert not result["isError"], result
    return dict(result["structuredContent"]["file"])


def test_each_caller_reads_only_its_own_data_and_anothers_answers_as_unknown(
    guarded: tuple[LocalIssuer, RunningServer],
) -> None:
    issuer, server = guarded
    alice, bob = bearer(issuer, "alice"), bearer(issuer, "bob")
    file = keep(server, alice, size=1000)
    unknown = {**file, "uri": "mcp-data://" + "A" * 32, "download": "/data/" + "A" * 32}
    answers = {}
    for who, link in (("alice", file), ("bob", file), ("unknown", unknown)):
        headers = alice if who != "bob" else bob
        read = rpc(server, "resources/read", {"uri": link["uri"]}, headers)
        paged = rpc(
            server, "tools/call", {"name": "read_data", "arguments": {"uri": link["uri"]}}, headers
        )
        got = httpx2.get(server.base_url + link["download"], headers=headers, timeout=30)
        answer = (read.json(), paged.json()["result"], got.status_code, got.content)
        answers[who] = json.loads(json.dumps(answer, default=repr).replace(link["uri"], "URI"))
    assert (
        answers["alice"][0]["result"]["contents"][0]["blob"]
        == base64.b64encode(kept_content(1000, False)).decode()
    )
    assert answers["alice"][2:] == [200, repr(kept_content(1000, False))]
    assert answers["bob"] == answers["unknown"]
    assert answers["bob"][0]["error"]["code"] == -32602
    assert answers["bob"][1]["structuredContent"]["error"] == "not_found"
    assert answers["bob"][2] == 404
    without = httpx2.get(server.base_url + file["download"], timeout=30)
    assert without.status_code == 401
    logged = server.log_path.read_text()  # neither the data's id nor its name
    assert file["uri"].removeprefix("mcp-data://") not in logged
    assert file["name"] not in logged


def test_data_a_task_keeps_is_its_callers_and_linked_from_its_result(
    guarded: tuple[LocalIssuer, RunningServer],
) -> None:
    issuer, server = guarded
    alice, bob = bearer(issuer, "alice"), bearer(issuer, "bob")
    params = {"name": "kept", "arguments": {"size": 500}, "task": {}}
    task_id = rpc(server, "tools/call", params, alice).json()["result"]["task"]["taskId"]
    result = rpc(server, "tasks/result", {"taskId": task_id}, alice).json()["result"]
    file = result["structuredContent"]["file"]
    mine = rpc(server, "resources/read", {"uri": file["uri"]}, alice).json()["result"]
    theirs = rpc(server, "resources/read", {"uri": file["uri"]}, bob).json()
    assert [item["type"] for item in result["content"]] == ["text", "resource_link"]
    assert base64.b64decode(mine["contents"][0]["blob"]) == kept_content(500, False)
    assert theirs["error"]["code"] == -32602


@pytest.mark.parametrize(
    ("asked", "status", "first", "end"),
    [
        (None, 200, 0, 3000),
        ("bytes=0-99", 206, 0, 100),
        ("bytes=2990-", 206, 2990, 3000),
        ("bytes=-10", 206, 2990, 3000),
        ("bytes=100-99999", 206, 100, 3000),
        ("bytes=0-1,5-6", 200, 0, 3000),
    ],
)
def test_a_download_answers_the_range_it_is_asked_for(
    guarded: tuple[LocalIssuer, RunningServer], asked: str | None, status: int, first: int, end: int
) -> None:
    issuer, server = guarded
    headers = bearer(issuer, "carol")
    file = keep(server, headers, size=3000, name="cube.bin")
    sent = headers | ({"range": asked} if asked else {})
    got = httpx2.get(server.base_url + file["download"], headers=sent, timeout=30)
    assert got.status_code == status
    assert got.content == kept_content(3000, False)[first:end]
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["accept-ranges"] == "bytes"
    assert got.headers["content-disposition"] == "attachment; filename*=UTF-8''cube.bin"
    assert got.headers["cache-control"] == "private, no-store"
    assert got.headers.get("content-range") == (
        f"bytes {first}-{end - 1}/3000" if status == 206 else None
    )


def test_a_range_past_the_end_is_refused_and_head_sends_no_body(
    guarded: tuple[LocalIssuer, RunningServer],
) -> None:
    issuer, server = guarded
    headers = bearer(issuer, "dave")
    file = keep(server, headers, size=10)
    past = httpx2.get(
        server.base_url + file["download"], headers=headers | {"range": "bytes=10-"}, timeout=30
    )
    head = httpx2.head(server.base_url + file["download"], headers=headers, timeout=30)
    posted = httpx2.post(server.base_url + file["download"], headers=headers, timeout=30)
    assert (past.status_code, past.json()) == (
        416,
        {"error": "range_not_satisfiable", "detail": "the data has 10 bytes"},
    )
    assert (head.status_code, head.headers["content-length"], head.content) == (200, "10", b"")
    assert posted.status_code == 405


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_megabytes_after_progress_reach_the_sdk_client_on_its_defaults(
    guarded: tuple[LocalIssuer, RunningServer], mode: Any
) -> None:
    """Inline, a result this large streams past the 1 MiB a client reads of one event: as
    a link, the answer is small, and the data is read whole with resources/read."""
    issuer, server = guarded
    reported: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reported.append(done)

    size = 5 * 1024 * 1024
    async with connect_http(server.url, headers=bearer(issuer, "erin"), mode=mode) as session:
        result = await session.call_tool(
            "kept", {"size": size, "steps": 2}, progress_callback=progress
        )
        read = await session.read_resource(result.structuredContent["file"]["uri"])
    assert not result.isError
    assert reported == [1, 2]
    assert base64.b64decode(read.contents[0].blob) == kept_content(size, False)


@pytest.mark.any_python  # the store, whatever the Python
def test_data_kept_on_redis_is_read_after_a_restart(
    task_store: dict[str, str], tmp_path: Path
) -> None:
    env = {
        "SLOW_SERVICE_DIR": str(tmp_path),
        "MCP_TOOLSETS": "data",
        "MCP_AUTH": "none",
        **task_store,
    }
    content = kept_content(250_000, True)  # 2.5 MB: three chunks of the store
    with run_server(SLOW_SERVICE, env=env) as first:
        file = keep(first, {}, size=250_000, text=True, name="rows.csv")
    with run_server(SLOW_SERVICE, env=env) as second:
        read = rpc(second, "resources/read", {"uri": file["uri"]}, {})
        got = httpx2.get(second.base_url + file["download"], timeout=30)
    [contents] = read.json()["result"]["contents"]
    assert contents["mimeType"] == "text/csv"
    assert contents["text"].encode() == content
    assert got.content == content
    store = redis.Redis.from_url(task_store["MCP_TASKS_URL"])
    data_id = file["uri"].removeprefix("mcp-data://")
    record = store.hgetall(f"mcp-data:slow-service:{data_id}")
    assert sorted(record) == [b"0", b"1", b"2", b"chunks", b"expires", b"meta", b"owner", b"size"]
    assert 3590 < store.ttl(f"mcp-data:slow-service:{data_id}") <= 3600
    stored = b"".join(value for value in record.values() if isinstance(value, bytes))
    assert b"rows.csv" not in stored
    assert b"text/csv" not in stored
    assert content[1_000_000:1_000_040] not in stored
