"""What the task wire needs of the SDK: the schemas of both revisions, and the context a
task's run calls its tool with."""

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp.types import RequestParamsMeta
from mcp_types import methods as mcp_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_runtime.sdk.context import BuiltRequest

__all__ = ["TaskContext", "call_result_for", "check_params", "task_context"]


class TaskContext:
    """The context a task's tool is called with: no HTTP request (a task's run reads its
    caller and declared headers from the task), with the task's id as its JSON-RPC id and
    progress token; a progress report sets the task's status message (:attr:`progress`
    is the task engine's sink for it)."""

    def __init__(self, request_context: BuiltRequest) -> None:
        self.request_context = request_context
        self.progress: Callable[[str], Awaitable[None]] | None = None

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        sink = self.progress
        if sink is None:
            return
        if message is None:
            message = f"{progress:g} of {total:g}" if total is not None else f"{progress:g}"
        await sink(message)


def task_context(task_id: str, version: str) -> TaskContext:
    """The context of a run of task ``task_id``, created in protocol revision ``version``."""
    meta: RequestParamsMeta = {"progress_token": task_id}
    return TaskContext(BuiltRequest(None, f"task:{task_id}", meta, version))


def check_params(method: str, version: str, params: Mapping[str, Any]) -> None:
    """Raise pydantic's ``ValidationError`` unless ``params`` keep the schema of ``method``
    in revision ``version``, as the SDK checks them before its handler runs."""
    mcp_methods.validate_client_request(method, version, params)


def call_result_for(result: dict[str, Any], version: str) -> dict[str, Any]:
    """A stored ``CallToolResult`` (JSON) as revision ``version`` shapes it."""
    shaped = mcp_methods.serialize_server_result("tools/call", version, result)
    if version in MODERN_PROTOCOL_VERSIONS and shaped.get("resultType") is None:
        shaped["resultType"] = "complete"
    return shaped
