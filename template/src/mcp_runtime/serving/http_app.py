"""The ASGI app that serves the MCP endpoint over streamable HTTP.

The SDK's streamable HTTP app (``/mcp``) sits behind the front: small parts of
:mod:`mcp_runtime.serving.front`, one concern each, which :func:`front` lists in the
order a request meets them. Each answers first what the SDK should not see: the probes
and the scrape (``/healthz``, ``/readyz``, ``/metrics``), downloads of the data tools
keep for their callers (``/data/<id>``), a Host or Origin the service
does not answer to, requests while the service drains, methods a stateless endpoint has
no use for, a POST without a valid bearer token under ``MCP_AUTH=oauth``, request bodies
past the limits, JSON-RPC messages the SDK would mishandle; it cancels the call that a
posted ``notifications/cancelled`` of the 2025 revisions names; and it chooses how each
request is answered: one JSON body, or an SSE stream where the call streams. Each answer,
and the setting of each limit, is in the service's ``docs/production.md``.
"""

import gc
from collections.abc import Sequence

from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from typing_extensions import deprecated

from mcp_runtime.config.settings import ServiceSettings, load_settings, require_http_auth
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.sdk import MCPServer, served_tool_names
from mcp_runtime.sdk.bearer import bearer_check
from mcp_runtime.sdk.http import answer_apps
from mcp_runtime.serving.front.answer_form import AnswerForm
from mcp_runtime.serving.front.authentication import Authentication
from mcp_runtime.serving.front.cancels import CancelMatching
from mcp_runtime.serving.front.direct_calls import DirectAnswers
from mcp_runtime.serving.front.downloads import Downloads
from mcp_runtime.serving.front.drain import Drain
from mcp_runtime.serving.front.hosts import HostCheck
from mcp_runtime.serving.front.json_rpc import JsonRpcChecks
from mcp_runtime.serving.front.limits import BodyLimits
from mcp_runtime.serving.front.methods import MethodPolicy
from mcp_runtime.serving.front.probes import Probes
from mcp_runtime.serving.front.scrapes import Scrapes
from mcp_runtime.serving.server import state_of, transport_security

__all__ = [
    "MCP_PATH",
    "ServiceApp",
    "app_from_environment",
    "build_app",
    "front",
    "http_app",
    "process_app",
    "service_app",
]

MCP_PATH = "/mcp"  # the MCP endpoint


def build_app(
    server: MCPServer, settings: ServiceSettings | None = None, state: ServiceState | None = None
) -> "ServiceApp":
    """``server``'s streamable HTTP app behind the front, with the limits of ``settings``
    (the environment's when None), answering readiness and scrapes from ``state`` (the one
    its tools run with when None).

    Raises :class:`SettingsError` when ``MCP_AUTH=oauth`` lacks a setting it needs.
    """
    settings = settings or load_settings()
    require_http_auth(settings)
    state = state if state is not None else state_of(server, settings)
    state.metrics.enabled = settings.metrics
    apps = answer_apps(
        server,
        streamable_http_path=MCP_PATH,
        stateless_http=settings.stateless,
        max_request_body_size=settings.max_request_bytes,
        transport_security=transport_security(settings),
        host=settings.host,
    )
    parts = front(server, settings, state, streaming=apps.streaming)
    return ServiceApp(apps.whole, parts, state=state)


def front(
    server: MCPServer, settings: ServiceSettings, state: ServiceState, *, streaming: ASGIApp
) -> list[Middleware]:
    """The front's parts, in the order a request meets them, before the SDK's app that
    answers one JSON body; ``streaming`` is the SDK's app that streams, where
    :class:`AnswerForm` sends the requests it chose to stream (and all but POSTs)."""
    return [
        Middleware(Probes, state=state, tools=len(served_tool_names(server))),
        Middleware(Scrapes, metrics=state.metrics.app() if settings.metrics else None),
        *downloads(server, settings, state),
        Middleware(HostCheck, security=transport_security(settings), path=MCP_PATH),
        Middleware(Drain, state=state, path=MCP_PATH),
        Middleware(MethodPolicy, path=MCP_PATH, stateless=settings.stateless),
        Middleware(Authentication, bearer=bearer_check(server), path=MCP_PATH),
        Middleware(
            BodyLimits, max_body=settings.max_request_bytes, read_timeout=settings.read_timeout
        ),
        Middleware(JsonRpcChecks, max_depth=settings.max_json_depth),
        Middleware(CancelMatching, calls=state.calls, stateless=settings.stateless),
        Middleware(AnswerForm, streaming=streaming, path=MCP_PATH, stateless=settings.stateless),
        *direct_answers(server, settings),
    ]


