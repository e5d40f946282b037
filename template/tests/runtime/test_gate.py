"""The contract runtime: schema shapes, exact call results, and every rule of the gate."""

import json
import logging
from datetime import UTC, datetime, time
from typing import Annotated, Any, Literal, NotRequired

import pytest
from jsonschema import Draft202012Validator
from langchain_core.tools import BaseTool, InjectedToolArg, StructuredTool, tool
from mcp.types import CallToolResult, TextContent
from pydantic import AwareDatetime, BaseModel
from typing_extensions import TypedDict

from mcp_runtime import ContractError, ToolError, ToolResult, to_mcp_tool
from mcp_runtime.contract.gate import convert_toolsets, tool_violations
from mcp_runtime.contract.toolsets import Toolset

pytestmark = pytest.mark.anyio


class Location(TypedDict):
    """Where an item is."""

    shelf: str
    row: NotRequired[int]


class ItemResult(ToolResult):
    """Items found for a query."""

    count: NotRequired[int]
    names: NotRequired[list[str]]
    location: NotRequired[Location]
    status: NotRequired[Literal["fresh", "stale"]]


ITEM_RESULT_SCHEMA: dict[str, Any] = {
    "description": "Items found for a query.",
    "properties": {
        "message": {"title": "Message", "type": "string"},
        "count": {"title": "Count", "type": "integer"},
        "names": {"items": {"type": "string"}, "title": "Names", "type": "array"},
        "location": {
            "description": "Where an item is.",
            "properties": {
                "shelf": {"title": "Shelf", "type": "string"},
                "row": {"title": "Row", "type": "integer"},
            },
            "required": ["shelf"],
            "title": "Location",
            "type": "object",
        },
        "status": {"enum": ["fresh", "stale"], "title": "Status", "type": "string"},
    },
    "required": ["message"],
    "title": "ItemResult",
    "type": "object",
}

TOOL_ERROR_SCHEMA: dict[str, Any] = {
    "description": (
        "A structured failure: `error` is a short kind (such as invalid_argument, "
        "not_found or upstream_unavailable); `detail` says what went wrong and what "
        "to do about it."
    ),
    "properties": {
        "error": {"title": "Error", "type": "string"},
        "detail": {"title": "Detail", "type": "string"},
    },
    "required": ["error", "detail"],
    "title": "ToolError",
    "type": "object",
}


def tool_returning(value: object, annotation: object = ItemResult | ToolError) -> BaseTool:
    """A tool named ``fixed``, annotated ``-> annotation``, that returns ``value``."""

    async def fixed() -> Any:
        return value

    fixed.__annotations__["return"] = annotation
    return StructuredTool.from_function(
        coroutine=fixed, name="fixed", description="Return a fixed value."
    )


def rules_broken(tool: BaseTool) -> list[str]:
    return [violation.rule for violation in tool_violations(tool, toolset="samples")]


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def call(tool: BaseTool, arguments: dict[str, Any] | None = None) -> CallToolResult:
    result = await to_mcp_tool(tool).run(arguments or {})
    assert isinstance(result, CallToolResult)
    return result


# --- the advertised outputSchema --------------------------------------------


def test_schema_of_result_or_error_is_an_object_with_both_arms() -> None:
    schema = to_mcp_tool(tool_returning(None)).output_schema
    assert schema == {"type": "object", "oneOf": [ITEM_RESULT_SCHEMA, TOOL_ERROR_SCHEMA]}


def test_schema_of_result_alone_is_the_result_type() -> None:
    schema = to_mcp_tool(tool_returning(None, ItemResult)).output_schema
    assert schema == ITEM_RESULT_SCHEMA


def test_schema_of_bare_tool_result() -> None:
    schema = to_mcp_tool(tool_returning(None, ToolResult)).output_schema
    assert schema == {
        "description": "A tool's successful answer: ``message`` is the human-readable answer.",
        "properties": {"message": {"title": "Message", "type": "string"}},
        "required": ["message"],
        "title": "ToolResult",
        "type": "object",
    }


def test_schema_is_never_wrapped_in_result() -> None:
    schema = to_mcp_tool(tool_returning(None, ItemResult)).output_schema
    assert schema is not None
    assert "result" not in schema.get("properties", {})


def test_schema_has_no_null_padding() -> None:
    text = json.dumps(to_mcp_tool(tool_returning(None)).output_schema)
    assert '"null"' not in text
    assert '"default"' not in text


def test_schema_is_valid_draft_2020_12() -> None:
    schema = to_mcp_tool(tool_returning(None)).output_schema
    assert schema is not None
    Draft202012Validator.check_schema(schema)


