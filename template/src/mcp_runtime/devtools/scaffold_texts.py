"""The code that ``scripts/new-toolset`` and ``scripts/new-tool`` write.

Each text is a ``string.Template`` whose output is lint-clean as written, its
imports sorted whatever the service's package is called (``mcp_runtime`` has an
isort section of its own, before the package's). The placeholders:

- ``$tool``: the tool's name, a Python identifier (``weather_data``);
- ``$result``: its result class (``WeatherDataResult``);
- ``$words``: its name in words (``weather data``);
- ``$toolset``: the toolset's name (``weather-data``);
- ``$module``: the toolset's module (``svc.toolsets.weather_data``);
- ``$tool_code``: a filled-in ``TOOL``, in ``TOOLSET``;
- ``$task``: for a task tool, its ``task=...`` line of ``@tool_metadata`` (else empty);
- ``$call_test``: the test of a call over MCP: ``PLAIN_CALL_TEST`` (a tool that may be
  called without a task), or ``TASK_ONLY_TEST``, and ``$imported`` what it imports;
- ``$listed``: in ``PLAIN_CALL_TEST``, the check of a task tool's listed task support;
- ``$arguments``: in the call tests, the arguments of the call.

A task tool (``--task``) is ``TASK_TOOL``, a job over several keys that checkpoints each
record it fetches, with ``TASK_TOOL_TESTS``. A tool that keeps data (``--keeps-data``) is
``DATA_TOOL``, which keeps a file of any size for its caller and links it, with
``DATA_TOOL_TESTS`` and ``DATA_CALL_TEST``.
"""

from string import Template

__all__ = [
    "DATA_CALL_TEST",
    "DATA_TOOL",
    "DATA_TOOL_TESTS",
    "IMPORTED",
    "PLAIN_CALL_TEST",
    "TASK_ONLY_TEST",
    "TASK_TOOL",
    "TASK_TOOL_TESTS",
    "TOOL",
    "TOOLSET",
    "TOOL_TESTS",
]

# Lowercase names the texts import; a tool of the same name would hide them.
IMPORTED = {
    "tool": "the toolset module imports it from langchain_core.tools",
    "pytest": "the tool's tests import it",
    "connect": "the tool's tests import it from mcp_runtime.testing",
    "tool_metadata": "the toolset module imports it from mcp_runtime",
    "last_checkpoint": "a task tool's module imports it from mcp_runtime",
    "save_checkpoint": "a task tool's module imports it from mcp_runtime",
    "report_progress": "a task tool's module imports it from mcp_runtime",
    "task_run": "a task tool's tests import it from mcp_runtime.testing",
    "keep_data": "a tool that keeps data imports it from mcp_runtime",
    "kept_data": "the tests of a tool that keeps data import it from mcp_runtime.testing",
}

# A toolset module with one tool.
TOOLSET = Template('''\
"""The ${toolset} toolset."""

from typing import Annotated, NotRequired

from langchain_core.tools import tool
from pydantic import Field

${runtime_import}

${tool_code}

TOOLS = [${tool}]
''')

# One tool: its example data, its result class and the tool function, with its metadata
# (it only reads local data: read-only, idempotent, closed world).
TOOL = Template('''\
# Example data: replace with the real source (a database, an API client, ...).
${tool}_records: dict[str, str] = {"example": "The example ${words} record."}


class ${result}(ToolResult):
    """One ${words} record, found by its key."""

    key: NotRequired[str]
    record: NotRequired[str]


@tool_metadata(
    title="Fetch one ${words} record",
    read_only=True,
    destructive=False,
    idempotent=True,
    open_world=False,
${task})
@tool
def ${tool}(
    key: Annotated[str, Field(description="The key of the record to fetch, such as 'example'.")],
) -> ${result} | ToolError:
    """Fetch one ${words} record by its key.

    Use it when the user asks for a ${words} record by name. An unknown key
    answers a `not_found` error that lists the keys there are.
    """
    wanted = key.strip().lower()
    record = ${tool}_records.get(wanted)
    if record is None:
        known = ", ".join(sorted(${tool}_records))
        return ToolError(
            error="not_found",
            detail=f"No ${words} record has the key {key!r}: use one of {known}.",
        )
    return ${result}(message=f"{wanted}: {record}", key=wanted, record=record)
''')

