"""Data a tool keeps for its caller, served over HTTP by the slow test service as a real
process: each caller reads only its own (another's answers as unknown data does, in
``resources/read``, in ``read_data`` and in the download), ``GET /data/<id>`` with
``Range`` requests, a result of megabytes after progress reports read by the SDK's
client on its defaults in both eras; curl and wget resuming a cut download; data kept in
a directory and on an object store, read through another process and after a restart;
and a write its killed process left, swept by another."""

import base64
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import obstore
import pytest
import redis
from cryptography.fernet import Fernet
from obstore.store import S3Store

from mcp_runtime.data.sealing import OVERHEAD
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
    assert got.headers["content-disposition"] == (
        "attachment; filename=\"cube.bin\"; filename*=UTF-8''cube.bin"
    )
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
    url = server.base_url + file["download"]
    past = httpx2.get(url, headers=headers | {"range": "bytes=10-"}, timeout=30)
    head = httpx2.head(url, headers=headers | {"range": "bytes=0-1"}, timeout=30)
    posted = httpx2.post(url, headers=headers, timeout=30)
    assert (past.status_code, past.content, past.headers["content-range"]) == (
        416,
        b"",
        "bytes */10",
    )
    assert (head.status_code, head.headers["content-length"], head.content) == (200, "10", b"")
    assert posted.status_code == 405


