"""Tasks on the wire, in both protocol revisions, through the SDK's server.

A ``tools/call`` of a task tool (declared ``task="optional"`` or ``"required"``) from a
client that opts in becomes a task: 2025-11-25 clients opt in with the request's
``task`` parameter, 2026-07-28 clients by naming the ``io.modelcontextprotocol/tasks``
extension in the request's ``_meta`` client capabilities. The answer, sent once the task
is stored, is the task's handle (2025-11-25: ``{"task": {...}}``; 2026-07-28: the task's
fields flat, ``resultType: "task"``). A client that does not opt in gets what its
revision says: an optional task tool runs inline, as any tool; a required one is refused
(2025-11-25: ``-32601``; 2026-07-28: ``-32021`` naming the extension).

The task methods answer only the caller that created the task; another caller's task
id answers exactly as an unknown one (``-32602``):

- ``tasks/get`` (both): the task; in 2026-07-28 with its ``result`` or ``error`` inline;
- ``tasks/cancel`` (both): cancels a working task (2025-11-25: answers the task;
  2026-07-28: an empty acknowledgement, also for a task that has ended);
- ``tasks/result`` and ``tasks/list`` (2025-11-25): the result once the task ends, and
  the caller's tasks;
- ``tasks/update`` (2026-07-28): acknowledged; no task of this service asks for input.

In 2026-07-28 every task method needs the extension in the request's client
capabilities (else ``-32021``), and an ``Mcp-Name`` header, when sent, must name the
task (else ``-32020``).

When the task store does not answer, a task call is refused as the cap refuses one
(2026-07-28: an ``isError`` result, ``tasks_unavailable``; 2025-11-25: ``-32603``), and
a task method answers ``-32603``; each says to try again, with the error id of the log's
line. Tools called plainly go on answering.
"""

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from mcp.types import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    RequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict

from mcp_runtime.auth.oauth import caller_of, token_owner
from mcp_runtime.contract.served_tool import ContractTool
from mcp_runtime.contract.tool_result import ToolError
from mcp_runtime.sdk.context import request_token
from mcp_runtime.sdk.hooks import (
    CallNext,
    Extension,
    HandlerResult,
    MCPError,
    MethodBinding,
    ServerRequestContext,
)
from mcp_runtime.sdk.tasks import call_result_for, check_params
from mcp_runtime.tasks.engine import TaskEngine, TaskLimitError, TaskRequest, TaskStoreError
from mcp_runtime.tasks.record import TaskRecord

__all__ = ["TASKS_EXTENSION", "TaskMethods", "TaskRouting", "owner_key"]

logger = logging.getLogger(__name__)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
RELATED_TASK = "io.modelcontextprotocol/related-task"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
LEGACY = frozenset({"2025-11-25"})
MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)
MISSING_DATA: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


def owner_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """Whose tasks a request reads: a digest of its verified caller (subject and client),
    or ``anonymous`` without one. Only the digest is stored."""
    return token_owner(request_token(ctx))


def task_request(
    ctx: ServerRequestContext[Any, Any], tool: ContractTool, arguments: dict[str, Any]
) -> TaskRequest:
    """What a run of a task of ``tool`` keeps of the request ``ctx`` serves: its verified
    caller (never its token), the headers ``tool`` declares, ``arguments``, its revision."""
    headers = {}
    for name in tool.task_headers:
        value = header(ctx, name)
        if value is not None:
            headers[name] = value
    caller = caller_of(request_token(ctx))
    return TaskRequest(caller, headers, arguments, ctx.protocol_version or "")


def requested_ttl(params: Mapping[str, Any]) -> int | None:
    """The ttl (milliseconds) a 2025-11-25 task request asks its result be kept; None."""
    task = params.get("task")
    ttl = task.get("ttl") if isinstance(task, Mapping) else None
    return ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0 else None


def opted_in(params: Mapping[str, Any] | None) -> bool:
    """Whether a 2026-07-28 request names the tasks extension in its client capabilities."""
    meta = (params or {}).get("_meta")
    capabilities = meta.get(CLIENT_CAPABILITIES) if isinstance(meta, Mapping) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return isinstance(extensions, Mapping) and isinstance(extensions.get(TASKS_EXTENSION), Mapping)


