"""The ASGI app that serves the MCP endpoint over streamable HTTP.

The SDK's streamable HTTP app (``/mcp``) sits behind a front (:class:`ServiceApp`) that
answers first what the SDK should not see: the probes and the scrape (``/healthz``,
``/readyz``, ``/metrics``), requests while the service drains, methods a stateless
endpoint has no use for, request bodies past the limits (:class:`Refusal`) and a POST
without a valid bearer token under ``MCP_AUTH=oauth``; it cancels the call that a
posted ``notifications/cancelled`` of the 2025 revisions names (:meth:`InFlight.cancel`).
Each answer, and the setting of each limit, is in the service's ``docs/production.md``.
"""

import gc
import json
import logging
import re

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_runtime.auth.oauth import remember_request_token
from mcp_runtime.config.settings import ServiceSettings, load_settings, require_http_auth
from mcp_runtime.execution.in_flight import InFlight, Owner, owner_of
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.sdk import (
    BearerCheck,
    MCPServer,
    bearer_check,
    handshake_era,
    served_tool_names,
)
from mcp_runtime.serving.server import state_of, transport_security

__all__ = [
    "MCP_PATH",
    "ServiceApp",
    "app_from_environment",
    "http_app",
    "service_app",
]

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"  # the MCP endpoint
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def http_app(
    server: MCPServer, settings: ServiceSettings | None = None, state: ServiceState | None = None
) -> "ServiceApp":
    """``server``'s streamable HTTP app behind the front, with the limits of ``settings``,
    answering readiness and scrapes from ``state`` (the one its tools run with when None).

    Raises :class:`SettingsError` when ``MCP_AUTH=oauth`` lacks a setting it needs.
    """
    settings = settings or ServiceSettings()
    require_http_auth(settings)
    state = state if state is not None else state_of(server, settings)
    state.metrics.enabled = settings.metrics
    sdk_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=settings.stateless,
        max_request_body_size=settings.max_request_bytes,
        transport_security=transport_security(settings),
        host=settings.host,
    )
    return ServiceApp(
        sdk_app,
        state=state,
        tools=len(served_tool_names(server)),
        max_body=settings.max_request_bytes,
        max_depth=settings.max_json_depth,
        read_timeout=settings.read_timeout,
        path=MCP_PATH,
        stateless=settings.stateless,
        bearer=bearer_check(server),
        metrics=state.metrics.app() if settings.metrics else None,
    )


def service_app(settings: ServiceSettings, server: MCPServer | None = None) -> "ServiceApp":
    """The service's app as ``settings`` say, serving ``server`` (built through the gate).

    Without ``server``, as in a worker process, the process sets up its logging and
    builds the installed service's server itself: the gate runs once in each process.
    """
    from mcp_runtime.observability.logs import configure_logging
    from mcp_runtime.observability.tracing import configure_tracing
    from mcp_runtime.serving.server import build_server

    if server is None:
        configure_logging(settings.log_level, settings.log_format)
        server = build_server(settings=settings)
    configure_tracing(server.name)
    app = http_app(server, settings)
    gc.freeze()  # the app and what the imports built live as long as the process
    return app


def app_from_environment() -> "ServiceApp":
    """The app as the environment's settings say (``uvicorn --factory`` can serve it)."""
    return service_app(load_settings())


def json_rpc_error(code: int, message: str) -> bytes:
    """A JSON-RPC error answering no request in particular (its id is null)."""
    return json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    ).encode()


