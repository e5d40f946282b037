"""Build the MCP server: discover the toolsets and pass every tool through the gate."""

import logging
from collections.abc import Sequence

from mcp_runtime.auth.oauth import JwtVerifier
from mcp_runtime.config.settings import ServiceSettings, load_settings
from mcp_runtime.contract.gate import convert_toolsets, toolset_violations
from mcp_runtime.contract.served_tool import CallPolicy
from mcp_runtime.contract.toolsets import Service, Toolset, find_service
from mcp_runtime.contract.violations import ContractViolation
from mcp_runtime.execution.tool_threads import TOOL_THREADS
from mcp_runtime.sdk import AuthSettings, MCPServer, TransportSecuritySettings, without_sdk_spans

__all__ = [
    "UnknownToolsetError",
    "build_server",
    "create_server",
    "oauth_settings",
    "transport_security",
]

logger = logging.getLogger(__name__)


class UnknownToolsetError(Exception):
    """A toolset was asked for by name, and the service has none of that name."""


def build_server(
    *, service: Service | None = None, settings: ServiceSettings | None = None
) -> MCPServer:
    """The server of ``service`` (the installed one when None), as ``settings`` say.

    Serves the toolsets ``settings.toolsets`` names (all when empty). Raises
    :class:`ContractError` listing every violation of every tool, so a server whose
    tools break the contract never starts.
    """
    service = service or find_service()
    settings = settings or load_settings()
    loaded, broken = service.load_toolsets()
    if settings.toolsets:
        known = {toolset.name for toolset in loaded} | {toolset.name for toolset in broken}
        unknown = sorted(set(settings.toolsets) - known)
        if unknown:
            raise UnknownToolsetError(
                f"bad setting MCP_TOOLSETS: no toolset {', '.join(unknown)}; the service has "
                f"{', '.join(sorted(known))}."
            )
        loaded = [toolset for toolset in loaded if toolset.name in settings.toolsets]
        broken = [toolset for toolset in broken if toolset.name in settings.toolsets]
    violations = toolset_violations(broken)
    server = create_server(service.name, loaded, violations=violations, settings=settings)
    tools = sum(len(toolset.tools) for toolset in loaded)
    logger.debug("startup gate: the %d tools of %s keep the contract", tools, service.name)
    return server


def create_server(
    name: str,
    toolsets: Sequence[Toolset],
    *,
    violations: Sequence[ContractViolation] = (),
    settings: ServiceSettings | None = None,
) -> MCPServer:
    """An MCP server named ``name`` serving ``toolsets``, once all pass the gate.

    How it is served over HTTP (its address, limits and security) is the app's:
    :func:`mcp_runtime.serving.http_app.http_app`.
    """
    settings = settings or ServiceSettings()
    policy = CallPolicy(
        timeout=settings.call_timeout,
        mask_errors=settings.mask_errors,
        max_depth=settings.max_json_depth,
    )
    tools = convert_toolsets(toolsets, violations=violations, policy=policy)
    TOOL_THREADS.resize(settings.tool_threads, settings.tool_threads_per_tool)
    verifier = JwtVerifier.from_settings(settings) if settings.oauth_ready else None
    server = MCPServer(
        name,
        tools=list(tools),
        auth=oauth_settings(settings) if verifier is not None else None,
        token_verifier=verifier,
        subscriptions=False,
    )
    return without_sdk_spans(server)


def oauth_settings(settings: ServiceSettings) -> AuthSettings:
    """The SDK's resource-server settings: its 401s, 403s and protected-resource metadata.

    The verifier checks each token's audience itself, so the SDK does not again.
    """
    return AuthSettings(
        issuer_url=settings.oauth_issuer,
        resource_server_url=settings.resource_url,
        required_scopes=list(settings.oauth_scopes) or None,
        validate_token_resource=False,
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