def test_recursive_result_keeps_its_definitions() -> None:
    schema = to_mcp_tool(tool_returning(None, TreeResult)).output_schema
    assert schema is not None
    children = {"items": {"$ref": "#/$defs/Node"}, "title": "Children", "type": "array"}
    assert schema["properties"]["root"]["properties"]["children"] == children
    assert schema["$defs"]["Node"]["properties"]["children"] == children
    validator = Draft202012Validator(schema)
    tree = {"label": "a", "children": [{"label": "b", "children": []}]}
    assert validator.is_valid({"message": "m", "root": tree})
    assert not validator.is_valid({"message": "m", "root": {"label": "a", "children": [{}]}})


class Node(TypedDict):
    """A tree node."""

    label: str
    children: list["Node"]


class TreeResult(ToolResult):
    """A tree."""

    root: NotRequired[Node]


def test_description_is_the_docstring_without_indentation() -> None:
    @tool
    def documented() -> ToolResult:
        """Do one thing.

        Use it when asked; it takes no argument.
        """
        return ToolResult(message="done")

    converted = to_mcp_tool(documented)
    assert converted.description == "Do one thing.\n\nUse it when asked; it takes no argument."
    assert converted.parameters["description"] == converted.description


# --- what tools/call answers ---------------------------------------------------


async def test_valid_result_is_sent_as_structured_content_and_text() -> None:
    payload = {"message": "2 items", "count": 2, "names": ["a", "é"], "status": "fresh"}
    result = await call(tool_returning(dict(payload)))
    assert result.is_error is False
    assert result.structured_content == payload
    assert json.loads(text_of(result)) == payload


async def test_nested_result_is_sent_whole() -> None:
    payload = {"message": "found", "location": {"shelf": "B", "row": 3}}
    result = await call(tool_returning(payload))
    assert result.structured_content == payload


async def test_returned_tool_error_is_an_error_with_structured_content() -> None:
    error = {"error": "not_found", "detail": "No item matches: try a shorter query."}
    result = await call(tool_returning(dict(error)))
    assert result.is_error is True
    assert result.structured_content == error
    assert json.loads(text_of(result)) == error


async def test_undeclared_keys_are_dropped_from_both_channels() -> None:
    value = {"message": "hi", "count": 1, "secret": "x", "location": {"shelf": "A", "z": 1}}
    result = await call(tool_returning(value))
    expected = {"message": "hi", "count": 1, "location": {"shelf": "A"}}
    assert result.structured_content == expected
    assert json.loads(text_of(result)) == expected


async def test_undeclared_keys_are_dropped_from_tool_error() -> None:
    result = await call(tool_returning({"error": "e", "detail": "d", "trace": "t"}))
    assert result.structured_content == {"error": "e", "detail": "d"}


async def test_missing_message_breaks_the_contract(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="mcp_runtime.contract.output_contract"):
        result = await call(tool_returning({"count": 2}))
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result) == (
        "Tool 'fixed' returned a result that breaks its annotation "
        "`ItemResult | ToolError`: message: Field required"
    )
    assert [record.getMessage() for record in caplog.records] == [text_of(result)]


async def test_wrong_type_names_the_key_path_not_the_value() -> None:
    result = await call(tool_returning({"message": "m", "location": {"shelf": 12345}}))
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result).endswith("location.shelf: Input should be a valid string")
    assert "12345" not in text_of(result)


async def test_lax_coercion_is_refused() -> None:
    result = await call(tool_returning({"message": "m", "count": "3"}))
    assert result.structured_content is None
    assert text_of(result).endswith("count: Input should be a valid integer")


async def test_none_for_a_not_required_key_is_refused() -> None:
    result = await call(tool_returning({"message": "m", "count": None}))
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result).endswith("count: Input should be a valid integer")


async def test_literal_outside_its_values_is_refused() -> None:
    result = await call(tool_returning({"message": "m", "status": "rotten"}))
    assert text_of(result).endswith("status: Input should be 'fresh' or 'stale'")


async def test_non_dict_result_is_refused() -> None:
    result = await call(tool_returning("just text"))
    assert result.structured_content is None
    assert "Input should be a valid dictionary" in text_of(result)
    assert "just text" not in text_of(result)


async def test_tool_error_from_a_tool_without_error_arm_is_refused() -> None:
    result = await call(tool_returning({"error": "e", "detail": "d"}, ItemResult))
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result).endswith("`ItemResult`: message: Field required")


async def test_non_json_value_is_refused() -> None:
    result = await call(tool_returning({"message": "m", "extra": object()}, AnyResult))
    assert result.is_error is True
    assert result.structured_content is None


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
async def test_non_finite_number_is_refused(number: float) -> None:
    result = await call(tool_returning({"message": "m", "ratio": number}, AnyResult))
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result).endswith("ratio: Input should be a finite number")


