"""The typed tool-return contract: what a tool may return.

A tool is annotated ``-> XResult | ToolError`` (or ``-> XResult`` when it reports
failures by raising), where ``XResult`` subclasses :class:`ToolResult` and declares
each data key ``NotRequired``. Build results with call syntax,
``HelloResult(message=..., greeting=...)``: a plain dict at run time, checked by mypy.
"""

from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict, TypeIs

__all__ = ["ToolError", "ToolResult", "is_error"]


class ToolResult(TypedDict):
    """A tool's successful answer: ``message`` is the human-readable answer."""

    message: str


class ToolError(TypedDict):
    """A structured failure: `error` is a short kind (such as invalid_argument, not_found or upstream_unavailable); `detail` says what went wrong and what to do about it."""  # noqa: E501

    error: str
    detail: str


def is_error(result: Mapping[str, Any]) -> TypeIs[ToolError]:
    """Tell a :class:`ToolError` from a result: true when it carries an ``error`` key."""
    return "error" in result
