"""The body of a POST: whole, within its size and time limits, and UTF-8."""

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_runtime.execution.alarms import TimeLimit
from mcp_runtime.serving.front.answers import (
    INVALID_REQUEST,
    PARSE_ERROR,
    error_answer,
    respond_raw,
)
from mcp_runtime.serving.front.posted import Posted

__all__ = ["BodyLimits"]

logger = logging.getLogger(__name__)


class BodyLimits:
    """Reads a POST's whole body before the parts after it see it, and refuses one that
    grows past ``max_body`` bytes (413), whose next part does not arrive within
    ``read_timeout`` seconds (408, ``connection: close``) or that is not UTF-8 (400, a
    parse error). A client that leaves before its body ends leaves one INFO line. The
    body passes on whole, in one message, and with its text in the request's :class:`Posted`."""

    def __init__(self, app: ASGIApp, *, max_body: int, read_timeout: float) -> None:
        self.app = app
        self.max_body = max_body
        self.read_timeout = read_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        read = await self._body(receive, send)
        if read is None:
            return
        body, text = read
        posted = Posted.of(scope)
        posted.body, posted.text = body, text
        whole: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, _replay(whole, receive), send)

    async def _body(self, receive: Receive, send: Send) -> tuple[bytes, str] | None:
        """The whole body, and its text; None once a refusal is sent, or the client has left."""
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            try:
                with TimeLimit(self.read_timeout):
                    message = await receive()
            except TimeoutError:
                error = (
                    "Request timeout: the request body stopped arriving; the limit is "
                    f"{self.read_timeout:g} seconds between its parts"
                )
                answer = error_answer(INVALID_REQUEST, error)
                await respond_raw(send, 408, answer, [(b"connection", b"close")])
                return None
            if message["type"] != "http.request":
                logger.info("client left before sending the whole request body (%d bytes)", size)
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                error = f"Request body too large: the limit is {self.max_body} bytes"
                await respond_raw(send, 413, error_answer(INVALID_REQUEST, error))
                return None
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            error = "Parse error: the request body is not UTF-8 JSON"
            await respond_raw(send, 400, error_answer(PARSE_ERROR, error))
            return None
        return body, text


def _replay(whole: Message, receive: Receive) -> Receive:
    """A ``receive`` that hands out ``whole`` first, then defers to ``receive``."""
    pending = [whole]

    async def replaying() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replaying
