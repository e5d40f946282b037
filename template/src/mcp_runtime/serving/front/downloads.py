"""Kept data over plain HTTP: ``GET /data/<id>`` (and ``HEAD``), with ``Range`` requests.

A program that wants the file a tool kept for its caller (``keep_data``) downloads it
here with the caller's credential (its bearer token under ``MCP_AUTH=oauth``), a chunk of
the store at a time: the service never holds the whole file for a download. One byte
range (``Range: bytes=a-b``, ``a-`` or ``-n``) answers 206; a range past the end, 416; a
request for several ranges, the whole file (as HTTP allows). Another caller's data
answers 404, as unknown or expired data does.
"""

import re
from urllib.parse import quote

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_runtime.auth.oauth import caller_digest, caller_of
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.execution.kept_data import DOWNLOAD_PATH, DataStoreError, data_id_of
from mcp_runtime.sdk.bearer import BearerCheck
from mcp_runtime.serving.front.answers import respond
from mcp_runtime.serving.kept_data import not_found
from mcp_runtime.tasks.data import DataStore, KeptData

__all__ = ["Downloads", "RangeNotSatisfiableError", "byte_range"]

RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class RangeNotSatisfiableError(Exception):
    """A byte range that starts past the end of the data (or asks for its last 0 bytes)."""


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
                kept = await self.store.find(caller_digest(caller), data_id)
            if kept is None:
                detail = not_found(self.settings)
                await respond(send, 404, {"error": "not_found", "detail": detail})
                return
            await self._send(kept, scope, send)
        except DataStoreError as exc:
            detail = (
                f"The service could not read the data from its store (error id "
                f"{exc.error_id}; the service's log says why): download it again later."
            )
            await respond(send, 503, {"error": "unavailable", "detail": detail})

    async def _send(self, kept: KeptData, scope: Scope, send: Send) -> None:
        headers = {key.decode("latin-1").lower(): value for key, value in scope["headers"]}
        asked = headers.get("range")
        try:
            found = byte_range(asked.decode("latin-1"), kept.size) if asked is not None else None
        except RangeNotSatisfiableError:
            detail = f"the data has {kept.size} bytes"
            await respond(send, 416, {"error": "range_not_satisfiable", "detail": detail})
            return
        start, end = (0, kept.size) if found is None else found
        status = 200 if found is None else 206
        filename = quote(kept.name, safe="")
        fields = [
            (b"content-type", kept.media_type.encode("latin-1", errors="replace")),
            (b"content-length", str(end - start).encode()),
            (b"accept-ranges", b"bytes"),
            (b"content-disposition", f"attachment; filename*=UTF-8''{filename}".encode()),
            (b"cache-control", b"private, no-store"),
        ]
        if status == 206:
            fields.append((b"content-range", f"bytes {start}-{end - 1}/{kept.size}".encode()))
        await send({"type": "http.response.start", "status": status, "headers": fields})
        if scope["method"] == "GET":
            async for piece in self.store.read(kept, start, end):
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def byte_range(header: str, size: int) -> tuple[int, int] | None:
    """The bytes ``[start, end)`` of a ``Range`` header over ``size`` bytes; None to send
    all (no range, several, or one that is not a byte range). Raises
    :class:`RangeNotSatisfiableError`."""
    matched = RANGE.match(header.strip())
    if matched is None:
        return None
    first, last = matched.groups()
    if not first and not last:
        return None
    if not first:  # the last n bytes
        length = int(last)
        if length == 0:
            raise RangeNotSatisfiableError(header)
        return max(0, size - length), size
    start = int(first)
    if start >= size:
        raise RangeNotSatisfiableError(header)
    end = size if not last else min(int(last) + 1, size)
    return (start, end) if end > start else None