@pytest.mark.parametrize("program", ["curl", "wget"])
def test_curl_and_wget_resume_a_cut_download(
    guarded: tuple[LocalIssuer, RunningServer], tmp_path: Path, program: str
) -> None:
    """A file of 3 MB whose first megabyte a cut download left: ``curl -C -`` and ``wget -c``
    ask for the rest (206), and the file is whole."""
    issuer, server = guarded
    headers = bearer(issuer, "frank")
    file = keep(server, headers, size=3_000_000, name="cube.bin", source="stream")
    content = kept_content(3_000_000, False)
    target = tmp_path / "cube.bin"
    target.write_bytes(content[:1_000_000])
    url = server.base_url + file["download"]
    auth = f"authorization: {headers['authorization']}"
    if program == "curl":
        command = ["curl", "-sS", "-f", "-C", "-", "-H", auth, "-o", str(target)]
        command += ["-w", "%{http_code} %{size_download}", url]
    else:
        command = ["wget", "-c", "-S", "--header", auth, "-O", str(target), url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == content
    if program == "curl":
        assert done.stdout == "206 2000000"
    else:
        assert "HTTP/1.1 206 Partial Content" in done.stderr
        assert "content-range: bytes 1000000-2999999/3000000" in done.stderr.lower()


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


def served_data(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The environment of a slow service serving its ``data`` toolset with ``env``."""
    return {"SLOW_SERVICE_DIR": str(tmp_path), "MCP_TOOLSETS": "data", "MCP_AUTH": "none", **env}


def read_through(server: RunningServer, file: dict[str, Any]) -> tuple[bytes, bytes]:
    """``file``'s data through ``server``: by ``resources/read`` and by its download."""
    [contents] = rpc(server, "resources/read", {"uri": file["uri"]}, {}).json()["result"][
        "contents"
    ]
    read = contents["text"].encode() if "text" in contents else base64.b64decode(contents["blob"])
    return read, httpx2.get(server.base_url + file["download"], timeout=30).content


@pytest.mark.any_python  # the store, whatever the Python
def test_data_in_a_directory_is_read_by_another_process_and_after_a_restart(
    tmp_path: Path,
) -> None:
    """Two processes on one directory, with no Redis (its ledger is an SQLite file in it),
    then a third after they stopped: each reads what the first kept. The directory holds
    the datum sealed: neither its object nor the ledger has its name, media type or
    content in clear."""
    folder = tmp_path / "data"
    env = served_data(
        {"MCP_DATA_URL": str(folder), "MCP_TASK_KEYS": Fernet.generate_key().decode()}, tmp_path
    )
    content = kept_content(250_000, True)  # 2.5 MB: three chunks of the store
    with run_server(SLOW_SERVICE, env=env) as one, run_server(SLOW_SERVICE, env=env) as two:
        file = keep(one, {}, size=250_000, text=True, name="rows.csv", source="stream")
        assert read_through(two, file) == (content, content)
    with run_server(SLOW_SERVICE, env=env) as three:
        assert read_through(three, file) == (content, content)
    data_id = file["uri"].removeprefix("mcp-data://")
    kept = sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())
    assert [name for name in kept if "ledger" not in name] == [
        f"slow-service/{data_id[:2]}/{data_id}"
    ]
    stored = b"".join(path.read_bytes() for path in folder.rglob("*") if path.is_file())
    assert b"rows.csv" not in stored
    assert b"text/csv" not in stored
    assert content[1_000_000:1_000_040] not in stored


@pytest.mark.any_python  # the store, whatever the Python
def test_data_on_an_object_store_is_read_through_another_process_and_redis_holds_no_byte(
    object_store: dict[str, str], task_store: dict[str, str], tmp_path: Path
) -> None:
    """Two processes on one bucket (moto's S3 server), the ledger on Redis: the second
    reads what the first kept, whole and by range; the bucket holds one object, sealed,
    and Redis a few hundred bytes of ledger for three megabytes."""
    env = served_data(object_store | task_store, tmp_path)
    content = kept_content(3_000_000, False)
    with run_server(SLOW_SERVICE, env=env) as one, run_server(SLOW_SERVICE, env=env) as two:
        file = keep(one, {}, size=3_000_000, name="cube.bin", source="stream")
        assert read_through(two, file) == (content, content)
        ranged = httpx2.get(
            two.base_url + file["download"], headers={"range": "bytes=2000000-2000099"}
        )
    assert (ranged.status_code, ranged.content) == (206, content[2_000_000:2_000_100])
    data_id = file["uri"].removeprefix("mcp-data://")
    bucket = S3Store(
        object_store["MCP_DATA_URL"][5:-5],
        endpoint=object_store["AWS_ENDPOINT_URL"],
        access_key_id="test",
        secret_access_key="test",
        region="us-east-1",
        client_options={"allow_http": True},
    )
    listed = [meta["path"] for batch in obstore.list(bucket) for meta in batch]
    assert listed == [f"kept/slow-service/{data_id[:2]}/{data_id}"]
    stored = bytes(obstore.get(bucket, listed[0]).bytes())
    assert len(stored) == 3_000_000 + 3 * OVERHEAD
    assert b"cube.bin" not in stored
    assert content[1_000_000:1_000_040] not in stored
    ledger = redis.Redis.from_url(task_store["MCP_TASKS_URL"])
    keys = [f"mcp-data:slow-service:{key}" for key in (f"entry:{data_id}", "counted:anonymous")]
    used = [ledger.memory_usage(key) for key in [*keys, "mcp-data:slow-service:due"]]
    assert all(0 < (size or 0) < 1000 for size in used), used
    entry: dict[bytes, bytes] = ledger.hgetall(keys[0])  # type: ignore[assignment]
    assert sorted(entry) == [
        b"counted",
        b"deadline",
        b"kept_at",
        b"meta",
        b"owner",
        b"state",
        b"version",
    ]
    assert b"cube.bin" not in b"".join(entry.values())


@pytest.mark.any_python  # processes and a signal, whatever the Python
def test_a_write_its_process_left_is_swept_by_another(tmp_path: Path) -> None:
    """A process killed (SIGKILL) while it streams a datum into a directory leaves part of
    an object; another process on the directory removes it, and its count, within a
    lease or so."""
    folder = tmp_path / "data"
    env = served_data(
        {
            "MCP_DATA_URL": str(folder),
            "MCP_TASK_KEYS": Fernet.generate_key().decode(),
            "MCP_TASK_LEASE": "1",
        },
        tmp_path,
    )
    with run_server(SLOW_SERVICE, env=env) as killed:
        arguments = {"size": 40_000_000, "source": "stream", "pause": 0.01, "name": "cut.bin"}
        params = {"name": "kept", "arguments": arguments}

        def call_until_killed() -> None:
            with contextlib.suppress(httpx2.HTTPError):
                rpc(killed, "tools/call", params, {})

        threading.Thread(target=call_until_killed, daemon=True).start()
        ledger = folder / "slow-service" / "ledger.sqlite3"
        # Its write is counted and begun, and the rest is still to come.
        wait_until(lambda: ledger.exists() and counted(ledger) > 0 and any(folder.rglob("*.part")))
        os.killpg(killed.process.pid, signal.SIGKILL)
        killed.process.wait()
    assert any(folder.rglob("*.part"))
    with run_server(SLOW_SERVICE, env=env):
        wait_until(lambda: not any(folder.rglob("*.part")) and counted(ledger) == 0)
    assert [
        path.name for path in folder.rglob("*") if path.is_file() and "ledger" not in path.name
    ] == []


def counted(ledger: Path) -> int:
    """The bytes the data in ``ledger`` count, for every owner (0 while it has no tables)."""
    with contextlib.closing(sqlite3.connect(ledger)) as db:
        try:
            return int(db.execute("SELECT COALESCE(SUM(counted), 0) FROM owners").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def wait_until(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)


@pytest.mark.any_python  # processes and a signal, whatever the Python
def test_a_task_that_keeps_data_and_is_taken_over_keeps_it_once(
    task_store: dict[str, str], tmp_path: Path
) -> None:
    """A task streaming a datum whose process is killed (SIGKILL) is taken over, and the
    run that takes it over writes the datum again in its place: one object, counted once
    against its caller, nothing left of the first write."""
    folder, service = tmp_path / "data", f"once-{os.getpid()}"
    env = served_data(
        {
            "MCP_DATA_URL": str(folder),
            "MCP_TASK_LEASE": "2",
            "MCP_TASK_POLL_INTERVAL": "0.05",
            "SLOW_SERVICE_NAME": service,
            **task_store,
        },
        tmp_path,
    )
    size = 12_000_000
    ledger = redis.Redis.from_url(task_store["MCP_TASKS_URL"])
    counted_key = f"mcp-data:{service}:counted:anonymous"
    with run_server(SLOW_SERVICE, env=env) as one, run_server(SLOW_SERVICE, env=env) as two:
        arguments = {"size": size, "source": "stream", "pause": 0.01, "name": "once.bin"}
        params = {"name": "kept", "arguments": arguments, "task": {}}
        task_id = rpc(one, "tools/call", params, {}).json()["result"]["task"]["taskId"]
        marker = tmp_path / "streaming-once.bin"
        wait_until(
            lambda: (
                marker.exists()
                and int(ledger.get(counted_key) or 0) > 0
                and any(folder.rglob("*.part"))
            )
        )
        doomed, survivor = (one, two) if marker.read_text() == str(one.process.pid) else (two, one)
        [cut] = [path.name.split(".")[0] for path in folder.rglob("*.part")]
        marker.unlink()
        os.killpg(doomed.process.pid, signal.SIGKILL)
        doomed.process.wait()
        result = rpc(survivor, "tasks/result", {"taskId": task_id}, {}).json()["result"]
        file = result["structuredContent"]["file"]
        assert read_through(survivor, file)[1] == kept_content(size, False)
    assert marker.read_text() == str(survivor.process.pid)  # the run that took it over
    assert int(ledger.get(counted_key) or 0) == size
    data_id = file["uri"].removeprefix("mcp-data://")
    assert data_id == cut  # written again in the place of the write the kill cut
    left = sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())
    assert left == [f"{service}/{data_id[:2]}/{data_id}"]


@pytest.mark.any_python  # the store, whatever the Python
def test_with_signed_urls_a_download_is_sent_to_the_object_store(
    object_store: dict[str, str], task_store: dict[str, str], tmp_path: Path
) -> None:
    """MCP_DATA_SIGNED_URLS: the object is stored as it is (the store's own encryption in
    place of the service's seal) and a download answers 307 to a URL the store signs,
    which gives the file; resources/read still reads it through the service."""
    env = served_data(object_store | task_store | {"MCP_DATA_SIGNED_URLS": "true"}, tmp_path)
    content = kept_content(2_500_000, False)
    with run_server(SLOW_SERVICE, env=env) as server:
        file = keep(server, {}, size=2_500_000, name="cube.bin", source="stream")
        redirect = httpx2.get(server.base_url + file["download"], timeout=30)
        read, _ = read_through(server, file)
    assert redirect.status_code == 307
    signed = redirect.headers["location"]
    assert signed.startswith(object_store["AWS_ENDPOINT_URL"] + "/")
    assert "X-Amz-Signature=" in signed
    assert "X-Amz-Expires=300" in signed
    got = httpx2.get(signed, timeout=30)
    assert (got.status_code, got.content, read) == (200, content, content)
    assert got.headers["content-disposition"] == (
        "attachment; filename=\"cube.bin\"; filename*=UTF-8''cube.bin"
    )
