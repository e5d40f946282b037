"""End to end over stdio, against the service started by its command line."""

import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio


async def test_tools_are_listed_and_called_over_stdio() -> None:
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_runtime", "serve", "--transport", "stdio"]
    )
    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listing = await session.list_tools()
        result = await session.call_tool("hello", {"name": "Ada"})
    assert all(tool.output_schema is not None for tool in listing.tools)
    assert result.is_error is False
    assert result.structured_content == {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
