"""The served tool: how every call of a LangChain tool is answered over MCP.

- arguments are parsed the tool's own way (its ``args_schema``, validators
  included), so a tool answers over MCP as ``ainvoke`` answers in-process;
- every call gets exactly one answer, whatever the tool raises (``BaseException``
  included): an unexpected exception answers a generic message with an error id
  that the log repeats beside the traceback (unless masking is off), while
  ``ToolException`` messages pass through as written;
- a returned value is checked by the tool's :class:`OutputContract`; a returned
  ``ToolError``, a result that breaks the annotation, bad arguments, a deadline,
  a shutdown and a client's cancel that reaches the call through
  :meth:`InFlight.cancel` all answer ``isError: true``; a cancel that the MCP
  session delivers itself cancels the call's task, and the SDK answers it;
- a verified caller (``MCP_AUTH=oauth``) whose token lacks one of the tool's
  ``scopes`` is answered ``isError: true`` naming the scopes it lacks;
- a sync call whose tool has every thread it may use held by hung calls answers
  ``isError: true`` at once, saying the tool is busy
  (see :mod:`mcp_runtime.execution.tool_threads`);
- the tool is served its service's settings (``current_settings()``);
- every call logs one line: the tool, the outcome and the duration.
"""

import asyncio
import functools
import inspect
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.tools.base import _get_runnable_config_param
from mcp.types import CallToolResult, ResourceLink, TextContent
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_runtime.auth.oauth import current_caller, owner_digest, token_owner
from mcp_runtime.config.settings import (
    MAX_RESULT_BYTES,
    MAX_STREAMED_RESULT_BYTES,
    SERVING_SETTINGS,
)
from mcp_runtime.contract.output_contract import (
    DEFAULT_MAX_DEPTH,
    OutputContract,
    describe_validation_error,
    error_result,
)
from mcp_runtime.contract.tool_metadata import TaskSupport
from mcp_runtime.contract.tool_result import ToolError
from mcp_runtime.data.keeping import (
    CallDataScope,
    DataLimitError,
    DataStoreError,
    KeptDatum,
)
from mcp_runtime.execution.progress import reporting_progress
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.execution.tool_threads import ToolBusyError, ToolThreads, never_started
from mcp_runtime.observability.errors import ERROR_ID, logged_error
from mcp_runtime.observability.logs import log_call
from mcp_runtime.observability.outcome import Outcome
from mcp_runtime.observability.tracing import start_call_span
from mcp_runtime.sdk.context import ServingRequest, request_headers, request_id, request_token
from mcp_runtime.sdk.tools import SDKTool, SDKToolError, UrlElicitationRequiredError, pre_parse_json

__all__ = ["CallPolicy", "ContractTool", "ToolCaller"]

logger = logging.getLogger(__name__)

# Exceptions whose message a tool writes for its caller: sent as written.
TOOL_REPORTED = (ToolException, SDKToolError)


@dataclass(frozen=True)
class CallPolicy:
    """How calls are answered: the deadline (of a call, and of a task), error masking, the
    deepest result sent, the largest result sent (and sent on a stream), in bytes of its
    JSON, and the tool threads a sync tool may hold (None: the pool's share)."""

    timeout: float | None = None
    task_timeout: float | None = None
    mask_errors: bool = True
    max_depth: int = DEFAULT_MAX_DEPTH
    max_threads: int | None = None
    max_result_bytes: int = MAX_RESULT_BYTES
    max_streamed_result_bytes: int = MAX_STREAMED_RESULT_BYTES


