"""The output contract against pydantic's own model of the annotation.

The runtime builds one validator per result type and the ToolError arm once; this
checks that what it advertises and what it accepts are exactly what a pydantic
model of the whole annotation (``XResult | ToolError``, told apart by the
``error`` key) would give: the same schema, the same values accepted, the same
payloads sent.
"""

import json
import math
import types
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NotRequired, Union

import pytest
from pydantic import (
    AwareDatetime,
    ConfigDict,
    Discriminator,
    RootModel,
    Tag,
    ValidationError,
    with_config,
)
from typing_extensions import TypedDict

from mcp_runtime import ToolError, ToolResult
from mcp_runtime.contract.output_contract import OutputContract, inline_refs


class Place(TypedDict):
    """Where a thing is."""

    shelf: str
    row: NotRequired[int]


class Node(TypedDict):
    """A tree node."""

    label: str
    children: list["Node"]


class PlainResult(ToolResult):
    """A count."""

    count: NotRequired[int]


class NestedResult(ToolResult):
    """Places, twice over, and a status."""

    here: NotRequired[Place]
    there: NotRequired[list[Place]]
    status: NotRequired[Literal["fresh", "stale"]]
    ratio: NotRequired[float]


class FreeResult(ToolResult):
    """Free-form data."""

    data: NotRequired[dict[str, Any]]
    rows: NotRequired[list[dict[str, int | str | None]]]


class TreeResult(ToolResult):
    """A tree."""

    root: NotRequired[Node]


class WhenResult(ToolResult):
    """A moment."""

    at: NotRequired[AwareDatetime]


class ChainResult(ToolResult):
    """A result that refers to itself."""

    next: NotRequired["ChainResult"]


@with_config(ConfigDict(str_max_length=3))
class ConfiguredResult(ToolResult):
    """A result with its own configuration."""

    ratio: NotRequired[float]


RESULT_TYPES = [
    ToolResult,
    PlainResult,
    NestedResult,
    FreeResult,
    TreeResult,
    WhenResult,
    ChainResult,
    ConfiguredResult,
]

VALUES: list[object] = [
    {"message": "m"},
    {"message": "m", "count": 3},
    {"message": "m", "count": "3"},
    {"message": "m", "count": True},
    {"message": "m", "here": {"shelf": "a", "row": 2}, "there": [{"shelf": "b"}]},
    {"message": "m", "here": {"row": 2}},
    {"message": "m", "status": "old"},
    {"message": "m", "ratio": math.nan},
    {"message": "m", "data": {"k": [1, {"x": None}]}, "rows": [{"a": 1, "b": None}]},
    {"message": "m", "root": {"label": "a", "children": [{"label": "b", "children": []}]}},
    {"message": "m", "root": {"label": "a", "children": [{}]}},
    {"message": "m", "at": datetime(2026, 1, 2, 3, 4, tzinfo=UTC)},
    {"message": "m", "at": datetime(2026, 1, 2, 3, 4)},
    {"message": "m", "extra": "dropped"},
    {"message": "m", "next": {"message": "n", "next": {"message": "o"}}},
    {"message": "m", "next": {"next": {}}},
    {"message": "long", "ratio": math.inf},
    {"error": "not_found", "detail": "d"},
    {"error": "not_found"},
    {"error": "not_found", "detail": "d", "extra": 1},
    {"message": 1},
    {},
    "text",
    None,
]


def pydantic_model(result_type: type, allows_tool_error: bool) -> type[RootModel[Any]]:
    """The annotation as one pydantic model: the two arms told apart by the ``error`` key."""
    root: Any = result_type
    if allows_tool_error:
        root = Annotated[
            Union[Annotated[result_type, Tag("result")], Annotated[ToolError, Tag("error")]],  # noqa: UP007
            Discriminator(lambda v: "error" if isinstance(v, dict) and "error" in v else "result"),
        ]
    config = ConfigDict(allow_inf_nan=False, ser_json_inf_nan="constants")
    return types.new_class(
        "Payload",
        (RootModel,),
        {},
        lambda namespace: namespace.update(
            {"__annotations__": {"root": root}, "model_config": config}
        ),
    )


def pydantic_schema(model: type[RootModel[Any]], allows_tool_error: bool) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title")
    schema = inline_refs(schema)
    return {"type": "object", **schema} if allows_tool_error else schema


def pydantic_answer(model: type[RootModel[Any]], value: object) -> object:
    """What pydantic's model makes of ``value``, when it is JSON that can be sent."""
    try:
        payload = model.model_validate(value, strict=True).model_dump(mode="json")
        json.dumps(payload, allow_nan=False)
    except (ValidationError, ValueError):
        return "refused"
    return payload


def runtime_answer(contract: OutputContract, value: object) -> object:
    result = contract.to_call_result(value)
    return "refused" if result.structured_content is None else result.structured_content


CASES = [(t, e) for t in RESULT_TYPES for e in (True, False)]


@pytest.mark.parametrize(("result_type", "allows_tool_error"), CASES)
def test_the_advertised_schema_is_pydantics(result_type: type, allows_tool_error: bool) -> None:
    contract = OutputContract.derive(
        "parity", result_type, allows_tool_error=allows_tool_error, annotation="X"
    )
    model = pydantic_model(result_type, allows_tool_error)
    assert contract.schema == pydantic_schema(model, allows_tool_error)


@pytest.mark.parametrize(("result_type", "allows_tool_error"), CASES)
def test_the_same_values_are_accepted_and_sent(result_type: type, allows_tool_error: bool) -> None:
    contract = OutputContract.derive(
        "parity", result_type, allows_tool_error=allows_tool_error, annotation="X"
    )
    model = pydantic_model(result_type, allows_tool_error)
    ours = [runtime_answer(contract, value) for value in VALUES]
    assert ours == [pydantic_answer(model, value) for value in VALUES]
    assert any(answer != "refused" for answer in ours)