@pytest.mark.parametrize("number", [float("nan"), float("inf")])
async def test_non_finite_number_in_free_form_key_is_refused(number: float) -> None:
    result = await call(tool_returning({"message": "m", "extra": [number]}, AnyResult))
    assert result.is_error is True
    assert result.structured_content is None


class AnyResult(ToolResult):
    """A result with a free-form key."""

    ratio: NotRequired[float]
    extra: NotRequired[Any]


async def test_missing_argument_is_named() -> None:
    result = await call(greet)
    assert result.is_error is True
    assert text_of(result) == "Invalid arguments for tool 'greet': name: Field required"


async def test_wrong_argument_type_is_named() -> None:
    result = await call(greet, {"name": "Ada", "times": "many"})
    assert result.is_error is True
    assert text_of(result) == (
        "Invalid arguments for tool 'greet': times: "
        "Input should be a valid integer, unable to parse string as an integer"
    )


async def test_arguments_reach_the_tool() -> None:
    result = await call(greet, {"name": "Ada", "times": 2})
    assert result.structured_content == {"message": "Hi Ada Hi Ada"}


@tool
def greet(name: str, times: int = 1) -> ToolResult:
    """Greet someone, several times over."""
    return ToolResult(message=" ".join([f"Hi {name}"] * times))


# --- the startup gate: one rule, one test --------------------------------------


def test_gate_accepts_result_or_error() -> None:
    assert rules_broken(tool_returning(None)) == []


def test_gate_accepts_result_alone() -> None:
    assert rules_broken(tool_returning(None, ItemResult)) == []


def test_gate_rejects_missing_return_annotation() -> None:
    @tool
    def unannotated(query: str):  # type: ignore[no-untyped-def]
        """Look something up."""
        return {"message": query}

    violations = tool_violations(unannotated, toolset="samples")
    assert [(v.tool, v.toolset, v.rule) for v in violations] == [
        ("unannotated", "samples", "return-annotation")
    ]
    assert violations[0].problem == "the tool function has no return annotation"


@pytest.mark.parametrize(
    "annotation",
    [str, dict, dict[str, Any], int, list[str], Any],
    ids=["str", "dict", "dict[str, Any]", "int", "list", "Any"],
)
def test_gate_rejects_non_result_types(annotation: object) -> None:
    violations = tool_violations(tool_returning(None, annotation))
    assert [v.rule for v in violations] == ["return-type"]
    assert violations[0].problem.endswith("not a ToolResult subclass")


def test_gate_rejects_pydantic_model() -> None:
    class Answer(BaseModel):
        message: str

    assert rules_broken(tool_returning(None, Answer)) == ["return-type"]


def test_gate_rejects_plain_typeddict() -> None:
    class Plain(TypedDict):
        message: str

    violations = tool_violations(tool_returning(None, Plain))
    assert [v.rule for v in violations] == ["return-type"]
    assert violations[0].problem == (
        "the return annotation is a plain TypedDict, not a ToolResult subclass"
    )


def test_gate_rejects_optional_result() -> None:
    violations = tool_violations(tool_returning(None, ItemResult | None))
    assert [v.rule for v in violations] == ["return-type"]
    assert violations[0].problem == "`ItemResult | None` allows None; a tool always answers"


def test_gate_rejects_optional_result_with_error_arm() -> None:
    assert rules_broken(tool_returning(None, ItemResult | ToolError | None)) == ["return-type"]


def test_gate_rejects_two_result_types() -> None:
    violations = tool_violations(tool_returning(None, ItemResult | TreeResult))
    assert [v.rule for v in violations] == ["return-type"]
    assert "more than one result type" in violations[0].problem


def test_gate_rejects_bare_tool_error() -> None:
    violations = tool_violations(tool_returning(None, ToolError))
    assert [v.rule for v in violations] == ["return-type"]
    assert violations[0].fix == "declare the success type too: `-> XResult | ToolError`"


def test_gate_rejects_required_data_key() -> None:
    class Strict(ToolResult):
        count: int

    violations = tool_violations(tool_returning(None, Strict))
    assert [v.rule for v in violations] == ["result-keys"]
    assert violations[0].problem == "the data key `Strict.count` is required"
    assert violations[0].fix == "declare it `count: NotRequired[...]`"


def test_gate_rejects_optional_message() -> None:
    class Loose(ToolResult, total=False):
        count: int

    class NoMessage(Loose, total=False):
        message: str  # type: ignore[misc]

    assert rules_broken(tool_returning(None, NoMessage)) == ["result-keys"]


def test_gate_rejects_message_that_is_not_str() -> None:
    class NumberMessage(ToolResult):
        message: int  # type: ignore[misc]

    violations = tool_violations(tool_returning(None, NumberMessage))
    assert [v.problem for v in violations] == ["`NumberMessage.message` must stay a required `str`"]


class ErrorClash(ToolResult):
    """A result that reuses ToolError's `error` key."""

    error: NotRequired[str]


