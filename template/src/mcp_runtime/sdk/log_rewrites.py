"""The SDK's log lines that would carry request values, known by logger and wording.

The runtime's log filter (``observability.logs``) rewrites each so that no request
value reaches the log: :data:`SDK_LOG_REWRITES` lists them per logger of the SDK.
"""

import logging
import re
from collections.abc import Callable
from typing import Any, NamedTuple, get_args

from mcp import types as mcp_types

__all__ = ["SDK_LOG_REWRITES", "LogRewrite", "first_arg", "logged_by_sdk_session"]


class LogRewrite(NamedTuple):
    """How a library's log line that would carry request values is rewritten: the start of
    its text; the level of the new line (None: the same); the new text (None: the line is
    dropped, as it repeats one rewritten already); whether its traceback stays."""

    start: str
    level: int | None
    text: str | Callable[[logging.LogRecord], str] | None
    keep_traceback: bool = True


def first_arg(record: logging.LogRecord) -> object:
    """The first argument of a log record's message."""
    return record.args[0] if isinstance(record.args, tuple) and record.args else None


def logged_by_sdk_session(record: logging.LogRecord) -> bool:
    """Whether a line of the root logger comes from the SDK's session (which logs there)."""
    return record.pathname.replace("\\", "/").endswith("/mcp/shared/session.py")


def _message_type(message: object) -> str:
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


_REQUESTS = _methods(mcp_types.ClientRequest)
_NOTIFICATIONS = _methods(mcp_types.ClientNotification)

SDK_LOG_REWRITES: dict[str, list[LogRewrite]] = {
    # Per logger of the SDK: its lines that would carry request values, rewritten.
    "mcp.server.lowlevel.server": [
        LogRewrite(
            "Received message: ", None, lambda r: f"Received message: {_message_type(first_arg(r))}"
        ),
        LogRewrite(
            "Received exception from stream",
            logging.DEBUG,
            "Received an error from the transport in place of a message (text not logged)",
        ),
        LogRewrite("Warning: ", None, lambda r: f"Warning: {first_arg(r)} (text not logged)"),
        LogRewrite("Tool cache miss for ", None, "Tool cache miss, refreshing the cache"),
        LogRewrite("Tool '%s' not listed", None, "tools/call named a tool that is not listed"),
        LogRewrite("Request %s cancelled", None, "A request was cancelled by its client"),
        LogRewrite("Response for %s dropped", None, "A response was dropped: the transport closed"),
    ],
    # mcp.shared.session logs on the root logger (only its lines are rewritten there).
    "root": [
        LogRewrite("Failed to validate request", None, lambda r: _refused("request", r, _REQUESTS)),
        LogRewrite("Message that failed validation", None, None),
        LogRewrite(
            "Failed to validate notification",
            None,
            lambda r: _refused("notification", r, _NOTIFICATIONS),
        ),
        LogRewrite("Progress callback raised", None, "A progress callback raised an exception"),
        LogRewrite(
            "Unhandled exception in receive loop", None, "Unhandled exception in receive loop"
        ),
        LogRewrite("Response ID ", None, "A response's ID matches no pending request"),
    ],
    # The SDK's 2.x line: its dispatcher, its runner and its high-level server.
    "mcp.shared.jsonrpc_dispatcher": [
        LogRewrite(
            "transport yielded exception",
            logging.DEBUG,
            "The transport yielded an error in place of a message (text not logged)",
        ),
        LogRewrite(
            "dropping response for unknown", None, "A response's id matches no pending request"
        ),
        LogRewrite(
            "waiter for request id", None, "A response came for a request no longer awaited"
        ),
        LogRewrite(
            "transport_builder raised; rejecting", None, "A request was refused: no transport"
        ),
    ],
    "mcp.server.runner": [
        LogRewrite("dropped %r: not defined at", None, "Dropped a notification its revision lacks"),
        LogRewrite(
            "dropped %r: malformed params", None, "Dropped a notification: its params are malformed"
        ),
        LogRewrite(
            "handler for %r returned an invalid result",
            None,
            "A handler returned a result the protocol refuses (values not logged)",
            keep_traceback=False,  # a validation error's traceback shows values
        ),
        LogRewrite(
            "dropped a frame received before", None, "Dropped a frame sent before any request"
        ),
        LogRewrite(
            "no handler for notification", None, "No handler for a notification (method not logged)"
        ),
    ],
    "mcp.server.mcpserver.server": [
        LogRewrite(
            "Tool %r rejected arguments", None, "tools/call refused: its arguments do not validate"
        ),
        LogRewrite(
            "Tool %r failed", None, "tools/call failed: the tool is unknown or reported an error"
        ),
        LogRewrite(
            "Tool %r raised", None, "A tool raised an unexpected exception (name not logged)"
        ),
    ],
    "mcp.server._streamable_http_modern": [
        LogRewrite(
            "acknowledged and dropped", None, "Acknowledged and dropped a client notification"
        ),
    ],
    "mcp.server.streamable_http": [
        LogRewrite(
            "Session terminated with request", None, "A session ended with a request in flight"
        ),
        LogRewrite(
            "Dropped message related to request", None, "Dropped a message: JSON responses only"
        ),
        LogRewrite("Stored ", None, "Stored an event for resumption"),
    ],
    "mcp.server.streamable_http_manager": [
        LogRewrite(
            "Rejecting request for session",
            None,
            "Rejected a request for a session opened with another credential",
        ),
        LogRewrite(
            "Rejected request with unknown", None, "Rejected a request: its session id is unknown"
        ),
        LogRewrite(
            "Created new transport with session", None, "Opened a session (its id not logged)"
        ),
    ],
    "mcp.server.transport_security": [
        # The front's HostCheck refuses these first, and logs the line that names the fix.
        LogRewrite("Invalid Host header", None, None),
        LogRewrite("Invalid Origin header", None, None),
        LogRewrite(
            "Invalid Content-Type", None, "Refused a POST request: its Content-Type is not JSON"
        ),
    ],
}
