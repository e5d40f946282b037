"""Running the service over HTTP: uvicorn with connection limits, and a shutdown that drains.

:func:`serve` runs an app factory under uvicorn, in one process or several worker
processes sharing the listening socket. Each process serves at most
``max_connections`` connections at once, closes a connection whose request head comes
too slowly (:class:`HeadTimeoutProtocol`) or that idles, and on SIGTERM or SIGINT drains
the state of the app it built (:class:`DrainingServer`). What each of these answers,
and its setting, is in the service's ``docs/production.md``.

With several workers and metrics on, the workers share a directory of metric files
(:func:`metrics_directory`), so that a scrape of any worker counts every worker's calls.

For development, :func:`serve` with folders to watch runs one worker process under a
reloader (:class:`SourceReload`), which starts it anew, drained, when a ``.py`` file
there changes, appears or goes away.
"""

import asyncio
import functools
import json
import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

import h11
import uvicorn
from mcp.types import INTERNAL_ERROR
from sse_starlette.sse import AppStatus
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.importer import import_from_string
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState
from uvicorn.supervisors import multiprocess
from uvicorn.supervisors.basereload import BaseReload

from mcp_runtime.config.settings import ServiceSettings, SettingsError
from mcp_runtime.contract.violations import ContractError
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.observability.metrics import MULTIPROC_DIR, mark_worker_dead
from mcp_runtime.serving.front.hosts import HostCheck
from mcp_runtime.serving.http_app import ServiceApp
from mcp_runtime.serving.server import UnknownToolsetError, transport_security

__all__ = [
    "AppFactory",
    "DrainingServer",
    "HeadTimeoutProtocol",
    "NotServing",
    "ServingConfig",
    "SourceReload",
    "Supervisor",
    "serve",
]

logger = logging.getLogger(__name__)

AppFactory = Callable[[], ASGIApp] | str
"""What builds a process's app: a callable, or the "module:function" name of one."""
CUT_SHORT_SECONDS = 3.0
"""After the grace: how long the calls cut short have to send their answers."""
CLOSE_SECONDS = 3
"""Then: how long the responses still being written have to finish."""
SHUTDOWN_HEAD_SECONDS = 1.0
"""How long a connection accepted just before shutdown has left to send its request head."""


def serve(settings: ServiceSettings, app: AppFactory, *, reload: Sequence[Path] = ()) -> None:
    """Serve the app that the factory ``app`` builds, until drained.

    Each process builds its own app by calling the factory (with several workers, or
    ``reload``, it is pickled to each: a module-level function, a ``functools.partial``
    of one, or its "module:function" name); ``settings`` gives the address, the workers,
    the limits and the shutdown grace. With ``reload`` folders, one worker process
    serves, started anew whenever a ``.py`` file in them changes.
    """
    config = ServingConfig(app, settings, reloading=bool(reload))
    with metrics_directory(settings):
        if reload:
            socket = config.bind_socket()
            target = functools.partial(_serve_draining, config)
            SourceReload(config, target, [socket], folders=reload).run()
            return
        if settings.workers == 1:
            DrainingServer(config).run()
            return
        socket = config.bind_socket()
        # uvicorn's supervisor starts (and restarts) each worker as a ``multiprocess.Process``.
        multiprocess.Process = DrainingWorker  # type: ignore[misc]
        Supervisor(config, sockets=[socket]).run()


@contextmanager
def metrics_directory(settings: ServiceSettings) -> Iterator[None]:
    """``PROMETHEUS_MULTIPROC_DIR`` set to an empty directory while the block serves.

    Only with metrics on, and several workers or the variable already set. The
    operator's directory is emptied of metric files (``*.db``) and kept; one made here is
    removed at the end. Raises :class:`SettingsError` if the directory cannot be made.
    """
    given = os.environ.get(MULTIPROC_DIR)
    if not settings.metrics or not (given or settings.workers > 1):
        yield
        return
    try:
        if given:
            Path(given).mkdir(parents=True, exist_ok=True)
            for stale in Path(given).glob("*.db"):
                stale.unlink()
        folder = given or tempfile.mkdtemp(prefix="mcp-metrics-")
    except OSError as exc:
        if given:
            problem = f"{MULTIPROC_DIR}: {given} cannot hold the workers' metric files"
        else:
            problem = (
                f"MCP_WORKERS: {settings.workers} workers merge their metrics in a temporary "
                f"directory, which cannot be made; set {MULTIPROC_DIR} to a writable one"
            )
        raise SettingsError(
            f"bad setting {problem} ({exc.strerror}), or set MCP_METRICS=false"
        ) from None
    os.environ[MULTIPROC_DIR] = folder
    logger.info("metrics: the workers' figures are merged in %s", folder)
    try:
        yield
    finally:
        if not given:
            del os.environ[MULTIPROC_DIR]
            shutil.rmtree(folder, ignore_errors=True)


