"""How each request is answered: one ``application/json`` body, or an SSE stream.

Clients read a JSON body of any size, but most read a server-sent event only up to
1 MiB by default (the MCP Python SDK's and fastmcp's clients), and an SSE stream costs
the server more. So a request is answered one JSON body unless its answer must stream:
only a request that asks for progress (a ``_meta.progressToken``) can have anything
sent before its result. Its stream opens when the first message other than its
result is sent; until then nothing is, and a result that comes first is answered one
JSON body, as any other. The JSON-RPC message is the same either way.

A stateful session's requests of the ``initialize`` era are answered as the SDK
answers them (a session may send its own requests to the client mid-call), each
through the same wait for a first message before its stream opens.

The choice is passed down as the app a request is handed to: the SDK's app that
streams, or the rest of the front before the SDK's app that answers one JSON body
(:func:`mcp_runtime.sdk.http.answer_apps` builds both).
"""

import asyncio
import json
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_runtime.execution.alarms import alarm_after
from mcp_runtime.sdk.http import accepts_sse, starts_as_answer
from mcp_runtime.serving.front.posted import Posted

__all__ = ["AnswerForm", "SseDeferral", "streams"]

EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
PARSED_AT_MOST = 65536
WATCH_AFTER = 0.05  # seconds a JSON answer's call runs before its client is watched


def _is_request(message: object) -> bool:
    return isinstance(message, dict) and "method" in message and "id" in message


def streams(message: object) -> bool:
    """Whether the answer to ``message`` may stream: it is a request asking for progress."""
    if not _is_request(message):
        return False
    assert isinstance(message, dict)
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get("progressToken") is not None


class AnswerForm:
    """Chooses, before the SDK serves a POST, how it answers: one JSON body (handed to
    ``app``, the rest of the front before the SDK's app that answers so), or a stream
    that opens only once the call sends something before its result (handed to
    ``streaming``, the SDK's app that streams, through :class:`SseDeferral`). Every
    other request, and the app's lifespan, goes to ``streaming``.

    A call answered one JSON body is cancelled when its client leaves before the answer,
    in either era, as the SDK cancels a streamed one (a 2026-07-28 client cancels a call
    by leaving).
    """

    def __init__(self, app: ASGIApp, *, streaming: ASGIApp, path: str, stateless: bool) -> None:
        self.app = app
        self.streaming = streaming
        self.path = path
        self.stateless = stateless

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.streaming(scope, receive, send)
            return
        posted = Posted.of(scope)
        message = posted.message
        session = not posted.modern and not self.stateless
        if session or (streams(message) and accepts_sse(scope)):
            await self.streaming(scope, receive, SseDeferral(send))
        elif _is_request(message):
            await _cancelled_when_the_client_leaves(self.app, scope, receive, send)
        else:
            await self.app(scope, receive, send)


async def _cancelled_when_the_client_leaves(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send
) -> None:
    """Serve the request with ``app``, cancelled if the client leaves before its answer.

    The front's parts before this one read the whole body: the first message received
    is all of it, and the next one tells the client has left (or the answer was sent).
    """
    watch = LeaveWatch(await receive(), receive)
    timer = alarm_after(WATCH_AFTER, watch.start)
    try:
        with watch:
            await app(scope, watch.receive, watch.sending(send))
    finally:
        timer.clear()
        watch.stop()


