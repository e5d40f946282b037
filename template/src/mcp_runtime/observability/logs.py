"""Logging an operator can use: quiet libraries, the runtime's own lines, text or JSON.

Tool calls are logged one line each by ``mcp_runtime.calls`` with the tool, the
outcome (an :class:`~mcp_runtime.observability.outcome.Outcome`) and the duration.
Nothing here logs arguments, results or header values.

Nor do the libraries under the runtime, at any level: the lines of the MCP SDK,
``sse_starlette`` and uvicorn that would carry request contents (params,
arguments, request ids, results, header values) are rewritten by a filter on
each logger that writes them, to say what happened without the values. A client
that disconnects mid-request leaves one INFO line, never an error or a
traceback. The filter is installed when the runtime is imported, however
logging is configured afterwards.
"""

import json
import logging
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, get_args

import anyio
from mcp import types
from starlette.requests import ClientDisconnect

from mcp_runtime.observability.outcome import Outcome

__all__ = [
    "JsonFormatter",
    "RequestValuesFilter",
    "configure_logging",
    "filter_library_logs",
    "log_call",
]

CALLS = logging.getLogger("mcp_runtime.calls")
FIELDS = ("tool", "outcome", "duration_ms")

NewText = str | Callable[[logging.LogRecord], str] | None


def _first_arg(record: logging.LogRecord) -> object:
    return record.args[0] if isinstance(record.args, tuple) and record.args else None


def _size(chunk: object) -> int:
    return len(chunk) if isinstance(chunk, bytes) else len(str(chunk).encode())


def _kind(message: object) -> str:
    """The type of a message the SDK received: a schema name, never its contents."""
    if isinstance(message, BaseException):
        return type(message).__name__
    root = getattr(getattr(message, "request", message), "root", message)
    return type(root).__name__


def _methods(union: Any) -> dict[str, str]:
    """Member class name to method, for ``types.ClientRequest`` or ``ClientNotification``."""
    members = get_args(union)
    return {member.__name__: member.model_fields["method"].default for member in members}


def _refused(kind: str, record: logging.LogRecord, methods: dict[str, str]) -> str:
    """What was refused, and its method when the SDK's validation error names a known one."""
    locations = re.findall(r"^(\w+)\.(.+)$", str(record.msg), re.MULTILINE)
    refused = {name for name, rest in locations if rest == "method"}
    fitting = {methods[name] for name, _ in locations if name in methods and name not in refused}
    if len(fitting) == 1:
        return f"Refused a {fitting.pop()} {kind}: its params do not validate (values not logged)"
    return f"Refused a {kind}: its method is unknown or its params do not validate"


INVALID_RESULT = "A handler returned a result the protocol refuses (values not logged)"

REQUESTS = _methods(types.ClientRequest)
NOTIFICATIONS = _methods(types.ClientNotification)

