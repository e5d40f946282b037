"""How a tool call ended: the one set of values its log line, its span and its metrics carry."""

from enum import StrEnum

__all__ = ["Outcome"]


class Outcome(StrEnum):
    """The outcome of one tool call. Each is its own string, as logs, spans and metric
    labels show it."""

    OK = "ok"
    """A result that keeps the tool's contract."""
    TOOL_ERROR = "tool_error"
    """The tool's own error: a ``ToolError`` answered, or a ``ToolException`` raised."""
    CONTRACT_VIOLATION = "contract_violation"
    """A result that breaks the tool's annotation: never sent."""
    EXCEPTION = "exception"
    """The tool raised anything else (masked behind an error id)."""
    TIMEOUT = "timeout"
    """The call ran past its deadline (``MCP_CALL_TIMEOUT``)."""
    BAD_ARGUMENTS = "bad_arguments"
    """The arguments do not fit the tool's input schema."""
    FORBIDDEN = "forbidden"
    """The caller's token lacks a scope the tool needs."""
    BUSY = "busy"
    """A sync call got no thread: its tool's are all hung, or busy past its deadline."""
    SHUTDOWN = "shutdown"
    """Shutdown's grace ended the call."""
    TOO_LARGE = "too_large"
    """The result is larger than the service sends (``MCP_MAX_RESULT_BYTES``), or than a
    streamed answer carries (``MCP_MAX_STREAMED_RESULT_BYTES``): never sent."""
    CANCELLED = "cancelled"
    """The client cancelled the call, or left."""