class DetailClash(ToolResult):
    """A result that reuses ToolError's `detail` key."""

    detail: NotRequired[str]


@pytest.mark.parametrize(("clash", "key"), [(ErrorClash, "error"), (DetailClash, "detail")])
def test_gate_rejects_data_key_named_like_tool_error(clash: type, key: str) -> None:
    violations = tool_violations(tool_returning(None, clash))
    assert [v.rule for v in violations] == ["result-keys"]
    assert f"declares the data key `{key}`, which ToolError uses" in violations[0].problem


def test_gate_rejects_key_without_json_schema() -> None:
    class Opaque:
        pass

    class OpaqueResult(ToolResult):
        handle: NotRequired[Opaque]

    violations = tool_violations(tool_returning(None, OpaqueResult))
    assert [v.rule for v in violations] == ["json-schema"]
    assert "`OpaqueResult` has a key whose type has no JSON schema" in violations[0].problem


class Event(TypedDict):
    """Something that happened."""

    at: datetime


class EventsResult(ToolResult):
    """Events, nested inside a list."""

    events: NotRequired[list[Event]]


class OpeningResult(ToolResult):
    """When a shop opens."""

    opens: NotRequired[time]


@pytest.mark.parametrize(
    ("result_type", "kind"), [(EventsResult, "`datetime`"), (OpeningResult, "`time`")]
)
def test_gate_rejects_time_types_that_allow_no_offset(result_type: type, kind: str) -> None:
    violations = tool_violations(tool_returning(None, result_type))
    assert [v.rule for v in violations] == ["json-schema"]
    assert violations[0].problem.startswith(
        f"`{result_type.__name__}` has a key typed {kind}, whose values may lack a UTC offset"
    )
    assert "AwareDatetime" in violations[0].fix


class StampResult(ToolResult):
    """A moment in time."""

    at: NotRequired[AwareDatetime]


def test_gate_accepts_aware_datetime() -> None:
    assert rules_broken(tool_returning(None, StampResult)) == []


async def test_naive_datetime_for_an_aware_key_is_refused() -> None:
    naive = datetime(2024, 1, 2, 3, 4, 5)
    result = await call(tool_returning({"message": "m", "at": naive}, StampResult))
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result) == (
        "Tool 'fixed' returned a result that breaks its annotation `StampResult`: "
        "at: Input should have timezone info"
    )


async def test_aware_datetime_is_sent_with_its_offset() -> None:
    aware = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    result = await call(tool_returning({"message": "m", "at": aware}, StampResult))
    assert result.structured_content == {"message": "m", "at": "2024-01-02T03:04:05Z"}


def test_gate_rejects_empty_description() -> None:
    blank = tool_returning(None)
    blank.description = "   "
    assert rules_broken(blank) == ["description"]


@pytest.mark.parametrize("name", ["", "has space", "slash/name", "x" * 129, "émoji"])
def test_gate_rejects_name_mcp_refuses(name: str) -> None:
    bad = tool_returning(None)
    bad.name = name
    assert rules_broken(bad) == ["tool-name"]


def test_gate_accepts_longest_name() -> None:
    ok = tool_returning(None)
    ok.name = "a.b-c_" + "x" * 122
    assert rules_broken(ok) == []


def test_gate_rejects_duplicate_names() -> None:
    first = Toolset("one", (tool_returning(None),))
    second = Toolset("two", (tool_returning(None),))
    with pytest.raises(ContractError) as caught:
        convert_toolsets([first, second])
    assert [(v.toolset, v.tool, v.rule) for v in caught.value.violations] == [
        ("two", "fixed", "tool-name")
    ]


def test_gate_rejects_injected_arguments() -> None:
    @tool
    def injected(query: str, user: Annotated[str, InjectedToolArg]) -> ItemResult:
        """Search on behalf of a user."""
        return ItemResult(message=query + user)

    violations = tool_violations(injected)
    assert [v.rule for v in violations] == ["injected-arguments"]
    assert "request_header" in violations[0].fix


def test_gate_reports_every_violation_at_once() -> None:
    @tool
    def unannotated(query: str):  # type: ignore[no-untyped-def]
        """Look something up."""
        return {"message": query}

    optional = tool_returning(None, ItemResult | None)
    optional.name = "optional"
    toolset = Toolset("mixed", (unannotated, optional, tool_returning(None)))
    with pytest.raises(ContractError) as caught:
        convert_toolsets([toolset])
    assert [(v.tool, v.rule) for v in caught.value.violations] == [
        ("unannotated", "return-annotation"),
        ("optional", "return-type"),
    ]
    message = str(caught.value)
    assert message.startswith("2 tool contract violations:\n")
    assert "mixed/unannotated: [return-annotation]" in message
    assert "mixed/optional: [return-type]" in message
