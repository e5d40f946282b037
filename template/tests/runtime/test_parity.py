"""A tool answers over MCP as it answers through ``ainvoke`` in-process (in a LangGraph
agent, say): the same validators, bounds, defaults, injected config and failures."""

import functools
import inspect
import json
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field, field_validator

from mcp_runtime import ToolResult, to_mcp_tool
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.serving.server import build_server
from mcp_runtime.testing import connect

pytestmark = pytest.mark.anyio


class NameResult(ToolResult):
    """A name, as the tool saw it."""

    name: NotRequired[str]
    count: NotRequired[int]


class ShoutArguments(BaseModel):
    name: str = Field(description="Who to shout at.")

    @field_validator("name")
    @classmethod
    def upper(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the name is blank")
        return value.upper()


@tool(args_schema=ShoutArguments)
def shout(name: str) -> NameResult:
    """Shout a name."""
    return NameResult(message=name, name=name)


@tool
def bounded(count: Annotated[int, Field(ge=1, le=10)]) -> NameResult:
    """Count up to ten."""
    return NameResult(message=str(count), count=count)


class LimitArguments(BaseModel):
    count: int = Field(ge=1, le=10, description="How many, at most ten.")


@tool(args_schema=LimitArguments)
def limited(count: int) -> NameResult:
    """Count up to ten, with the bound in an args_schema."""
    return NameResult(message=str(count), count=count)


@tool
def configured(name: str, config: RunnableConfig) -> NameResult:
    """Read the run's configuration."""
    tags = ",".join(config.get("tags") or [])
    return NameResult(message=f"{name} tags={tags}", name=name)


@tool
def defaults(name: str = "Ada", count: int = 2) -> NameResult:
    """Repeat a name."""
    return NameResult(message=" ".join([name] * count), name=name, count=count)


@tool
async def awaited(name: str) -> NameResult:
    """Answer from a coroutine."""
    return NameResult(message=f"awaited {name}", name=name)


@tool
def refusing(name: str) -> NameResult:
    """Refuse some names."""
    if name == "Mallory":
        raise ToolException("Mallory may not be greeted.")
    return NameResult(message=name, name=name)


class Nested(BaseModel):
    first: str
    last: str = "Lovelace"


@tool
def nested(person: Nested) -> NameResult:
    """Take a model argument."""
    return NameResult(message=f"{person.first} {person.last}", name=person.first)


class Subclassed(BaseTool):
    name: str = "subclassed"
    description: str = "A tool written as a BaseTool subclass."
    args_schema: type[BaseModel] = ShoutArguments

    def _run(self, name: str) -> NameResult:
        return NameResult(message=f"subclassed {name}", name=name)


def handled_error(name: str) -> NameResult:
    """Fail with a handled error."""
    raise ToolException(f"{name} is not known")


handled = StructuredTool.from_function(handled_error, handle_tool_error=True)

CORPUS: list[tuple[BaseTool, dict[str, Any]]] = [
    (shout, {"name": "ada"}),
    (shout, {"name": "  "}),
    (shout, {}),
    (bounded, {"count": 10}),
    (bounded, {"count": 11}),
    (bounded, {"count": 0}),
    (limited, {"count": 10}),
    (limited, {"count": 11}),
    (configured, {"name": "Ada"}),
    (defaults, {}),
    (defaults, {"count": 3}),
    (awaited, {"name": "Ada"}),
    (refusing, {"name": "Ada"}),
    (refusing, {"name": "Mallory"}),
    (nested, {"person": {"first": "Ada"}}),
    (nested, {"person": {"last": "Byron"}}),
    (Subclassed(), {"name": "ada"}),
    (handled, {"name": "Zed"}),
]


async def in_process(tool: BaseTool, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """(failed, value) of ``ainvoke``, as a LangGraph agent would call the tool."""
    try:
        return False, await tool.ainvoke(arguments)
    except Exception as exc:
        return True, exc


def over_mcp(result: CallToolResult) -> tuple[bool, Any]:
    return result.is_error, result.structured_content


@pytest.mark.parametrize(
    ("tool", "arguments"),
    CORPUS,
    ids=[f"{tool.name}-{i}" for i, (tool, _) in enumerate(CORPUS)],
)
async def test_a_tool_answers_over_mcp_as_in_process(
    tool: BaseTool, arguments: dict[str, Any]
) -> None:
    server = build_server([Toolset("parity", (tool,))], name="parity")
    async with connect(server) as session:
        answer = await session.call_tool(tool.name, arguments)
    failed, value = await in_process(tool, arguments)
    if tool is handled:  # its error handler turns the exception into a string answer
        assert value == "Zed is not known"
        assert answer.is_error is True
        return
    assert over_mcp(answer)[0] is failed
    if not failed:
        assert answer.structured_content == value


async def test_validators_of_the_args_schema_run_over_mcp() -> None:
    server = build_server([Toolset("parity", (shout, bounded))], name="parity")
    async with connect(server) as session:
        shouted = await session.call_tool("shout", {"name": "ada"})
        blank = await session.call_tool("shout", {"name": " "})
        eleven = await session.call_tool("bounded", {"count": 11})
    assert shouted.structured_content == {"message": "ADA", "name": "ADA"}
    assert blank.is_error is True
    assert blank.content[0].text == (  # type: ignore[union-attr]
        "Invalid arguments for tool 'shout': name: Value error, the name is blank"
    )
    assert eleven.content[0].text == (  # type: ignore[union-attr]
        "Invalid arguments for tool 'bounded': count: Input should be less than or equal to 10"
    )


async def test_a_runnable_config_parameter_is_injected_and_never_advertised() -> None:
    server = build_server([Toolset("parity", (configured,))], name="parity")
    async with connect(server) as session:
        listing = await session.list_tools()
        answer = await session.call_tool("configured", {"name": "Ada"})
    assert listing.tools[0].input_schema["properties"].keys() == {"name"}
    assert answer.structured_content == {"message": "Ada tags=", "name": "Ada"}


class Shapes(BaseModel):
    """Arguments of many shapes."""

    query: str = Field(description="What to look for.", min_length=1, max_length=50)
    tags: list[str] = Field(default_factory=list, title="Tag list", examples=[["a"]])
    mode: Literal["fast", "full"] = "fast"
    limit: int | None = Field(default=None, alias="max", json_schema_extra={"x-unit": "rows"})
    person: Nested | None = None


@tool(args_schema=Shapes)
def shaped(query: str, tags: list[str], mode: str, limit: int | None, person: Any) -> NameResult:
    """Look things up, with arguments of many shapes."""
    return NameResult(message=query)


@tool(parse_docstring=True)
def documented(city: str, days: int = 3) -> NameResult:
    """Forecast the weather.

    Args:
        city: The city to forecast.
        days: How many days ahead.
    """
    return NameResult(message=city)


class Documented(BaseModel):
    """A model whose own docstring is not the tool's description."""

    city: str = Field(description="The city.")
    when: list[Nested] = Field(default_factory=list)


def look_up(city: str, when: list[Nested]) -> NameResult:
    """Look a city up."""
    return NameResult(message=city)


SCHEMA_CORPUS = [
    *{id(tool): tool for tool, _ in CORPUS}.values(),
    shaped,
    documented,
    StructuredTool.from_function(
        look_up,
        name="renamed",
        description="  A description\n    written with an indent.",
        args_schema=Documented,
    ),
    StructuredTool.from_function(look_up, name="renamed_plain", description="Again."),
]


# langchain-mcp-adapters' to_fastmcp (0.3.2, on mcp 1.x: it is not installable beside
# mcp 2) serving SCHEMA_CORPUS in FastMCP: its tools/list entries, as clients saw them.
# `nox -s reference_listings` records them again, after a change to the corpus.
REFERENCE = Path(__file__).with_name("parity_reference.json")

# What the upstream conversion does not serve: the output schema and the tool's metadata.
NOT_UPSTREAM = {"outputSchema", "title", "annotations", "_meta"}


@functools.cache
def reference() -> dict[str, dict[str, Any]]:
    """The reference's entries, by tool name."""
    return {entry["name"]: entry for entry in json.loads(REFERENCE.read_text())["tools"]}


def upstream(name: str) -> dict[str, Any]:
    """The reference's entry for the tool ``name``."""
    assert name in reference(), f"no reference listing of {name}: run nox -s reference_listings"
    return reference()[name]


def wire(entry: Any) -> dict[str, Any]:
    """A ``tools/list`` entry as JSON on the wire."""
    dumped: dict[str, Any] = entry.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


@pytest.mark.parametrize("tool", SCHEMA_CORPUS, ids=lambda tool: tool.name)
def test_a_tool_is_listed_as_langchain_mcp_adapters_lists_it(tool: BaseTool) -> None:
    ours, theirs = to_mcp_tool(tool), upstream(tool.name)
    assert ours.parameters == theirs["inputSchema"]
    assert ours.description == inspect.cleandoc(theirs["description"])


async def test_clients_list_every_tool_as_the_upstream_conversion_serves_it() -> None:
    server = build_server([Toolset("parity", tuple(SCHEMA_CORPUS))], name="parity")
    async with connect(server) as session:
        tools = (await session.list_tools()).tools
    listed = {
        entry.name: {key: value for key, value in wire(entry).items() if key not in NOT_UPSTREAM}
        | {"description": inspect.cleandoc(entry.description or "")}
        for entry in tools
    }
    recorded = {
        name: entry | {"description": inspect.cleandoc(entry.get("description", ""))}
        for name, entry in reference().items()
    }
    assert listed == recorded
    assert len(listed) == len(SCHEMA_CORPUS)


async def test_every_tool_is_listed_with_a_title_and_every_hint_upstream_leaves_out() -> None:
    server = build_server([Toolset("parity", (shout, handled))], name="parity")
    async with connect(server) as session:
        tools = (await session.list_tools()).tools
    assert [(entry.title, entry.annotations) for entry in tools] == [
        (
            title,
            ToolAnnotations(
                readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True
            ),
        )
        for title in ("Shout", "Handled error")
    ]
    assert not {"title", "annotations", "_meta"} & set(upstream("shout"))
