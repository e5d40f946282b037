"""The gate: every rule a tool must keep to be served, and the conversion that applies them.

Each rule is one function returning the violations it finds (:data:`RULES` names
them all; the rule table in the service's ``docs/typed-returns.md`` is tested against
it). :func:`to_mcp_tool` runs every rule on one LangChain tool and builds the served
tool from what the rules derived (each model and schema is built once);
:func:`convert_toolsets` does so for a whole service, so a server whose tools break the
contract never starts: the error lists every violation at once, each with its fix.
"""

import inspect
import re
import textwrap
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Union, get_args, get_origin, get_type_hints

from langchain_core.tools import BaseTool, InjectedToolArg, StructuredTool
from langchain_core.tools.base import _is_injected_arg_type, get_all_basemodel_annotations
from pydantic import BaseModel
from typing_extensions import deprecated, is_typeddict

from mcp_runtime.contract.output_contract import (
    OutputContract,
    SchemaUnavailableError,
    property_names,
    time_types_without_offset,
)
from mcp_runtime.contract.served_tool import CallPolicy, ContractTool, ToolCaller
from mcp_runtime.contract.tool_metadata import ToolMetadata, read_declaration
from mcp_runtime.contract.tool_result import ToolError, ToolResult
from mcp_runtime.contract.toolsets import BrokenToolset, Toolset
from mcp_runtime.contract.violations import ContractError, ContractViolation
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.sdk.tools import func_metadata, json_text_keys

__all__ = [
    "RULES",
    "convert_toolsets",
    "duplicate_name_violations",
    "to_fastmcp",
    "to_mcp_tool",
    "tool_violations",
    "toolset_violations",
]

# Every rule of the gate, by the name its violations carry.
RULES = {
    "toolset": "Every public module of the toolsets package imports, and lists its tools in "
    "`TOOLS`.",
    "tool-name": "A tool's name is 1 to 128 letters, digits, `_`, `-` or `.`, and no other "
    "tool has the same name.",
    "description": "A tool has a description: its docstring.",
    "injected-arguments": "No injected arguments (`InjectedToolArg`): MCP clients cannot "
    "supply them.",
    "input-schema": "Every argument has a type pydantic can validate, and a JSON schema.",
    "return-annotation": "The tool function has a return annotation, and it resolves.",
    "return-type": "The return annotation is `XResult` or `XResult | ToolError`, where "
    "`XResult` is `ToolResult` or a subclass: not `str`, `dict`, a pydantic model, a plain "
    "`TypedDict`, `XResult | None`, `XResult | OtherResult`, or `ToolError` alone.",
    "result-keys": "`message` stays a required `str`; data keys are `NotRequired`; no data key "
    "is named `error` or `detail`.",
    "json-schema": "Every data key's type has a JSON schema (`str`, `int`, `float`, `bool`, "
    "`list[...]`, `dict[str, ...]`, `Literal[...]`, nested `TypedDict`s), and a moment in "
    "time is `AwareDatetime`, never a plain `datetime` or `time`.",
    "tool-metadata": "A metadata declaration (`@tool_metadata(...)`, or the tool's "
    '`metadata["mcp"]` dict) has only the keys `title`, `read_only`, `destructive`, '
    "`idempotent`, `open_world`, `scopes`, `max_threads`, `task` and `meta`: a non-empty "
    "`title`, `True` or `False` hints, no read-only tool declared destructive, `scopes` of "
    "OAuth scope tokens (RFC 6749), a whole `max_threads` of at least 1, a `task` of "
    '`"optional"` or `"required"`, and a JSON `meta` whose keys are valid `_meta` keys '
    "outside the prefixes MCP reserves.",
}

TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
ERROR_KEYS = frozenset(ToolError.__annotations__)
ANNOTATE_FIX = (
    "annotate the tool `-> XResult | ToolError`, where `class XResult(ToolResult)` "
    "declares each data key `NotRequired[...]`"
)


@dataclass(frozen=True)
class Candidate:
    """A tool at the gate, and the toolset it comes from."""

    tool: BaseTool
    toolset: str | None

    def violation(self, rule: str, problem: str, fix: str) -> ContractViolation:
        """A violation of ``rule`` by this tool."""
        return ContractViolation(self.tool.name, self.toolset, rule, problem, fix)


@dataclass(frozen=True)
class Declared:
    """What a tool's return annotation declares: its result type, and the ToolError arm."""

    result_type: type
    allows_tool_error: bool
    shown: str


@dataclass(frozen=True)
class Arguments:
    """A tool's arguments as MCP serves them: their model and JSON schema."""

    model: type[BaseModel]
    schema: dict[str, Any]


# The rules ------------------------------------------------------------------------------


