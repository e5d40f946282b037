"""No request value reaches a log at any level, and a client's disconnect is one quiet line.

The service runs as a real ``serve`` process at ``MCP_LOG_LEVEL=DEBUG``, and in most
tests its libraries (the MCP SDK, the SSE and HTTP servers) log at DEBUG too, which
``configure_logging`` alone never does, so every line they could write is exercised.
"""

import io
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.requests import ClientDisconnect

from mcp_runtime.observability.logs import (
    CALLS,
    REWRITES,
    TEXT_FORMAT,
    RequestValuesFilter,
    TextFormatter,
    configure_logging,
    log_call,
)
from mcp_runtime.observability.outcome import Outcome
from mcp_runtime.testing import free_port

MARKER = "hunter2-b7f3"
STARTUP_SECONDS = 60.0
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}

# The service's command line with one more toolset, the module in the folder named by
# the first argument; if the second is "debug", every library logs at DEBUG, whatever
# configures logging.
LAUNCHER = """
import importlib
import logging
import sys

from mcp_runtime.serving.cli import main
from mcp_runtime.contract.toolsets import find_service

folder, levels = sys.argv.pop(1), sys.argv.pop(1)
importlib.import_module(find_service().toolsets_package).__path__.append(folder)
if levels == "debug":
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    root.setLevel = lambda level: None
sys.exit(main())
"""

TOOLSET = '''
import time

import anyio
from langchain_core.tools import tool

from mcp_runtime import ToolResult


@tool
async def nap(seconds: float) -> ToolResult:
    """Sleep for a while, then answer."""
    await anyio.sleep(seconds)
    return ToolResult(message="rested")


@tool
def sync_nap(seconds: float) -> ToolResult:
    """Sleep for a while in a worker thread, then answer."""
    time.sleep(seconds)
    return ToolResult(message="rested")


@tool
def echo(text: str) -> ToolResult:
    """Answer with the text it was given."""
    return ToolResult(message=text)


TOOLS = [nap, sync_nap, echo]
'''


@dataclass
class Served:
    url: str
    port: int
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def launcher(folder: Path, *, library_debug: bool = True) -> list[str]:
    """The command that runs the service's command line as described above."""
    (folder / "toolsets").mkdir()
    (folder / "toolsets" / "log_check.py").write_text(TOOLSET)
    (folder / "launch.py").write_text(LAUNCHER)
    levels = "debug" if library_debug else "usual"
    return [sys.executable, str(folder / "launch.py"), str(folder / "toolsets"), levels]


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "MCP_LOG_LEVEL": "DEBUG",
        "MCP_LOG_FORMAT": "text",
        "MCP_WORKERS": "1",
        "MCP_TOOLSETS": "",
    }


