"""Data a tool hands back by link instead of inline: kept for its caller, read apart.

A tool whose answer is data of any size (a retrieved file: CSV, NetCDF, GRIB ...) keeps
it with :func:`keep_data` and puts the :class:`DataLink` it gets in its typed result,
which stays small and validated by its ``outputSchema``. Once the tool has answered, the
runtime stores the data for the call's caller (the owner rule of tasks), on the store
tasks use (``MCP_TASKS_URL``), sealed with the service's key, for ``MCP_DATA_TTL``
seconds, and adds a ``resource_link`` item beside the answer's text. The caller reads it
with ``resources/read`` of its ``uri``, with an HTTP ``GET`` of its ``download`` path
(with the caller's credential; ``Range`` requests work), or page by page with the tool
``read_data`` (``MCP_DATA_TOOL``). Another caller's link answers as an unknown one does.
A call that answers ``isError`` keeps nothing.
"""

import math
import mimetypes
import re
import secrets
import time
from contextvars import ContextVar, Token
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from mcp_runtime.config.settings import current_settings

__all__ = [
    "DATA_SCHEME",
    "DOWNLOAD_PATH",
    "DataLimitError",
    "DataLink",
    "DataStoreError",
    "StagedData",
    "data_id_of",
    "is_text",
    "keep_data",
    "size_text",
    "staging_data",
]

DATA_SCHEME = "mcp-data"
"""The scheme of a kept datum's resource URI: ``mcp-data://<id>``."""
DOWNLOAD_PATH = "/data/"
"""Where the service serves kept data over HTTP: ``GET /data/<id>``."""
MAX_NAME_CHARS = 200
MEDIA_TYPE = re.compile(r"^[A-Za-z0-9][\w.+-]*/[A-Za-z0-9][\w.+-]*(\s*;[ -~]*)?$")
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/yaml")
DATA_ID = re.compile(r"^[A-Za-z0-9_-]{32}$")


class DataLink(TypedDict):
    """Data kept for the caller of a tool (:func:`keep_data`), as its result names it: its
    ``uri`` for ``resources/read``, its ``download`` path on the service, what it is
    (``name``, ``media_type``, ``size`` in bytes), until when it is kept (``expires``, UTC),
    and ``how_to_read`` it, in words, for an agent that reads only the answer's text."""

    uri: Annotated[str, Field(max_length=100)]
    name: Annotated[str, Field(max_length=MAX_NAME_CHARS)]
    media_type: Annotated[str, Field(max_length=200)]
    size: int
    expires: Annotated[str, Field(max_length=20)]
    download: Annotated[str, Field(max_length=100)]
    how_to_read: Annotated[str, Field(max_length=1000)]


class DataLimitError(Exception):
    """Data over the service's limits: one datum over ``MCP_MAX_DATA_BYTES``, or a caller's
    data over ``MCP_MAX_DATA_BYTES_PER_CALLER``. The call answers ``isError``
    (``data_too_large``) with this message."""


class DataStoreError(Exception):
    """The store of kept data did not keep or read it (its Redis is down or out of reach,
    or a setting is missing). The log has a line saying why, under the error id this
    exception holds."""

    def __init__(self, error_id: str) -> None:
        super().__init__(error_id)
        self.error_id = error_id


@dataclass(frozen=True)
class StagedData:
    """Data a tool kept in the call being served, to store once the tool has answered."""

    data_id: str
    content: bytes
    name: str
    media_type: str
    expires_at: float
    link: DataLink


_staged: ContextVar[list[StagedData] | None] = ContextVar("mcp_runtime_staged_data", default=None)


class staging_data:  # noqa: N801 (a context manager, named as the function it was)
    """The data the tool called inside the block keeps, in the order it kept it."""

    __slots__ = ("staged", "token")

    def __init__(self) -> None:
        self.staged: list[StagedData] = []
        self.token: Token[list[StagedData] | None] | None = None

    def __enter__(self) -> list[StagedData]:
        self.token = _staged.set(self.staged)
        return self.staged

    def __exit__(self, *_: object) -> None:
        if self.token is not None:
            _staged.reset(self.token)