def toolset_violations(broken: Sequence[BrokenToolset]) -> list[ContractViolation]:
    """``toolset``: each module of the toolsets package that cannot serve."""
    violations = []
    for toolset in broken:
        if toolset.error is None:
            problem = f"`{toolset.module}` has no `TOOLS` list of LangChain tools"
            fix = "end the module with `TOOLS = [my_tool, ...]`, each made with @tool"
        else:
            error = toolset.error
            problem = f"`{toolset.module}` cannot be imported ({type(error).__name__}: {error})"
            fix = f"run `python -c 'import {toolset.module}'` to see the full error"
        violations.append(
            ContractViolation(None, toolset.name, "toolset", problem, fix, cause=toolset.error)
        )
    return violations


def duplicate_name_violations(toolsets: Sequence[Toolset]) -> list[ContractViolation]:
    """``tool-name``: each tool whose name an earlier tool already has."""
    owners: dict[str, str] = {}
    violations = []
    for toolset in toolsets:
        for tool in toolset.tools:
            if tool.name in owners:
                problem = f"the name {tool.name!r} is already used by toolset {owners[tool.name]!r}"
                violations.append(
                    Candidate(tool, toolset.name).violation(
                        "tool-name", problem, "give every tool a name of its own"
                    )
                )
            else:
                owners[tool.name] = toolset.name
    return violations


def name_violations(candidate: Candidate) -> list[ContractViolation]:
    """``tool-name``: a name MCP accepts."""
    name = candidate.tool.name
    if TOOL_NAME.fullmatch(name):
        return []
    return [
        candidate.violation(
            "tool-name",
            f"the name {name!r} is not a valid MCP tool name",
            "use 1 to 128 letters, digits, '_', '-' or '.'",
        )
    ]


def description_violations(candidate: Candidate) -> list[ContractViolation]:
    """``description``: a tool says what it is for."""
    if (candidate.tool.description or "").strip():
        return []
    return [
        candidate.violation(
            "description",
            "the tool has no description",
            "write a docstring that tells the model when and how to use the tool",
        )
    ]


def injected_argument_violations(candidate: Candidate) -> list[ContractViolation]:
    """``injected-arguments``: every argument comes from the client."""
    schema = candidate.tool.args_schema
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        return []  # the input-schema rule reports it
    injected = [
        name
        for name, annotation in get_all_basemodel_annotations(schema).items()
        if any(_is_injected(arg) for arg in get_args(annotation)[1:])
    ]
    if not injected:
        return []
    return [
        candidate.violation(
            "injected-arguments",
            "the tool has injected arguments, which MCP clients cannot supply",
            "remove the InjectedToolArg parameters; read per-request data such as "
            "credentials with mcp_runtime.request_header() instead",
        )
    ]


def check_input_schema(candidate: Candidate) -> tuple[Arguments | None, list[ContractViolation]]:
    """``input-schema``: the arguments' model and JSON schema, as MCP clients see them."""
    fix = "give every argument a type pydantic can validate, as in `name: str`"
    tool = candidate.tool
    try:
        return tool_arguments(tool), []
    except Exception as exc:
        problem = f"its arguments cannot be served over MCP: {exc}"
        return None, [candidate.violation("input-schema", problem, fix)]


def check_return_annotation(
    candidate: Candidate,
) -> tuple[Declared | None, list[ContractViolation]]:
    """``return-annotation`` and ``return-type``: one ToolResult type, maybe with ToolError."""
    try:
        hints = get_type_hints(_tool_function(candidate.tool))
    except Exception as exc:
        return None, [
            candidate.violation(
                "return-annotation",
                f"its annotations cannot be resolved ({type(exc).__name__}: {exc})",
                "import every type the signature names at module level",
            )
        ]
    if "return" not in hints:
        problem = "the tool function has no return annotation"
        return None, [candidate.violation("return-annotation", problem, ANNOTATE_FIX)]
    annotation = hints["return"]
    arms = list(get_args(annotation)) if _is_union(annotation) else [annotation]
    shown = " | ".join(_type_name(arm) for arm in arms)
    results = [arm for arm in arms if arm is not ToolError]
    if type(None) in arms:
        problem, fix = (
            f"`{shown}` allows None; a tool always answers",
            "drop `| None`: return a ToolError or raise when there is nothing to return",
        )
    elif not results:
        problem, fix = (
            "`ToolError` alone declares no successful result",
            "declare the success type too: `-> XResult | ToolError`",
        )
    elif len(results) > 1:
        problem, fix = (
            f"`{shown}` declares more than one result type",
            "merge them into one ToolResult subclass whose data keys are NotRequired",
        )
    elif not (is_typeddict(results[0]) and _inherits(results[0], ToolResult)):
        kind = "a plain TypedDict" if is_typeddict(results[0]) else f"`{shown}`"
        problem, fix = f"the return annotation is {kind}, not a ToolResult subclass", ANNOTATE_FIX
    else:
        return Declared(results[0], ToolError in arms, shown), []
    return None, [candidate.violation("return-type", problem, fix)]


