"""Serve a LangChain tool over FastMCP with its typed return contract.

``langchain_mcp_adapters.tools.to_fastmcp`` drops the tool's return annotation, so
FastMCP never advertises an ``outputSchema`` nor sends ``structuredContent``. The
:func:`to_fastmcp` here wraps it and makes the annotation the contract:

- the annotation must be ``XResult`` or ``XResult | ToolError`` (the gate rules);
  a tool that breaks a rule raises :class:`ContractError` listing every violation;
- the description is the docstring with its indentation removed, the same on
  every Python version;
- the advertised ``outputSchema`` is derived from it: object-rooted, never wrapped
  in ``{"result": ...}``, ``NotRequired`` keys absent from ``required``;
- every call answers with a :class:`CallToolResult` built from the validated
  payload, as ``structuredContent`` and as a JSON text block; undeclared keys are
  dropped; a returned ``ToolError``, a result that breaks the annotation, bad
  arguments and an exception all answer ``isError: true``;
- every call gets exactly one answer, whatever the tool raises (``BaseException``
  included): an unexpected exception answers a generic message with an error id
  that the log repeats beside the traceback (unless masking is off), while
  ``ToolException`` messages pass through as written;
- arguments are parsed the tool's own way (its ``args_schema``, validators
  included), so a tool answers over MCP as ``ainvoke`` answers in-process.
"""

import asyncio
import inspect
import json
import logging
import os
import re
import secrets
import time
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import anyio
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.tools.base import _get_runnable_config_param
from langchain_mcp_adapters.tools import to_fastmcp as upstream_to_fastmcp
from mcp.server.fastmcp.exceptions import ToolError as FastMCPToolError
from mcp.server.fastmcp.tools import Tool as FastMCPTool
from mcp.server.fastmcp.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp.types import CallToolResult, TextContent
from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    RootModel,
    Tag,
    ValidationError,
)
from pydantic_core import PydanticSerializationError
from typing_extensions import is_typeddict

from mcp_runtime.in_flight import IN_FLIGHT
from mcp_runtime.logs import log_call
from mcp_runtime.tool_result import ToolError, ToolResult
from mcp_runtime.tool_threads import TOOL_THREADS
from mcp_runtime.violations import ContractError, ContractViolation

__all__ = ["CallPolicy", "ContractTool", "OutputContract", "to_fastmcp", "tool_violations"]

logger = logging.getLogger(__name__)

TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
ERROR_KEYS = frozenset(ToolError.__annotations__)
# JSON has no NaN or infinity: refuse them rather than send a null the schema forbids.
PAYLOAD_CONFIG = ConfigDict(allow_inf_nan=False, ser_json_inf_nan="constants")
ANNOTATE_FIX = (
    "annotate the tool `-> XResult | ToolError`, where `class XResult(ToolResult)` "
    "declares each data key `NotRequired[...]`"
)


# Exceptions whose message a tool writes for its caller: sent as written.
TOOL_REPORTED = (ToolException, FastMCPToolError)
DEFAULT_MAX_DEPTH = 64


@dataclass(frozen=True)
class CallPolicy:
    """How calls are answered: the deadline, error masking, and the deepest result sent."""

    timeout: float | None = None
    mask_errors: bool = True
    max_depth: int = DEFAULT_MAX_DEPTH


@dataclass(frozen=True)
class OutputContract:
    """What a tool's return annotation promises, and how each result is checked."""

    tool: str
    annotation: str
    allows_tool_error: bool
    model: type[RootModel[Any]]
    schema: dict[str, Any]
    key_names: frozenset[str] = frozenset()
    depth: int | None = None

    def to_call_result(
        self, value: object, *, max_depth: int = DEFAULT_MAX_DEPTH
    ) -> CallToolResult:
        """Validate ``value`` and answer with it, or answer ``isError`` without it.

        What is sent is JSON every client can read: valid Unicode, no NaN, and no
        deeper than ``max_depth`` levels of objects and arrays.
        """
        try:
            payload = self.model.model_validate(value, strict=True).model_dump(mode="json")
        except ValidationError as exc:
            problems = describe_validation_error(
                exc, self.key_names, strip_tag=self.allows_tool_error
            )
            return self._violation(problems)
        except (PydanticSerializationError, ValueError, TypeError, RecursionError) as exc:
            return self._violation(f"a value cannot be serialized as JSON ({type(exc).__name__})")
        if (self.depth is None or self.depth > max_depth) and deeper_than(payload, max_depth):
            return self._violation(
                f"the result is nested deeper than {max_depth} levels of objects and arrays"
            )
        try:
            text = json.dumps(payload, ensure_ascii=False, allow_nan=False)
            text.encode("utf-8")
        except UnicodeEncodeError:
            return self._violation(
                "a string is not valid Unicode (it holds a lone surrogate, such as '\\ud800')"
            )
        except (ValueError, TypeError, RecursionError) as exc:
            return self._violation(f"a value cannot be serialized as JSON ({type(exc).__name__})")
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structuredContent=payload,
            isError=self.allows_tool_error and "error" in payload,
        )

    def _violation(self, problems: str) -> CallToolResult:
        message = (
            f"Tool '{self.tool}' returned a result that breaks its annotation "
            f"`{self.annotation}`: {problems}"
        )
        logger.error("%s", message)
        return error_result(message)