def keep_data(content: bytes | str, *, name: str, media_type: str | None = None) -> DataLink:
    """Keep ``content`` (bytes, or text kept as UTF-8) for the caller of the tool call being
    served, as the file ``name`` of ``media_type`` (guessed from ``name`` when None), and
    the link to put in the tool's result (see the module's docstring).

    Raises :class:`DataLimitError` over ``MCP_MAX_DATA_BYTES``; ``ValueError`` for a blank
    or unsafe ``name`` or a malformed ``media_type``; ``TypeError`` for other content; and
    ``RuntimeError`` outside a served call (and a test's ``kept_data()``).
    """
    staged = _staged.get()
    if staged is None:
        raise RuntimeError(
            "keep_data keeps data for the caller of a tool call: call it from a tool the "
            "runtime serves (build_server); a test that calls the tool directly calls it "
            "inside mcp_runtime.testing.kept_data()"
        )
    if isinstance(content, str):
        data = content.encode("utf-8")
    elif isinstance(content, bytes | bytearray | memoryview):
        data = bytes(content)
    else:
        raise TypeError(f"keep_data keeps bytes or str, not {type(content).__name__}")
    name = _checked_name(name)
    media_type = _media_type(name, media_type, text=isinstance(content, str))
    settings = current_settings()
    if len(data) > settings.max_data_bytes:
        raise DataLimitError(
            f"The data '{name}' is {size_text(len(data))}, more than this service keeps at "
            f"once ({size_text(settings.max_data_bytes)}, MCP_MAX_DATA_BYTES): ask for less "
            "at once, such as a smaller range or fewer fields."
        )
    data_id = secrets.token_urlsafe(24)
    expires_at = time.time() + settings.data_ttl
    expires = datetime.fromtimestamp(math.ceil(expires_at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    uri, download = f"{DATA_SCHEME}://{data_id}", f"{DOWNLOAD_PATH}{data_id}"
    pages = ", or page through it with the tool read_data" if settings.data_tool != "false" else ""
    link = DataLink(
        uri=uri,
        name=name,
        media_type=media_type,
        size=len(data),
        expires=expires,
        download=download,
        how_to_read=(
            f"{name} is {size_text(len(data))} of {media_type}, kept for you until {expires}: "
            f"read it with resources/read of {uri}, download it with GET {download} on this "
            f"service with your credential (Range requests work){pages}."
        ),
    )
    staged.append(StagedData(data_id, data, name, media_type, expires_at, link))
    return link


def data_id_of(reference: str) -> str | None:
    """The id of kept data that ``reference`` (its uri, download path or id) names; None
    when it names none."""
    for prefix in (f"{DATA_SCHEME}://", DOWNLOAD_PATH):
        reference = reference.removeprefix(prefix)
    return reference if DATA_ID.match(reference) else None


def is_text(media_type: str) -> bool:
    """Whether data of ``media_type`` is text (read as text, not base64)."""
    base = media_type.split(";")[0].strip().lower()
    return base.startswith(TEXT_TYPES) or base.endswith(("+json", "+xml")) or base == "text"


def size_text(size: int) -> str:
    """``size`` bytes in words: ``5.2 MB (5242880 bytes)``."""
    if size < 1000:
        return f"{size} bytes"
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if size >= scale:
            return f"{size / scale:.1f} {unit} ({size} bytes)"
    return f"{size / 1e3:.1f} kB ({size} bytes)"


def _checked_name(name: str) -> str:
    cleaned = name.strip() if isinstance(name, str) else ""
    if not cleaned:
        raise ValueError("keep_data needs a name for the data, such as 'rainfall.csv'")
    if (
        len(cleaned) > MAX_NAME_CHARS
        or any(ch in cleaned for ch in "/\\")
        or not (cleaned.isprintable())
    ):
        raise ValueError(
            f"keep_data's name must be a file name of at most {MAX_NAME_CHARS} printable "
            "characters without / or \\, such as 'rainfall.csv'"
        )
    return cleaned


def _media_type(name: str, media_type: str | None, *, text: bool) -> str:
    if media_type is None:
        guessed, _ = mimetypes.guess_type(name, strict=False)
        media_type = guessed or ("text/plain" if text else "application/octet-stream")
    if len(media_type) > 200 or not MEDIA_TYPE.match(media_type):
        raise ValueError(
            f"keep_data's media_type {media_type!r} is not a media type such as 'text/csv' "
            "or 'application/x-netcdf'"
        )
    return media_type
