"""Data a tool keeps for its caller (``keep_data``), in this process: the link in its typed
result and beside its text, ``resources/read`` in both eras, the pages of ``read_data``,
the limits at and one byte over, expiry, and nothing kept for a call that answers
``isError``. Over HTTP (downloads, ``Range``, callers, Redis): test_kept_data_http.py."""

import asyncio
import base64
import importlib.util
import itertools
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import BlobResourceContents, ResourceLink, TextResourceContents

from mcp_runtime import keep_data, keep_data_async
from mcp_runtime.config.settings import load_settings
from mcp_runtime.contract.snapshot import live_contract
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.data.blobs import MemoryBlobs
from mcp_runtime.data.ledger import SqliteLedger
from mcp_runtime.data.sealing import OVERHEAD
from mcp_runtime.data.store import MIN_COUNTED
from mcp_runtime.serving.server import build_server, state_of
from mcp_runtime.testing import MCPServer, Session, connect, kept_data

pytestmark = pytest.mark.anyio


def _slow_service() -> Any:
    """The slow test service's module, whose ``data`` toolset keeps data."""
    path = Path(__file__).with_name("slow_service.py")
    spec = importlib.util.spec_from_file_location("slow_service_of_kept_data", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


slow_service = _slow_service()
TOOLSETS: tuple[Toolset, ...] = slow_service.TOOLSETS
kept_content = slow_service.kept_content

DATA = next(toolset for toolset in TOOLSETS if toolset.name == "data")
ANSWERS = next(toolset for toolset in TOOLSETS if toolset.name == "answers")
URI = re.compile(r"^mcp-data://[A-Za-z0-9_-]{32}$")
EXPIRES = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def server_of(*toolsets: Toolset, **settings: Any) -> MCPServer:
    """A server of ``toolsets`` (``data``), keeping data in memory unless ``settings`` say."""
    settings = {"auth": "none", "data_url": "memory://"} | settings
    return build_server(toolsets or (DATA,), name="kept", settings=load_settings(**settings))


async def left_behind(server: MCPServer) -> tuple[int, list[str]]:
    """What the anonymous caller's data counts, and the objects of the server's store."""
    store = state_of(server).data
    assert store is not None
    blobs = store.blobs
    assert isinstance(blobs, MemoryBlobs)
    return await store.ledger.counted("anonymous"), sorted(blobs.objects)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def call(session: Session, arguments: dict[str, Any], tool: str = "kept") -> Any:
    return await session.call_tool(tool, arguments)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("text", [True, False], ids=["text", "binary"])
async def test_a_kept_datum_is_linked_typed_and_read_back_whole(mode: Any, text: bool) -> None:
    size, name = (3000, "rows.csv") if text else (70_000, "cube.bin")
    content = kept_content(size, text)
    async with connect(server_of(), mode=mode) as session:
        result = await call(session, {"size": size, "text": text, "name": name})
        file = result.structuredContent["file"]
        read = await session.read_resource(file["uri"])
    assert not result.isError
    media_type = "text/csv" if text else "application/octet-stream"
    assert URI.match(file["uri"])
    assert EXPIRES.match(file["expires"])
    data_id = file["uri"].removeprefix("mcp-data://")
    described = (
        f"{name} is {len(content) / 1000:.1f} kB ({len(content)} bytes) of {media_type}, kept "
        f"for you until {file['expires']}: read it with resources/read of {file['uri']}, "
        f"download it with GET /data/{data_id} on this service with your credential (Range "
        "requests work), or page through it with the tool read_data."
    )
    assert file == {
        "uri": file["uri"],
        "name": name,
        "media_type": media_type,
        "size": len(content),
        "expires": file["expires"],
        "download": f"/data/{data_id}",
        "how_to_read": described,
    }
    [_, link] = result.content
    assert link == ResourceLink(
        type="resource_link",
        uri=file["uri"],
        name=name,
        mime_type=media_type,
        size=len(content),
        description=described,
    )
    [contents] = read.contents
    if text:
        assert isinstance(contents, TextResourceContents)
        assert contents.text.encode() == content
    else:
        assert isinstance(contents, BlobResourceContents)
        assert base64.b64decode(contents.blob) == content
    assert contents.mime_type == media_type


async def test_the_resource_template_is_listed() -> None:
    async with connect(server_of()) as session:
        templates = (await session.list_resource_templates()).resource_templates
    assert [(template.uri_template, template.name) for template in templates] == [
        ("mcp-data://{id}", "kept_data")
    ]


async def test_a_sync_tool_keeps_data_from_its_thread() -> None:
    async with connect(server_of()) as session:
        result = await call(session, {"size": 1000}, tool="kept_thread")
        read = await session.read_resource(result.structuredContent["file"]["uri"])
    [contents] = read.contents
    assert isinstance(contents, BlobResourceContents)
    assert base64.b64decode(contents.blob) == kept_content(1000, False)


@pytest.mark.parametrize("source", ["bytes", "stream", "file"])
@pytest.mark.parametrize("then", ["refuse", "unlinked", "raise", "oversize"])
async def test_a_call_that_answers_is_error_or_links_nothing_keeps_nothing(
    then: str, source: str
) -> None:
    """Whatever the tool kept, as it came or at its answer: a ToolError, an answer that links
    nothing, an exception, and an answer over MCP_MAX_RESULT_BYTES after the data was
    written (the answer is then result_too_large) leave no object and count nothing."""
    server = server_of(max_result_bytes=1_000_000)
    async with connect(server) as session:
        result = await call(session, {"size": 1_500_000, "then": then, "source": source})
        left = await left_behind(server)
    assert [item.type for item in result.content] == ["text"]
    assert result.isError == (then != "unlinked")
    if then == "oversize":
        assert result.structuredContent["error"] == "result_too_large"
    assert left == (0, [])


@pytest.mark.parametrize("source", ["bytes", "stream", "file"])
async def test_an_async_tool_keeps_each_source_whole_and_its_count_is_its_size(
    source: str,
) -> None:
    size = 3 * 1024 * 1024 + 5  # four chunks of the store, the last of five bytes
    server = server_of()
    async with connect(server) as session:
        result = await call(session, {"size": size, "source": source})
        file = result.structuredContent["file"]
        read = await session.read_resource(file["uri"])
        counted, objects = await left_behind(server)
    [contents] = read.contents
    assert isinstance(contents, BlobResourceContents)
    assert base64.b64decode(contents.blob) == kept_content(size, False)
    assert file["size"] == size
    assert counted == size
    assert objects == [f"kept/{file['uri'][11:13]}/{file['uri'][11:]}"]
    store = state_of(server).data
    assert store is not None
    assert isinstance(store.blobs, MemoryBlobs)
    assert len(store.blobs.objects[objects[0]]) == size + 4 * OVERHEAD


@pytest.mark.parametrize("source", ["bytes", "file", "iter"])
async def test_a_sync_tool_keeps_each_source_from_its_thread(source: str) -> None:
    size = 9 * 1024 * 1024 + 1  # more than one crossing of pieces to the event loop
    async with connect(server_of()) as session:
        result = await call(session, {"size": size, "source": source}, tool="kept_thread")
        read = await session.read_resource(result.structuredContent["file"]["uri"])
    [contents] = read.contents
    assert isinstance(contents, BlobResourceContents)
    assert base64.b64decode(contents.blob) == kept_content(size, False)


async def test_a_stream_past_the_limit_stops_as_it_comes_and_leaves_nothing() -> None:
    """The tool's stream is read only until it passes MCP_MAX_DATA_BYTES, not to its end."""
    server = server_of(max_data_bytes=200_000)
    slow_service.PIECES_READ.clear()
    async with connect(server) as session:
        result = await call(session, {"size": 2_000_000, "source": "stream"})
        left = await left_behind(server)
    assert result.structuredContent == {
        "error": "data_too_large",
        "detail": "The data 'data.bin' grew past 200.0 kB (200000 bytes), more than this "
        "service keeps at once (200.0 kB (200000 bytes), MCP_MAX_DATA_BYTES): ask for less at "
        "once, such as a smaller range or fewer fields.",
    }
    assert slow_service.PIECES_READ == [4]  # 4 pieces of 64 KiB: 262,144 bytes
    assert left == (0, [])


async def test_a_stream_that_breaks_leaves_nothing_on_a_directory(tmp_path: Path) -> None:
    """A tool's stream that fails after 12.5 MiB, 8 MiB of it written: the call answers the
    exception, and the directory keeps no file of it, the ledger no count."""
    server = server_of(data_url=str(tmp_path))
    async with connect(server) as session:
        result = await call(session, {"size": 40_000_000, "source": "stream", "broken": True})
        store = state_of(server).data
        assert store is not None
        counted = await store.ledger.counted("anonymous")
    assert result.isError
    assert counted == 0
    assert [
        path.name for path in tmp_path.rglob("*") if path.is_file() and "ledger" not in path.name
    ] == []


@pytest.mark.parametrize("tool", ["kept", "kept_thread"])
async def test_a_reservation_past_a_limit_is_refused_before_the_work(tool: str) -> None:
    """A reservation counts the size expected against both limits at once, and hands the
    kept datum's count back to its size once it is kept."""
    server = server_of(max_data_bytes=10**9, max_data_bytes_per_caller=10**9 + MIN_COUNTED - 1)
    async with connect(server) as session:
        over_datum = await call(session, {"size": 10, "reserve": 10**9 + 1}, tool=tool)
        within = await call(session, {"size": 10, "reserve": 10**9}, tool=tool)
        over_caller = await call(session, {"size": 10, "reserve": 10**9}, tool=tool)
        counted, _ = await left_behind(server)
    assert over_datum.isError
    assert "is 1.0 GB (1000000001 bytes), more than this service keeps at once" in str(
        over_datum.content[0]
    )
    assert not within.isError
    assert over_caller.isError
    assert "MCP_MAX_DATA_BYTES_PER_CALLER" in str(over_caller.content[0])
    assert (
        counted == MIN_COUNTED
    )  # the kept datum, counted at its size (its reservation given back)


async def test_empty_data_counts_its_least() -> None:
    server = server_of(max_data_bytes_per_caller=3 * MIN_COUNTED)
    async with connect(server) as session:
        answers = [await call(session, {"size": 0}) for _ in range(4)]
        read = await session.read_resource(answers[0].structuredContent["file"]["uri"])
    assert [answer.isError for answer in answers] == [False, False, False, True]
    assert base64.b64decode(read.contents[0].blob) == b""


async def test_the_limits_of_a_datum_and_of_a_caller_hold_at_and_one_byte_over() -> None:
    server = server_of(max_data_bytes=200_000, max_data_bytes_per_caller=350_000)
    async with connect(server) as session:
        at_the_limit = await call(session, {"size": 200_000})
        over = await call(session, {"size": 200_001})
        second = await call(session, {"size": 80_000})
        past_the_callers = await call(session, {"size": 70_001})
        to_the_callers = await call(session, {"size": 70_000})
    assert not at_the_limit.isError
    assert not second.isError
    assert not to_the_callers.isError
    assert over.isError
    assert over.structuredContent == {
        "error": "data_too_large",
        "detail": "The data 'data.bin' is 200.0 kB (200001 bytes), more than this service "
        "keeps at once (200.0 kB (200000 bytes), MCP_MAX_DATA_BYTES): ask for less at once, "
        "such as a smaller range or fewer fields.",
    }
    assert past_the_callers.isError
    assert past_the_callers.structuredContent == {
        "error": "data_too_large",
        "detail": "The data 'data.bin' (70.0 kB (70001 bytes)) would bring the data kept for "
        "this caller to 350.0 kB (350001 bytes), more than this service keeps for one caller "
        "(350.0 kB (350000 bytes), MCP_MAX_DATA_BYTES_PER_CALLER): read what was kept for you "
        "earlier and let it expire (MCP_DATA_TTL), or ask for less at once.",
    }


@pytest.mark.parametrize("source", ["bytes", "file"])
async def test_calls_at_once_keep_exactly_a_callers_bytes(source: str) -> None:
    """Twenty calls at once, each keeping 100,000 bytes whose size is known before they are
    written, against 500,000 a caller: exactly five keep theirs, and the rest answer
    data_too_large."""
    server = server_of(max_data_bytes_per_caller=500_000)
    arguments = {"size": 100_000, "source": source}
    async with connect(server) as session:
        results = await asyncio.gather(*(call(session, arguments) for _ in range(20)))
    kept = [result for result in results if not result.isError]
    refused = {result.structuredContent["error"] for result in results if result.isError}
    assert (len(kept), refused) == (5, {"data_too_large"})


async def test_two_data_of_one_call_are_kept_and_linked_both() -> None:
    async with connect(server_of()) as session:
        result = await call(session, {"size": 10, "then": "twice"})
        first, other = result.structuredContent["file"], result.structuredContent["other"]
        reads = [await session.read_resource(link["uri"]) for link in (first, other)]
    assert [item.type for item in result.content] == ["text", "resource_link", "resource_link"]
    assert first["uri"] != other["uri"]
    assert [read.contents[0].blob for read in reads] == [
        base64.b64encode(kept_content(10, False)).decode()
    ] * 2


async def test_unknown_and_expired_data_answer_alike() -> None:
    async with connect(server_of(data_ttl=0.5)) as session:
        result = await call(session, {"size": 10})
        uri = result.structuredContent["file"]["uri"]
        await session.read_resource(uri)
        await anyio.sleep(1.6)  # kept until the whole second its link names
        errors = []
        for asked in (uri, "mcp-data://" + "A" * 32, "mcp-data://nonsense"):
            with pytest.raises(MCPError) as raised:
                await session.read_resource(asked)
            errors.append((raised.value.error.code, raised.value.error.message))
    message = (
        "No data at this uri is kept for you: it expired (data is kept 0.5 seconds, "
        "MCP_DATA_TTL), or it was never kept for you. Call the tool that made it again, and "
        "read its data within that time."
    )
    assert errors == [(-32602, message)] * 3


async def test_a_datum_larger_than_one_read_answers_is_read_in_other_ways() -> None:
    async with connect(server_of(max_result_bytes=4000)) as session:
        result = await call(session, {"size": 3000})  # 4000 characters of base64
        fits = await session.read_resource(result.structuredContent["file"]["uri"])
        result = await call(session, {"size": 3001})
        file = result.structuredContent["file"]
        with pytest.raises(MCPError) as raised:
            await session.read_resource(file["uri"])
    assert len(fits.contents) == 1
    data_id = file["uri"].removeprefix("mcp-data://")
    assert raised.value.error.message == (
        f"{file['uri']} (data.bin) is 3.0 kB (3001 bytes), more than one resources/read answers "
        f"(4.0 kB (4000 bytes), MCP_MAX_RESULT_BYTES): download it with GET /data/{data_id} on "
        "this service (Range requests work), or read it in pages with the tool read_data."
    )


@pytest.mark.parametrize("text", [True, False], ids=["text", "binary"])
async def test_read_data_pages_put_together_are_the_datum(text: bool) -> None:
    size = 400 if text else 2500
    content = kept_content(size, text)
    if text:  # a page of 1,001 bytes ends inside a two-byte character: the pages move
        assert content[1001] & 0xC0 == 0x80
    chars = 1001 if text else 1000
    async with connect(server_of(data_page_chars=chars)) as session:
        result = await call(session, {"size": size, "text": text})
        uri = result.structuredContent["file"]["uri"]
        first = (await call(session, {"uri": uri}, tool="read_data")).structuredContent
        pages = [first]
        for page in range(2, first["pages"] + 1):
            pages.append(
                (await call(session, {"uri": uri, "page": page}, "read_data")).structuredContent
            )
        past = await call(session, {"uri": uri, "page": first["pages"] + 1}, tool="read_data")
        unknown = await call(session, {"uri": "mcp-data://" + "A" * 32}, tool="read_data")
    if text:
        assert b"".join(page["text"].encode() for page in pages) == content
        assert first["pages"] == -(-len(content) // 1001)
    else:
        assert b"".join(base64.b64decode(page["text"]) for page in pages) == content
        assert first["pages"] == -(-len(content) // 750)
    assert all(len(page["text"]) <= chars for page in pages)
    assert next(page["first_byte"] for page in pages) == 0
    assert pages[-1]["last_byte"] == len(content) - 1
    assert [
        (page["last_byte"] + 1, following["first_byte"])
        for page, following in itertools.pairwise(pages)
        if page["last_byte"] + 1 != following["first_byte"]
    ] == []
    assert first["encoding"] == ("utf-8" if text else "base64")
    assert first["message"].startswith(f"Page 1 of {first['pages']} of data.bin (")
    assert first["message"].endswith(" Read page 2 next.")
    assert past.structuredContent["error"] == "invalid_argument"
    assert unknown.structuredContent["error"] == "not_found"


@pytest.mark.parametrize(
    ("toolsets", "setting", "served"),
    [
        ((DATA,), "auto", True),
        ((ANSWERS,), "auto", False),
        ((DATA,), "false", False),
        ((ANSWERS,), "true", True),
    ],
)
def test_read_data_is_served_as_the_setting_says(
    toolsets: tuple[Toolset, ...], setting: str, served: bool
) -> None:
    server = server_of(*toolsets, data_tool=setting)
    listed = {tool.name for tool in asyncio.run(server.list_tools())}
    assert ("read_data" in listed) == served
    assert "read_data" not in {entry["name"] for entry in live_contract(server)["tools"]}


def test_keep_data_outside_a_call_says_where_to_call_it() -> None:
    with pytest.raises(RuntimeError, match=r"inside mcp_runtime\.testing\.kept_data\(\)$"):
        keep_data(b"x", name="x.bin")
    with kept_data() as kept:
        link = keep_data("é", name="notes.txt")
        with pytest.raises(ValueError, match=r"^keep_data's name must be a file name"):
            keep_data(b"x", name="../x")
        with pytest.raises(ValueError, match=r"^keep_data's media_type 'csv' is not"):
            keep_data(b"x", name="x", media_type="csv")
        with pytest.raises(ValueError, match=r"^keep_data needs a name"):
            keep_data(b"x", name=" ")
        with pytest.raises(TypeError, match=r"^keep_data keeps bytes, str, the path of a file"):
            keep_data(7, name="x")  # type: ignore[arg-type]
    assert kept.text(link) == "é"
    assert (link["media_type"], link["size"]) == ("text/plain", 2)


async def test_kept_data_in_a_test_keeps_what_a_served_call_keeps(tmp_path: Path) -> None:
    """In an async test, as in an async tool served: ``keep_data`` keeps bytes and text,
    and names ``keep_data_async`` for a file or an iterator, which keeps them."""
    path = tmp_path / "rows.csv"
    path.write_text("a,b\n1,2\n")
    with kept_data() as kept:
        with pytest.raises(TypeError, match=r"await keep_data_async\(\.\.\.\) to keep a file"):
            keep_data(path, name="rows.csv")
        link = await keep_data_async(path, name="rows.csv")
        streamed = await keep_data_async(_chunks(b"x", 3), name="x.bin")
    assert kept.text(link) == "a,b\n1,2\n"
    assert kept.content(streamed) == b"xxx"


async def _chunks(chunk: bytes, count: int) -> AsyncIterator[bytes]:
    for _ in range(count):
        yield chunk


@pytest.mark.parametrize("before", [0, 100])
async def test_a_keep_costs_the_ledger_the_same_whatever_its_caller_kept(
    before: int, tmp_path: Path
) -> None:
    """One keep (its reservation, its count, its commit) costs the ledger the same eleven
    statements whatever its caller kept before (nothing, or 100 data), each reading or
    writing one row by its key: none walks the caller's data."""
    server = server_of(data_url=str(tmp_path))
    store = state_of(server).data
    assert store is not None
    for number in range(before):
        data_id = f"{number:032d}"
        assert await store.ledger.reserve(data_id, "anonymous", 10, time.time() + 60, 10**9) is None
    ledger = store.ledger
    assert isinstance(ledger, SqliteLedger)
    statements: list[str] = []
    ledger._opened().set_trace_callback(statements.append)
    async with connect(server) as session:
        result = await call(session, {"size": 10, "source": "stream"})
    assert not result.isError
    assert len(statements) == 11, statements
    keyed = ("WHERE id = ", "WHERE owner = ", "VALUES (", "BEGIN", "COMMIT")
    assert [sql for sql in statements if not any(key in sql for key in keyed)] == []


async def test_a_store_that_cannot_be_written_is_answered_with_an_error_id_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """MCP_DATA_URL naming a place under a file: the call answers unavailable with an
    error id, the log says where and what to check, and nothing is left held."""
    (tmp_path / "a-file").write_text("")
    server = server_of(data_url=str(tmp_path / "a-file" / "data"))
    async with connect(server) as session:
        result = await call(session, {"size": 10, "source": "stream"})
    detail = result.structuredContent["detail"]
    [error_id] = re.findall(r"error id ([0-9a-f]{12})", detail)
    assert result.structuredContent["error"] == "unavailable"
    [logged] = [record.getMessage() for record in caplog.records if error_id in record.getMessage()]
    assert f"the directory {tmp_path / 'a-file' / 'data'}" in logged
    assert "NotADirectoryError" in logged
    assert "check MCP_DATA_URL, that the service may write there" in logged
    store = state_of(server).data
    assert store is not None
    assert store.held == {}