# The tests of one tool: a direct call, and a call through an MCP client session.
TOOL_TESTS = Template('''\
"""The ${tool} tool of the ${toolset} toolset."""

import pytest
${imported}
from mcp_runtime.testing import MCPServer, connect
from ${module} import ${tool}

EXPECTED = {
    "message": "example: The example ${words} record.",
    "key": "example",
    "record": "The example ${words} record.",
}


def test_${tool}_finds_a_record() -> None:
    assert ${tool}.invoke({"key": "Example "}) == EXPECTED


def test_${tool}_unknown_key_is_not_found() -> None:
    assert ${tool}.invoke({"key": "missing"}) == {
        "error": "not_found",
        "detail": "No ${words} record has the key 'missing': use one of example.",
    }


${call_test}''')

# The test of a call over MCP, for a tool that may be called without a task.
PLAIN_CALL_TEST = Template("""\
@pytest.mark.anyio
async def test_${tool}_over_mcp_matches_its_schema(server: MCPServer) -> None:
    async with connect(server) as session:
        listing = await session.list_tools()
        result = await session.call_tool("${tool}", ${arguments})
    entry = next(tool for tool in listing.tools if tool.name == "${tool}")
    assert entry.output_schema is not None
${listed}    Draft202012Validator(entry.output_schema).validate(result.structured_content)
    assert result.is_error is False
    assert result.structured_content == EXPECTED
""")

# The test of a call over MCP, for a tool that runs only as a task.
TASK_ONLY_TEST = Template("""\
@pytest.mark.anyio
async def test_${tool}_runs_only_as_a_task(server: MCPServer) -> None:
    async with connect(server) as session:
        listing = await session.list_tools()
        with pytest.raises(MCPError, match="runs only as a task"):
            await session.call_tool("${tool}", ${arguments})
    entry = next(tool for tool in listing.tools if tool.name == "${tool}")
    assert entry.execution is not None
    assert entry.execution.task_support == "required"
""")

# A task tool: a job over several keys, which checkpoints each record it fetches, so that
# a run that takes the task over (its process stopped) fetches only those after them.
TASK_TOOL = Template('''\
# Example data: replace with the real source (a data store's client, ...).
${tool}_records: dict[str, str] = {"example": "The example ${words} record."}


class ${result}(ToolResult):
    """${words} records, found by their keys, in the order asked."""

    # Bounded, so that its result fits the answer of a call that reports progress
    # (docs/long-calls.md, "Progress and large results").
    records: NotRequired[
        Annotated[list[Annotated[str, Field(max_length=500)]], Field(max_length=100)]
    ]


@tool_metadata(
    title="Fetch ${words} records",
    read_only=True,
    destructive=False,
    idempotent=True,
    open_world=False,
${task})
@tool
def ${tool}(
    keys: Annotated[
        list[str],
        Field(
            min_length=1,
            max_length=100,
            description="The keys of the records to fetch, such as ['example'].",
        ),
    ],
) -> ${result} | ToolError:
    """Fetch ${words} records by their keys, one after the other: a long job, which a
    client may run as a task.

    Use it when the user asks for ${words} records by name. An unknown key answers a
    `not_found` error that lists the keys there are.
    """
    # The records an earlier run of this task fetched, when this run takes it over (its
    # process stopped): what a checkpoint covers runs once, what follows it may run twice.
    fetched: list[str] = (last_checkpoint() or {}).get("records", [])
    for key in keys[len(fetched) :]:
        record = ${tool}_records.get(key.strip().lower())
        if record is None:
            known = ", ".join(sorted(${tool}_records))
            return ToolError(
                error="not_found",
                detail=f"No ${words} record has the key {key!r}: use one of {known}.",
            )
        fetched.append(record)
        save_checkpoint({"records": fetched})
        report_progress(len(fetched), len(keys), f"{len(fetched)} of {len(keys)} records fetched")
    return ${result}(message=f"{len(fetched)} ${words} records.", records=fetched)
''')

