"""Kept data over plain HTTP: ``GET /data/<id>`` (and ``HEAD``), resumable.

A program that wants the file a tool kept for its caller downloads it here with the
caller's credential (its bearer token under ``MCP_AUTH=oauth``), streamed from the data
store a few chunks at a time: the service never holds the file, and reads only the chunks
a range needs, and no more once the client has gone. Its validators (``ETag``,
``Last-Modified``), conditional requests and ranges follow RFC 9110
(:mod:`mcp_runtime.serving.ranges`), so ``curl -C -``, ``wget -c`` and ranged downloaders
such as ``multiurl`` resume a cut download; ``Content-Disposition`` names the file.
Another caller's data answers 404, as unknown or expired data does. With
``MCP_DATA_SIGNED_URLS``, a download is redirected (307) to a URL the object store signs
for :data:`SIGNED_SECONDS`.
"""

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_runtime.auth.oauth import caller_of, owner_digest
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.data.keeping import DOWNLOAD_PATH, data_id_of
from mcp_runtime.data.store import DataStore, DataStoreError, KeptData, content_disposition
from mcp_runtime.sdk.bearer import BearerCheck
from mcp_runtime.serving.data_reads import not_found
from mcp_runtime.serving.front.answers import respond
from mcp_runtime.serving.ranges import Answer, Validators, decide

__all__ = ["SIGNED_SECONDS", "Downloads"]

logger = logging.getLogger(__name__)

SIGNED_SECONDS = 300
"""How long a signed URL a download is redirected to reads the data."""


class Downloads:
    """Answers ``GET`` and ``HEAD`` of ``/data/<id>`` from ``store`` (see the module's
    docstring), checking the bearer token with ``bearer`` when the service verifies them."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        store: DataStore,
        bearer: BearerCheck | None,
        settings: ServiceSettings,
    ) -> None:
        self.app = app
        self.store = store
        self.bearer = bearer
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(DOWNLOAD_PATH):
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            detail = "kept data is read with GET (or HEAD): GET /data/<id>"
            await respond(send, 405, {"error": "method_not_allowed", "detail": detail})
            return
        caller = None
        if self.bearer is not None:
            access = await self.bearer.check(scope, receive, send)
            if access is None:
                return  # refused: the SDK's 401 is sent
            caller = caller_of(access)
        data_id = data_id_of(scope["path"])
        try:
            kept = None
            if data_id is not None:
                kept = await self.store.find(owner_digest(caller), data_id)
            if kept is None:
                detail = not_found(self.settings)
                await respond(send, 404, {"error": "not_found", "detail": detail})
                return
            url = await self.store.signed_url(kept, SIGNED_SECONDS)
        except DataStoreError as exc:
            detail = (
                f"The service could not read the data from its store (error id "
                f"{exc.error_id}; the service's log says why): download it again later."
            )
            await respond(send, 503, {"error": "unavailable", "detail": detail})
            return
        if url is not None:
            headers = [(b"location", url.encode()), (b"cache-control", b"private, no-store")]
            await send({"type": "http.response.start", "status": 307, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await self._send(kept, scope, receive, send)

    async def _send(self, kept: KeptData, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope["headers"]
        }
        validators = Validators(f'"{kept.version}"', int(kept.kept_at))
        answer = decide(scope["method"], headers, kept.size, validators)
        fields = [
            (b"etag", validators.etag.encode()),
            (b"last-modified", validators.last_modified_text.encode()),
            (b"cache-control", b"private, no-store"),
            (b"accept-ranges", b"bytes"),
        ]
        described = [
            (b"content-type", kept.media_type.encode("latin-1", errors="replace")),
            (b"content-disposition", content_disposition(kept.name).encode()),
        ]
        if answer.status in (304, 412, 416):
            if answer.status == 416:
                fields.append((b"content-range", f"bytes */{kept.size}".encode()))
            fields.append((b"content-length", b"0"))
            await send({"type": "http.response.start", "status": answer.status, "headers": fields})
            await send({"type": "http.response.body", "body": b""})
            return
        parts, length, boundary = _parts(kept, answer)
        if answer.status == 200:
            fields += described
        elif len(answer.ranges) == 1:
            start, end = answer.ranges[0]
            fields.append((b"content-range", f"bytes {start}-{end - 1}/{kept.size}".encode()))
            if not answer.if_range:
                fields += described
        else:
            kind = f"multipart/byteranges; boundary={boundary}".encode()
            fields.append((b"content-type", kind))
        fields.append((b"content-length", str(length).encode()))
        await send({"type": "http.response.start", "status": answer.status, "headers": fields})
        if scope["method"] == "HEAD":
            await send({"type": "http.response.body", "body": b""})
            return
        await self._stream(kept, parts, receive, send)

    async def _stream(
        self,
        kept: KeptData,
        parts: list[tuple[bytes, int, int]],
        receive: Receive,
        send: Send,
    ) -> None:
        """Send each part (its heading, then its bytes from the store), until the last or
        until the client leaves."""
        left = asyncio.Event()
        watch = asyncio.get_running_loop().create_task(_watch_leaving(receive, left))
        try:
            for heading, start, end in parts:
                if heading:
                    await send({"type": "http.response.body", "body": heading, "more_body": True})
                async for piece in self._pieces(kept, start, end, left):
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
            if not left.is_set():
                await send({"type": "http.response.body", "body": b""})
        except (LookupError, DataStoreError) as exc:
            # The response has begun: it ends short, and the client sees it cut.
            what = "could not be read"
            if isinstance(exc, LookupError):
                what = "was removed while it was read"
            logger.warning("a download of kept data ended early: the data %s", what)
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch

    async def _pieces(
        self, kept: KeptData, start: int, end: int, left: asyncio.Event
    ) -> AsyncIterator[bytes]:
        async for piece in self.store.read(kept, start, end):
            if left.is_set():
                return
            yield piece


def _parts(kept: KeptData, answer: Answer) -> tuple[list[tuple[bytes, int, int]], int, str]:
    """The parts of the body (a heading, and the bytes ``[start, end)``), its length, and
    the boundary of a ``multipart/byteranges`` body."""
    if answer.status == 200:
        return [(b"", 0, kept.size)], kept.size, ""
    if len(answer.ranges) == 1:
        start, end = answer.ranges[0]
        return [(b"", start, end)], end - start, ""
    boundary = secrets.token_hex(12)
    kind = kept.media_type.encode("latin-1", errors="replace")
    parts = []
    length = 0
    for number, (start, end) in enumerate(answer.ranges):
        lead = b"\r\n" if number else b""
        heading = (
            lead
            + f"--{boundary}\r\n".encode()
            + b"content-type: "
            + kind
            + b"\r\n"
            + f"content-range: bytes {start}-{end - 1}/{kept.size}\r\n\r\n".encode()
        )
        parts.append((heading, start, end))
        length += len(heading) + end - start
    closing = f"\r\n--{boundary}--\r\n".encode()
    parts.append((closing, 0, 0))
    return parts, length + len(closing), boundary


async def _watch_leaving(receive: Receive, left: asyncio.Event) -> None:
    """Set ``left`` once the client disconnects."""
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            left.set()
            return
