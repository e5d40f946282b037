"""The ways a caller reads the data a tool kept for it (``keep_data``), but HTTP's.

- ``resources/read`` of its ``mcp-data://<id>`` URI: text, or base64 for binary data,
  answered as one JSON body (it never streams) in both eras, up to
  ``MCP_MAX_RESULT_BYTES``; ``resources/templates/list`` names the template.
- The tool ``read_data`` (``MCP_DATA_TOOL``), for clients that have only tools: a page of
  text (``MCP_DATA_PAGE_CHARS`` characters at most), or of base64 for binary data.

``GET /data/<id>`` is :class:`mcp_runtime.serving.front.downloads.Downloads`'. Each reads
the caller's own data only: another caller's answers as an unknown one does.
"""

import base64
import math
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.tools import BaseTool, tool
from mcp.types import ResourceTemplate
from pydantic import Field

from mcp_runtime.auth.oauth import caller_of, current_caller, owner_digest
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.tool_metadata import tool_metadata
from mcp_runtime.contract.tool_result import ToolError, ToolResult
from mcp_runtime.data.keeping import (
    DATA_SCHEME,
    DataLink,
    DataStoreError,
    data_id_of,
    is_text,
    size_text,
)
from mcp_runtime.data.store import DataStore, KeptData
from mcp_runtime.sdk.context import request_token
from mcp_runtime.sdk.hooks import ServerRequestContext
from mcp_runtime.sdk.server import (
    ContractServer,
    ReadResourceContents,
    ResourceError,
    ResourceNotFoundError,
)

__all__ = [
    "DATA_TOOL",
    "DataPage",
    "data_tool",
    "declares_data_link",
    "not_found",
    "read_kept_data",
]

DATA_TOOL = "read_data"
TEMPLATE = ResourceTemplate(
    uri_template=DATA_SCHEME + "://{id}",
    name="kept_data",
    title="Data kept for you",
    description="Data a tool of this service kept for you, as its result links it "
    "(resource_link): read it within its expiry.",
)


LINK_KEYS = frozenset(DataLink.__annotations__)


def declares_data_link(schema: Any) -> bool:
    """Whether an ``outputSchema`` holds a :class:`DataLink` (an object of its keys)."""
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict) and frozenset(properties) == LINK_KEYS:
            return True
        return any(declares_data_link(value) for value in schema.values())
    if isinstance(schema, list):
        return any(declares_data_link(value) for value in schema)
    return False


def not_found(settings: ServiceSettings) -> str:
    """What a caller is told of data it cannot read: the same for an unknown, expired or
    another caller's link."""
    return (
        f"No data at this uri is kept for you: it expired (data is kept {settings.data_ttl:g} "
        "seconds, MCP_DATA_TTL), or it was never kept for you. Call the tool that made it "
        "again, and read its data within that time."
    )


def read_kept_data(server: ContractServer, store: DataStore, settings: ServiceSettings) -> None:
    """Answer ``resources/read`` of kept data on ``server`` from ``store``."""

    async def reader(uri: str, ctx: ServerRequestContext[Any, Any]) -> ReadResourceContents | None:
        if not uri.startswith(f"{DATA_SCHEME}:"):
            return None
        data_id = data_id_of(uri)
        owner = owner_digest(caller_of(request_token(ctx)))
        try:
            kept = None if data_id is None else await store.find(owner, data_id)
            if kept is None:
                raise ResourceNotFoundError(not_found(settings))
            text = is_text(kept.media_type)
            answered = kept.size if text else 4 * math.ceil(kept.size / 3)
            if answered > settings.max_result_bytes:
                raise ResourceError(
                    f"{uri} ({kept.name}) is {size_text(kept.size)}, more than one "
                    f"resources/read answers ({size_text(settings.max_result_bytes)}, "
                    f"MCP_MAX_RESULT_BYTES): download it with GET /data/{kept.data_id} on this "
                    "service (Range requests work), or read it in pages with the tool read_data."
                )
            content = await store.read_all(kept)
        except DataStoreError as exc:
            raise ResourceError(
                f"The service could not read {uri} from its store (error id {exc.error_id}; "
                "the service's log says why): read it again later."
            ) from None
        except LookupError:
            raise ResourceNotFoundError(not_found(settings)) from None
        if text:
            decoded = content.decode("utf-8", errors="replace")
            return ReadResourceContents(content=decoded, mime_type=kept.media_type)
        return ReadResourceContents(content=content, mime_type=kept.media_type)

    server.read_kept_with(reader, TEMPLATE)