class LeaveWatch:
    """Watches, once :meth:`start` is called, for the client of one request to leave
    before its answer is sent, and then cancels the task serving it, inside its ``with``
    block.

    The cancellation is sent once, as :func:`asyncio.timeout` sends its own, and leaving
    the block takes back that one only: a cancellation from anything else goes on as it
    came. Started only for a call still running after :data:`WATCH_AFTER` seconds: most
    calls are answered sooner, and cost no watching task.
    """

    __slots__ = (
        "answered",
        "cancelled",
        "cancelling",
        "gone",
        "handed",
        "left",
        "served",
        "task",
        "upstream",
    )

    def __init__(self, whole: Message, upstream: Receive) -> None:
        self.handed: list[Message] = [whole]
        self.upstream = upstream
        self.left: asyncio.Event | None = None  # made once the app waits for the client
        self.gone = False
        self.answered = False
        self.cancelled = False
        self.served: asyncio.Task[object] | None = None
        self.cancelling = 0
        self.task: asyncio.Task[None] | None = None

    def __enter__(self) -> "LeaveWatch":
        self.served = asyncio.current_task()
        if self.served is not None:
            self.cancelling = self.served.cancelling()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> bool:
        served, self.served = self.served, None
        if not self.cancelled or served is None:
            return False
        return served.uncancel() <= self.cancelling and exc_type is asyncio.CancelledError

    async def receive(self) -> Message:
        """The app's ``receive``: the whole body, then a disconnect once the client left."""
        if self.handed:
            return self.handed.pop()
        self.start()
        if not self.gone:
            if self.left is None:
                self.left = asyncio.Event()
            await self.left.wait()
        return {"type": "http.disconnect"}

    def sending(self, send: Send) -> Send:
        """The app's ``send``: notes when the answer is whole."""

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                self.answered = True
            await send(message)

        return sending

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._watch())

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def _watch(self) -> None:
        while (await self.upstream())["type"] != "http.disconnect":
            pass
        self.gone = True
        if self.left is not None:
            self.left.set()
        if not self.answered and self.served is not None and not self.cancelled:
            self.cancelled = True
            self.served.cancel()


class SseDeferral:
    """A ``send`` that holds back an SSE answer until it carries a message other than the
    result: a result that comes first goes out as one ``application/json`` body (the
    stream's other headers kept), and comments and pings sent before it are dropped.
    Any other answer passes as it is."""

    __slots__ = ("decided", "held", "position", "send", "start")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.start: Message | None = None
        self.held = b""
        self.position = 0
        self.decided = False

    async def __call__(self, message: Message) -> None:
        if self.decided:
            await self.send(message)
            return
        if message["type"] == "http.response.start" and _is_sse(message):
            self.start = message
            return
        if message["type"] != "http.response.body" or self.start is None:
            self.decided = True
            await self.send(message)
            return
        self.held += message.get("body", b"")
        more = bool(message.get("more_body", False))
        while (end := EVENT_END.search(self.held, self.position)) is not None:
            data = _event_data(self.held[self.position : end.start()])
            self.position = end.end()
            if data is None:
                continue  # a comment, a ping, an event without data
            if _is_answer(data):
                await self._answer_json(data)
            else:
                await self._open_stream(more)
            return
        if not more:
            await self._open_stream(more)

    async def _answer_json(self, data: bytes) -> None:
        assert self.start is not None
        self.decided = True
        headers = [
            (name, value)
            for name, value in self.start.get("headers", [])
            if name.lower() not in (b"content-type", b"content-length", b"cache-control")
        ]
        headers += [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
        ]
        status = self.start["status"]
        await self.send({"type": "http.response.start", "status": status, "headers": headers})
        await self.send({"type": "http.response.body", "body": data, "more_body": False})
        self.send = _discard
        self.held = b""

    async def _open_stream(self, more: bool) -> None:
        assert self.start is not None
        self.decided = True
        await self.send(self.start)
        await self.send({"type": "http.response.body", "body": self.held, "more_body": more})
        self.held = b""


async def _discard(message: Message) -> None:
    """Drops what the SDK sends after a result already answered as JSON."""


def _is_sse(start: Message) -> bool:
    for name, value in start.get("headers", []):
        if name.lower() == b"content-type":
            return bool(value.lower().startswith(b"text/event-stream"))
    return False


def _event_data(event: bytes) -> bytes | None:
    """The data of one SSE event (its ``data:`` lines joined); None when it has none."""
    lines = event.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    data = [line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:")]
    joined = b"\n".join(data)
    return joined or None


def _is_answer(data: bytes) -> bool:
    """Whether an event's data is a JSON-RPC answer (a result or an error), not a
    notification or a request of the server's.

    Its head tells, as the SDK writes an answer (:func:`~mcp_runtime.sdk.http.starts_as_answer`).
    Any other short message is parsed; a long one that does not start so is not taken
    for an answer (its stream opens, as the SDK sent it).
    """
    if starts_as_answer(data):
        return True
    if len(data) > PARSED_AT_MOST:
        return False
    try:
        message = json.loads(data)
    except ValueError:
        return False
    return (
        isinstance(message, dict)
        and "method" not in message
        and "id" in message
        and ("result" in message or "error" in message)
    )