def downloads(
    server: MCPServer, settings: ServiceSettings, state: ServiceState
) -> list[Middleware]:
    """The download of kept data (``GET /data/<id>``), when the server keeps data."""
    if state.data is None:
        return []
    return [Middleware(Downloads, store=state.data, bearer=bearer_check(server), settings=settings)]


def direct_answers(server: MCPServer, settings: ServiceSettings) -> list[Middleware]:
    """The direct path of calls, unless ``settings`` turn it off."""
    if not settings.direct_calls:
        return []
    return [Middleware(DirectAnswers, server=server, path=MCP_PATH, hosts_checked=True)]


def process_app(
    settings: ServiceSettings | None = None, server: MCPServer | None = None
) -> "ServiceApp":
    """The app a serving process runs, as ``settings`` say (the environment's when None),
    serving ``server`` (built through the gate).

    Without ``server``, as in a worker process, the process sets up its logging and
    builds the installed service's server itself: the gate runs once in each process.
    ``uvicorn --factory mcp_runtime.serving.http_app:process_app`` serves it too.
    """
    from mcp_runtime.observability.logs import configure_logging
    from mcp_runtime.observability.tracing import configure_tracing
    from mcp_runtime.serving.server import build_server

    settings = settings or load_settings()
    if server is None:
        configure_logging(settings.log_level, settings.log_format)
        server = build_server(settings=settings)
    configure_tracing(server.name)
    app = build_app(server, settings)
    gc.freeze()  # the app and what the imports built live as long as the process
    return app


@deprecated("http_app is now build_app; the old name will be removed in a later release")
def http_app(
    server: MCPServer, settings: ServiceSettings | None = None, state: ServiceState | None = None
) -> "ServiceApp":
    """The former name of :func:`build_app`."""
    return build_app(server, settings, state)


@deprecated("service_app is now process_app; the old name will be removed in a later release")
def service_app(settings: ServiceSettings, server: MCPServer | None = None) -> "ServiceApp":
    """The former name of :func:`process_app`."""
    return process_app(settings, server)


@deprecated(
    "app_from_environment() is now process_app(); the old name will be removed in a later release"
)
def app_from_environment() -> "ServiceApp":
    """The former name of :func:`process_app` without arguments."""
    return process_app()


class ServiceApp:
    """The SDK's app behind the front's ``parts`` (outermost first), serving with ``state``;
    its readiness is its :class:`Probes` part's."""

    def __init__(self, app: ASGIApp, parts: Sequence[Middleware], *, state: ServiceState) -> None:
        self.state = state
        self.parts = tuple(parts)
        probes = None
        for part, args, kwargs in reversed(self.parts):
            app = part(app, *args, **kwargs)
            probes = app if isinstance(app, Probes) else probes
        if probes is None:
            raise ValueError("the front has no Probes part: nothing would answer readiness")
        self.probes = probes
        self.app = app

    @property
    def ready(self) -> bool:
        """Whether the app has started (and not yet stopped)."""
        return self.probes.ready

    @ready.setter
    def ready(self, ready: bool) -> None:
        self.probes.ready = ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" and (self.state.tasks, self.state.data) != (None, None):
            receive = self._closing_stores(receive)
        await self.app(scope, receive, send)

    def _closing_stores(self, receive: Receive) -> Receive:
        """``receive``, starting the task engine and the upkeep of kept data when the app
        starts, and closing them when the app is told to shut down (once it has drained)."""
        state = self.state

        async def closing() -> Message:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if state.tasks is not None:
                    state.tasks.start()
                if state.data is not None and state.data.in_use:
                    state.data.start()
            elif message["type"] == "lifespan.shutdown":
                if state.tasks is not None:
                    await state.tasks.close()
                if state.data is not None:
                    await state.data.close()
            return message

        return closing