class ServiceApp:
    """ASGI front of the MCP app: probes, metrics, shutdown, methods and request checks."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        state: ServiceState,
        tools: int,
        max_body: int,
        max_depth: int,
        read_timeout: float,
        path: str,
        stateless: bool,
        bearer: BearerCheck | None = None,
        metrics: ASGIApp | None = None,
    ) -> None:
        self.app = app
        self.state = state
        self.tools = tools
        self.max_body = max_body
        self.max_depth = max_depth
        self.read_timeout = read_timeout
        self.path = path
        self.stateless = stateless
        self.bearer = bearer
        self.metrics = metrics
        self.ready = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._watch_shutdown(receive), self._watch_startup(send))
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        if method == "GET" and path == "/healthz":
            await respond(send, 200, {"status": "ok"})
        elif method == "GET" and path == "/readyz":
            await self._readiness(send)
        elif method == "GET" and path == "/metrics":
            await self._metrics(scope, receive, send)
        elif path == self.path and self.state.calls.draining:
            error = "Service unavailable: the server is shutting down; send the request again"
            await respond_raw(send, 503, json_rpc_error(-32000, error), [(b"connection", b"close")])
        elif path == self.path and self.stateless and method not in ("POST", "DELETE"):
            error = (
                f"Method not allowed: {method}; this stateless MCP endpoint takes POST "
                "(it has no GET stream)"
            )
            await respond_raw(send, 405, json_rpc_error(-32600, error), [(b"allow", b"POST")])
        elif method == "POST":
            await self._checked_post(scope, receive, send)
        elif method == "GET":
            await self.app(scope, receive, send)
        else:
            await self._passed_on(scope, receive, send)

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

    async def _metrics(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.metrics is None:
            detail = "metrics are off in this service (MCP_METRICS=false)"
            await respond(send, 404, {"error": "not_found", "detail": detail})
        else:
            await self.metrics(scope, receive, send)

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

    async def _passed_on(self, scope: Scope, receive: Receive, send: Send) -> None:
        requests = self.state.requests
        requests.count += 1
        try:
            await self.app(scope, receive, send)
        finally:
            requests.count -= 1

    async def _checked_post(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Counted from the first await on: shutdown waits for the request from here on,
        # its token check included (a request that passed the draining check is served).
        requests = self.state.requests
        requests.count += 1
        try:
            access = None
            if self.bearer is not None and scope["path"] == self.path:
                access = await self.bearer.check(scope, receive, send)
                if access is None:
                    return
                remember_request_token(access)
            modern = not handshake_era(scope)
            body = await self._body(receive, send, modern)
            if body is not None:
                # From 2026-07-28 a client cancels by closing its request's response stream
                # (the SDK then cancels the call); a posted cancel is answered and dropped.
                if self.stateless and not modern and b"notifications/cancelled" in body:
                    _cancel_call(self.state.calls, body, owner_of(access))
                whole: Message = {"type": "http.request", "body": body, "more_body": False}
                await self.app(scope, _replay([whole], receive), send)
        finally:
            requests.count -= 1

    async def _body(self, receive: Receive, send: Send, modern: bool) -> bytes | None:
        """The request body once it passes every check; None once a refusal is sent.

        ``modern``: the request speaks a stateless revision (2026-07-28 and later), whose
        errors to a request with an id carry an HTTP status of their own.
        """
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message: Message | None = None
            with anyio.move_on_after(self.read_timeout):
                message = await receive()
            if message is None:
                error = (
                    "Request timeout: the request body stopped arriving; the limit is "
                    f"{self.read_timeout:g} seconds between its parts"
                )
                await respond_raw(
                    send, 408, json_rpc_error(-32600, error), [(b"connection", b"close")]
                )
                return None
            if message["type"] != "http.request":
                logger.info("client left before sending the whole request body (%d bytes)", size)
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                error = f"Request body too large: the limit is {self.max_body} bytes"
                await respond_raw(send, 413, json_rpc_error(-32600, error))
                return None
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            error = "Parse error: the request body is not UTF-8 JSON"
            await respond_raw(send, 400, json_rpc_error(-32700, error))
            return None
        problem = self._json_problem(body, text, modern)
        if problem is not None:
            status, answer = problem
            await respond_raw(send, status, answer)
            return None
        return body

    def _json_problem(self, body: bytes, text: str, modern: bool) -> tuple[int, bytes] | None:
        """The status and error for a body the SDK would mishandle; None if it is fine.

        The body is parsed here (the SDK parses it again) and refused when: it nests
        too deeply; a string in it holds a lone surrogate; it is a request whose id is
        neither a string nor an integer, whose ``jsonrpc`` is not "2.0", whose method
        is not a string or whose params are not an object; or it is a ``tools/call``
        whose params are not shaped as the protocol says. Without these checks the SDK
        answers a request as a notification (202, no answer ever), with no id, or
        repeating the values. The costlier scan for depth and surrogates runs only when
        the body has more brackets than the depth limit or something that looks like a
        surrogate escape.
        """
        try:
            message = json.loads(text)
        except RecursionError:
            return Refusal(None, modern).invalid_request(self._too_deep)
        except ValueError:
            return None  # not JSON at all: the SDK answers with its parse error
        if not isinstance(message, dict):
            return None  # a batch or a bare value: the SDK refuses it
        refusal = Refusal.of(message, modern)
        if "method" in message and "id" in message and refusal.id is None:
            kind = _id_kind(message["id"])
            return refusal.invalid_request(f"`id` must be a string or an integer, not {kind}")
        deep = body.count(b"[") + body.count(b"{") > self.max_depth
        if deep or SURROGATE_ESCAPE.search(body) is not None:
            depth, lone_surrogate = _scan(message)
            if depth > self.max_depth:
                return refusal.invalid_request(self._too_deep)
            if lone_surrogate:
                return refusal.lone_surrogate(*_surrogate_path(message))
        if "method" in message and refusal.id is not None:
            if message.get("jsonrpc") != "2.0":
                return refusal.invalid_request(
                    f'`jsonrpc` must be "2.0", not {_kind(message.get("jsonrpc"))}'
                )
            if not isinstance(message["method"], str):
                return refusal.invalid_request(
                    f"`method` must be a string, not {_kind(message['method'])}"
                )
            params = message.get("params")
            if (
                params is not None
                and not isinstance(params, dict)
                and message["method"] != "tools/call"
            ):
                return refusal.answer(
                    -32602, f"Invalid params: `params` must be an object, not {_kind(params)}"
                )
        return _call_problem(message, refusal)

    @property
    def _too_deep(self) -> str:
        return f"arrays and objects are nested too deeply; the limit is {self.max_depth} levels"


class Refusal:
    """The JSON-RPC error answering one request, and its HTTP status.

    The error carries the request's id when it has a usable one (a string or an
    integer), so the client can match it to its request: then it is answered 200 in
    the ``initialize`` era, and 400 from 2026-07-28 (that revision gives these errors
    an HTTP status of their own). Without a usable id, the error's id is null, with 400.
    """

    def __init__(self, request_id: str | int | None, modern: bool) -> None:
        self.id = request_id
        self.status = 200 if request_id is not None and not modern else 400

    @classmethod
    def of(cls, message: dict[str, object], modern: bool) -> "Refusal":
        """The refusal of ``message``: with its id if it is a request with a usable one."""
        request_id = message.get("id") if "method" in message else None
        if isinstance(request_id, str | int) and _usable_id(request_id):
            return cls(request_id, modern)
        return cls(None, modern)

    def answer(self, code: int, message: str) -> tuple[int, bytes]:
        error = {"code": code, "message": message}
        return self.status, json.dumps({"jsonrpc": "2.0", "id": self.id, "error": error}).encode()

    def invalid_request(self, problem: str) -> tuple[int, bytes]:
        return self.answer(-32600, f"Invalid request: {problem}")

    def lone_surrogate(self, path: tuple[str, ...], in_key: bool) -> tuple[int, bytes]:
        """The error for a lone surrogate at ``path``: in a value there, or in a key of it."""
        problem = (
            "a lone UTF-16 surrogate escape (such as \\ud800 without its pair); send valid Unicode"
        )
        params = path[:1] == ("params",)
        shown = ".".join(path[1:] if params and len(path) > 1 else path)
        if in_key:
            place = f"a key in `{shown}` holds" if shown else "a key holds"
        else:
            place = f"`{shown}` holds"
        if params:
            return self.answer(-32602, f"Invalid params: {place} {problem}")
        return self.invalid_request(f"{place} {problem}")


def _usable_id(value: object) -> bool:
    """Whether ``value`` is an id the protocol allows: a string or an integer (not null)."""
    if isinstance(value, str):
        return LONE_SURROGATE.search(value) is None
    return isinstance(value, int) and not isinstance(value, bool)


def _id_kind(value: object) -> str:
    if isinstance(value, float):
        return "a number with a fraction or an exponent"
    if isinstance(value, str):
        return "a string holding a lone UTF-16 surrogate escape"
    return "null" if value is None else _kind(value)


def _call_problem(message: dict[str, object], refusal: Refusal) -> tuple[int, bytes] | None:
    """A JSON-RPC error for a ``tools/call`` request whose params are malformed; else None.

    It names the field and the JSON type found, never a value.
    """
    if message.get("method") != "tools/call":
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        problem = f"`params` must be an object with `name` and `arguments`, not {_kind(params)}"
    elif not isinstance(params.get("name"), str):
        problem = f"`name` must be the tool's name, a string, not {_kind(params.get('name'))}"
    elif not isinstance(params.get("arguments", {}), dict):
        problem = (
            "`arguments` must be an object of the tool's arguments by name, not "
            f"{_kind(params['arguments'])}"
        )
    else:
        return None
    return refusal.answer(-32602, f"Invalid params of tools/call: {problem}")


def _cancel_call(calls: InFlight, body: bytes, owner: Owner) -> None:
    """Cancel the call in this process that a ``notifications/cancelled`` body names.

    Stateless serving gives each POST a session of its own, so the SDK cannot
    deliver the notification to the call; the SDK still answers the POST (202).
    """
    try:
        message = json.loads(body)
    except ValueError:
        return
    if not isinstance(message, dict) or message.get("method") != "notifications/cancelled":
        return
    if "id" in message:
        return  # a request, not a notification: the SDK answers it with an error
    params = message.get("params")
    request_id = params.get("requestId") if isinstance(params, dict) else None
    if isinstance(request_id, str | int) and not isinstance(request_id, bool):
        calls.cancel(owner, request_id)


def _kind(value: object) -> str:
    """The JSON type of ``value``, in words."""
    if value is None:
        return "null (or missing)"
    kinds = {bool: "a boolean", str: "a string", list: "an array", dict: "an object"}
    return next((word for cls, word in kinds.items() if isinstance(value, cls)), "a number")


def _scan(value: object) -> tuple[int, bool]:
    """How deeply ``value`` nests arrays and objects, and whether a string has a lone surrogate."""
    depth = 0
    lone = False
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            depth = max(depth, level)
            lone = lone or any(LONE_SURROGATE.search(key) for key in item)
            pending.extend((child, level + 1) for child in item.values())
        elif isinstance(item, list):
            depth = max(depth, level)
            pending.extend((child, level + 1) for child in item)
        elif isinstance(item, str):
            lone = lone or LONE_SURROGATE.search(item) is not None
    return depth, lone


def _surrogate_path(value: object) -> tuple[tuple[str, ...], bool]:
    """The path to the first lone surrogate in ``value``, and whether it is in a key of what
    that path leads to. Only called once :func:`_scan` has found one.

    A path names keys (``*`` for one longer than 64 characters or holding a lone
    surrogate itself) and list indices.
    """
    pending: list[tuple[object, tuple[str, ...]]] = [(value, ())]
    while pending:
        item, path = pending.pop()
        if isinstance(item, dict):
            if any(LONE_SURROGATE.search(key) for key in item):
                return path, True
            for key, child in reversed(item.items()):
                pending.append((child, (*path, key if len(key) <= 64 else "*")))
        elif isinstance(item, list):
            pending.extend((child, (*path, str(i))) for i, child in reversed(list(enumerate(item))))
        elif isinstance(item, str) and LONE_SURROGATE.search(item):
            return path, False
    return (), False


async def respond(send: Send, status: int, payload: dict[str, object]) -> None:
    await respond_raw(send, status, json.dumps(payload).encode())


async def respond_raw(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Send a whole JSON response: ``body`` with ``status`` and any extra ``headers``."""
    all_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(headers or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that hands out ``messages`` first, then defers to ``receive``."""
    pending = list(messages)

    async def replaying() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replaying
