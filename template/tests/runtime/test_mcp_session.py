"""End to end over an in-memory MCP client session: what a client sees of the service."""

import json

import pytest
from mcp.types import TextContent

from mcp_runtime.sdk import MCPServer
from mcp_runtime.testing import connect

pytestmark = pytest.mark.anyio


async def test_every_tool_advertises_an_object_output_schema(server: MCPServer) -> None:
    async with connect(server) as session:
        listing = await session.list_tools()
    assert listing.tools
    for tool in listing.tools:
        assert tool.output_schema is not None, tool.name
        assert tool.output_schema["type"] == "object", tool.name


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


async def test_missing_argument_is_an_error_naming_it(server: MCPServer) -> None:
    async with connect(server) as session:
        result = await session.call_tool("hello", {})
    assert result.is_error is True
    assert result.structured_content is None
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == "Invalid arguments for tool 'hello': name: Field required"


async def test_unknown_tool_is_an_error(server: MCPServer) -> None:
    async with connect(server) as session:
        result = await session.call_tool("no_such_tool", {})
    assert result.is_error is True
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == "Unknown tool: no_such_tool"