# The tests of a task tool: direct calls, a run that takes the task over, a call over MCP.
TASK_TOOL_TESTS = Template('''\
"""The ${tool} tool of the ${toolset} toolset."""

import pytest
${imported}
from mcp_runtime.testing import MCPServer, connect, task_run
from ${module} import ${tool}

RECORD = "The example ${words} record."
EXPECTED = {"message": "2 ${words} records.", "records": [RECORD, RECORD]}


def test_${tool}_fetches_each_record() -> None:
    assert ${tool}.invoke({"keys": ["example", "Example "]}) == EXPECTED


def test_${tool}_unknown_key_is_not_found() -> None:
    assert ${tool}.invoke({"keys": ["missing"]}) == {
        "error": "not_found",
        "detail": "No ${words} record has the key 'missing': use one of example.",
    }


@pytest.mark.anyio
async def test_${tool}_taken_over_fetches_only_the_records_after_its_checkpoint() -> None:
    async with task_run({"records": [RECORD]}) as run:
        result = await ${tool}.ainvoke({"keys": ["example", "example"]})
    assert result == EXPECTED
    assert run.saved == [{"records": [RECORD, RECORD]}]


${call_test}''')

# A tool that keeps data: a file of any size, kept for its caller and linked from its
# result (docs/large-results.md).
DATA_TOOL = Template('''\
# Example data: replace with the real source (an archive's client, a query, ...).
def ${tool}_csv(dataset: str, rows: int) -> str:
    """The rows of ``dataset`` the source answers, as CSV."""
    return "row,value\\n" + "".join(f"{row},{dataset}-{row}\\n" for row in range(1, rows + 1))


class ${result}(ToolResult):
    """Rows of a ${words} dataset: a file of any size, kept for the caller and linked."""

    rows: NotRequired[int]
    file: NotRequired[DataLink]


@tool_metadata(
    title="Extract ${words} rows as a file",
    read_only=True,
    destructive=False,
    idempotent=True,
    open_world=False,
${task})
@tool
def ${tool}(
    dataset: Annotated[
        str, Field(max_length=100, description="The dataset to extract, such as 'example'.")
    ],
    rows: Annotated[int, Field(ge=1, le=10_000_000, description="How many rows to extract.")] = 10,
) -> ${result} | ToolError:
    """Extract rows of a ${words} dataset as a CSV file, of any size.

    The file is kept for you and linked from the result: read it with resources/read,
    download it, or read it page by page with the tool read_data.
    """
    name = dataset.strip()
    if not name:
        return ToolError(
            error="invalid_argument",
            detail='The dataset is blank: name one, such as "example".',
        )
    file = keep_data(${tool}_csv(name, rows), name=f"{name}.csv", media_type="text/csv")
    return ${result}(message=f"{rows} rows of {name}, in {file['name']}.", rows=rows, file=file)
''')

# The tests of a tool that keeps data: a direct call, and a call over MCP (or its refusal).
DATA_TOOL_TESTS = Template('''\
"""The ${tool} tool of the ${toolset} toolset."""

import pytest
${imported}
from mcp_runtime.testing import MCPServer, connect, kept_data
from ${module} import ${tool}

CSV = "row,value\\n1,example-1\\n2,example-2\\n"


def test_${tool}_keeps_the_file_and_links_it() -> None:
    with kept_data() as kept:
        result = ${tool}.invoke(${arguments})
    assert kept.text(result["file"]) == CSV
    assert (result["rows"], result["file"]["name"]) == (2, "example.csv")


def test_${tool}_blank_dataset_is_an_invalid_argument() -> None:
    assert ${tool}.invoke({"dataset": " "})["error"] == "invalid_argument"


${call_test}''')

# The test of a call over MCP of a tool that keeps data: the link read back.
DATA_CALL_TEST = Template("""\
@pytest.mark.anyio
async def test_${tool}_over_mcp_links_the_file_it_keeps(server: MCPServer) -> None:
    async with connect(server) as session:
        listing = await session.list_tools()
        result = await session.call_tool("${tool}", ${arguments})
        read = await session.read_resource(result.structured_content["file"]["uri"])
    entry = next(tool for tool in listing.tools if tool.name == "${tool}")
    assert entry.output_schema is not None
${listed}    Draft202012Validator(entry.output_schema).validate(result.structured_content)
    assert result.is_error is False
    [contents] = read.contents
    assert isinstance(contents, TextResourceContents)
    assert contents.text == CSV
""")