@contextmanager
def served(folder: Path, *, library_debug: bool = True) -> Iterator[Served]:
    """``serve`` over streamable HTTP; its whole log is complete once the block ends."""
    port = free_port()
    log = folder / "serve.log"
    command = [*launcher(folder, library_debug=library_debug), "serve", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=folder,
            env=environment(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            assert process.poll() is None, f"the server exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"the server did not start:\n{log.read_text()}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        yield Served(f"http://127.0.0.1:{port}/mcp", port, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def call(name: str, arguments: object, request_id: object = 1) -> str:
    params = {"name": name, "arguments": arguments}
    request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(request)


def raw_request(port: int, body: str, *, length: int | None = None) -> bytes:
    """A POST /mcp as bytes on the wire, announcing ``length`` (default: the body's)."""
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        *(f"{name}: {value}" for name, value in HEADERS.items()),
        f"Content-Length: {len(body.encode()) if length is None else length}",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n" + body).encode()


def loud_lines(log: str) -> list[str]:
    """Lines at WARNING or above, and tracebacks."""
    return [
        line
        for line in log.splitlines()
        if re.search(r"\b(WARNING|ERROR|CRITICAL)\b", line) or "Traceback" in line
    ]


def errors_and_library_warnings(log: str) -> list[str]:
    """Loud lines but for the runtime's own warnings (a sync tool still running after its
    call ended, say)."""
    return [line for line in loud_lines(log) if "WARNING mcp_runtime." not in line]


def own_lines(log: str) -> list[str]:
    """The lines of the log but for tool calls' own (one a call, whatever its outcome)."""
    return [line for line in log.splitlines() if "mcp_runtime.calls:" not in line]


DIRECT_LINE = "a tools/call answered directly"


@pytest.fixture(scope="module")
def quiet_lines(tmp_path_factory: pytest.TempPathFactory) -> int:
    """How many lines a service that serves no request logs, libraries at their usual levels."""
    with served(tmp_path_factory.mktemp("quiet"), library_debug=False) as server:
        pass
    return len(own_lines(server.text()))


def wait_for(served: Served, text: str) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while text not in served.text():
        assert time.monotonic() < deadline, f"no {text!r} in the log:\n{served.text()}"
        time.sleep(0.05)


# --- request values ---------------------------------------------------------------------


def test_no_request_value_reaches_the_log_over_http(tmp_path: Path) -> None:
    secret = {"x-secret": MARKER}
    bodies = [
        call("echo", MARKER),  # arguments that are not an object (refused by the front)
        json.dumps(  # params the SDK refuses
            {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": [MARKER]}}
        ),
        call(MARKER, {"text": MARKER}),  # an unknown tool
        call("nap", {"seconds": MARKER}),  # an argument of the wrong type
        call("echo", {"text": MARKER}, request_id=MARKER),  # the answer carries the value
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": MARKER, "params": {"a": MARKER}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": MARKER}),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": {"id": MARKER}, "reason": MARKER},
            }
        ),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": MARKER, "progress": MARKER},
            }
        ),
        json.dumps({"jsonrpc": "2.0", "id": MARKER, "result": {"value": MARKER}}),
        '{"jsonrpc": "2.0", "id": 4, "method": "' + MARKER,  # not JSON
    ]
    refused_headers = [
        {"host": f"{MARKER} example"},  # not a host name: a host name is repeated
        {"origin": f"http://{MARKER}.example/"},
        {"content-type": f"text/{MARKER}"},
    ]
    with served(tmp_path) as server:
        for body in bodies:
            answer = httpx2.post(server.url, content=body, headers={**HEADERS, **secret})
            assert answer.status_code < 500, answer.text
        for header in refused_headers:
            answer = httpx2.post(server.url, content=bodies[3], headers={**HEADERS, **header})
            assert answer.status_code in {400, 403, 415, 421}, answer.text
    log = server.text()
    assert " DEBUG mcp.server.lowlevel.server: " in log  # the libraries did log at DEBUG
    assert MARKER not in log
    assert (
        "INFO mcp.server.mcpserver.server: tools/call failed: the tool is unknown or reported "
        "an error" in log
    )
    assert "WARNING mcp.server.runner: Dropped a notification: its params are malformed" in log
    assert (
        "WARNING mcp_runtime.serving.front.hosts: Refused a request: its Host header (not a "
        "host name) is not in MCP_ALLOWED_HOSTS" in log
    )