# Per logger: how the library's line starts, the level of the rewritten line (None: the
# same), and its new text (None: dropped, as it repeats a line rewritten already).
REWRITES: dict[str, list[tuple[str, int | None, NewText]]] = {
    "mcp.server.lowlevel.server": [
        ("Received message: ", None, lambda r: f"Received message: {_kind(_first_arg(r))}"),
        (
            "Received exception from stream",
            logging.DEBUG,
            "Received an error from the transport in place of a message (text not logged)",
        ),
        ("Warning: ", None, lambda r: f"Warning: {_first_arg(r)} (text not logged)"),
        ("Tool cache miss for ", None, "Tool cache miss, refreshing the cache"),
        ("Tool '%s' not listed", None, "tools/call named a tool that is not listed"),
        ("Request %s cancelled", None, "A request was cancelled by its client"),
        ("Response for %s dropped", None, "A response was dropped: the transport closed"),
    ],
    # mcp.shared.session logs on the root logger (only its lines are rewritten there).
    "root": [
        ("Failed to validate request", None, lambda r: _refused("request", r, REQUESTS)),
        ("Message that failed validation", None, None),
        (
            "Failed to validate notification",
            None,
            lambda r: _refused("notification", r, NOTIFICATIONS),
        ),
        ("Progress callback raised", None, "A progress callback raised an exception"),
        ("Unhandled exception in receive loop", None, "Unhandled exception in receive loop"),
        ("Response ID ", None, "A response's ID matches no pending request"),
    ],
    # The SDK's 2.x line: its dispatcher, its runner and its high-level server.
    "mcp.shared.jsonrpc_dispatcher": [
        (
            "transport yielded exception",
            logging.DEBUG,
            "The transport yielded an error in place of a message (text not logged)",
        ),
        ("dropping response for unknown", None, "A response's id matches no pending request"),
        ("waiter for request id", None, "A response came for a request no longer awaited"),
        ("transport_builder raised; rejecting", None, "A request was refused: no transport"),
    ],
    "mcp.server.runner": [
        ("dropped %r: not defined at", None, "Dropped a notification its revision lacks"),
        ("dropped %r: malformed params", None, "Dropped a notification: its params are malformed"),
        ("handler for %r returned an invalid result", None, INVALID_RESULT),
        ("dropped a frame received before", None, "Dropped a frame sent before any request"),
        ("no handler for notification", None, "No handler for a notification (method not logged)"),
    ],
    "mcp.server.mcpserver.server": [
        ("Tool %r rejected arguments", None, "tools/call refused: its arguments do not validate"),
        ("Tool %r failed", None, "tools/call failed: the tool is unknown or reported an error"),
        ("Tool %r raised", None, "A tool raised an unexpected exception (name not logged)"),
    ],
    "mcp.server._streamable_http_modern": [
        ("acknowledged and dropped", None, "Acknowledged and dropped a client notification"),
    ],
    "mcp.server.streamable_http": [
        ("Session terminated with request", None, "A session ended with a request in flight"),
        ("Dropped message related to request", None, "Dropped a message: JSON responses only"),
        ("Stored ", None, "Stored an event for resumption"),
    ],
    "mcp.server.streamable_http_manager": [
        (
            "Rejecting request for session",
            None,
            "Rejected a request for a session opened with another credential",
        ),
        ("Rejected request with unknown", None, "Rejected a request: its session id is unknown"),
        ("Created new transport with session", None, "Opened a session (its id not logged)"),
    ],
    "mcp.server.transport_security": [
        ("Invalid Host header", None, "Refused a request: its Host header is not allowed"),
        ("Invalid Origin header", None, "Refused a request: its Origin header is not allowed"),
        ("Invalid Content-Type", None, "Refused a POST request: its Content-Type is not JSON"),
    ],
    "sse_starlette.sse": [
        ("chunk: ", None, lambda r: f"chunk: {_size(_first_arg(r))} bytes (not logged)"),
    ],
    "uvicorn.error": [],
}

DISCONNECTS = (ClientDisconnect, ConnectionError, anyio.BrokenResourceError)


def _is_disconnect(error: BaseException | None) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return all(_is_disconnect(inner) for inner in error.exceptions)
    return isinstance(error, DISCONNECTS)


def _from_sdk(record: logging.LogRecord) -> bool:
    return record.pathname.replace("\\", "/").endswith("/mcp/shared/session.py")


class RequestValuesFilter(logging.Filter):
    """Rewrites a library's lines that would log request contents, and quiets disconnects."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "root" and not _from_sdk(record):
            return True
        error = record.exc_info[1] if record.exc_info else None
        if _is_disconnect(error):
            if isinstance(error, ClientDisconnect):
                text = "Client disconnected before its request body arrived"
            else:
                text = "Client disconnected before its answer was sent"
            return self._rewrite(record, logging.INFO, text, keep_traceback=False)
        line = str(record.msg)
        for start, level, new in REWRITES.get(record.name, ()):
            if line.startswith(start):
                if new is None:
                    return False
                text = new if isinstance(new, str) else new(record)
                keep = text != INVALID_RESULT  # a validation error's traceback shows values
                return self._rewrite(record, level or record.levelno, text, keep_traceback=keep)
        return True

    @staticmethod
    def _rewrite(record: logging.LogRecord, level: int, text: str, *, keep_traceback: bool) -> bool:
        record.msg, record.args = text, ()
        record.levelno, record.levelname = level, logging.getLevelName(level)
        if not keep_traceback:
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return logging.getLogger(record.name).isEnabledFor(level)


def filter_library_logs() -> None:
    """Put :class:`RequestValuesFilter` on every library logger that would log request
    contents (idempotent)."""
    for name in REWRITES:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RequestValuesFilter) for f in logger.filters):
            logger.addFilter(RequestValuesFilter())


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and the call fields."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line |= {field: getattr(record, field) for field in FIELDS if hasattr(record, field)}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure_logging(level: str = "INFO", log_format: str = "text") -> None:
    """Libraries log warnings only; the runtime logs at ``level``; all to stderr."""
    filter_library_logs()
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("mcp_runtime").setLevel(level)


def log_call(tool: str, outcome: Outcome, seconds: float) -> None:
    """The one line a tool call leaves: tool, outcome, duration."""
    if CALLS.isEnabledFor(logging.INFO):
        duration_ms = round(seconds * 1000, 2)
        CALLS.info(
            "tool=%s outcome=%s duration_ms=%s",
            tool,
            outcome,
            duration_ms,
            extra={"tool": tool, "outcome": outcome, "duration_ms": duration_ms},
        )


filter_library_logs()