class ToolCaller:
    """Calls one LangChain tool as ``ainvoke`` would, its arguments parsed the tool's own way.

    Parsing is the tool's (its ``args_schema`` with every validator), so a tool answers
    over MCP as it does in-process. A plain ``@tool`` function is then called directly:
    ``ainvoke`` would only add its run machinery (about 300 microseconds a call) around
    the same call. A tool that uses that machinery (callbacks, tracing, error handlers,
    artifacts, a ``RunnableConfig``, ``run_manager`` or ``callbacks`` parameter) goes
    through ``ainvoke`` itself. Sync tools run in :data:`TOOL_THREADS`, with the
    request's context, so they never block the server and their calls keep deadlines.
    """

    def __init__(self, tool: BaseTool) -> None:
        self.tool = tool
        self.function = _plain_function(tool)
        if isinstance(tool, StructuredTool):
            self.is_async = tool.coroutine is not None
        else:
            self.is_async = type(tool)._arun is not BaseTool._arun

    def parse(self, arguments: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The positional and keyword arguments; raises ``ValidationError`` for bad ones."""
        return self.tool._to_args_and_kwargs(arguments, None)

    async def call(
        self, arguments: dict[str, Any], parsed: tuple[tuple[Any, ...], dict[str, Any]]
    ) -> Any:
        """Call the tool: ``arguments`` as the client sent them, ``parsed`` by :meth:`parse`."""
        if self.function is None:
            if self.is_async:
                return await self.tool.ainvoke(arguments)
            return await TOOL_THREADS.run(self.tool.name, self.tool.invoke, arguments)
        args, kwargs = parsed
        if self.is_async:
            return await self.function(*args, **kwargs)
        return await TOOL_THREADS.run(self.tool.name, self.function, *args, **kwargs)


class ContractTool(FastMCPTool):
    """A FastMCP tool that answers every call as its :class:`OutputContract` says."""

    policy: CallPolicy = Field(default_factory=CallPolicy, description="how calls are answered")
    _contract: OutputContract = PrivateAttr()
    _caller: ToolCaller = PrivateAttr()
    _argument_names: frozenset[str] = PrivateAttr(default=frozenset())

    @property
    def contract(self) -> OutputContract:
        """The output contract this tool enforces."""
        return self._contract

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
        started = time.perf_counter()
        outcome = "cancelled"
        try:
            result, outcome = await self._answer(arguments)
        finally:
            log_call(self.name, outcome, time.perf_counter() - started)
        return result

    async def _answer(self, arguments: dict[str, Any]) -> tuple[CallToolResult, str]:
        arguments = self.fn_metadata.pre_parse_json(arguments)
        try:
            parsed = self._caller.parse(arguments)
        except ValidationError as exc:
            problems = describe_validation_error(exc, self._argument_names, strip_tag=False)
            message = f"Invalid arguments for tool '{self.name}': {problems}"
            return error_result(message), "bad_arguments"
        with IN_FLIGHT.call() as shutdown, anyio.move_on_after(self.policy.timeout) as deadline:
            try:
                value = await self._caller.call(arguments, parsed)
            except UrlElicitationRequiredError:
                raise
            except BaseException as exc:
                if _is_cancellation(exc):
                    raise
                return self._exception_answer(exc)
        if shutdown.cancelled_caught:
            message = (
                f"Tool '{self.name}' was stopped because the service is shutting down: "
                "call it again."
            )
            return error_result(message), "shutdown"
        if deadline.cancelled_caught:
            message = (
                f"Tool '{self.name}' did not finish within {self.policy.timeout:g} seconds: "
                "try again later, or ask for less at once."
            )
            return error_result(message), "timeout"
        result = self._contract.to_call_result(value, max_depth=self.policy.max_depth)
        if result.structuredContent is None:
            return result, "contract_violation"
        return result, "tool_error" if result.isError else "ok"

    def _exception_answer(self, exc: BaseException) -> tuple[CallToolResult, str]:
        """``isError`` for a raised exception: a tool's own message, or a masked one."""
        if isinstance(exc, TOOL_REPORTED):
            message = _safe_str(exc) or f"Tool '{self.name}' failed."
            return error_result(message), "tool_error"
        error_id = secrets.token_hex(6)
        logger.error(
            "tool %s raised %s (error id %s)",
            self.name,
            type(exc).__name__,
            error_id,
            exc_info=exc,
        )
        if self.policy.mask_errors:
            message = (
                f"Tool '{self.name}' failed with an unexpected error (error id {error_id}). "
                "The service's log has the details under that id."
            )
        else:
            message = _safe_str(exc) or f"Tool '{self.name}' failed: {type(exc).__name__}"
        return error_result(message), "exception"


def to_fastmcp(
    tool: BaseTool, *, toolset: str | None = None, policy: CallPolicy | None = None
) -> ContractTool:
    """Convert a LangChain tool to a FastMCP tool that enforces its return contract.

    Raises :class:`ContractError` listing every rule the tool breaks.
    """
    contract, violations = _inspect(tool, toolset)
    upstream: FastMCPTool | None = None
    try:
        upstream = upstream_to_fastmcp(tool)
    except NotImplementedError:
        violations.append(
            _violation(
                tool,
                toolset,
                "injected-arguments",
                "the tool has injected arguments, which MCP clients cannot supply",
                "remove the InjectedToolArg parameters; read per-request data such as "
                "credentials with mcp_runtime.request_header() instead",
            )
        )
    except Exception as exc:
        violations.append(
            _violation(
                tool,
                toolset,
                "input-schema",
                f"its arguments cannot be served over MCP: {exc}",
                "give every argument a type pydantic can validate, as in `name: str`",
            )
        )
    if violations or contract is None or upstream is None:
        raise ContractError(violations)
    caller = ToolCaller(tool)
    converted = ContractTool(
        fn=caller.call,
        name=upstream.name,
        title=upstream.title,
        description=inspect.cleandoc(upstream.description),
        parameters=upstream.parameters,
        fn_metadata=FuncMetadata(
            arg_model=upstream.fn_metadata.arg_model,
            output_schema=contract.schema,
            output_model=contract.model,
        ),
        is_async=True,
        annotations=upstream.annotations,
        policy=policy or CallPolicy(),
    )
    converted._contract = contract
    converted._caller = caller
    converted._argument_names = frozenset(property_names(upstream.parameters))
    return converted


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


def schema_depth(schema: object) -> int | None:
    """The deepest nesting of objects and arrays a value of ``schema`` can have; None if any.

    Recursive schemas (``$ref``) and free-form values (``Any``, a bare ``dict``) have
    no bound; their results are measured one by one.
    """
    if not isinstance(schema, dict) or "$ref" in schema:
        return None
    arms = [arm for key in ("anyOf", "oneOf", "allOf") for arm in schema.get(key, [])]
    kind = schema.get("type")
    if arms:  # a value is one of the arms
        children, own = arms, 0
    elif kind == "object":
        properties, extra = schema.get("properties"), schema.get("additionalProperties")
        if not isinstance(properties, dict) and not isinstance(extra, dict):
            return None
        children = [*(properties or {}).values(), *([extra] if isinstance(extra, dict) else [])]
        own = 1
    elif kind == "array":
        children, own = [schema.get("items"), *schema.get("prefixItems", [])], 1
    elif kind is None and not {"enum", "const"} & schema.keys():
        return None  # accepts any value
    else:
        children, own = [], 0
    depth = 0
    for child in children:
        if child is None:
            continue
        child_depth = schema_depth(child)
        if child_depth is None:
            return None
        depth = max(depth, child_depth)
    return own + depth


def deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels deep."""
    if isinstance(value, dict):
        children: Iterable[object] = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return False
    if limit < 1:
        return True
    for child in children:
        if isinstance(child, dict | list) and deeper_than(child, limit - 1):
            return True
    return False


def tool_violations(tool: BaseTool, *, toolset: str | None = None) -> list[ContractViolation]:
    """Every contract rule ``tool`` breaks; empty when it can be served."""
    try:
        to_fastmcp(tool, toolset=toolset)
    except ContractError as exc:
        return list(exc.violations)
    return []


def error_result(message: str) -> CallToolResult:
    """An ``isError`` answer with ``message`` as its only content."""
    return CallToolResult(content=[TextContent(type="text", text=message)], isError=True)


def describe_validation_error(
    exc: ValidationError, key_names: frozenset[str], *, strip_tag: bool
) -> str:
    """Key paths and expected types from a pydantic error, never the offending values.

    A path names declared keys only (``key_names``); any other step (a dict's key,
    which is data, a list index, a union arm) shows as ``*``.
    """
    problems = []
    for error in exc.errors(include_input=False, include_url=False):
        location = list(error["loc"])
        if strip_tag and location:
            location = location[1:]
        path = ".".join(part if part in key_names else "*" for part in map(str, location))
        problems.append(f"{path or '(the result)'}: {error['msg']}")
    return "; ".join(problems)


def property_names(schema: object) -> set[str]:
    """Every key an object in ``schema`` declares, at any depth."""
    names: set[str] = set()
    for node in _mappings(schema):
        properties = node.get("properties")
        if isinstance(properties, dict):
            names.update(properties)
    return names


def _mappings(tree: object) -> Iterator[dict[Any, Any]]:
    """Every dict in a tree of dicts, lists and tuples (a JSON or a core schema)."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            yield node
            pending.extend(node.values())
        elif isinstance(node, list | tuple):
            pending.extend(node)


def _inspect(
    tool: BaseTool, toolset: str | None
) -> tuple[OutputContract | None, list[ContractViolation]]:
    """Check every gate rule on ``tool``; derive its contract when the annotation allows."""
    violations: list[ContractViolation] = []

    def report(rule: str, problem: str, fix: str) -> None:
        violations.append(_violation(tool, toolset, rule, problem, fix))

    if not TOOL_NAME.fullmatch(tool.name):
        report(
            "tool-name",
            f"the name {tool.name!r} is not a valid MCP tool name",
            "use 1 to 128 letters, digits, '_', '-' or '.'",
        )
    if not (tool.description or "").strip():
        report(
            "description",
            "the tool has no description",
            "write a docstring that tells the model when and how to use the tool",
        )
    contract = _derive_contract(tool, report)
    return contract, violations


Reporter = Callable[[str, str, str], None]


def _derive_contract(tool: BaseTool, report: Reporter) -> OutputContract | None:
    function = _tool_function(tool)
    try:
        hints = get_type_hints(function)
    except Exception as exc:
        report(
            "return-annotation",
            f"its annotations cannot be resolved ({type(exc).__name__}: {exc})",
            "import every type the signature names at module level",
        )
        return None
    if "return" not in hints:
        report("return-annotation", "the tool function has no return annotation", ANNOTATE_FIX)
        return None
    annotation = hints["return"]
    arms = list(get_args(annotation)) if _is_union(annotation) else [annotation]
    shown = " | ".join(_type_name(arm) for arm in arms)
    if type(None) in arms:
        report(
            "return-type",
            f"`{shown}` allows None; a tool always answers",
            "drop `| None`: return a ToolError or raise when there is nothing to return",
        )
        return None
    allows_tool_error = ToolError in arms
    results = [arm for arm in arms if arm is not ToolError]
    if not results:
        report(
            "return-type",
            "`ToolError` alone declares no successful result",
            "declare the success type too: `-> XResult | ToolError`",
        )
        return None
    if len(results) > 1:
        report(
            "return-type",
            f"`{shown}` declares more than one result type",
            "merge them into one ToolResult subclass whose data keys are NotRequired",
        )
        return None
    result_type = results[0]
    if not (is_typeddict(result_type) and _inherits(result_type, ToolResult)):
        kind = "a plain TypedDict" if is_typeddict(result_type) else f"`{shown}`"
        report(
            "return-type",
            f"the return annotation is {kind}, not a ToolResult subclass",
            ANNOTATE_FIX,
        )
        return None
    if not _check_keys(result_type, report):
        return None
    return _build_contract(tool.name, result_type, allows_tool_error, shown, report)


def _check_keys(result_type: type, report: Reporter) -> bool:
    name = result_type.__name__
    try:
        hints = get_type_hints(result_type)
    except Exception as exc:
        report(
            "result-keys",
            f"the keys of `{name}` cannot be resolved ({type(exc).__name__}: {exc})",
            "import every type the result class names at module level",
        )
        return False
    required: frozenset[str] = getattr(result_type, "__required_keys__", frozenset())
    ok = True
    if hints.get("message") is not str or "message" not in required:
        report(
            "result-keys",
            f"`{name}.message` must stay a required `str`",
            "do not redeclare `message`, and do not subclass with `total=False`",
        )
        ok = False
    for key in sorted(set(hints) - {"message"}):
        if key in ERROR_KEYS:
            report(
                "result-keys",
                f"`{name}` declares the data key `{key}`, which ToolError uses",
                f"rename `{key}` so a result can always be told apart from a ToolError",
            )
            ok = False
        elif key in required:
            report(
                "result-keys",
                f"the data key `{name}.{key}` is required",
                f"declare it `{key}: NotRequired[...]`",
            )
            ok = False
    return ok


def _build_contract(
    tool_name: str,
    result_type: type,
    allows_tool_error: bool,
    shown: str,
    report: Reporter,
) -> OutputContract | None:
    root: Any = result_type
    if allows_tool_error:
        root = Annotated[
            Union[Annotated[result_type, Tag("result")], Annotated[ToolError, Tag("error")]],  # noqa: UP007
            Discriminator(_arm_of),
        ]
    try:
        # One schema build: a plain RootModel subclass, not RootModel[root] subclassed again.
        model: type[RootModel[Any]] = types.new_class(
            f"{result_type.__name__}Payload",
            (RootModel,),
            {},
            lambda namespace: namespace.update(
                {"__annotations__": {"root": root}, "model_config": PAYLOAD_CONFIG}
            ),
        )
        schema = model.model_json_schema()
        schema.pop("title")  # the payload model's own name, not the result type's
        schema = inline_refs(schema)
    except Exception as exc:
        report(
            "json-schema",
            f"`{result_type.__name__}` has a key whose type has no JSON schema: "
            f"{str(exc).splitlines()[0]}",
            "use JSON types for data keys: str, int, float, bool, list, dict, Literal, "
            "nested TypedDicts (from typing_extensions)",
        )
        return None
    naive = sorted(naive_time_types(model.__pydantic_core_schema__))
    if naive:
        report(
            "json-schema",
            f"`{result_type.__name__}` has a key typed {' and '.join(naive)}, whose values may "
            "lack a UTC offset: the schema says `format: date-time` or `time`, which requires "
            "one, and clients refuse the whole answer",
            "declare moments in time `AwareDatetime` (from pydantic), so a value without an "
            "offset is refused before it is sent; send a time of day as `str`",
        )
        return None
    if allows_tool_error:
        schema = {"type": "object", **schema}
    return OutputContract(
        tool=tool_name,
        annotation=shown,
        allows_tool_error=allows_tool_error,
        model=model,
        schema=schema,
        key_names=frozenset(property_names(schema)),
        depth=schema_depth(schema),
    )


def naive_time_types(core_schema: object) -> set[str]:
    """The time types in a pydantic core schema that accept values without a UTC offset."""
    return {
        f"`{node['type']}`"
        for node in _mappings(core_schema)
        if node.get("type") in ("datetime", "time") and node.get("tz_constraint") in (None, "naive")
    }


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every non-recursive ``$ref`` replaced by its definition.

    Clients validate ``structuredContent`` with many different validators; a
    self-contained schema is the one they all read alike. Recursive types keep
    their ``$ref`` and the ``$defs`` it needs.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})
    kept: set[str] = set()

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/$defs/"):
            name = reference.removeprefix("#/$defs/")
            if name in seen:
                kept.add(name)
                return node
            siblings = {k: resolve(v, seen) for k, v in node.items() if k not in {"$ref", "$defs"}}
            return {**resolve(definitions[name], (*seen, name)), **siblings}
        return {k: resolve(v, seen) for k, v in node.items() if k != "$defs"}

    inlined: dict[str, Any] = resolve(schema, ())
    if kept:
        inlined["$defs"] = {name: resolve(definitions[name], (name,)) for name in sorted(kept)}
    return inlined


def _arm_of(value: object) -> str:
    return "error" if isinstance(value, dict) and "error" in value else "result"


def _tool_function(tool: BaseTool) -> Callable[..., Any]:
    if isinstance(tool, StructuredTool):
        function = tool.coroutine or tool.func
        if function is not None:
            return function
    tool_class = type(tool)
    if tool_class._arun is not BaseTool._arun:
        return tool_class._arun
    return tool_class._run


def _is_union(annotation: object) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _inherits(cls: type, base: type) -> bool:
    if cls is base:
        return True
    return any(_inherits(parent, base) for parent in getattr(cls, "__orig_bases__", ()))


def _type_name(annotation: object) -> str:
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", None) or repr(annotation)


def _violation(
    tool: BaseTool, toolset: str | None, rule: str, problem: str, fix: str
) -> ContractViolation:
    return ContractViolation(tool=tool.name, toolset=toolset, rule=rule, problem=problem, fix=fix)
