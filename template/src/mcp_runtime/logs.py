"""Logging an operator can use: quiet libraries, the runtime's own lines, text or JSON.

Tool calls are logged one line each by ``mcp_runtime.calls`` with the tool, the
outcome (ok, tool_error, contract_violation, exception, timeout, bad_arguments)
and the duration. Nothing here logs arguments, results or header values.
"""

import json
import logging
import sys
from datetime import UTC, datetime

__all__ = ["configure_logging", "log_call"]

CALLS = logging.getLogger("mcp_runtime.calls")
FIELDS = ("tool", "outcome", "duration_ms")


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
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("mcp_runtime").setLevel(level)


def log_call(tool: str, outcome: str, seconds: float) -> None:
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
