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
``DATA_TOOL``, the pattern of a data store that queues each request: it reserves the
file's size, submits the request once (a typed checkpoint), polls it, and streams the
file into kept data as it comes, with ``DATA_TOOL_TESTS`` and ``DATA_CALL_TEST``; it adds
``$request``, ``$store_class`` and ``$store``, the names of its checkpoint's type, its
example store's class and that store.
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
    "keep_data_async": "a tool that keeps data imports it from mcp_runtime",
    "reserve_data_async": "a tool that keeps data imports it from mcp_runtime",
    "asyncio": "a tool that keeps data imports it",
    "time": "a tool that keeps data imports it",
    "kept_data": "the tests of a tool that keeps data import it from mcp_runtime.testing",
    "using_settings": "the tests of a tool that keeps data import it from mcp_runtime",
}

# A toolset module with one tool.
TOOLSET = Template('''\
"""The ${toolset} toolset."""

${standard_imports}

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

# A tool that keeps data: the pattern of a data store that queues each request and then
# answers a file of any size. The tool reserves the file's size before the long work,
# submits the request once (a checkpoint), polls it, and streams the file into kept data
# as it comes, for its caller, linked from its result (docs/large-results.md).
DATA_TOOL = Template('''\
class ${request}(TypedDict):
    """What ${tool} checkpoints: the data store's id of the request it submitted."""

    request_id: str


# Example data store: replace it with your store's client.
class ${store_class}:
    """A stand-in for a data store that queues each request, then answers its result as a
    file read a chunk at a time, as archives of scientific data do."""

    SECONDS_IN_QUEUE = 0.1
    submitted = 0  # requests submitted so far, by this process

    def expected_size(self, dataset: str, rows: int) -> int:
        """The size of the file a request answers, as the store says before the work."""
        return 10 + rows * (len(dataset) + 20)

    async def submit(self, dataset: str, rows: int) -> str:
        """Queue a request; its id."""
        ${store_class}.submitted += 1
        return f"{dataset}:{rows}:{time.time() + self.SECONDS_IN_QUEUE:.3f}"

    async def waiting(self, request_id: str) -> float:
        """How many seconds the request still waits in the queue."""
        return max(0.0, float(request_id.rsplit(":", 1)[1]) - time.time())

    async def download(self, request_id: str) -> AsyncIterator[bytes]:
        """The file the request answers, a chunk at a time."""
        dataset, rows, _ = request_id.rsplit(":", 2)
        yield b"row,value\\n"
        for first in range(1, int(rows) + 1, 10_000):
            last = min(first + 10_000, int(rows) + 1)
            yield "".join(f"{row},{dataset}-{row}\\n" for row in range(first, last)).encode()


${store} = ${store_class}()


class ${result}(ToolResult):
    """Rows of a ${words} dataset: a file of any size, kept for the caller and linked."""

    request_id: NotRequired[Annotated[str, Field(max_length=200)]]
    rows: NotRequired[int]
    file: NotRequired[DataLink]


@tool_metadata(
    title="Retrieve ${words} rows as a file",
    read_only=True,
    destructive=False,
    idempotent=True,
    open_world=True,
${task})
@tool
async def ${tool}(
    dataset: Annotated[
        str, Field(max_length=100, description="The dataset to retrieve, such as 'example'.")
    ],
    rows: Annotated[int, Field(ge=1, le=10_000_000, description="How many rows to retrieve.")] = 10,
) -> ${result} | ToolError:
    """Retrieve rows of a ${words} dataset from the data store as a CSV file, of any size.

    The store queues each request: call it as a task when your client can. The file is
    kept for you and linked from the result: read it with resources/read, download it,
    or read it page by page with the tool read_data.
    """
    name = dataset.strip()
    if not name:
        return ToolError(
            error="invalid_argument",
            detail=\'The dataset is blank: name one, such as "example".\',
        )
    # A file larger than the service keeps is refused now, not after the wait in the queue.
    await reserve_data_async(${store}.expected_size(name, rows))
    # Submit once: a run that takes the task over polls the request already submitted.
    checkpoint: ${request} | None = last_checkpoint()
    if checkpoint is None:
        checkpoint = ${request}(request_id=await ${store}.submit(name, rows))
        save_checkpoint(checkpoint)
    request_id = checkpoint["request_id"]
    polls = 0
    while (waiting := await ${store}.waiting(request_id)) > 0:
        polls += 1
        report_progress(polls, None, f"waiting in the data store\'s queue ({waiting:.0f} s left)")
        await asyncio.sleep(min(waiting, 1.0))
    # Streamed into kept data as it comes: the service holds a few chunks of it at a time.
    file = await keep_data_async(
        ${store}.download(request_id), name=f"{name}.csv", media_type="text/csv"
    )
    return ${result}(
        message=f"{rows} rows of {name}, in {file[\'name\']} ({file[\'size\']} bytes).",
        request_id=request_id,
        rows=rows,
        file=file,
    )
''')

# The tests of a tool that keeps data: direct calls (the file, a blank dataset, a file too
# large refused before the work, a run that takes the task over), and a call over MCP.
DATA_TOOL_TESTS = Template('''\
"""The ${tool} tool of the ${toolset} toolset."""

import pytest
${imported}
from mcp_runtime import DataLimitError, ServiceSettings, using_settings
from mcp_runtime.testing import MCPServer, connect, kept_data, task_run
from ${module} import ${tool}, ${store}

CSV = "row,value\\n1,example-1\\n2,example-2\\n"


@pytest.mark.anyio
async def test_${tool}_keeps_the_file_and_links_it() -> None:
    with kept_data() as kept:
        result = await ${tool}.ainvoke(${arguments})
    assert kept.text(result["file"]) == CSV
    assert (result["rows"], result["file"]["name"]) == (2, "example.csv")


@pytest.mark.anyio
async def test_${tool}_blank_dataset_is_an_invalid_argument() -> None:
    assert (await ${tool}.ainvoke({"dataset": " "}))["error"] == "invalid_argument"


@pytest.mark.anyio
async def test_${tool}_too_large_a_file_is_refused_before_it_is_submitted() -> None:
    submitted = ${store}.submitted
    with (
        kept_data(),
        using_settings(ServiceSettings(max_data_bytes=1000)),
        pytest.raises(DataLimitError),
    ):
        await ${tool}.ainvoke({"dataset": "example", "rows": 1000})
    assert ${store}.submitted == submitted


@pytest.mark.anyio
async def test_${tool}_taken_over_polls_the_request_already_submitted() -> None:
    request_id = await ${store}.submit("example", 2)  # the request of an earlier run
    submitted = ${store}.submitted
    with kept_data() as kept:
        async with task_run({"request_id": request_id}) as run:
            result = await ${tool}.ainvoke(${arguments})
    assert (${store}.submitted, run.saved) == (submitted, [])
    assert result["request_id"] == request_id
    assert kept.text(result["file"]) == CSV


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
