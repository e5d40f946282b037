"""End to end over an in-memory MCP client session: what a client sees of the service."""

import json

import pytest
from langchain_core.tools import tool
from mcp.types import TextContent

from mcp_runtime import ToolResult, build_server
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.sdk import MCPServer
from mcp_runtime.testing import connect

pytestmark = pytest.mark.anyio


async def test_every_tool_advertises_an_object_output_schema(server: MCPServer) -> None:
    async with connect(server) as session:
        listing = await session.list_tools()
    assert listing.tools
    for listed in listing.tools:
        assert listed.output_schema is not None, listed.name
        assert listed.output_schema["type"] == "object", listed.name


async def test_hello_is_listed_with_its_schema(server: MCPServer) -> None:
    async with connect(server) as session:
        listing = await session.list_tools()
    hello = next(tool for tool in listing.tools if tool.name == "hello")
    assert hello.input_schema["required"] == ["name"]
    assert hello.output_schema is not None
    result_arm, error_arm = hello.output_schema["oneOf"]
    assert result_arm["title"] == "HelloResult"
    assert result_arm["required"] == ["message"]
    assert set(result_arm["properties"]) == {"message", "greeting"}
    assert error_arm["title"] == "ToolError"


async def test_call_answers_structured_content_and_the_same_text(server: MCPServer) -> None:
    async with connect(server) as session:
        result = await session.call_tool("hello", {"name": "Ada"})
    expected = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
    assert result.is_error is False
    assert result.structured_content == expected
    [block] = result.content
    assert isinstance(block, TextContent)
    assert json.loads(block.text) == expected


async def test_tool_error_is_an_error_with_structured_content(server: MCPServer) -> None:
    async with connect(server) as session:
        result = await session.call_tool("hello", {"name": "  "})
    assert result.is_error is True
    assert result.structured_content == {
        "error": "invalid_argument",
        "detail": 'The name is blank: pass the name of the person to greet, such as "Ada".',
    }


async def test_missing_argument_is_a_tool_error_naming_it(server: MCPServer) -> None:
    """hello has the ``ToolError`` arm: an agent that reads only the text block reads the
    same ``invalid_argument`` error as the ``structuredContent``."""
    async with connect(server) as session:
        result = await session.call_tool("hello", {})
    expected = {
        "error": "invalid_argument",
        "detail": "Invalid arguments for tool 'hello': name: Field required",
    }
    assert result.is_error is True
    assert result.structured_content == expected
    [block] = result.content
    assert isinstance(block, TextContent)
    assert json.loads(block.text) == expected


@tool
def plain(name: str) -> ToolResult:
    """Answer with the name; failures are raised, so the result has no ToolError arm."""
    return ToolResult(message=name)


async def test_a_tool_without_the_tool_error_arm_answers_bad_arguments_as_text() -> None:
    server = build_server([Toolset("plain", (plain,))], name="plain")
    async with connect(server) as session:
        result = await session.call_tool("plain", {"name": 3})
    assert (result.is_error, result.structured_content) == (True, None)
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == "Invalid arguments for tool 'plain': name: Input should be a valid string"


async def test_unknown_tool_is_an_error(server: MCPServer) -> None:
    async with connect(server) as session:
        result = await session.call_tool("no_such_tool", {})
    assert result.is_error is True
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == "Unknown tool: no_such_tool"
