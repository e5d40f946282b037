"""A rolling restart, as a Kubernetes Deployment's rolling update makes one, for the task
clients to live through: two processes of the service on one Redis behind a balancer
that sends each request to a process that is up.

The balancer stands in for a Service's endpoints: a process leaves it before it is told
to stop (as a pod leaves the endpoints when it starts terminating), and its replacement
joins it once it listens. Each request goes to the next process that is in, on a
connection of its own; a streamed answer streams through.
"""

import contextlib
import itertools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from ports import free_port, listening

HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"host"}


class Balancer:
    """An ASGI app that forwards each request to one of ``backends`` (base URLs), in turn."""

    def __init__(self) -> None:
        self.backends: list[str] = []
        self.turns = itertools.count()
        self.client = httpx2.AsyncClient(timeout=None)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await self.client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        backends = list(self.backends)
        if not backends:
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b"no process is up"})
            return
        target = backends[next(self.turns) % len(backends)]
        query = f"?{scope['query_string'].decode()}" if scope["query_string"] else ""
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        request = self.client.build_request(
            scope["method"], f"{target}{scope['path']}{query}", headers=headers, content=body
        )
        answer = await self.client.send(request, stream=True)
        try:
            kept = [
                (k.encode(), v.encode())
                for k, v in answer.headers.items()
                if k.lower().encode() not in HOP_BY_HOP
            ]
            await send(
                {"type": "http.response.start", "status": answer.status_code, "headers": kept}
            )
            async for chunk in answer.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await answer.aclose()


class Processes:
    """Two processes of the service in ``folder``, serving as ``uv run SLUG serve`` with
    ``settings``, behind a :class:`Balancer`."""

    def __init__(self, folder: Path, slug: str, env: dict[str, str], balancer: Balancer) -> None:
        self.folder = folder
        self.slug = slug
        self.env = env
        self.balancer = balancer
        self.running: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.logs: list[Path] = []

    def start(self) -> None:
        """Start one more process, and let it in once it listens."""
        port = free_port()
        log = self.folder / f"rolling-{port}.log"
        self.logs.append(log)
        with log.open("wb") as output:
            process = subprocess.Popen(
                ["uv", "run", "--quiet", self.slug, "serve", "--port", str(port)],
                cwd=self.folder,
                env={**self.env, "MCP_PORT": str(port)},
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if not listening(port, 120):
            raise RuntimeError(f"the service did not start:\n{log.read_text()}")
        base = f"http://127.0.0.1:{port}"
        self.running.append((base, process))
        self.balancer.backends.append(base)

    def replace_oldest(self) -> None:
        """Let the oldest process out, tell it to stop (SIGTERM) and wait until it has,
        then start its replacement: one step of a rolling update."""
        base, process = self.running.pop(0)
        self.balancer.backends.remove(base)
        time.sleep(0.5)  # the requests already sent to it are answered
        process.send_signal(signal.SIGTERM)
        if process.wait(timeout=60) != 0:
            raise RuntimeError(f"a process stopped with status {process.returncode}")
        self.start()

    def stop(self) -> None:
        """Tell every process to stop (SIGTERM); one that has not within a minute is killed,
        and its log is the error's message."""
        for _, process in self.running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for (base, process), log in zip(self.running, self.logs[-len(self.running) :], strict=True):
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
                tail = log.read_text(errors="replace")[-6000:]
                message = f"{base} did not stop within a minute of SIGTERM:\n{tail}"
                raise RuntimeError(message) from None


@contextlib.contextmanager
def behind_a_balancer(
    folder: Path, slug: str, env: dict[str, str]
) -> Iterator[tuple[str, Processes]]:
    """Two processes of the service behind a balancer; yields the balancer's MCP URL and
    the processes, to replace one after the other."""
    balancer = Balancer()
    port = free_port()
    config = uvicorn.Config(balancer, host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    processes = Processes(folder, slug, env, balancer)
    try:
        if not listening(port, 30):
            raise RuntimeError("the balancer did not start")
        processes.start()
        processes.start()
        yield f"http://127.0.0.1:{port}/mcp", processes
    finally:
        processes.stop()
        server.should_exit = True
        thread.join(timeout=30)
