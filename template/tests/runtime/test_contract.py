"""The startup gate, run on every tool of every toolset: CI fails where serving would."""

import pytest
from langchain_core.tools import BaseTool

from mcp_runtime import build_server, to_fastmcp
from mcp_runtime.toolsets import Toolset, find_service

SERVICE = find_service()
TOOLSETS, LOAD_VIOLATIONS = SERVICE.load_toolsets()


def test_every_toolset_loads() -> None:
    assert [str(violation) for violation in LOAD_VIOLATIONS] == []
    assert TOOLSETS, "the service has no toolset"


@pytest.mark.parametrize(
    ("toolset", "tool"),
    [(toolset, tool) for toolset in TOOLSETS for tool in toolset.tools],
    ids=lambda item: item.name,
)
def test_tool_keeps_the_contract(toolset: Toolset, tool: BaseTool) -> None:
    converted = to_fastmcp(tool, toolset=toolset.name)
    assert converted.output_schema is not None
    assert converted.output_schema["type"] == "object"


def test_server_builds_through_the_gate() -> None:
    server = build_server()
    served = {tool.name for tool in server._tool_manager.list_tools()}
    assert served == {tool.name for toolset in TOOLSETS for tool in toolset.tools}
