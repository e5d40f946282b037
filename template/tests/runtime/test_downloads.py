"""Downloads of kept data (``GET /data/<id>``) by RFC 9110's rules: each rule of
:func:`mcp_runtime.serving.ranges.decide` alone, then the app's answers (headers, ranges,
``multipart/byteranges``), reads of only the chunks a range needs, and no more reads once
the client has gone. A real server, and curl and wget resuming: test_kept_data_http.py."""

import asyncio
import email
import email.policy
import importlib.util
import logging
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.types import Message

from mcp_runtime.config.settings import load_settings
from mcp_runtime.data.sealing import CHUNK_BYTES, SEALED_BYTES
from mcp_runtime.data.store import DataStore
from mcp_runtime.serving.front.downloads import Downloads
from mcp_runtime.serving.http_app import build_app
from mcp_runtime.serving.ranges import Answer, Validators, decide, http_date
from mcp_runtime.serving.server import build_server, state_of
from mcp_runtime.testing import connect

pytestmark = pytest.mark.anyio

ETAG = '"5e1f"'
MODIFIED = 1_700_000_000
VALIDATORS = Validators(ETAG, MODIFIED)
DATE = http_date(MODIFIED)
EARLIER, LATER = http_date(MODIFIED - 60), http_date(MODIFIED + 60)


@pytest.mark.parametrize(
    ("method", "headers", "size", "answer"),
    [
        ("GET", {}, 1000, Answer(200)),
        ("GET", {"range": "bytes=0-499"}, 1000, Answer(206, ((0, 500),))),
        ("GET", {"range": "bytes=500-"}, 1000, Answer(206, ((500, 1000),))),
        ("GET", {"range": "bytes=-300"}, 1000, Answer(206, ((700, 1000),))),
        ("GET", {"range": "bytes=-5000"}, 1000, Answer(206, ((0, 1000),))),
        ("GET", {"range": "bytes=990-5000"}, 1000, Answer(206, ((990, 1000),))),
        ("GET", {"range": "BYTES=0-0"}, 1000, Answer(206, ((0, 1),))),
        ("GET", {"range": "bytes=1000-"}, 1000, Answer(416)),
        ("GET", {"range": "bytes=-0"}, 1000, Answer(416)),
        ("GET", {"range": "bytes=1000-1001, 2000-"}, 1000, Answer(416)),
        ("GET", {"range": "bytes=1000-, 0-1"}, 1000, Answer(206, ((0, 2),))),
        ("GET", {"range": "bytes=5-1"}, 1000, Answer(200)),  # invalid: ignored
        ("GET", {"range": "bytes=a-1"}, 1000, Answer(200)),
        ("GET", {"range": "bytes=-"}, 1000, Answer(200)),
        ("GET", {"range": "items=0-1"}, 1000, Answer(200)),  # another unit
        ("GET", {"range": "bytes= 0-9 , ,20-29"}, 1000, Answer(206, ((0, 10), (20, 30)))),
        ("GET", {"range": "bytes=20-29,0-9,5-24"}, 1000, Answer(206, ((0, 30),))),
        ("GET", {"range": "bytes=0-9,10-19"}, 1000, Answer(206, ((0, 20),))),  # adjacent
        ("GET", {"range": ",".join(["bytes=0-0", *["5-5"] * 64])}, 1000, Answer(200)),
        ("GET", {"range": "bytes=0-0"}, 0, Answer(200)),  # an empty file: no 206
        ("GET", {"range": "bytes=-1"}, 0, Answer(200)),
        ("HEAD", {"range": "bytes=0-1"}, 1000, Answer(200)),  # ranges are GET's only
        ("GET", {"range": "bytes=0-1", "if-range": ETAG}, 9, Answer(206, ((0, 2),), True)),
        ("GET", {"range": "bytes=0-1", "if-range": f"W/{ETAG}"}, 9, Answer(200)),
        ("GET", {"range": "bytes=0-1", "if-range": '"other"'}, 9, Answer(200)),
        ("GET", {"range": "bytes=0-1", "if-range": DATE}, 9, Answer(206, ((0, 2),), True)),
        ("GET", {"range": "bytes=0-1", "if-range": EARLIER}, 9, Answer(200)),
        ("GET", {"if-range": ETAG}, 9, Answer(200)),
        ("GET", {"if-none-match": ETAG}, 9, Answer(304)),
        ("HEAD", {"if-none-match": f'"x", W/{ETAG}'}, 9, Answer(304)),  # weak comparison
        ("GET", {"if-none-match": "*"}, 9, Answer(304)),
        ("GET", {"if-none-match": '"x"', "if-modified-since": LATER}, 9, Answer(200)),
        ("GET", {"if-modified-since": DATE}, 9, Answer(304)),
        ("GET", {"if-modified-since": EARLIER}, 9, Answer(200)),
        ("GET", {"if-modified-since": "yesterday"}, 9, Answer(200)),  # not a date: ignored
        ("GET", {"if-match": f"W/{ETAG}"}, 9, Answer(412)),  # strong comparison
        ("GET", {"if-match": f'"x", {ETAG}', "range": "bytes=0-0"}, 9, Answer(206, ((0, 1),))),
        ("GET", {"if-match": "*", "if-unmodified-since": EARLIER}, 9, Answer(200)),
        ("GET", {"if-unmodified-since": EARLIER}, 9, Answer(412)),
        ("GET", {"if-unmodified-since": DATE}, 9, Answer(200)),
        ("GET", {"if-match": '"x"', "if-none-match": ETAG}, 9, Answer(412)),  # 412 first
    ],
)
def test_a_download_is_answered_by_rfc_9110s_rules(
    method: str, headers: dict[str, str], size: int, answer: Answer
) -> None:
    assert decide(method, headers, size, VALIDATORS) == answer


