"""The HTTP headers of the MCP request a tool is serving.

Credentials travel in headers, never as tool arguments, so they never enter the
model's context. Headers are read from the request being served (a context
variable, so concurrent requests never see each other's), and nothing here logs
them. Over stdio there is no HTTP request and every header is absent.

A task's run reads only the headers its tool declares
(``@tool_metadata(task_headers=[...])``): those are kept with the task, sealed, so that
a run in another process, after the first one stopped, reads them too. Reading any
other header in a task raises :class:`UndeclaredHeaderError`, in its first run as in
a later one.
"""

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from langchain_core.tools import ToolException

from mcp_runtime.sdk.context import request_headers

__all__ = ["UndeclaredHeaderError", "request_header", "task_headers", "using_headers"]

_override: ContextVar[Mapping[str, str] | None] = ContextVar("_override", default=None)
_task: ContextVar[tuple[str, frozenset[str]] | None] = ContextVar("_task_headers", default=None)


class UndeclaredHeaderError(ToolException):
    """A task's run read a request header its tool did not declare. Its message, which
    names the declaration to add, is the call's answer."""


def request_header(name: str) -> str | None:
    """The value of header ``name`` (case-insensitive) of the current request, or None."""
    wanted = name.lower()
    task = _task.get()
    if task is not None and wanted not in task[1]:
        tool, declared = task
        names = ", ".join(repr(header) for header in (*sorted(declared), wanted))
        raise UndeclaredHeaderError(
            f"Tool '{tool}' read the request header {name!r} while running as a task, but "
            "does not declare it: a task reads only the headers its tool declares, which "
            "are kept with the task for a run that takes it over. Declare it with "
            f"@tool_metadata(task_headers=[{names}])."
        )
    override = _override.get()
    if override is not None:
        return next((v for k, v in override.items() if k.lower() == wanted), None)
    headers = request_headers()
    if headers is None:
        return None
    value = headers.get(name)
    return value if isinstance(value, str) else None


@contextmanager
def using_headers(headers: Mapping[str, str]) -> Iterator[None]:
    """Serve ``headers`` to tools called inside the block (direct calls, tests, agents)."""
    token = _override.set(dict(headers))
    try:
        yield
    finally:
        _override.reset(token)


@contextmanager
def task_headers(tool: str, declared: Sequence[str], headers: Mapping[str, str]) -> Iterator[None]:
    """Within the block, a run of a task of ``tool``: it reads ``headers`` (those of the
    request that created the task, of the names ``declared``) and no other."""
    names = frozenset(name.lower() for name in declared)
    token = _task.set((tool, names))
    try:
        with using_headers(headers):
            yield
    finally:
        _task.reset(token)
