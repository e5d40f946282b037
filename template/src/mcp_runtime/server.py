"""Build the FastMCP server: discover the toolsets and pass every tool through the gate."""

from collections.abc import Collection, Sequence
from typing import Any

from mcp.server.fastmcp import FastMCP

from mcp_runtime.fastmcp_output import ContractTool, to_fastmcp
from mcp_runtime.toolsets import Service, Toolset, find_service
from mcp_runtime.violations import ContractError, ContractViolation

__all__ = ["UnknownToolsetError", "build_server", "convert_toolsets", "create_server"]


class UnknownToolsetError(Exception):
    """A toolset was asked for by name, and the service has none of that name."""


def build_server(
    *,
    service: Service | None = None,
    toolsets: Collection[str] | None = None,
    **settings: Any,
) -> FastMCP:
    """The server of ``service`` (the installed one when None), serving ``toolsets`` (all).

    Raises :class:`ContractError` listing every violation of every tool, so a
    server whose tools break the contract never starts. ``settings`` go to FastMCP.
    """
    service = service or find_service()
    loaded, violations = service.load_toolsets()
    if toolsets is not None:
        known = {toolset.name for toolset in loaded} | {v.toolset for v in violations}
        unknown = sorted(set(toolsets) - known)
        if unknown:
            raise UnknownToolsetError(
                f"Unknown toolset {', '.join(unknown)}: the service has "
                f"{', '.join(sorted(n for n in known if n))}."
            )
        loaded = [toolset for toolset in loaded if toolset.name in toolsets]
        violations = [v for v in violations if v.toolset in toolsets]
    return create_server(service.name, loaded, violations=violations, **settings)


def create_server(
    name: str,
    toolsets: Sequence[Toolset],
    *,
    violations: Sequence[ContractViolation] = (),
    **settings: Any,
) -> FastMCP:
    """A FastMCP server named ``name`` serving ``toolsets``, once all pass the gate."""
    tools = convert_toolsets(toolsets, violations=violations)
    return FastMCP(name=name, tools=list(tools), **settings)


def convert_toolsets(
    toolsets: Sequence[Toolset], *, violations: Sequence[ContractViolation] = ()
) -> list[ContractTool]:
    """Every tool of ``toolsets`` converted; raises one error listing every violation."""
    found = list(violations)
    converted: list[ContractTool] = []
    owners: dict[str, str] = {}
    for toolset in toolsets:
        for tool in toolset.tools:
            if tool.name in owners:
                found.append(
                    ContractViolation(
                        tool.name,
                        toolset.name,
                        "tool-name",
                        f"the name {tool.name!r} is already used by toolset {owners[tool.name]!r}",
                        "give every tool a name of its own",
                    )
                )
                continue
            owners[tool.name] = toolset.name
            try:
                converted.append(to_fastmcp(tool, toolset=toolset.name))
            except ContractError as exc:
                found.extend(exc.violations)
    if found:
        raise ContractError(found)
    return converted
