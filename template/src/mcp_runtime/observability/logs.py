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
import os
import sys
import time
from datetime import UTC, datetime

import anyio
from starlette.requests import ClientDisconnect

from mcp_runtime.observability.outcome import Outcome
from mcp_runtime.sdk.log_rewrites import (
    SDK_LOG_REWRITES,
    LogRewrite,
    first_arg,
    logged_by_sdk_session,
)

__all__ = [
    "JsonFormatter",
    "RequestValuesFilter",
    "TextFormatter",
    "configure_logging",
    "filter_library_logs",
    "log_call",
]

CALLS = logging.getLogger("mcp_runtime.calls")
CALL_LINE = "tool=%s outcome=%s duration_ms=%s"
FIELDS = ("tool", "outcome", "duration_ms")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JSON_LINE = json.JSONEncoder(ensure_ascii=False)  # json.dumps(line, ensure_ascii=False)


# Per logger: the lines that would carry request values, and how each is rewritten. The
# MCP SDK's (its logger names and wording) are the SDK module's to know.
REWRITES: dict[str, list[LogRewrite]] = {
    **SDK_LOG_REWRITES,
    "sse_starlette.sse": [
        LogRewrite("chunk: ", None, lambda r: f"chunk: {_size(first_arg(r))} bytes (not logged)"),
    ],
    "uvicorn.error": [],
    # Docket names each task by its key (the task's id) in the line that ends it: those
    # lines are dropped (the call log line says how each task's call ended).
    "docket.worker": [
        LogRewrite("↩ ", None, None),
        LogRewrite("✗ ", None, None),
        LogRewrite("🗙 ", None, None),
    ],
    # A task handed on at shutdown goes through Docket's retry, which logs it as an error
    # with its traceback: the engine logs the hand-off in its own words.
    "docket.dependencies": [
        LogRewrite("↩ ", None, None),
        LogRewrite("↫ ", None, None),
        LogRewrite("↬ ", None, None),
    ],
}


def _size(chunk: object) -> int:
    return len(chunk) if isinstance(chunk, bytes) else len(str(chunk).encode())


DISCONNECTS = (ClientDisconnect, ConnectionError, anyio.BrokenResourceError)


def _is_disconnect(error: BaseException | None) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return all(_is_disconnect(inner) for inner in error.exceptions)
    return isinstance(error, DISCONNECTS)


class RequestValuesFilter(logging.Filter):
    """Rewrites a library's lines that would log request contents, and quiets disconnects."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "root" and not logged_by_sdk_session(record):
            return True
        error = record.exc_info[1] if record.exc_info else None
        if _is_disconnect(error):
            if isinstance(error, ClientDisconnect):
                text = "Client disconnected before its request body arrived"
            else:
                text = "Client disconnected before its answer was sent"
            return self._rewrite(record, logging.INFO, text, keep_traceback=False)
        line = str(record.msg)
        for rewrite in REWRITES.get(record.name, ()):
            if line.startswith(rewrite.start):
                new = rewrite.text
                if new is None:
                    return False
                text = new if isinstance(new, str) else new(record)
                level = rewrite.level or record.levelno
                return self._rewrite(record, level, text, keep_traceback=rewrite.keep_traceback)
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
    """One JSON object a line: time, level, logger, message, and the call fields.

    Written here because it writes only the fields it names: python-json-logger writes
    every ``extra`` attribute a library attaches to a record (uvicorn attaches
    ``color_message``), and a library's extras could carry request values.
    """

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
        return JSON_LINE.encode(line)


class TextFormatter(logging.Formatter):
    """The runtime's text lines (:data:`TEXT_FORMAT`): :class:`logging.Formatter`'s own,
    the date and time of a second written once, not once a line."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)
        self._second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        if datefmt is not None or self.default_msec_format is None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        written, text = self._second  # one tuple: read whole by any thread
        if written != second:
            text = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = (second, text)
        return self.default_msec_format % (text, record.msecs)


def configure_logging(level: str = "INFO", log_format: str = "text") -> None:
    """Libraries log warnings only; the runtime logs at ``level``; all to stderr."""
    filter_library_logs()
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("mcp_runtime").setLevel(level)


def log_call(tool: str, outcome: Outcome, seconds: float) -> None:
    """The one line a tool call leaves: tool, outcome, duration.

    The record is the one ``CALLS.info`` would make, its place (this function) named
    without a walk of the stack for it on every call.
    """
    if CALLS.isEnabledFor(logging.INFO):
        duration_ms = round(seconds * 1000, 2)
        fields = {"tool": tool, "outcome": outcome, "duration_ms": duration_ms}
        args = (tool, outcome, duration_ms)
        record = CALLS.makeRecord(
            CALLS.name, logging.INFO, *_PLACE, CALL_LINE, args, None, "log_call", fields
        )
        CALLS.handle(record)


# Where the call line is written, as ``Logger.findCaller`` names a line's place.
_PLACE = (os.path.normcase(log_call.__code__.co_filename), log_call.__code__.co_firstlineno)


filter_library_logs()