def test_no_request_value_reaches_the_log_over_stdio(tmp_path: Path) -> None:
    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "log-check", "version": "1"},
    }
    lines = [
        f"{MARKER} is not JSON",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": MARKER}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": initialize}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call("echo", MARKER, request_id=3),
    ]
    ran = subprocess.run(
        [*launcher(tmp_path), "serve", "--transport", "stdio"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment(),
        timeout=STARTUP_SECONDS,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert " DEBUG mcp.server.lowlevel.server: " in ran.stderr
    assert MARKER not in ran.stderr
    assert " DEBUG mcp.shared.jsonrpc_dispatcher: The transport yielded an error" in ran.stderr
    assert errors_and_library_warnings(ran.stderr) == []


# --- disconnects ------------------------------------------------------------------------


def disconnect_mid_body(server: Served) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as client:
        client.sendall(raw_request(server.port, '{"jsonrpc"', length=1000))
    answer = httpx2.post(server.url, content=call("echo", {"text": "still here"}), headers=HEADERS)
    assert "still here" in answer.text


def disconnect_before_the_answers(server: Served) -> None:
    """Call an async and a sync tool, and close each connection once its answer has begun."""
    for tool in ("nap", "sync_nap"):
        with socket.create_connection(("127.0.0.1", server.port)) as client:
            client.sendall(raw_request(server.port, call(tool, {"seconds": 1})))
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = client.recv(1024)
                assert chunk, "the server closed the connection"
                received += chunk
            assert received.startswith(b"HTTP/1.1 200")
        wait_for(server, f"tool={tool} outcome=")
    answer = httpx2.post(server.url, content=call("echo", {"text": "still here"}), headers=HEADERS)
    assert "still here" in answer.text


@pytest.mark.any_python
@pytest.mark.parametrize("disconnect", [disconnect_mid_body, disconnect_before_the_answers])
def test_a_client_gone_mid_request_leaves_no_error_and_no_traceback(
    tmp_path: Path, disconnect: Callable[[Served], None]
) -> None:
    with served(tmp_path) as server:
        disconnect(server)
    log = server.text()
    assert " DEBUG mcp.server.lowlevel.server: " in log  # the libraries did log at DEBUG
    assert errors_and_library_warnings(log) == []


@pytest.mark.any_python
@pytest.mark.parametrize(
    ("disconnect", "count"), [(disconnect_mid_body, 1), (disconnect_before_the_answers, 2)]
)
def test_a_client_gone_mid_request_leaves_at_most_one_line(
    tmp_path: Path, disconnect: Callable[[Served], None], count: int, quiet_lines: int
) -> None:
    with served(tmp_path, library_debug=False) as server:
        disconnect(server)
    # The runtime's DEBUG line for each call it answers itself is the echo's, not the leaver's.
    lines = [line for line in own_lines(server.text()) if DIRECT_LINE not in line]
    assert errors_and_library_warnings(server.text()) == []
    assert len(lines) <= quiet_lines + count, "\n".join(lines)


# --- the filter itself ------------------------------------------------------------------


def test_importing_the_runtime_filters_the_library_loggers_however_logging_is_set_up() -> None:
    program = (
        "import logging, logging.config\n"
        "logging.basicConfig(level=logging.DEBUG, force=True)\n"
        "import mcp_runtime.serving.server\n"
        "from mcp_runtime.observability.logs import REWRITES, RequestValuesFilter\n"
        "logging.config.dictConfig({'version': 1, 'disable_existing_loggers': False,\n"
        "    'loggers': {name: {'level': 'DEBUG'} for name in REWRITES if name != 'root'}})\n"
        "print(sorted(name for name in REWRITES if not any(\n"
        "    isinstance(f, RequestValuesFilter) for f in logging.getLogger(name).filters)))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert ran.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (ClientDisconnect(), "Client disconnected before its request body arrived"),
        (anyio.BrokenResourceError(), "Client disconnected before its answer was sent"),
        (BrokenPipeError(), "Client disconnected before its answer was sent"),
        (
            ExceptionGroup("group", [ConnectionResetError(), ClientDisconnect()]),
            "Client disconnected before its answer was sent",
        ),
    ],
)
def test_a_disconnect_logged_with_its_traceback_becomes_one_info_line(
    caplog: pytest.LogCaptureFixture, error: Exception, line: str
) -> None:
    logger = logging.getLogger("mcp.server.streamable_http")
    with caplog.at_level(logging.DEBUG):
        try:
            raise error
        except Exception:
            logger.exception("Error in SSE writer")
    [record] = caplog.records
    assert (record.levelname, record.getMessage(), record.exc_info) == ("INFO", line, None)


def test_a_server_error_keeps_its_level_and_traceback(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("mcp.server.streamable_http")
    with caplog.at_level(logging.DEBUG):
        try:
            raise ValueError("a bug")
        except ValueError:
            logger.exception("Error handling POST request")
    [record] = caplog.records
    assert (record.levelname, record.getMessage()) == ("ERROR", "Error handling POST request")
    assert record.exc_info is not None


def test_a_line_lowered_below_its_loggers_level_is_not_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("mcp.server.lowlevel.server")
    with caplog.at_level(logging.WARNING, logger="mcp.server.lowlevel.server"):
        caplog.handler.setLevel(logging.NOTSET)
        logger.error(f"Received exception from stream: {MARKER}")
    assert caplog.records == []


def test_other_lines_of_the_root_logger_pass_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        logging.warning("Failed to validate request: a line of the service's own")
    [record] = caplog.records
    assert record.getMessage() == "Failed to validate request: a line of the service's own"


def test_each_library_logger_has_the_filter_once() -> None:
    assert "root" in REWRITES
    for name in REWRITES:
        filters = logging.getLogger(name).filters
        assert sum(isinstance(f, RequestValuesFilter) for f in filters) == 1, name


def test_the_docs_name_every_outcome_of_the_call_log() -> None:
    """docs/production.md lists the outcomes a call log line carries: exactly Outcome's."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "production.md").read_text()
    [bullet] = [
        part for part in page.split("\n- ") if part.startswith("One log line per tool call")
    ]
    listed = bullet.split("the\n  outcome is", 1)[1].split("). Arguments", 1)[0]
    named = set(re.findall(r"`([a-z_]+)`", listed))
    assert named == {outcome.value for outcome in Outcome}


def test_the_call_line_is_the_record_logger_info_would_make(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The call line's record is made without a walk of the stack: every field a handler
    may write is the one ``CALLS.info`` would set, its place the function that logs it."""
    with caplog.at_level(logging.INFO, logger=CALLS.name):
        log_call("hello", Outcome.OK, 0.0123)
        CALLS.info(
            "tool=%s outcome=%s duration_ms=%s",
            "hello",
            Outcome.OK,
            12.3,
            extra={"tool": "hello", "outcome": Outcome.OK, "duration_ms": 12.3},
        )
    made, expected = caplog.records[-2:]
    varying = {"created", "msecs", "relativeCreated", "lineno", "funcName", "pathname"}
    varying |= {"filename", "module"}
    assert {k: v for k, v in vars(made).items() if k not in varying} == {
        k: v for k, v in vars(expected).items() if k not in varying
    }
    assert made.getMessage() == "tool=hello outcome=ok duration_ms=12.3"
    assert (made.funcName, made.module, made.filename) == ("log_call", "logs", "logs.py")
    assert made.pathname == log_call.__code__.co_filename
    assert made.lineno == log_call.__code__.co_firstlineno


@pytest.mark.parametrize(
    "created", [1_700_000_000.0, 1_700_000_000.999_999, 1_700_000_001.000_5, 1_700_003_600.25]
)
def test_the_text_lines_are_logging_s_own(created: float) -> None:
    """The text formatter writes each second's date once, and every line as
    :class:`logging.Formatter` writes it, across seconds, forward and back."""
    ours, theirs = TextFormatter(), logging.Formatter(TEXT_FORMAT)
    for moment in (created, created + 0.5, created + 1, created, created - 3600):
        record = logging.LogRecord("mcp_runtime.calls", logging.INFO, "f", 1, "x", (), None)
        record.created, record.msecs = moment, int((moment - int(moment)) * 1000) + 0.0
        assert ours.format(record) == theirs.format(record)


@contextmanager
def configured(log_format: str) -> Iterator[io.StringIO]:
    """Logging as :func:`configure_logging` sets it up at INFO, its stderr a buffer."""
    stream = io.StringIO()
    saved = sys.stderr
    sys.stderr = stream
    try:
        configure_logging("INFO", log_format)
    finally:
        sys.stderr = saved
    yield stream


def call_lines() -> None:
    """Call lines of awkward values: quotes, non-ASCII, a long duration."""
    log_call("hello", Outcome.OK, 0.0123)
    log_call('ünï"cödé\\', Outcome.TOOL_ERROR, 12.0)
    log_call("slow", Outcome.TIMEOUT, 3600.000_5)


@pytest.mark.parametrize("log_format", ["text", "json"])
@pytest.mark.parametrize(
    "now_ns",
    [
        1_700_000_000_000_000_000,
        1_700_000_000_999_999_900,  # rounds up to the next second as a float
        1_700_000_000_999_500_000,
        1_700_000_001_000_400_000,
        1_700_003_600_250_000_000,
    ],
)
def test_a_call_line_written_directly_is_the_line_its_record_writes(
    log_format: str, now_ns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where logging is as configure_logging left it, the call line is written without its
    record, and is the line the record would have written, byte for byte, in either
    format, at moments around a second's edges (the record's time as this Python's
    ``LogRecord`` takes it)."""
    monkeypatch.setattr(time, "time_ns", lambda: now_ns)
    monkeypatch.setattr(time, "time", lambda: now_ns / 1e9)
    made: list[logging.LogRecord] = []
    making = logging.LogRecord.__init__

    def counted(record: logging.LogRecord, *args: Any, **kwargs: Any) -> None:
        made.append(record)
        making(record, *args, **kwargs)

    monkeypatch.setattr(logging.LogRecord, "__init__", counted)
    with configured(log_format) as stream:
        call_lines()
        direct = stream.getvalue()
        assert made == []  # the direct path: no record
        stream.seek(0)
        stream.truncate()
        passing = logging.Filter()  # any filter on the logger turns the direct path off
        CALLS.addFilter(passing)
        try:
            call_lines()
        finally:
            CALLS.removeFilter(passing)
        assert len(made) == 3
        assert stream.getvalue() == direct
    assert direct.count("\n") == 3


def _filtered(line: str) -> Callable[[], Callable[[], None]]:
    def setup() -> Callable[[], None]:
        def rewrite(record: logging.LogRecord) -> bool:
            record.msg, record.args = line, ()
            return True

        CALLS.addFilter(rewrite)
        return lambda: CALLS.removeFilter(rewrite)

    return setup


def _dropped() -> Callable[[], None]:
    CALLS.addFilter(lambda record: False)
    return lambda: CALLS.filters.clear()


def _not_propagated() -> Callable[[], None]:
    CALLS.propagate = False
    return lambda: setattr(CALLS, "propagate", True)


def _disabled() -> Callable[[], None]:
    CALLS.disabled = True
    return lambda: setattr(CALLS, "disabled", False)


def _handler_level() -> Callable[[], None]:
    logging.getLogger().handlers[0].setLevel(logging.WARNING)
    return lambda: None  # the handler goes with the test's logging


def _formatter() -> Callable[[], None]:
    logging.getLogger().handlers[0].setFormatter(logging.Formatter("%(levelname)s|%(message)s"))
    return lambda: None


def _record_factory() -> Callable[[], None]:
    making = logging.getLogRecordFactory()

    def tagged(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = making(*args, **kwargs)
        record.msg = f"tagged {record.msg}"
        return record

    logging.setLogRecordFactory(tagged)
    return lambda: logging.setLogRecordFactory(making)


def _patched_logger() -> Callable[[], None]:
    calling = logging.Logger.callHandlers

    def marked(self: logging.Logger, record: logging.LogRecord) -> None:
        record.msg = f"marked {record.msg}"
        calling(self, record)

    logging.Logger.callHandlers = marked  # type: ignore[method-assign]
    return lambda: setattr(logging.Logger, "callHandlers", calling)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_filtered("rewritten"), "rewritten"),
        (_dropped, None),
        (_not_propagated, None),
        (_disabled, None),
        (_handler_level, None),
        (_formatter, "INFO|tool=hello outcome=ok duration_ms=12.3"),
        (_record_factory, "tagged tool=hello"),
        (_patched_logger, "marked tool=hello"),
    ],
)
def test_a_change_to_logging_turns_the_direct_call_line_off(
    change: Callable[[], Callable[[], None]], expected: str | None
) -> None:
    """Whatever could see or change the call line's record (a filter, a logger that does
    not propagate or is disabled, the handler's level or formatter, a record factory, a
    replaced logging method) has the record made and handled as ``CALLS.info`` would."""
    with configured("text") as stream:
        undo = change()
        try:
            log_call("hello", Outcome.OK, 0.0123)
        finally:
            undo()
    if expected is None:
        assert stream.getvalue() == ""
    else:
        assert expected in stream.getvalue(), stream.getvalue()
        assert stream.getvalue().count("\n") == 1


@pytest.mark.parametrize("where", ["root", "mcp_runtime", "mcp_runtime.calls"])
def test_another_handler_gets_the_call_line_s_record(where: str) -> None:
    """A handler added anywhere on the call line's way (pytest's own, an error tracker's)
    gets its record, and the configured handler still writes the line."""
    caught: list[logging.LogRecord] = []

    class Catching(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record)

    logger = logging.getLogger("" if where == "root" else where)
    handler = Catching()
    with configured("text") as stream:
        logger.addHandler(handler)
        try:
            log_call("hello", Outcome.OK, 0.0123)
        finally:
            logger.removeHandler(handler)
    assert [record.getMessage() for record in caught] == ["tool=hello outcome=ok duration_ms=12.3"]
    assert stream.getvalue().endswith("tool=hello outcome=ok duration_ms=12.3\n")


PATCHED_FIRST = """
import logging
import sys

calling = logging.Logger.callHandlers


def marked(self, record):
    record.msg = "marked " + str(record.msg)
    calling(self, record)


logging.Logger.callHandlers = marked
from mcp_runtime.observability.logs import configure_logging, log_call
from mcp_runtime.observability.outcome import Outcome

configure_logging("INFO", "text")
log_call("hello", Outcome.OK, 0.0123)
"""


@pytest.mark.any_python  # a process of its own
def test_a_logging_method_replaced_before_the_runtime_is_imported_is_taken_too() -> None:
    """An error tracker set up before the runtime is imported has the call line's record,
    as it would have had it set up after."""
    done = subprocess.run(
        [sys.executable, "-c", PATCHED_FIRST], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "INFO mcp_runtime.calls: marked tool=hello outcome=ok" in done.stderr, done.stderr
