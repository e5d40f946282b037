"""Data a tool keeps for its caller (``keep_data``), in this process: the link in its typed
result and beside its text, ``resources/read`` in both eras, the pages of ``read_data``,
the limits at and one byte over, expiry, and nothing kept for a call that answers
``isError``. Over HTTP (downloads, ``Range``, callers, Redis): test_kept_data_http.py."""

import asyncio
import base64
import importlib.util
import itertools
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import BlobResourceContents, ResourceLink, TextResourceContents

from mcp_runtime import keep_data
from mcp_runtime.config.settings import load_settings
from mcp_runtime.contract.snapshot import live_contract
from mcp_runtime.contract.toolsets import Toolset
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
    return build_server(
        toolsets or (DATA,), name="kept", settings=load_settings(auth="none", **settings)
    )


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


@pytest.mark.parametrize("then", ["refuse", "unlinked"])
async def test_a_call_that_answers_is_error_or_links_nothing_keeps_nothing(then: str) -> None:
    server = server_of()
    async with connect(server) as session:
        result = await call(session, {"size": 100, "then": then})
        keys = await state_of(server).data._open()
        stored = await keys.keys("mcp-data:*")
    assert [item.type for item in result.content] == ["text"]
    assert result.isError == (then == "refuse")
    assert stored == []


async def test_the_limits_of_a_datum_and_of_a_caller_hold_at_and_one_byte_over() -> None:
    server = server_of(max_data_bytes=1000, max_data_bytes_per_caller=2500)
    async with connect(server) as session:
        at_the_limit = await call(session, {"size": 1000})
        over = await call(session, {"size": 1001})
        second = await call(session, {"size": 1000})
        past_the_callers = await call(session, {"size": 501})
        to_the_callers = await call(session, {"size": 500})
    assert not at_the_limit.isError
    assert not second.isError
    assert not to_the_callers.isError
    assert over.isError
    assert over.structuredContent == {
        "error": "data_too_large",
        "detail": "The data 'data.bin' is 1.0 kB (1001 bytes), more than this service keeps "
        "at once (1.0 kB (1000 bytes), MCP_MAX_DATA_BYTES): ask for less at once, such as a "
        "smaller range or fewer fields.",
    }
    assert past_the_callers.isError
    assert past_the_callers.structuredContent == {
        "error": "data_too_large",
        "detail": "The data 'data.bin' (501 bytes) would bring the data kept for this caller to "
        "2.5 kB (2501 bytes), more than this service keeps for one caller (2.5 kB (2500 bytes), "
        "MCP_MAX_DATA_BYTES_PER_CALLER): read what was kept for you earlier and let it expire "
        "(MCP_DATA_TTL), or ask for less at once.",
    }


async def test_calls_at_once_keep_exactly_a_callers_bytes() -> None:
    """Twenty calls at once, each keeping 1,000 bytes, against 5,000 a caller: exactly five
    keep theirs, and the rest answer data_too_large."""
    server = server_of(max_data_bytes_per_caller=5000)
    async with connect(server) as session:
        results = await asyncio.gather(*(call(session, {"size": 1000}) for _ in range(20)))
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
    async with connect(server_of(data_ttl=1)) as session:
        result = await call(session, {"size": 10})
        uri = result.structuredContent["file"]["uri"]
        await session.read_resource(uri)
        await anyio.sleep(1.5)
        errors = []
        for asked in (uri, "mcp-data://" + "A" * 32, "mcp-data://nonsense"):
            with pytest.raises(MCPError) as raised:
                await session.read_resource(asked)
            errors.append((raised.value.error.code, raised.value.error.message))
    message = (
        "No data at this uri is kept for you: it expired (data is kept 1 seconds, "
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
        with pytest.raises(TypeError, match=r"^keep_data keeps bytes or str, not int$"):
            keep_data(7, name="x")  # type: ignore[arg-type]
    assert kept.text(link) == "é"
    assert (link["media_type"], link["size"]) == ("text/plain", 2)