class ToolCaller:
    """Calls one LangChain tool as ``ainvoke`` would, its arguments parsed the tool's own way.

    Parsing is the tool's (its ``args_schema`` with every validator), so a tool answers
    over MCP as it does in-process. A plain ``@tool`` function is then called directly:
    ``ainvoke`` would only add its run machinery (about 300 microseconds a call) around
    the same call. A tool that uses that machinery (callbacks, tracing, error handlers,
    artifacts, a ``RunnableConfig``, ``run_manager`` or ``callbacks`` parameter) goes
    through ``ainvoke`` itself. Sync tools run in the service's tool threads, with the
    request's context, so they never block the server and their calls keep deadlines.

    The arguments of a plain function's tool whose ``args_schema`` is a pydantic model
    with nothing injected are parsed by :func:`validated_arguments`, which keeps
    LangChain's rules without looking up the model's annotations on every call (about
    8 microseconds); a test holds the two to the same results.
    """

    def __init__(self, tool: BaseTool, argument_names: frozenset[str] = frozenset()) -> None:
        self.tool = tool
        self.argument_names = argument_names  # declared keys, named in error messages
        self.function = _plain_function(tool)
        if isinstance(tool, StructuredTool):
            self.is_async = tool.coroutine is not None
        else:
            self.is_async = type(tool)._arun is not BaseTool._arun
        schema = tool.args_schema
        self.model: type[BaseModel] | None = None
        if (
            self.function is not None
            and isinstance(schema, type)
            and issubclass(schema, BaseModel)
            and schema.model_fields
            and getattr(tool, "_injected_args_keys", None) == frozenset()
        ):
            self.model = schema

    def parse(self, arguments: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The positional and keyword arguments; raises ``ValidationError`` for bad ones."""
        if self.model is not None:
            return (), validated_arguments(self.model, arguments)
        return self.tool._to_args_and_kwargs(arguments, None)

    async def call(
        self,
        arguments: dict[str, Any],
        parsed: tuple[tuple[Any, ...], dict[str, Any]],
        threads: ToolThreads,
        max_threads: int | None = None,
    ) -> Any:
        """Call the tool: ``arguments`` as the client sent them, ``parsed`` by :meth:`parse`.

        A sync tool runs in ``threads``, holding at most ``max_threads`` of them (None:
        the pool's share); raises :class:`ToolBusyError` when every one it may use is hung.
        """
        if self.function is None:
            if self.is_async:
                return await self.tool.ainvoke(arguments)
            invoke = functools.partial(self.tool.invoke, arguments)
            return await threads.run(self.tool.name, invoke, limit=max_threads)
        args, kwargs = parsed
        if self.is_async:
            return await self.function(*args, **kwargs)
        call = functools.partial(self.function, *args, **kwargs)
        return await threads.run(self.tool.name, call, limit=max_threads)


class ContractTool(SDKTool):
    """An MCP SDK tool that answers every call as its :class:`OutputContract` says.

    Built by the gate (:func:`mcp_runtime.contract.gate.to_mcp_tool`), complete when constructed.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    contract: OutputContract = Field(exclude=True, repr=False)
    caller: ToolCaller = Field(exclude=True, repr=False)
    policy: CallPolicy = Field(default_factory=CallPolicy, description="how calls are answered")
    scopes: tuple[str, ...] = Field((), description="OAuth scopes a caller's token must hold")
    task: TaskSupport | None = Field(
        None, description='whether it may ("optional") or must ("required") run as a task'
    )
    task_headers: tuple[str, ...] = Field(
        (), description="the request headers its tasks read, kept with each task"
    )
    state: ServiceState = Field(
        exclude=True, repr=False, description="the service's threads, calls and metrics"
    )
    runtime_owned: bool = Field(
        False,
        exclude=True,
        description="the runtime's own tool (read_data), not the service's: no part of the "
        "service's contract snapshot",
    )
    json_keys: frozenset[str] = Field(
        exclude=True, repr=False, description="argument keys the SDK may decode from JSON text"
    )

    async def run(
        self,
        arguments: dict[str, Any],
        context: Any = None,
        convert_result: bool = False,
    ) -> CallToolResult:
        """Validate the arguments, call the tool and answer with a contract-checked result.

        Logs one line: the tool, the outcome and the duration (never arguments or
        values); a call cut short by its client leaves the outcome ``cancelled``.
        """
        result, _ = await self.call(arguments, context)
        return result

    async def call(
        self,
        arguments: dict[str, Any],
        context: Any = None,
        *,
        task: bool = False,
        timeout: float | None = None,
        task_id: str | None = None,
    ) -> tuple[CallToolResult, Outcome]:
        """:meth:`run`, with the call's outcome; ``task``: the call runs as a task (the run
        of task ``task_id``), held to ``timeout`` (by default the policy's
        ``task_timeout``), and its result is read whole from the task's store (so the
        stream's size limit never applies). The data the tool keeps is kept only once the
        answer linking it is within its size (:meth:`_keeping`)."""
        started = time.perf_counter()
        outcome = Outcome.CANCELLED
        settings = self.state.settings
        serving_settings = None if settings is None else SERVING_SETTINGS.set(settings)
        with ServingRequest(context):
            span = start_call_span(self.name)
            metrics = self.state.metrics
            metrics.started(self.name)
            try:
                async with (
                    reporting_progress(context) as progress,
                    CallDataScope(self.state.data, _caller_owner, task_id) as data,
                ):
                    if timeout is None:
                        timeout = self.policy.task_timeout if task else self.policy.timeout
                    result, outcome = await self._answer(arguments, timeout)
                    linked = self._linked(result, data) if outcome == Outcome.OK else []
                    result = _with_links(result, linked)
                    streamed = progress.streamed and not task
                    result, outcome = self._within_size(result, outcome, streamed)
                    if linked and outcome == Outcome.OK:
                        result, outcome = await self._keeping(result, data, linked)
            finally:
                duration = time.perf_counter() - started
                log_call(self.name, outcome, duration)
                metrics.finished(self.name, outcome, duration)
                if span is not None:
                    span.end(outcome)
                if serving_settings is not None:
                    SERVING_SETTINGS.reset(serving_settings)
        return result, outcome

    async def _answer(
        self, arguments: dict[str, Any], timeout: float | None
    ) -> tuple[CallToolResult, Outcome]:
        caller = current_caller() if self.scopes else None
        missing = [scope for scope in self.scopes if caller and scope not in caller.scopes]
        if missing:
            message = (
                f"Tool '{self.name}' needs the OAuth scope(s) {', '.join(missing)}, which the "
                "caller's token does not grant: ask the authorization server for a token with them."
            )
            return error_result(message), Outcome.FORBIDDEN
        arguments = pre_parse_json(self.fn_metadata, arguments, self.json_keys)
        try:
            parsed = self.caller.parse(arguments)
        except ValidationError as exc:
            return self._argument_error(exc), Outcome.BAD_ARGUMENTS
        owner = token_owner(request_token())
        state = self.state
        with state.calls.call(self.name, owner, request_id(), timeout) as call:
            try:
                value = await self.caller.call(
                    arguments, parsed, state.threads, self.policy.max_threads
                )
            except ToolBusyError as exc:
                return error_result(str(exc)), Outcome.BUSY
            except UrlElicitationRequiredError:
                raise
            except DataLimitError as exc:
                return self._too_much_data(exc)
            except DataStoreError as exc:
                return self._unkept(exc), Outcome.EXCEPTION
            except BaseException as exc:
                if _is_cancellation(exc):
                    raise
                return self._exception_answer(exc)
        if call.stopped("shutdown"):
            message = (
                f"Tool '{self.name}' was stopped because the service is shutting down: "
                "call it again."
            )
            return error_result(message), Outcome.SHUTDOWN
        if call.stopped("client"):
            message = f"Tool '{self.name}' was cancelled by the client."
            return error_result(message), Outcome.CANCELLED
        if call.timed_out() and not self.caller.is_async and never_started():
            message = (
                f"Tool '{self.name}' did not start within {timeout:g} seconds: "
                "every thread it may use was busy with earlier calls. Try again later."
            )
            return error_result(message), Outcome.BUSY
        if call.timed_out():
            message = (
                f"Tool '{self.name}' did not finish within {timeout:g} seconds: "
                "try again later, or ask for less at once."
            )
            return error_result(message), Outcome.TIMEOUT
        result = self.contract.to_call_result(value, max_depth=self.policy.max_depth)
        if result.structured_content is None:
            return result, Outcome.CONTRACT_VIOLATION
        if result.is_error:
            return result, Outcome.TOOL_ERROR
        return result, Outcome.OK

    @staticmethod
    def _linked(result: CallToolResult, scope: CallDataScope) -> list[KeptDatum]:
        """The data the call kept that ``result`` links (its text names each one's URI)."""
        data = scope.made
        if data is None or not data.kept:
            return []
        text = result.content[0].text if isinstance(result.content[0], TextContent) else ""
        return [datum for datum in data.kept if datum.link["uri"] in text]

    async def _keeping(
        self, result: CallToolResult, scope: CallDataScope, linked: list[KeptDatum]
    ) -> tuple[CallToolResult, Outcome]:
        """``result`` (with a ``resource_link`` item for each datum it links), once the data
        its tool kept and linked in it is kept for the caller; ``isError`` instead when the
        data cannot be kept (past a limit, or the store did not answer), and then none of
        it is."""
        try:
            if scope.store is None:
                raise RuntimeError("the tool's server keeps no data: build it with build_server")
            await scope.data.commit(datum.link["uri"] for datum in linked)
        except DataLimitError as exc:
            return self._too_much_data(exc)
        except DataStoreError as exc:
            return self._unkept(exc), Outcome.EXCEPTION
        except Exception as exc:
            return self._exception_answer(exc)
        return result, Outcome.OK

    def _within_size(
        self, result: CallToolResult, outcome: Outcome, streamed: bool
    ) -> tuple[CallToolResult, Outcome]:
        """``result``, or ``isError`` (``result_too_large``) in its place when its JSON is
        larger than the service sends, or than a stream carries when the answer streams
        (``streamed``: the call reported progress over HTTP)."""
        policy = self.policy
        limit, setting = policy.max_result_bytes, "MCP_MAX_RESULT_BYTES"
        streamed = streamed and request_headers() is not None
        if streamed and policy.max_streamed_result_bytes < limit:
            limit, setting = policy.max_streamed_result_bytes, "MCP_MAX_STREAMED_RESULT_BYTES"
        size = oversize(result, limit)
        if size is None:
            return result, outcome
        logger.warning(
            "tool %s: a result of %d bytes is over %s (%d): answered result_too_large",
            self.name,
            size,
            setting,
            limit,
        )
        message = (
            f"Tool '{self.name}' produced a result of {size} bytes, more than this service "
            f"sends ({limit} bytes, {setting}). Ask for less at once, such as a smaller range "
            "or fewer fields."
        )
        if setting == "MCP_MAX_STREAMED_RESULT_BYTES":
            message = (
                f"Tool '{self.name}' produced a result of {size} bytes, more than an answer "
                f"sent as a stream carries ({limit} bytes, {setting}; most clients read a "
                "server-sent event only up to 1 MiB). The call reported progress, so its "
                "answer streams: call it again without asking for progress to receive the "
                "result as one JSON body, or ask for less at once."
            )
        return self._error(ToolError(error="result_too_large", detail=message)), Outcome.TOO_LARGE

    def _unkept(self, exc: DataStoreError) -> CallToolResult:
        """``isError`` for data the store could not keep."""
        message = (
            f"Tool '{self.name}' kept data the service could not store for you (error id "
            f"{exc.error_id}; the service's log says why): call it again later."
        )
        return self._error(ToolError(error="unavailable", detail=message))

    def _too_much_data(self, exc: DataLimitError) -> tuple[CallToolResult, Outcome]:
        """``isError`` (``data_too_large``) for data past the service's limits."""
        return self._error(ToolError(error="data_too_large", detail=str(exc))), Outcome.TOO_LARGE

    def error_result(self, error: ToolError) -> CallToolResult:
        """``isError`` with ``error``, as :meth:`_error` shapes it for this tool."""
        return self._error(error)

    def _error(self, error: ToolError) -> CallToolResult:
        """``isError`` with ``error``: the ``ToolError`` itself when the tool's result has
        that arm, as ``structuredContent`` and as the text; else its detail as the text."""
        if not self.contract.allows_tool_error:
            return error_result(error["detail"])
        return self.contract.to_call_result(error, max_depth=self.policy.max_depth)

    def _argument_error(self, exc: ValidationError) -> CallToolResult:
        """``isError`` for arguments that do not validate, naming each bad one and what it
        needs (never its value): a ``ToolError`` (``invalid_argument``) when the tool's
        result has that arm, as ``structuredContent`` and as the text; else the text."""
        problems = describe_validation_error(exc, self.caller.argument_names)
        message = f"Invalid arguments for tool '{self.name}': {problems}"
        return self._error(ToolError(error="invalid_argument", detail=message))

    def _exception_answer(self, exc: BaseException) -> tuple[CallToolResult, Outcome]:
        """``isError`` for a raised exception: a tool's own message, or a masked one."""
        if isinstance(exc, TOOL_REPORTED):
            message = _safe_str(exc) or f"Tool '{self.name}' failed."
            return error_result(message), Outcome.TOOL_ERROR
        error_id = logged_error(
            logger,
            "tool %s raised %s (error id %s)",
            self.name,
            type(exc).__name__,
            ERROR_ID,
            exc_info=exc,
        )
        if self.policy.mask_errors:
            message = (
                f"Tool '{self.name}' failed with an unexpected error (error id {error_id}). "
                "The service's log has the details under that id."
            )
        else:
            message = _safe_str(exc) or f"Tool '{self.name}' failed: {type(exc).__name__}"
        return error_result(message), Outcome.EXCEPTION


ENVELOPE = {"result_type", "meta"}  # what each era adds to a result: not counted


def oversize(result: CallToolResult, limit: int) -> int | None:
    """The size in bytes of ``result``'s JSON (its content, ``structuredContent`` and
    ``isError``, as sent in either era) when it is over ``limit``; else None.

    Its text is at most half of it, and each character of that text takes at most ten
    bytes of it (up to six as an escape in the text, four in ``structuredContent``): a
    result whose text is short enough is within ``limit`` without being serialized again.
    """
    text = sum(len(getattr(block, "text", "")) for block in result.content)
    if 10 * text + 1024 <= limit:
        return None
    serializer = result.__pydantic_serializer__
    json = serializer.to_json(result, by_alias=True, exclude_none=True, exclude=ENVELOPE)
    size = len(json)
    return size if size > limit else None


def validated_arguments(model: type[BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments LangChain passes a tool whose ``args_schema`` is ``model``.

    Its rules (``BaseTool._parse_input``, for a model with no injected arguments): the
    validated value of each key the client sent or set through an alias, and of each
    field with a default; never the ``args`` and ``kwargs`` fields of a variadic
    function. Raises ``ValidationError`` as the model does.
    """
    result = model.model_validate(arguments)
    fields = model.model_fields
    provided = result.model_fields_set
    validated = {}
    for key in result.model_dump():
        defaulted = (
            key in fields and key not in ("args", "kwargs") and not fields[key].is_required()
        )
        if key in arguments or key in provided or defaulted:
            validated[key] = getattr(result, key)
    return validated


def _plain_function(tool: BaseTool) -> Callable[..., Any] | None:
    """The tool's own function, when calling it is all ``ainvoke`` would do; else None."""
    if not isinstance(tool, StructuredTool):
        return None
    function = tool.coroutine or tool.func
    if function is None:
        return None
    parameters = inspect.signature(function).parameters
    tracing = any(
        os.environ.get(name, "").lower() == "true"
        for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING")
    )
    uses_run_machinery = bool(
        tool.callbacks
        or tool.handle_tool_error
        or tool.handle_validation_error
        or tool.response_format != "content"
        or "run_manager" in parameters
        or "callbacks" in parameters
        or _get_runnable_config_param(function)
        or tracing
    )
    return None if uses_run_machinery else function


def _is_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` cancels this task (a deadline, shutdown, a client that left).

    A tool that raises ``CancelledError`` itself, with nothing cancelling it, has
    failed like any other tool.
    """
    if not isinstance(exc, anyio.get_cancelled_exc_class()):
        return False
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return ""


def _caller_owner() -> str:
    """Whose the data a call keeps is: its caller's digest."""
    return owner_digest(current_caller())


def _with_links(result: CallToolResult, linked: list[KeptDatum]) -> CallToolResult:
    """``result`` with a ``resource_link`` item for each datum in ``linked``, beside its text."""
    if not linked:
        return result
    links = [
        ResourceLink(
            type="resource_link",
            uri=datum.link["uri"],
            name=datum.link["name"],
            mime_type=datum.link["media_type"],
            size=datum.link["size"],
            description=datum.link["how_to_read"],
        )
        for datum in linked
    ]
    return result.model_copy(update={"content": [*result.content, *links]})
