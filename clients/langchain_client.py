"""LangChain's MCP clients against a rendered service over streamable HTTP.

Loads the served tools back as LangChain tools, calls them as an agent would
(with a tool call), and checks that the structured payload comes back as the
tool message's artifact. Two clients, each in an environment of its own:

- ``adapters``: langchain-mcp-adapters' ``MultiServerMCPClient`` (discontinued, on the
  MCP SDK's 1.x line: a client of the 2025 revisions), in the reference environment
  (``reference/requirements.txt``);
- ``langchain``: ``langchain.mcp``'s ``MCPAdapter`` (``langchain[mcp]``, on fastmcp and
  the SDK's 2.x line).

    MCP_CLIENT_CHECK=JSON python langchain_client.py adapters|langchain URL

``MCP_CLIENT_CHECK`` (``check_service.py`` sets it) holds the credential to send,
``headers``, and what whoami answers with it, ``account`` (null: whoami is not called).
Exit status 0 when every check passes; otherwise 1, each failure naming the tool.
"""

import asyncio
import json
import os
import sys
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException

failures: list[str] = []
CLIENTS = {"adapters": "langchain-mcp-adapters client", "langchain": "langchain.mcp client"}
label = "langchain client"


def report(tool: str, what: str, problem: str | None) -> None:
    if problem is None:
        print(f"ok   {label}: {tool}: {what}")
    else:
        failures.append(f"{label}: {tool}: {what}: {problem}")
        print(f"FAIL {label}: {tool}: {what}: {problem}")


async def load_tools(client: str, url: str, headers: dict[str, str]) -> list[BaseTool]:
    """The service's tools as LangChain tools, loaded by ``client``."""
    if client == "adapters":
        from langchain_mcp_adapters.client import MultiServerMCPClient

        servers: Any = {"service": {"transport": "streamable_http", "url": url, "headers": headers}}
        return await MultiServerMCPClient(servers).get_tools()
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport
    from langchain.mcp import MCPAdapter

    adapter = MCPAdapter(Client(StreamableHttpTransport(url, headers=headers)))
    return await adapter.list_tools()


async def call(tool: BaseTool, arguments: dict[str, Any]) -> ToolMessage:
    call = {"type": "tool_call", "id": "call-1", "name": tool.name, "args": arguments}
    message = await tool.ainvoke(call)
    assert isinstance(message, ToolMessage)
    return message


async def expect(tool: BaseTool, what: str, arguments: dict[str, Any], payload: Any) -> None:
    try:
        message = await call(tool, arguments)
    except Exception as exc:  # the check reports any failure, whatever its kind
        report(tool.name, what, f"{type(exc).__name__}: {exc}")
        return
    artifact = message.artifact or {}
    structured = artifact.get("structured_content") if isinstance(artifact, dict) else None
    if structured != payload:
        report(tool.name, what, f"artifact {artifact!r} does not carry {payload!r}")
    elif (
        json.loads(
            str(
                message.content[0]["text"] if isinstance(message.content, list) else message.content
            )
        )
        != payload
    ):
        report(tool.name, what, f"the text content {message.content!r} is not the payload")
    else:
        report(tool.name, what, None)


async def expect_error(tool: BaseTool, what: str, arguments: dict[str, Any], text: str) -> None:
    """An ``isError`` answer reaches the agent as an error message carrying ``text``."""
    try:
        message = await call(tool, arguments)
    except ToolException as exc:
        problem = None if text in str(exc) else f"the error {str(exc)!r} lacks {text!r}"
        report(tool.name, what, problem)
        return
    if message.status != "error" or text not in str(message.content):
        report(tool.name, what, f"not an error carrying {text!r}: {message!r}")
    else:
        report(tool.name, what, None)


async def expect_account(tool: BaseTool, account: str) -> None:
    """whoami, called with the credential, answers the credential's account."""
    try:
        message = await call(tool, {})
    except Exception as exc:  # the check reports any failure, whatever its kind
        report(tool.name, "with the credential", f"{type(exc).__name__}: {exc}")
        return
    artifact = message.artifact if isinstance(message.artifact, dict) else {}
    got = (artifact.get("structured_content") or {}).get("account")
    problem = None if got == account else f"the account is {got!r}, not {account!r}"
    report(tool.name, "with the credential", problem)


async def main(client: str, url: str) -> int:
    global label
    label = CLIENTS[client]
    setup = json.loads(os.environ["MCP_CLIENT_CHECK"])
    tools = {tool.name: tool for tool in await load_tools(client, url, setup["headers"])}
    report(
        "tools/list",
        "loads hello, prepare_report, read_data, retrieve_records and whoami",
        None
        if set(tools) == {"hello", "prepare_report", "read_data", "retrieve_records", "whoami"}
        else f"got {sorted(tools)}",
    )
    greeting = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
    await expect(tools["hello"], "a valid result", {"name": "Ada"}, greeting)
    await expect_error(tools["hello"], "a returned ToolError", {"name": " "}, "invalid_argument")
    if setup["account"] is not None:
        await expect_account(tools["whoami"], setup["account"])
    if failures:
        print(f"{len(failures)} check(s) failed:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    print(f"{label}: {len(tools)} tools, every check passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1], sys.argv[2])))
