"""The startup gate, run on every tool of every toolset: CI fails where serving would."""

from pathlib import Path

import pytest
from langchain_core.tools import BaseTool

from mcp_runtime import build_server, to_mcp_tool
from mcp_runtime.contract.gate import RULES, toolset_violations
from mcp_runtime.contract.toolsets import Toolset, find_service
from mcp_runtime.sdk import served_tools

SERVICE = find_service()
TOOLSETS, BROKEN = SERVICE.load_toolsets()


def test_every_toolset_loads() -> None:
    assert [str(violation) for violation in toolset_violations(BROKEN)] == []
    assert TOOLSETS, "the service has no toolset"


@pytest.mark.parametrize(
    ("toolset", "tool"),
    [(toolset, tool) for toolset in TOOLSETS for tool in toolset.tools],
    ids=lambda item: item.name,
)
def test_tool_keeps_the_contract(toolset: Toolset, tool: BaseTool) -> None:
    converted = to_mcp_tool(tool, toolset=toolset.name)
    assert converted.output_schema is not None
    assert converted.output_schema["type"] == "object"


def test_server_builds_through_the_gate() -> None:
    server = build_server()
    own = {tool.name for tool in served_tools(server) if not getattr(tool, "runtime_owned", False)}
    assert own == {tool.name for toolset in TOOLSETS for tool in toolset.tools}


def test_the_docs_list_every_rule_of_the_gate() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "typed-returns.md").read_text()
    section = page.split("## The rules the gate enforces", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = {}
    for row in rows:
        rule, requirement = row.strip("|").split(" | ", 1)
        listed[rule.strip(" `")] = requirement.strip().replace("\\|", "|")
    assert listed == RULES
