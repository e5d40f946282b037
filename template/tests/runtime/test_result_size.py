"""A tool that reports progress and may answer more than a stream carries is named at startup.

A call that reports progress to a client that asked (fastmcp's ``Client`` asks on every
call) streams its answer, which the Python clients read only up to 1 MiB: such a tool,
unless it runs only as a task or its result's data keys are bounded, is named in a
warning that says what happens and what to do, whenever the server is built (``serve``,
``check``). The bound is read from the ``outputSchema``.
"""

import logging
from typing import Annotated, Any, NotRequired

import pytest
from langchain_core.tools import BaseTool, tool
from pydantic import Field

import mcp_runtime
from mcp_runtime import ToolError, ToolResult, report_progress, tool_metadata
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.result_size import json_size_bound, streamed_size_warnings
from mcp_runtime.contract.toolsets import Toolset, find_service
from mcp_runtime.sdk import served_tools
from mcp_runtime.serving.server import build_server

LIMIT = ServiceSettings().max_streamed_result_bytes


class ArchiveResult(ToolResult):
    """An archive's data."""

    data: NotRequired[str]
    size: NotRequired[int]


class SummaryResult(ToolResult):
    """A summary, bounded."""

    lines: NotRequired[Annotated[list[Annotated[str, Field(max_length=100)]], Field(max_length=10)]]
    size: NotRequired[int]


@tool
async def retrieve(dataset: str) -> ArchiveResult | ToolError:
    """Retrieve a dataset's archive, reporting how far the retrieval has come."""
    report_progress(1, 2, "queued")
    return ArchiveResult(message="retrieved", data=dataset * 3)


@tool
def retrieve_in_a_thread(dataset: str) -> ArchiveResult:
    """The same, a sync tool that reports through the package's name."""
    mcp_runtime.report_progress(1, 2, "queued")
    return ArchiveResult(message="retrieved", data=dataset)


@tool
async def retrieve_quietly(dataset: str) -> ArchiveResult:
    """The same, without progress: its answer never streams."""
    # report_progress is mentioned here only; the tool never calls it.
    return ArchiveResult(message="retrieved", data=dataset)


@tool
async def summarise(dataset: str) -> SummaryResult:
    """Summarise a dataset, reporting progress; its result is bounded."""
    report_progress(1, 2, "reading")
    return SummaryResult(message="summarised", lines=[dataset])


@tool_metadata(task="required")
@tool
async def retrieve_as_a_task(dataset: str) -> ArchiveResult | ToolError:
    """Retrieve, only as a task: its result is read as one JSON body."""
    report_progress(1, 2, "queued")
    return ArchiveResult(message="retrieved", data=dataset)


def warnings_of(*tools: BaseTool, limit: int = LIMIT) -> list[str]:
    settings = ServiceSettings(auth="none", max_streamed_result_bytes=limit)
    server = build_server([Toolset("sizes", tools)], name="sizes", settings=settings)
    return streamed_size_warnings(served_tools(server), limit)


def test_a_tool_reporting_progress_with_unbounded_data_is_named_with_the_way_out() -> None:
    assert warnings_of(retrieve) == [
        "tool retrieve reports progress, and its result may be larger than a streamed "
        f"answer carries (MCP_MAX_STREAMED_RESULT_BYTES, {LIMIT} bytes: its data keys `data` "
        "set no bound on their size): a call whose client asks for progress (fastmcp's "
        "Client asks on every call) is answered as a stream, whose one event the Python "
        "clients read only up to 1 MiB, so a larger result is answered result_too_large "
        'after the work is done. Make it a task tool (task="required": a task\'s result is '
        "read as one JSON body), bound its data keys (Field(max_length=...)) or answer in "
        'pages, or stop reporting progress (docs/long-calls.md, "Progress and large results")'
    ]


def test_a_sync_tool_reporting_through_the_package_is_named_too() -> None:
    assert [warning.split(" reports")[0] for warning in warnings_of(retrieve_in_a_thread)] == [
        "tool retrieve_in_a_thread"
    ]


@pytest.mark.parametrize(
    "quiet",
    [retrieve_quietly, summarise, retrieve_as_a_task],
    ids=["no progress", "bounded data", "only a task"],
)
def test_a_tool_whose_answer_fits_a_stream_is_not_named(quiet: BaseTool) -> None:
    assert warnings_of(quiet) == []


def test_bounded_data_larger_than_the_limit_is_named() -> None:
    """Ten lines of 100 characters: within 1 MiB, beyond 10 kB; the large keys named."""
    [warning] = warnings_of(summarise, limit=10_000)
    assert (
        "(MCP_MAX_STREAMED_RESULT_BYTES, 10000 bytes: its data keys (`lines`) may take 6097 "
        "bytes of JSON, which an answer carries twice)"
    ) in warning


def test_the_server_warns_of_it_when_it_is_built(caplog: pytest.LogCaptureFixture) -> None:
    settings = ServiceSettings(auth="none")
    with caplog.at_level(logging.WARNING, logger="mcp_runtime.serving.server"):
        build_server([Toolset("sizes", (retrieve, summarise))], name="sizes", settings=settings)
    logged = [record.getMessage() for record in caplog.records]
    assert [line.split(" reports")[0] for line in logged] == ["tool retrieve"]


def test_the_services_own_tools_fit_a_stream(caplog: pytest.LogCaptureFixture) -> None:
    """The examples (the long job reports progress) and the team's tools, as served."""
    toolsets, _ = find_service().load_toolsets()
    tools = [one for toolset in toolsets for one in toolset.tools]
    assert warnings_of(*tools) == []


@pytest.mark.parametrize(
    ("schema", "bound"),
    [
        ({"type": "string"}, None),
        ({"type": "string", "maxLength": 10}, 62),
        ({"type": "string", "format": "date-time"}, 40),
        ({"enum": ["a", "bb"]}, 4),
        ({"type": "integer"}, 32),
        ({"type": "array", "items": {"type": "boolean"}}, None),
        ({"type": "array", "items": {"type": "boolean"}, "maxItems": 3}, 23),
        (  # a tuple, as pydantic writes tuple[bool, int]
            {
                "type": "array",
                "prefixItems": [{"type": "boolean"}, {"type": "integer"}],
                "minItems": 2,
                "maxItems": 2,
            },
            43,
        ),
        ({"type": "array", "prefixItems": [{"type": "boolean"}]}, None),  # more of any kind
        ({"type": "array", "prefixItems": [{"type": "boolean"}], "items": False}, 9),
        ({"type": ["string", "null"], "maxLength": 1}, 8),
        ({"type": ["string", "null"]}, None),
        ({"type": "object", "properties": {"a": {"type": "null"}}}, 14),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, None),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, None),
        ({"$ref": "#/$defs/Flag", "$defs": {"Flag": {"type": "boolean"}}}, 5),
        (  # a type that holds itself: any depth
            {
                "$ref": "#/$defs/Node",
                "$defs": {
                    "Node": {
                        "type": "object",
                        "properties": {
                            "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
                        },
                    }
                },
            },
            None,
        ),
        ({}, None),
    ],
)
def test_a_schema_bounds_the_json_it_accepts(schema: dict[str, Any], bound: int | None) -> None:
    assert json_size_bound(schema) == bound