class ServingConfig(uvicorn.Config):
    """uvicorn's configuration from the service's settings (pickled to each worker).

    Its process builds its app with :meth:`build_app`, which keeps the app's
    :class:`ServiceState`: the one the process drains.
    """

    def __init__(
        self, app: AppFactory, settings: ServiceSettings, *, reloading: bool = False
    ) -> None:
        self.app_factory = app
        self.reloading = reloading
        self.state: ServiceState | None = None
        super().__init__(
            self.build_app,
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=settings.workers,
            http=HeadTimeoutProtocol,
            ws="none",
            lifespan="on",
            log_config=None,
            log_level="warning",
            access_log=False,
            # uvicorn counts the connection asking among those open.
            limit_concurrency=settings.max_connections + 1,
            timeout_keep_alive=settings.idle_timeout,  # type: ignore[arg-type]
            timeout_graceful_shutdown=CLOSE_SECONDS,
        )
        self.shutdown_grace = settings.shutdown_grace
        self.read_timeout = settings.read_timeout
        self.security = transport_security(settings)

    def build_app(self) -> ASGIApp:
        """The process's app, from the factory; its state kept when it is the service's.

        Reloading, a service that cannot start (its tools break the contract, a toolset
        cannot be imported, a setting is bad) is reported in one message, with the
        traceback of each import that failed, and the process serves :class:`NotServing`,
        which answers every request 503 with that message, until a fix is saved.
        """
        factory = self.app_factory
        try:
            app: ASGIApp = (import_from_string(factory) if isinstance(factory, str) else factory)()
        except (ContractError, SettingsError, UnknownToolsetError) as exc:
            if not self.reloading:
                raise
            for violation in getattr(exc, "violations", ()):
                if violation.cause is not None:  # a toolset's import: its traceback
                    logger.error("%s", violation.problem, exc_info=violation.cause)
            logger.error("not reloaded: %s\nSave a fix: the service reloads.", exc)
            reason = f"The service did not reload: {exc}\nSave a fix: it reloads."
            # Only to the hosts the service answers to (a page elsewhere reads nothing).
            return HostCheck(NotServing(reason), security=self.security, path=None)
        if isinstance(app, ServiceApp):
            self.state = app.state
        return app


class NotServing:
    """What a reloading process serves while the service's code cannot start: every HTTP
    request is answered 503 with ``reason`` (a JSON-RPC error), at once, so that a client
    learns why instead of waiting; the lifespan starts and stops."""

    def __init__(self, reason: str) -> None:
        self.body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": INTERNAL_ERROR, "message": reason}}
        ).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].removeprefix("lifespan.")
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        if scope["type"] != "http":
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self.body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection whose request head comes too slowly.

    The head must arrive whole within ``read_timeout`` seconds of the connection
    opening, or of its first byte on a kept-alive connection (uvicorn's own keep-alive
    timeout covers the idle time between requests).

    At shutdown, a connection whose first request has not arrived whole (accepted just
    before the listener closed, its request perhaps already sent) is not closed at once,
    as uvicorn closes it, leaving its client without an answer while another worker may
    still listen: it has :data:`SHUTDOWN_HEAD_SECONDS` more for its head, is answered
    (503, the service draining) and closed.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        assert isinstance(config, ServingConfig), "serve with a ServingConfig"
        self.read_timeout = config.read_timeout
        self.head_timer: asyncio.TimerHandle | None = None
        self.closing_after_answer = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_timer()

    def data_received(self, data: bytes) -> None:
        if self.head_timer is None and self.conn.their_state is h11.IDLE:
            self._start_head_timer()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._stop_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.closing_after_answer and self.cycle is not None:
            self.cycle.keep_alive = False  # the one request of a connection met at shutdown

    def shutdown(self) -> None:
        if self.cycle is None and not self.transport.is_closing():
            self.closing_after_answer = True
            self._stop_head_timer()
            self.head_timer = self.loop.call_later(
                min(self.read_timeout, SHUTDOWN_HEAD_SECONDS), self._head_too_slow
            )
            return
        super().shutdown()

    def _start_head_timer(self) -> None:
        self.head_timer = self.loop.call_later(self.read_timeout, self._head_too_slow)

    def _stop_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_too_slow(self) -> None:
        self.head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