def _slow_service() -> Any:
    path = Path(__file__).with_name("slow_service.py")
    spec = importlib.util.spec_from_file_location("slow_service_of_downloads", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


slow_service = _slow_service()
DATA = next(toolset for toolset in slow_service.TOOLSETS if toolset.name == "data")
FILE_NAME = "naïve rows.bin"


class Kept:
    """A server keeping data in memory, its app, and a datum of ``size`` bytes kept by a call."""

    def __init__(self, size: int) -> None:
        self.settings = load_settings(auth="none", data_url="memory://")
        self.server = build_server((DATA,), name="downloads", settings=self.settings)
        self.size = size
        self.content: bytes = slow_service.kept_content(size, False)
        self.path = ""
        self.reads: list[tuple[int, int]] = []

    async def keep(self) -> "Kept":
        async with connect(self.server) as session:
            result = await session.call_tool("kept", {"size": self.size, "name": FILE_NAME})
        self.path = result.structuredContent["file"]["download"]
        blobs = self.store.blobs
        read = blobs.read

        async def counted(key: str, start: int, end: int) -> Any:
            self.reads.append((start, end))
            return await read(key, start, end)

        blobs.read = counted  # type: ignore[method-assign]
        return self

    @property
    def store(self) -> DataStore:
        store = state_of(self.server).data
        assert store is not None
        return store

    async def get(self, headers: dict[str, str] | None = None, method: str = "GET") -> Any:
        app = build_app(self.server, self.settings)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.request(method, self.path, headers=headers)


async def test_a_whole_download_names_the_file_and_its_validators() -> None:
    kept = await Kept(3 * CHUNK_BYTES + 10).keep()
    answer = await kept.get()
    head = await kept.get(method="HEAD")
    assert answer.status_code == 200
    assert answer.content == kept.content
    etag = answer.headers["etag"]
    assert etag == f'"{etag[1:-1]}"'
    assert len(etag) == 18
    assert dict(answer.headers) | {"etag": "", "last-modified": ""} == {
        "etag": "",
        "last-modified": "",
        "cache-control": "private, no-store",
        "accept-ranges": "bytes",
        "content-type": "application/octet-stream",
        "content-disposition": 'attachment; filename="na_ve rows.bin"; '
        "filename*=UTF-8''na%C3%AFve%20rows.bin",
        "content-length": str(kept.size),
    }
    assert (head.status_code, head.content, dict(head.headers)) == (200, b"", dict(answer.headers))
    again = await kept.get({"if-none-match": etag})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)


async def test_a_range_reads_only_the_chunks_that_hold_it() -> None:
    kept = await Kept(5 * CHUNK_BYTES).keep()
    start = 2 * CHUNK_BYTES + 100
    answer = await kept.get({"range": f"bytes={start}-{start + 9}"})
    assert answer.status_code == 206
    assert answer.content == kept.content[start : start + 10]
    assert answer.headers["content-range"] == f"bytes {start}-{start + 9}/{kept.size}"
    assert kept.reads == [(2 * SEALED_BYTES, 3 * SEALED_BYTES)]


