"""Liveness and readiness: ``GET /healthz`` and ``GET /readyz``."""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_runtime.execution.state import ServiceState
from mcp_runtime.serving.front.answers import respond

__all__ = ["Probes"]


class Probes:
    """Answers the probes: ``/healthz`` 200 while the process serves; ``/readyz`` 200 with
    the number of tools once the app has started, else 503 with why (``not ready``,
    ``draining``, or ``busy`` while sync tools hold every tool thread).

    It learns that the app has started, and stops, from the lifespan messages it passes on.
    """

    def __init__(self, app: ASGIApp, *, state: ServiceState, tools: int) -> None:
        self.app = app
        self.state = state
        self.tools = tools
        self.ready = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._watch_shutdown(receive), self._watch_startup(send))
        elif scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == "/healthz":
            await respond(send, 200, {"status": "ok"})
        elif scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == "/readyz":
            await self._readiness(send)
        else:
            await self.app(scope, receive, send)

    async def _readiness(self, send: Send) -> None:
        threads = self.state.threads
        if self.state.calls.draining:
            await respond(send, 503, {"status": "draining"})
        elif not self.ready:
            await respond(send, 503, {"status": "not ready"})
        elif threads.exhausted:
            busy = {"busy": threads.busy, "size": threads.size}
            await respond(send, 503, {"status": "busy", "tool_threads": busy})
        else:
            await respond(send, 200, {"status": "ready", "tools": self.tools})

    def _watch_startup(self, send: Send) -> Send:
        async def watching(message: Message) -> None:
            if message["type"] == "lifespan.startup.complete":
                self.ready = True
            await send(message)

        return watching

    def _watch_shutdown(self, receive: Receive) -> Receive:
        async def watching() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                self.ready = False
            return message

        return watching