class DrainingServer(uvicorn.Server):
    """A uvicorn server that drains before it stops.

    On the first SIGTERM or SIGINT its state drains: readiness and new MCP requests
    answer 503, and the calls in flight go on. It stops once none is left (calls, and
    requests passed on to the SDK); once ``shutdown_grace`` seconds pass first, or a
    second SIGINT comes, the calls still running are cut short, each answering
    ``isError`` (shutdown), and it stops :data:`CUT_SHORT_SECONDS` later at most.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        assert isinstance(config, ServingConfig), "serve with a ServingConfig"
        self.grace = config.shutdown_grace
        self.signalled: float | None = None
        self.reported = False
        self.forced = False
        self.cut_at: float | None = None
        # SSE responses end when draining does, not when the signal comes.
        AppStatus.enable_automatic_graceful_drain = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The first SIGTERM or SIGINT starts draining; a second SIGINT ends the grace."""
        if self.signalled is None:
            self.signalled = time.monotonic()
            if self.state is not None:
                self.state.calls.begin_draining()
        elif sig == signal.SIGINT:
            self.forced = True

    async def on_tick(self, counter: int) -> bool:
        if await super().on_tick(counter):
            return True
        if self.signalled is None:
            return False
        return self._drained(time.monotonic() - self.signalled)

    @property
    def state(self) -> ServiceState | None:
        """The state of the app this process serves; None until the app is built."""
        assert isinstance(self.config, ServingConfig), "serve with a ServingConfig"
        return self.config.state

    def _drained(self, elapsed: float) -> bool:
        """Whether to stop now, ``elapsed`` seconds into draining; cut calls short at the grace."""
        state = self.state
        if state is None:
            return self._stop()  # signalled before the app was built: nothing to drain
        calls = state.calls
        calls.begin_draining()
        idle = calls.count == 0 and state.requests.count == 0
        if not self.reported:
            self.reported = True
            logger.info(
                "shutting down: draining %d calls in flight (up to %g seconds)",
                calls.count,
                self.grace,
            )
        if idle:
            logger.info("shutting down: drained")
            return self._stop()
        if self.cut_at is None and (self.forced or elapsed >= self.grace):
            logger.warning(
                "shutting down: stopping the %d calls still running (grace ended)",
                calls.count,
            )
            calls.cut_short()
            self.cut_at = elapsed
        if self.cut_at is not None and elapsed - self.cut_at >= CUT_SHORT_SECONDS:
            return self._stop()
        return False

    def _stop(self) -> bool:
        AppStatus.should_exit = True  # ends the SSE streams still open (stateful GET streams)
        self.should_exit = True
        return True


class Supervisor(multiprocess.Multiprocess):
    """uvicorn's supervisor of the workers, which lets go of the listening socket once it
    stops them: the socket then closes with the last worker to stop listening, so a client
    that connects later is refused at once, not left queued until the supervisor exits."""

    def terminate_all(self) -> None:
        super().terminate_all()
        for listening in self.sockets:
            listening.close()


class DrainingWorker(multiprocess.Process):
    """A worker process of uvicorn's supervisor, running a :class:`DrainingServer`."""

    @property
    def server(self) -> uvicorn.Server:
        if self._server is None:
            self._server = DrainingServer(self.config)
        return self._server

    def join(self) -> None:
        """Wait for the worker to exit (the supervisor does, for every worker that ends)."""
        super().join()
        if self.pid is not None:
            mark_worker_dead(self.pid)


def _serve_draining(config: ServingConfig, sockets: list[Any] | None = None) -> None:
    """Run a :class:`DrainingServer` of ``config`` on ``sockets``: a reloaded process's work."""
    DrainingServer(config).run(sockets=sockets)


class SourceReload(BaseReload):
    """uvicorn's reloader, watching ``folders``: it starts its one worker process anew when
    a ``.py`` file there changes, appears or goes away (uvicorn's own polling reloader sees
    changes only, and its other one needs ``watchfiles``). The process it stops drains."""

    def __init__(
        self,
        config: uvicorn.Config,
        target: Callable[..., None],
        sockets: list[Any],
        *,
        folders: Sequence[Path],
    ) -> None:
        super().__init__(config, target, sockets)
        self.reloader_name = "serve --reload"
        self.folders = tuple(folders)
        self.seen = self.sources()

    def sources(self) -> dict[Path, int]:
        """Each ``.py`` file under the folders, with the time it last changed."""
        found: dict[Path, int] = {}
        for folder in self.folders:
            for path in folder.rglob("*.py"):
                with suppress(OSError):  # gone since it was listed
                    found[path] = path.stat().st_mtime_ns
        return found

    def should_restart(self) -> list[Path] | None:
        self.pause()
        now = self.sources()
        changed = sorted(
            path for path in now.keys() | self.seen.keys() if now.get(path) != self.seen.get(path)
        )
        self.seen = now
        return changed or None
