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
    assert hello.output_schema is not None
    assert hello.output_schema["type"] == "object"
    expected = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
    assert result.is_error is False
    assert result.structured_content == expected
    [block] = result.content
    assert isinstance(block, TextContent)
    assert json.loads(block.text) == expected
    assert blank.is_error is True
    assert blank.structured_content is not None
    assert blank.structured_content["error"] == "invalid_argument"
