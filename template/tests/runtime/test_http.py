"""End to end over streamable HTTP, against the service started by its command line."""

import json

import pytest
from mcp.types import TextContent

from mcp_runtime.testing import connect_http, serve_http

pytestmark = pytest.mark.anyio


async def test_tools_are_listed_and_called_over_http() -> None:
    with serve_http() as url:
        async with connect_http(url) as session:
            listing = await session.list_tools()
            result = await session.call_tool("hello", {"name": "Ada"})
            blank = await session.call_tool("hello", {"name": ""})
    hello = next(tool for tool in listing.tools if tool.name == "hello")
    assert hello.outputSchema is not None
    assert hello.outputSchema["type"] == "object"
    expected = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
    assert result.isError is False
    assert result.structuredContent == expected
    [block] = result.content
    assert isinstance(block, TextContent)
    assert json.loads(block.text) == expected
    assert blank.isError is True
    assert blank.structuredContent is not None
    assert blank.structuredContent["error"] == "invalid_argument"
