"""Real servers for the hostile suite, and the checks every answer goes through.

A :class:`Server` is the service's own ``serve`` command in a process of its own, on
a free loopback port, with its log kept in a file the tests read. It verifies OAuth
tokens as a deployed service does, from a :class:`LocalIssuer` the suite runs, and
every request sends a valid token unless a test says otherwise. Calls go over
raw HTTP (:meth:`Server.call`, to see every byte) or through a real MCP client
session (:func:`client_call`). Every ``structuredContent`` received is validated
against the tool's advertised ``outputSchema`` with formats checked.
"""

import importlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx2
from jsonschema import Draft202012Validator
from mcp_runtime.contract.toolsets import find_service
from mcp_runtime.devtools.local_issuer import LocalIssuer
from mcp_runtime.testing import Mode, connect_http, free_port

PROTOCOL = "2025-06-18"
MODERN = "2026-07-28"
ERAS = (PROTOCOL, MODERN)
"""The revisions a raw call speaks: the ``initialize`` era's, and the stateless one's."""
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": PROTOCOL,
}
GREETING = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
# Long enough for two worker processes to start while `served` runs the clients beside:
# on two cores, that load has kept one from answering readiness within 60 s.
STARTUP_SECONDS = 120.0
ANSWER_SECONDS = 10.0
MASKED = re.compile(
    r"Tool '(?P<tool>[^']+)' failed with an unexpected error \(error id (?P<id>[0-9a-f]{12})\)\. "
    r"The service's log has the details under that id\."
)
CALL_LINE = re.compile(r"tool=(?P<tool>\S+) outcome=(?P<outcome>\S+)")


def toolset() -> ModuleType:
    """The hostile toolset as the service serves it, imported into the test process."""
    return importlib.import_module(f"{find_service().toolsets_package}.hostile")


def validate(schema: dict[str, Any], payload: object) -> None:
    """Raise unless ``payload`` is valid under ``schema`` (Draft 2020-12, formats checked)."""
    checker = Draft202012Validator.FORMAT_CHECKER
    Draft202012Validator(schema, format_checker=checker).validate(payload)


def violation_prefix(tool: str) -> str:
    """How the answer to a result that breaks its tool's annotation begins."""
    return f"Tool '{tool}' returned a result that breaks its annotation"


@dataclass
class Answer:
    """An HTTP answer to one JSON-RPC request, and the messages its body holds."""

    status: int
    body: bytes
    content_type: str

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages in the body: one JSON document, or the SSE events' data."""
        try:
            return self._parse()
        except ValueError:
            raise AssertionError(f"HTTP {self.status}, not JSON-RPC: {self.body[:500]!r}") from None

    def _parse(self) -> list[dict[str, Any]]:
        text = self.body.decode("utf-8")
        if not self.content_type.startswith("text/event-stream"):
            return [json.loads(text)] if text.strip() else []
        found = []
        for event in re.split(r"\r?\n\r?\n", text):
            data = [line[5:].lstrip() for line in event.splitlines() if line.startswith("data:")]
            if data:
                found.append(json.loads("\n".join(data)))
        return found

    @property
    def message(self) -> dict[str, Any]:
        """The one JSON-RPC message of the answer."""
        messages = self.messages
        assert len(messages) == 1, f"expected one JSON-RPC message, got {self.body!r}"
        return messages[0]

    @property
    def result(self) -> dict[str, Any]:
        """The ``result`` of a 200 answer holding exactly one JSON-RPC response."""
        assert self.status == 200, f"HTTP {self.status}: {self.body!r}"
        message = self.message
        assert "result" in message, f"expected a result, got {message}"
        result: dict[str, Any] = message["result"]
        return result


def error_text(result: dict[str, Any]) -> str:
    """The text of an ``isError`` result that carries no ``structuredContent``."""
    assert result.get("isError") is True, result
    assert "structuredContent" not in result, result
    [block] = result["content"]
    assert block["type"] == "text"
    text: str = block["text"]
    return text


