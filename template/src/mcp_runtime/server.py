"""Build the FastMCP server: discover the toolsets and pass every tool through the gate."""

from collections.abc import Sequence

from mcp.server.fastmcp import FastMCP
from mcp.server.transport_security import TransportSecuritySettings

from mcp_runtime.fastmcp_output import CallPolicy, ContractTool, to_fastmcp
from mcp_runtime.settings import ServiceSettings, load_settings
from mcp_runtime.tool_threads import TOOL_THREADS
from mcp_runtime.toolsets import Service, Toolset, find_service
from mcp_runtime.violations import ContractError, ContractViolation

__all__ = [
    "UnknownToolsetError",
    "build_server",
    "convert_toolsets",
    "create_server",
    "transport_security",
]


class UnknownToolsetError(Exception):
    """A toolset was asked for by name, and the service has none of that name."""


def build_server(
    *, service: Service | None = None, settings: ServiceSettings | None = None
) -> FastMCP:
    """The server of ``service`` (the installed one when None), as ``settings`` say.

    Serves the toolsets ``settings.toolsets`` names (all when empty). Raises
    :class:`ContractError` listing every violation of every tool, so a server whose
    tools break the contract never starts.
    """
    service = service or find_service()
    settings = settings or load_settings()
    loaded, violations = service.load_toolsets()
    if settings.toolsets:
        known = {toolset.name for toolset in loaded} | {v.toolset for v in violations}
        unknown = sorted(set(settings.toolsets) - known)
        if unknown:
            raise UnknownToolsetError(
                f"bad setting MCP_TOOLSETS: no toolset {', '.join(unknown)}; the service has "
                f"{', '.join(sorted(n for n in known if n))}."
            )
        loaded = [toolset for toolset in loaded if toolset.name in settings.toolsets]
        violations = [v for v in violations if v.toolset in settings.toolsets]
    return create_server(service.name, loaded, violations=violations, settings=settings)


def create_server(
    name: str,
    toolsets: Sequence[Toolset],
    *,
    violations: Sequence[ContractViolation] = (),
    settings: ServiceSettings | None = None,
) -> FastMCP:
    """A FastMCP server named ``name`` serving ``toolsets``, once all pass the gate."""
    settings = settings or ServiceSettings()
    policy = CallPolicy(
        timeout=settings.call_timeout,
        mask_errors=settings.mask_errors,
        max_depth=settings.max_json_depth,
    )
    tools = convert_toolsets(toolsets, violations=violations, policy=policy)
    TOOL_THREADS.resize(settings.tool_threads)
    return FastMCP(
        name=name,
        tools=list(tools),
        host=settings.host,
        port=settings.port,
        stateless_http=settings.stateless,
        max_request_body_size=settings.max_request_bytes,
        transport_security=transport_security(settings),
    )


def transport_security(settings: ServiceSettings) -> TransportSecuritySettings:
    """DNS-rebinding protection: Host and Origin checks, localhost always allowed on loopback.

    ``MCP_ALLOWED_HOSTS=*`` turns the checks off, on purpose.
    """
    if "*" in settings.allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = list(settings.allowed_hosts)
    origins = list(settings.allowed_origins)
    if settings.loopback:
        hosts += ["127.0.0.1:*", "localhost:*", "[::1]:*"]
        origins += ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def convert_toolsets(
    toolsets: Sequence[Toolset],
    *,
    violations: Sequence[ContractViolation] = (),
    policy: CallPolicy | None = None,
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
                converted.append(to_fastmcp(tool, toolset=toolset.name, policy=policy))
            except ContractError as exc:
                found.extend(exc.violations)
    if found:
        raise ContractError(found)
    return converted