Page = Annotated[str, Field(max_length=1_000_000)]


class DataPage(ToolResult):
    """A page of data kept for the caller: its ``text`` (``encoding`` utf-8, or base64 for
    binary data), which page of how many, and the bytes it covers."""

    uri: NotRequired[Annotated[str, Field(max_length=200)]]
    page: NotRequired[int]
    pages: NotRequired[int]
    first_byte: NotRequired[int]
    last_byte: NotRequired[int]
    encoding: NotRequired[Literal["utf-8", "base64"]]
    text: NotRequired[Page]


def data_tool(store: DataStore, settings: ServiceSettings) -> BaseTool:
    """The tool ``read_data``: a page of data kept for its caller, from ``store``."""
    chars = settings.data_page_chars

    @tool_metadata(title="Read kept data", read_only=True, open_world=False)
    @tool
    async def read_data(
        uri: Annotated[
            str,
            Field(
                max_length=200,
                description="The uri of the data, as a tool's result links it (mcp-data://...).",
            ),
        ],
        page: Annotated[int, Field(ge=1, description="The page to read, from 1.")] = 1,
    ) -> DataPage | ToolError:
        """Read data a tool of this service kept for you, a page at a time.

        A tool that answers with data too large for its result links it (its uri, name,
        media type and size): read it here page by page, from page 1.
        """
        data_id = data_id_of(uri.strip())
        owner = owner_digest(current_caller())
        try:
            kept = None if data_id is None else await store.find(owner, data_id)
            if kept is not None:
                return await _page_of(store, kept, page, chars)
        except DataStoreError as exc:
            detail = (
                f"The service could not read the data from its store (error id "
                f"{exc.error_id}; the service's log says why): read it again later."
            )
            return ToolError(error="unavailable", detail=detail)
        except LookupError:
            pass
        return ToolError(error="not_found", detail=not_found(settings))

    return read_data


async def _page_of(store: DataStore, kept: KeptData, page: int, chars: int) -> DataPage | ToolError:
    """Page ``page`` of ``kept``, of at most ``chars`` characters, as ``read_data`` answers."""
    text = is_text(kept.media_type)
    span = chars if text else chars // 4 * 3  # base64: 4 characters for 3 bytes
    pages = max(1, math.ceil(kept.size / span))
    if page > pages:
        return ToolError(
            error="invalid_argument",
            detail=f"{kept.name} has {pages} page(s) of at most {chars} characters: "
            f"page {page} is past its end. Read pages 1 to {pages}.",
        )
    first, last, content = await _page(store, kept, page, span, text)
    more = f" Read page {page + 1} next." if page < pages else " That is the last page."
    return DataPage(
        message=f"Page {page} of {pages} of {kept.name} ({size_text(kept.size)} of "
        f"{kept.media_type}): bytes {first} to {last}.{more}",
        uri=f"{DATA_SCHEME}://{kept.data_id}",
        page=page,
        pages=pages,
        first_byte=first,
        last_byte=last,
        encoding="utf-8" if text else "base64",
        text=content,
    )


async def _page(
    store: DataStore, kept: KeptData, page: int, span: int, text: bool
) -> tuple[int, int, str]:
    """Page ``page`` of ``kept`` (``span`` bytes a page): its first and last byte, and its
    text. A text page starts and ends on whole UTF-8 characters, each in one page only."""
    start, end = (page - 1) * span, min(page * span, kept.size)
    if not text:
        data = b"".join([piece async for piece in store.read(kept, start, end)])
        return start, end - 1, base64.b64encode(data).decode("ascii")
    # Three bytes more on each side find the character boundaries nearest the page's.
    window_start = start
    data = b"".join([piece async for piece in store.read(kept, window_start, end + 3)])
    begin = _boundary(data, 0) if page > 1 else 0
    finish = _boundary(data, end - window_start) if end < kept.size else len(data)
    return start + begin, start + finish - 1, data[begin:finish].decode("utf-8", errors="replace")


def _boundary(data: bytes, at: int) -> int:
    """The first place at or after ``at`` in ``data`` where a UTF-8 character starts."""
    while at < len(data) and data[at] & 0xC0 == 0x80:
        at += 1
    return at