class Server:
    """``python -m mcp_runtime serve`` on a free loopback port, its log kept in a file."""

    def __init__(self, env: Mapping[str, str], folder: Path, issuer: LocalIssuer) -> None:
        self.port = free_port()
        self.log_path = folder / f"serve-{self.port}.log"
        self.issuer = issuer
        self.token = issuer.token(subject="hostile-suite", audience=self.url, expires_in=3600)
        self.credentials = {"authorization": f"Bearer {self.token}"}
        inherited = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("MCP_") and key != "DEMO_TOKENS"
        }
        command = [sys.executable, "-m", "mcp_runtime", "serve", "--port", str(self.port)]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command,
                cwd=folder,
                env={
                    **inherited,
                    **issuer.environment(self.url),
                    "MCP_DATA_URL": str(folder / "data"),
                    **env,
                },
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            self._wait_until_serving()
        except BaseException:
            self.close()
            raise
        self.schemas = {name: tool["outputSchema"] for name, tool in self.tools().items()}

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def headers(self) -> dict[str, str]:
        """The headers of a well-formed MCP request, with the suite's valid token."""
        return {**HEADERS, **self.credentials}

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited ({self.process.returncode}):\n{self.log()}")
            try:
                if httpx2.get(f"{self.base}/readyz", timeout=1).status_code == 200:
                    return
            except httpx2.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the server was not ready within {STARTUP_SECONDS} s:\n{self.log()}")

    # --- the log --------------------------------------------------------------

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def mark(self) -> int:
        """Where the log ends now: pass to :meth:`log_since`."""
        return self.log_path.stat().st_size

    def log_since(self, mark: int) -> str:
        with self.log_path.open("rb") as log:
            log.seek(mark)
            return log.read().decode(errors="replace")

    def call_lines(self, mark: int, tool: str) -> list[str]:
        """The outcomes of the call lines ``tool`` left in the log since ``mark``."""
        found = (CALL_LINE.search(line) for line in self.log_since(mark).splitlines())
        return [match["outcome"] for match in found if match and match["tool"] == tool]

    def wait_for_call_lines(self, mark: int, tool: str, seconds: float = 5.0) -> list[str]:
        """The call lines of ``tool`` since ``mark``, once one shows (or ``seconds`` pass)."""
        deadline = time.monotonic() + seconds
        while not self.call_lines(mark, tool) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # a second line, if there is one, comes with the first
        return self.call_lines(mark, tool)

    # --- calls ----------------------------------------------------------------

    def post(
        self,
        body: bytes | dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        seconds: float = ANSWER_SECONDS,
    ) -> Answer:
        """POST ``body`` to the MCP endpoint on a connection of its own."""
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        with httpx2.Client(timeout=seconds) as client:
            response = client.post(
                self.url, content=content, headers={**self.headers, **(headers or {})}
            )
        return Answer(
            response.status_code, response.content, response.headers.get("content-type", "")
        )

    def call(
        self,
        name: str,
        arguments: object,
        *,
        seconds: float = ANSWER_SECONDS,
        era: str = PROTOCOL,
        progress: bool = False,
    ) -> Answer:
        """``tools/call`` over raw HTTP, as a client of ``era`` sends it (asking for
        ``progress``); any ``structuredContent`` is validated on the way."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        meta: dict[str, Any] = {"progressToken": "progress"} if progress else {}
        headers: dict[str, str] = {}
        if era != PROTOCOL:  # stateless: the revision in every request, and routing headers
            meta |= {
                "io.modelcontextprotocol/protocolVersion": era,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            headers = {"mcp-protocol-version": era, "mcp-method": "tools/call", "mcp-name": name}
        if meta:
            params["_meta"] = meta
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        answer = self.post(request, headers=headers, seconds=seconds)
        try:
            messages = answer._parse()
        except ValueError:
            return answer  # the test's own checks say what is wrong with it
        for message in messages:
            result = message.get("result")
            if isinstance(result, dict) and "structuredContent" in result:
                validate(self.schemas[name], result["structuredContent"])
        return answer

    def tools(self) -> dict[str, dict[str, Any]]:
        """The ``tools/list`` answer, by tool name."""
        answer = self.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        return {tool["name"]: tool for tool in answer.result["tools"]}

    def readyz(self) -> tuple[int, dict[str, Any]]:
        response = httpx2.get(f"{self.base}/readyz", timeout=ANSWER_SECONDS)
        return response.status_code, response.json()

    def assert_alive(self) -> None:
        """The process still runs, and ``hello`` still answers its greeting."""
        assert self.process.poll() is None, f"the server exited:\n{self.log()}"
        result = self.call("hello", {"name": "Ada"}).result
        assert result.get("structuredContent") == GREETING, result

    # --- stopping -------------------------------------------------------------

    def send_signal(self, number: int = signal.SIGTERM) -> None:
        self.process.send_signal(number)

    def wait(self, seconds: float = 30.0) -> int:
        """The exit status, once the process has exited."""
        return self.process.wait(timeout=seconds)

    def close(self) -> None:
        """Stop the process if it still runs (SIGTERM, then SIGKILL)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


Launcher = Callable[..., Server]


async def client_call(
    server: Server,
    name: str,
    arguments: dict[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    era: str = PROTOCOL,
) -> dict[str, Any]:
    """``tools/call`` through a real MCP client session speaking ``era``; the result as
    JSON, validated.

    The session sends the suite's valid token unless ``headers`` are given.
    """
    mode: Mode = "legacy" if era == PROTOCOL else "2026-07-28"
    with anyio.fail_after(ANSWER_SECONDS * 2):
        sent = server.credentials if headers is None else headers
        async with connect_http(server.url, headers=sent, mode=mode) as session:
            result = await session.call_tool(name, arguments, read_timeout_seconds=ANSWER_SECONDS)
    # The result's own fields (a 2026 result also says it is complete, and names the server).
    answer = result.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude={"result_type", "meta"}
    )
    if "structuredContent" in answer:
        validate(server.schemas[name], answer["structuredContent"])
    return answer


def raw_connection(server: Server) -> socket.socket:
    """A plain TCP connection to the server, for bytes no HTTP client sends."""
    return socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_SECONDS)


class Slot:
    """A server of given settings: the same process test after test (of a module, or of
    every module of the default settings), restarted when one broke it.

    A test that leaves the server dead or unable to answer fails on its own; the
    next test gets a fresh server rather than failing for the same reason.
    """

    def __init__(self, launch: Launcher, **env: str) -> None:
        self.launch = launch
        self.env = env
        self.server: Server | None = None

    def healthy(self) -> Server:
        if self.server is not None:
            try:
                self.server.assert_alive()
                return self.server
            except (AssertionError, httpx2.HTTPError):
                self.server.close()
        self.server = self.launch(**self.env)
        return self.server