def result_key_violations(candidate: Candidate, declared: Declared) -> list[ContractViolation]:
    """``result-keys``: ``message`` a required str, data keys NotRequired and not ToolError's."""
    result_type = declared.result_type
    name = result_type.__name__
    try:
        hints = get_type_hints(result_type)
    except Exception as exc:
        return [
            candidate.violation(
                "result-keys",
                f"the keys of `{name}` cannot be resolved ({type(exc).__name__}: {exc})",
                "import every type the result class names at module level",
            )
        ]
    required: frozenset[str] = getattr(result_type, "__required_keys__", frozenset())
    violations = []
    if hints.get("message") is not str or "message" not in required:
        violations.append(
            candidate.violation(
                "result-keys",
                f"`{name}.message` must stay a required `str`",
                "do not redeclare `message`, and do not subclass with `total=False`",
            )
        )
    for key in sorted(set(hints) - {"message"}):
        if key in ERROR_KEYS:
            violations.append(
                candidate.violation(
                    "result-keys",
                    f"`{name}` declares the data key `{key}`, which ToolError uses",
                    f"rename `{key}` so a result can always be told apart from a ToolError",
                )
            )
        elif key in required:
            violations.append(
                candidate.violation(
                    "result-keys",
                    f"the data key `{name}.{key}` is required",
                    f"declare it `{key}: NotRequired[...]`",
                )
            )
    return violations


def check_json_schema(
    candidate: Candidate, declared: Declared
) -> tuple[OutputContract | None, list[ContractViolation]]:
    """``json-schema``: the output contract, when every key has a JSON schema that holds."""
    name = declared.result_type.__name__
    try:
        contract = OutputContract.derive(
            candidate.tool.name,
            declared.result_type,
            allows_tool_error=declared.allows_tool_error,
            annotation=declared.shown,
        )
    except SchemaUnavailableError as exc:
        return None, [
            candidate.violation(
                "json-schema",
                f"`{name}` has a key whose type has no JSON schema: {exc}",
                "use JSON types for data keys: str, int, float, bool, list, dict, Literal, "
                "nested TypedDicts (from typing_extensions)",
            )
        ]
    naive = sorted(time_types_without_offset(contract.result))
    if naive:
        return None, [
            candidate.violation(
                "json-schema",
                f"`{name}` has a key typed {' and '.join(naive)}, whose values may lack a UTC "
                "offset: the schema says `format: date-time` or `time`, which requires one, "
                "and clients refuse the whole answer",
                "declare moments in time `AwareDatetime` (from pydantic), so a value without "
                "an offset is refused before it is sent; send a time of day as `str`",
            )
        ]
    return contract, []


def check_metadata(candidate: Candidate) -> tuple[ToolMetadata, list[ContractViolation]]:
    """``tool-metadata``: the tool's declared title, hints, scopes and ``_meta``."""
    metadata, problems = read_declaration(candidate.tool)
    return metadata, [
        candidate.violation("tool-metadata", problem, fix) for problem, fix in problems
    ]


# The conversion -------------------------------------------------------------------------


def to_mcp_tool(
    tool: BaseTool,
    *,
    toolset: str | None = None,
    policy: CallPolicy | None = None,
    state: ServiceState | None = None,
) -> ContractTool:
    """Convert a LangChain tool to a tool of the MCP SDK's server (``MCPServer``) that
    enforces its return contract.

    Its calls run with ``state`` (the threads, calls and metrics of the service that
    serves it; a state of its own when None). Raises :class:`ContractError` listing
    every rule the tool breaks.
    """
    candidate = Candidate(tool, toolset)
    violations = [*name_violations(candidate), *description_violations(candidate)]
    declared, found = check_return_annotation(candidate)
    violations += found
    contract = None
    if declared is not None:
        found = result_key_violations(candidate, declared)
        violations += found
        if not found:
            contract, found = check_json_schema(candidate, declared)
            violations += found
    violations += injected_argument_violations(candidate)
    arguments, found = check_input_schema(candidate)
    violations += found
    metadata, found = check_metadata(candidate)
    violations += found
    if violations or arguments is None or contract is None:
        raise ContractError(violations)
    caller = ToolCaller(tool, frozenset(property_names(arguments.schema)))
    policy = policy or CallPolicy()
    if metadata.max_threads is not None:
        policy = replace(policy, max_threads=metadata.max_threads)
    return ContractTool(
        fn=caller.call,
        name=tool.name,
        title=metadata.title,
        description=inspect.cleandoc(tool.description),
        parameters=arguments.schema,
        fn_metadata=func_metadata(arguments.model, contract.schema),
        is_async=True,
        contract=contract,
        caller=caller,
        policy=policy,
        state=state if state is not None else ServiceState(),
        annotations=metadata.annotations(),
        meta=metadata.meta,
        scopes=metadata.scopes,
        task=metadata.task,
        task_headers=metadata.task_headers,
        json_keys=json_text_keys(arguments.model),
    )