def store_down(what: str, error: TaskStoreError) -> str:
    """What a request is told when the task store did not answer, or had no free
    connection: ``what`` did not happen."""
    if error.busy:
        return (
            f"The service's task store has too many requests at once right now, so {what}: "
            f"try again in a few seconds. (The service's log has the details under error id "
            f"{error.error_id}.)"
        )
    return (
        f"The service cannot reach its task store right now, so {what}: try again in a "
        f"minute. (The service's log has the details under error id {error.error_id}.)"
    )


def missing_extension(what: str) -> MCPError:
    """``-32021``: ``what`` needs the tasks extension, which the request did not name."""
    return MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=(
            f"{what} needs the tasks extension ({TASKS_EXTENSION}): name it in the request's "
            f"_meta {CLIENT_CAPABILITIES}.extensions."
        ),
        data=MISSING_DATA,
    )


class TaskRouting:
    """The server middleware that turns an opted-in ``tools/call`` of a task tool into a
    task, and refuses a plain call of a tool that runs only as one."""

    def __init__(self, engine: TaskEngine, tools: Sequence[ContractTool], stamp: dict[str, Any]):
        self.engine = engine
        self.tools = {tool.name: tool for tool in tools if tool.task is not None}
        self.stamp = stamp

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        params = ctx.params
        if ctx.method != "tools/call" or not isinstance(params, Mapping):
            return await call_next(ctx)
        tool = self.tools.get(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments", {})
        if tool is None or not isinstance(arguments, dict):
            return await call_next(ctx)
        version = ctx.protocol_version
        stamp = {"_meta": {SERVER_INFO: dict(self.stamp)}}
        if version in MODERN:
            if opted_in(params):
                check_params("tools/call", version, params)  # as the SDK would, before its tool
                try:
                    request = task_request(ctx, tool, arguments)
                    record = await self.engine.create(tool, request, owner_key(ctx))
                except (TaskLimitError, TaskStoreError) as exc:
                    refusal = tool.error_result(refused(exc))
                    dumped = refusal.model_dump(by_alias=True, mode="json", exclude_none=True)
                    return {**call_result_for(dumped, version), **stamp}
                return {"resultType": "task", **record.fields_2026(), **stamp}
            if tool.task == "required":
                raise missing_extension(f"Tool '{tool.name}' runs only as a task: it")
            return await call_next(ctx)
        if isinstance(params.get("task"), Mapping):
            check_params("tools/call", version, params)
            try:
                request = task_request(ctx, tool, arguments)
                ttl = requested_ttl(params)
                record = await self.engine.create(tool, request, owner_key(ctx), ttl)
            except TaskLimitError as exc:
                raise MCPError(code=INVALID_REQUEST, message=str(exc)) from None
            except TaskStoreError as exc:
                message = store_down("the task was not created", exc)
                raise MCPError(code=INTERNAL_ERROR, message=message) from None
            return {"task": record.fields_2025()}
        if tool.task == "required":
            raise MCPError(
                code=METHOD_NOT_FOUND,
                message=(
                    f"Tool '{tool.name}' runs only as a task: call it with the `task` "
                    "parameter (2025-11-25 tasks), then poll tasks/get and read tasks/result."
                ),
            )
        return await call_next(ctx)


def refused(exc: TaskLimitError | TaskStoreError) -> ToolError:
    """The tool error a 2026-07-28 task call is refused with."""
    if isinstance(exc, TaskLimitError):
        return ToolError(error="too_many_tasks", detail=str(exc))
    return ToolError(error="tasks_unavailable", detail=store_down("the task was not created", exc))


Handler = Callable[[Any, ServerRequestContext[Any, Any], Any], Awaitable[HandlerResult]]


def answering_store_down(handler: Handler) -> Handler:
    """``handler`` (a task method's), answering ``-32603`` when the store did not answer."""

    @functools.wraps(handler)
    async def answering(
        self: Any, ctx: ServerRequestContext[Any, Any], params: Any
    ) -> HandlerResult:
        try:
            return await handler(self, ctx, params)
        except TaskStoreError as exc:
            message = store_down(f"{ctx.method} could not be answered", exc)
            raise MCPError(code=INTERNAL_ERROR, message=message) from None

    return answering


class TaskIdParams(RequestParams):
    """The params of a task method: the task's id (other keys are ignored)."""

    model_config = ConfigDict(extra="allow")

    taskId: str  # noqa: N815 - the protocol's name


class ListParams(RequestParams):
    """The params of ``tasks/list``: an optional cursor."""

    model_config = ConfigDict(extra="allow")

    cursor: str | None = None


class TaskMethods(Extension):
    """The ``io.modelcontextprotocol/tasks`` extension: it advertises itself in
    ``server/discover`` and serves the task methods of both revisions."""

    identifier = TASKS_EXTENSION

    def __init__(self, engine: TaskEngine) -> None:
        self.engine = engine

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskIdParams, self.get),
            MethodBinding("tasks/cancel", TaskIdParams, self.cancel),
            MethodBinding("tasks/result", TaskIdParams, self.result, LEGACY),
            MethodBinding("tasks/list", ListParams, self.list, LEGACY),
            MethodBinding("tasks/update", TaskIdParams, self.update, MODERN),
        )

    async def _find(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams, *, result: bool = False
    ) -> TaskRecord:
        """The caller's task ``params`` names, with its ``result`` when asked for; raises the
        revision's error when the request may not ask, or there is no such task of the
        caller's."""
        modern = ctx.protocol_version in MODERN
        if modern and not opted_in(ctx.params):
            raise missing_extension(f"{ctx.method}")
        if modern:
            named = header(ctx, "mcp-name")
            if named is not None and named.strip() != params.taskId:
                raise MCPError(
                    code=HEADER_MISMATCH,
                    message="mcp-name header does not match the request body's 'taskId' parameter",
                )
        record = await self.engine.get(owner_key(ctx), params.taskId, result=result)
        if record is None:
            raise unknown_task()
        return record

    @answering_store_down
    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        modern = ctx.protocol_version in MODERN
        record = await self._find(ctx, params, result=modern)  # 2026-07-28's is inline
        if not modern:
            return record.fields_2025()
        return detailed(record, ctx.protocol_version)

    @answering_store_down
    async def cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> HandlerResult:
        record = await self._find(ctx, params)
        modern = ctx.protocol_version in MODERN
        if record.terminal and not modern:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Task {params.taskId} has already ended ({record.status}): it cannot "
                "be cancelled.",
            )
        record = await self.engine.cancel(owner_key(ctx), record.task_id) or record
        return {} if modern else record.fields_2025()

    @answering_store_down
    async def result(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> HandlerResult:
        record = await self._find(ctx, params)
        record = await self.engine.wait(owner_key(ctx), record.task_id) or record
        related = {RELATED_TASK: {"taskId": record.task_id}}
        if record.status == "completed" and record.result is not None:
            result = call_result_for(record.result, ctx.protocol_version)
            meta = result.get("_meta") or {}
            return {**result, "_meta": {**meta, **related}}
        error = record.error or {"code": INVALID_PARAMS, "message": record.status_message or ""}
        raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))

    @answering_store_down
    async def list(self, ctx: ServerRequestContext[Any, Any], params: ListParams) -> HandlerResult:
        records = await self.engine.list(owner_key(ctx))
        return {"tasks": [record.fields_2025() for record in records]}

    @answering_store_down
    async def update(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> HandlerResult:
        await self._find(ctx, params)
        return {}


def detailed(record: TaskRecord, version: str) -> dict[str, Any]:
    """The 2026-07-28 ``tasks/get`` answer: the task, with its result or error inline."""
    fields = record.fields_2026()
    if record.status == "completed" and record.result is not None:
        fields["result"] = call_result_for(record.result, version)
    elif record.status == "failed":
        fields["error"] = record.error or {"code": INTERNAL_ERROR, "message": "The task failed."}
    return fields


def unknown_task() -> MCPError:
    return MCPError(
        code=INVALID_PARAMS,
        message="No such task: its id is unknown, it belongs to another caller, or it has "
        "expired (a finished task is kept for the ttl it announced). Call the tool again.",
    )


def header(ctx: ServerRequestContext[Any, Any], name: str) -> str | None:
    """The value of header ``name`` of the HTTP request ``ctx`` serves; None if absent."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    value = headers.get(name) if headers is not None else None
    return value if isinstance(value, str) else None