async def test_a_resumed_download_with_if_range_gets_the_rest_or_the_whole_file() -> None:
    kept = await Kept(2 * CHUNK_BYTES + 1).keep()
    etag = (await kept.get(method="HEAD")).headers["etag"]
    rest = await kept.get({"range": "bytes=1000000-", "if-range": etag})
    stale = await kept.get({"range": "bytes=1000000-", "if-range": '"an-earlier-write"'})
    assert (rest.status_code, rest.content) == (206, kept.content[1_000_000:])
    assert "content-disposition" not in rest.headers  # the client has them (If-Range)
    assert (stale.status_code, stale.content) == (200, kept.content)


async def test_past_the_end_answers_416_with_the_size() -> None:
    kept = await Kept(100).keep()
    answer = await kept.get({"range": "bytes=100-"})
    assert (answer.status_code, answer.content) == (416, b"")
    assert answer.headers["content-range"] == "bytes */100"


async def test_several_ranges_answer_multipart_byteranges() -> None:
    kept = await Kept(3 * CHUNK_BYTES).keep()
    asked = [(10, 19), (CHUNK_BYTES * 2 + 5, CHUNK_BYTES * 2 + 9), (15, 29)]
    answer = await kept.get({"range": "bytes=" + ",".join(f"{a}-{b}" for a, b in asked)})
    assert answer.status_code == 206
    assert int(answer.headers["content-length"]) == len(answer.content)
    kind = answer.headers["content-type"]
    assert kind.startswith("multipart/byteranges; boundary=")
    message = email.message_from_bytes(
        b"content-type: " + kind.encode() + b"\r\n\r\n" + answer.content,
        policy=email.policy.HTTP,
    )
    parts = [
        (part["content-range"], part["content-type"], part.get_payload(decode=True))
        for part in message.iter_parts()
    ]
    second = CHUNK_BYTES * 2 + 5
    assert parts == [
        (f"bytes 10-29/{kept.size}", "application/octet-stream", kept.content[10:30]),
        (
            f"bytes {second}-{second + 4}/{kept.size}",
            "application/octet-stream",
            kept.content[second : second + 5],
        ),
    ]


async def test_a_client_that_leaves_is_read_no_further() -> None:
    """A client gone after the first piece of 40 chunks: the store is read once or twice
    more at most (the batch in hand), never to the end."""
    kept = await Kept(40 * CHUNK_BYTES).keep()
    sent: list[Message] = []
    left = asyncio.Event()

    async def receive() -> Message:
        if not sent:
            return {"type": "http.request", "body": b"", "more_body": False}
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)
        if message["type"] == "http.response.body":
            left.set()
            await asyncio.sleep(0)  # the server's send yields to its loop

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a download reaches no other part")

    downloads = Downloads(inner, store=kept.store, bearer=None, settings=kept.settings)
    scope = {"type": "http", "method": "GET", "path": kept.path, "headers": []}
    await downloads(scope, receive, send)
    assert sent[0]["status"] == 200
    assert len(kept.reads) <= 2
    assert not any(message.get("more_body") is False for message in sent[1:])


async def test_data_removed_while_it_is_read_ends_the_answer_short_and_logs_no_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kept = await Kept(20 * CHUNK_BYTES).keep()
    store = kept.store
    read = store.blobs.read

    async def vanishing(key: str, start: int, end: int) -> Any:
        if start:
            await store.blobs.delete(key)
        return await read(key, start, end)

    store.blobs.read = vanishing  # type: ignore[method-assign]
    sent: list[Message] = []

    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("never")

    async def send(message: Message) -> None:
        sent.append(message)

    downloads = Downloads(None, store=store, bearer=None, settings=kept.settings)  # type: ignore[arg-type]
    scope = {"type": "http", "method": "GET", "path": kept.path, "headers": []}
    with caplog.at_level(logging.DEBUG):
        await downloads(scope, receive, send)
    body = b"".join(message.get("body", b"") for message in sent[1:])
    assert 0 < len(body) < kept.size
    assert not any(message.get("more_body") is False for message in sent[1:])
    assert [
        record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING
    ] == ["a download of kept data ended early: the data was removed while it was read"]
    assert all(record.exc_info is None for record in caplog.records)
    assert FILE_NAME not in caplog.text
    assert kept.path.removeprefix("/data/") not in caplog.text