@deprecated(
    "to_fastmcp is now to_mcp_tool: it returns a tool of the MCP SDK's MCPServer (the name "
    "came from langchain-mcp-adapters); the old name will be removed in a later release"
)
def to_fastmcp(
    tool: BaseTool,
    *,
    toolset: str | None = None,
    policy: CallPolicy | None = None,
    state: ServiceState | None = None,
) -> ContractTool:
    """The former name of :func:`to_mcp_tool`, which it calls."""
    return to_mcp_tool(tool, toolset=toolset, policy=policy, state=state)


def convert_toolsets(
    toolsets: Sequence[Toolset],
    *,
    violations: Sequence[ContractViolation] = (),
    policy: CallPolicy | None = None,
    state: ServiceState | None = None,
) -> list[ContractTool]:
    """Every tool of ``toolsets`` converted, their calls run with ``state`` (one of their
    own when None); raises one error listing every violation."""
    state = state if state is not None else ServiceState()
    found = [*violations, *duplicate_name_violations(toolsets)]
    converted: list[ContractTool] = []
    served: set[str] = set()
    for toolset in toolsets:
        for tool in toolset.tools:
            if tool.name in served:
                continue  # a duplicate name: reported above
            served.add(tool.name)
            try:
                converted.append(
                    to_mcp_tool(tool, toolset=toolset.name, policy=policy, state=state)
                )
            except ContractError as exc:
                found.extend(exc.violations)
    if found:
        raise ContractError(found)
    return converted


def tool_violations(tool: BaseTool, *, toolset: str | None = None) -> list[ContractViolation]:
    """Every contract rule ``tool`` breaks; empty when it can be served."""
    try:
        to_mcp_tool(tool, toolset=toolset)
    except ContractError as exc:
        return list(exc.violations)
    return []


def tool_arguments(tool: BaseTool) -> Arguments:
    """The arguments of ``tool`` as MCP clients see them: LangChain's ``tool_call_schema``.

    That schema is a copy of the tool's ``args_schema`` keeping each field's type,
    default, description and constraints, titled with the tool's name and described
    by its description. When the ``args_schema`` holds nothing more (as every ``@tool``
    function's does), its own schema is that schema once retitled, and the copy,
    which costs a pydantic model, is never built.
    """
    model = _pydantic_model(tool.args_schema)
    if _is_plain(model) and tool.description:
        schema = model.model_json_schema()
        schema["title"] = tool.name
        schema["description"] = inspect.cleandoc(textwrap.dedent(tool.description))
        return Arguments(model, dict(sorted(schema.items())))
    call_model = _pydantic_model(tool.tool_call_schema)
    return Arguments(call_model, call_model.model_json_schema())


# Helpers --------------------------------------------------------------------------------

# What a field of a plain args_schema may set: all that LangChain's copy keeps.
COPIED_FIELD_ATTRIBUTES = frozenset({"annotation", "default", "default_factory", "description"})


def _pydantic_model(schema: object) -> type[BaseModel]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    raise TypeError(
        "the args_schema is not a pydantic model (a dict schema cannot validate arguments)"
    )


def _is_plain(model: type[BaseModel]) -> bool:
    """Whether ``model``'s schema is LangChain's copy of it, bar the title and description."""
    return (
        set(model.model_config) <= {"arbitrary_types_allowed"}
        and getattr(model.model_json_schema, "__func__", None)
        is BaseModel.model_json_schema.__func__  # type: ignore[attr-defined]
        and getattr(model.__get_pydantic_json_schema__, "__func__", None)
        is BaseModel.__get_pydantic_json_schema__.__func__  # type: ignore[attr-defined]
        and all(
            set(field._attributes_set) <= COPIED_FIELD_ATTRIBUTES
            and not _is_injected_arg_type(field.annotation)  # type: ignore[arg-type]
            for field in model.model_fields.values()
        )
    )


def _is_injected(marker: object) -> bool:
    return isinstance(marker, InjectedToolArg) or (
        isinstance(marker, type) and issubclass(marker, InjectedToolArg)
    )


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
