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
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import Any

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
    "call_line",
    "configure_logging",
    "direct_handler",
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
        fields = {field: getattr(record, field) for field in FIELDS if hasattr(record, field)}
        exception = self.formatException(record.exc_info) if record.exc_info else None
        return self.line(
            record.created, record.levelname, record.name, record.getMessage(), fields, exception
        )

    @staticmethod
    def line(
        created: float,
        level: str,
        logger: str,
        message: str,
        fields: dict[str, object],
        exception: str | None = None,
    ) -> str:
        """The line of a record of these values."""
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds"),
            "level": level,
            "logger": logger,
            "message": message,
        }
        line |= fields
        if exception is not None:
            line["exception"] = exception
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
        return self.time_text(record.created, record.msecs)

    def time_text(self, created: float, msecs: float) -> str:
        """``asctime`` of a record ``created`` at ``msecs`` into its second."""
        second = int(created)
        written, text = self._second  # one tuple: read whole by any thread
        if written != second:
            text = time.strftime(self.default_time_format, self.converter(created))
            self._second = (second, text)
        return self.default_msec_format % (text, msecs)  # type: ignore[operator]


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
    without a walk of the stack for it on every call; where logging is as
    :func:`configure_logging` sets it up, the line that record would write is written
    without it (:func:`direct_handler`).
    """
    if CALLS.isEnabledFor(logging.INFO):
        duration_ms = round(seconds * 1000, 2)
        args = (tool, outcome, duration_ms)
        handler = direct_handler()
        if handler is None:
            CALLS.handle(_call_record(args))
        else:
            _write_directly(handler, args)


def _call_record(args: tuple[str, Outcome, float]) -> logging.LogRecord:
    fields = dict(zip(FIELDS, args, strict=True))
    return CALLS.makeRecord(
        CALLS.name, logging.INFO, *_PLACE, CALL_LINE, args, None, "log_call", fields
    )


# From Python 3.13 a record takes its time from time.time_ns(), before from time.time().
RECORDS_TAKE_NANOSECONDS = sys.version_info >= (3, 13)


def _record_time() -> tuple[float, float]:
    """``created`` and ``msecs`` as a record made now has them."""
    if RECORDS_TAKE_NANOSECONDS:
        nanoseconds = time.time_ns()
        created = nanoseconds / 1e9
        msecs = (nanoseconds % 1_000_000_000) // 1_000_000 + 0.0
        if msecs == 999.0 and int(created) != nanoseconds // 1_000_000_000:
            msecs = 0.0  # as the record does: the seconds rounded up past it
        return created, msecs
    now = time.time()
    return now, int((now - int(now)) * 1000) + 0.0


# logging's own ways of handling a record, as this module found them: where one is
# replaced (an error tracker that patches Logger.callHandlers), records take them.
_STANDARD_WAYS = (
    (logging.Logger, "handle", logging.Logger.handle),
    (logging.Logger, "callHandlers", logging.Logger.callHandlers),
    (logging.Logger, "makeRecord", logging.Logger.makeRecord),
    (logging.Handler, "handle", logging.Handler.handle),
    (logging.Handler, "format", logging.Handler.format),
    (logging.StreamHandler, "emit", logging.StreamHandler.emit),
    (logging.StreamHandler, "flush", logging.StreamHandler.flush),
)
# One replaced before this module was imported turns the direct line off for good.
_WAYS_ARE_LOGGING_S = all(
    getattr(way, "__code__", None) is not None and way.__code__.co_filename == logging.__file__
    for _, _, way in _STANDARD_WAYS
)


def direct_handler() -> "logging.StreamHandler[Any] | None":
    """The handler the call line is written to without its record, where nothing but it
    could see or change that record: None unless the record would reach exactly one
    handler, a plain :class:`logging.StreamHandler` at INFO or below without filters,
    formatting with this module's :class:`TextFormatter` or :class:`JsonFormatter` (as
    :func:`configure_logging` sets it up), nothing filters the call line's logger, and
    logging's record factory, classes and ways of handling a record are its own.

    The line written is then the one handling the record would write, byte for byte;
    ``tests/runtime/test_logs.py`` holds the two alike. It spares the record, the walk of
    loggers and handlers, and the formatter's pass over the record.
    """
    if (
        not _WAYS_ARE_LOGGING_S
        or CALLS.filters
        or CALLS.disabled
        or type(CALLS) is not logging.Logger
        or logging.getLogRecordFactory() is not logging.LogRecord
    ):
        return None
    for owner, name, way in _STANDARD_WAYS:
        if getattr(owner, name) is not way:
            return None
    found = None
    logger: logging.Logger | None = CALLS
    while logger is not None:
        for handler in logger.handlers:
            if found is not None:
                return None
            found = handler
        logger = logger.parent if logger.propagate else None
    if (
        type(found) is not logging.StreamHandler
        or found.filters
        or found.level > logging.INFO
        or type(found.formatter) not in (TextFormatter, JsonFormatter)
    ):
        return None
    return found


def call_line(formatter: logging.Formatter, args: tuple[str, Outcome, float]) -> str:
    """The line ``formatter`` (a :class:`TextFormatter` or :class:`JsonFormatter`) writes
    for the record of a call line of ``args`` made now."""
    created, msecs = _record_time()
    message = CALL_LINE % args
    if isinstance(formatter, JsonFormatter):
        fields: dict[str, object] = dict(zip(FIELDS, args, strict=True))
        return formatter.line(created, "INFO", CALLS.name, message, fields)
    assert isinstance(formatter, TextFormatter)
    asctime = formatter.time_text(created, msecs)
    values = {"asctime": asctime, "levelname": "INFO", "name": CALLS.name, "message": message}
    return TEXT_FORMAT % values


def _write_directly(
    handler: "logging.StreamHandler[Any]", args: tuple[str, Outcome, float]
) -> None:
    """What ``handler.handle`` of the call line's record does: its line written and
    flushed under the handler's lock, a failure reported by ``handleError``."""
    assert handler.formatter is not None
    with handler.lock or nullcontext():
        try:
            stream = handler.stream
            stream.write(call_line(handler.formatter, args) + handler.terminator)
            if stream and hasattr(stream, "flush"):
                stream.flush()
        except RecursionError:
            raise
        except Exception:
            handler.handleError(_call_record(args))


# Where the call line is written, as ``Logger.findCaller`` names a line's place.
_PLACE = (os.path.normcase(log_call.__code__.co_filename), log_call.__code__.co_firstlineno)


filter_library_logs()
