"""Parity: each tool answers over MCP, in both protocol eras, as ``await tool.ainvoke(args)``
answers in-process.

The toolset is imported into the test process too; for every case, the in-process
result is the MCP answer's ``structuredContent`` (``isError`` when it is a
ToolError), and an in-process exception is an ``isError`` answer over MCP (with a
ToolException's message as written).
"""

import json
from typing import Any

import pytest
from harness import Server, client_call, error_text, toolset
from langchain_core.tools import BaseTool, ToolException

pytestmark = pytest.mark.anyio

CASES: list[tuple[str, dict[str, Any]]] = [
    ("shout", {"name": "ada"}),
    ("shout", {}),
    ("shout", {"name": 7}),
    ("shout", {"name": "ada", "volume": 11}),
    ("bounded", {"count": 10}),
    ("bounded", {"count": 11}),
    ("bounded", {"count": "3"}),
    ("bounded", {"count": 2.5}),
    ("configured", {"name": "Ada"}),
    ("repeat", {}),
    ("repeat", {"times": 3}),
    ("repeat", {"text": "x", "separator": "-"}),
    ("repeat", {"separator": None}),
    ("echo", {"text": "hi"}),
    ("echo", {"text": " "}),
    ("refuse", {}),
]


def tool_named(name: str) -> BaseTool:
    [found] = [tool for tool in toolset().TOOLS if tool.name == name]
    assert isinstance(found, BaseTool)
    return found


@pytest.mark.parametrize(("name", "arguments"), CASES, ids=[f"{n}-{a}" for n, a in CASES])
async def test_mcp_answers_as_ainvoke_does(
    server: Server, name: str, arguments: dict[str, Any], era: str
) -> None:
    answer = await client_call(server, name, arguments, era=era)
    raised: Exception | None = None
    try:
        value = await tool_named(name).ainvoke(dict(arguments))
    except Exception as exc:
        raised = exc
    if isinstance(raised, ToolException):
        assert error_text(answer) == str(raised)
    elif raised is not None:
        assert answer["isError"] is True, f"in-process {raised!r}; over MCP {answer}"
        assert "structuredContent" not in answer, answer
    else:
        expected = json.loads(json.dumps(value))
        assert answer.get("structuredContent") == expected, answer
        assert answer["isError"] is ("error" in expected), answer
    server.assert_alive()


async def test_shout_receives_the_validated_name(server: Server) -> None:
    answer = await client_call(server, "shout", {"name": "ada"})
    assert answer["structuredContent"] == {"message": "Hey, ADA!", "name": "ADA"}


def test_a_run_configuration_is_not_an_argument(server: Server) -> None:
    schema = server.tools()["configured"]["inputSchema"]
    assert "config" not in schema.get("properties", {}), schema
    assert "config" not in schema.get("required", []), schema


@pytest.mark.parametrize(("name", "arguments"), CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_asking_for_progress_changes_nothing_of_the_answer_but_may_stream_it(
    server: Server, name: str, arguments: dict[str, Any], era: str
) -> None:
    """A call answered one JSON body, and the same call asking for progress (which none
    of these tools reports, so its answer is JSON too): the same JSON-RPC message."""
    plain = server.call(name, arguments, era=era)
    asked = server.call(name, arguments, era=era, progress=True)
    assert plain.content_type == asked.content_type == "application/json"
    assert plain.message == asked.message
