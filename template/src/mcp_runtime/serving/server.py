"""Build the MCP server: discover the toolsets and pass every tool through the gate."""

import logging
import os
from collections.abc import Sequence

from typing_extensions import deprecated

from mcp_runtime.auth.oauth import JwtVerifier
from mcp_runtime.config.settings import (
    ServiceSettings,
    SettingsError,
    load_settings,
    retired_settings,
)
from mcp_runtime.contract.gate import convert_toolsets, to_mcp_tool, toolset_violations
from mcp_runtime.contract.result_size import streamed_size_warnings
from mcp_runtime.contract.served_tool import CallPolicy, ContractTool
from mcp_runtime.contract.toolsets import Service, Toolset, find_service
from mcp_runtime.contract.violations import ContractViolation
from mcp_runtime.data.places import open_data_store
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.sdk.server import (
    AuthSettings,
    ContractServer,
    MCPServer,
    TransportSecuritySettings,
    advertise_tasks,
    server_info_stamp,
    without_sdk_spans,
)
from mcp_runtime.sdk.tools import served_tools
from mcp_runtime.serving.data_reads import (
    DATA_TOOL,
    data_tool,
    declares_data_link,
    read_kept_data,
)
from mcp_runtime.serving.invalid_params import ParamsErrors
from mcp_runtime.tasks.engine import EngineSettings, TaskEngine
from mcp_runtime.tasks.protocol import TaskMethods, TaskRouting
from mcp_runtime.tasks.sealing import Seal, new_key

__all__ = [
    "UnknownToolsetError",
    "build_server",
    "create_server",
    "oauth_settings",
    "require_shared_tasks",
    "state_of",
    "task_tool_names",
    "transport_security",
]

logger = logging.getLogger(__name__)


class UnknownToolsetError(Exception):
    """A toolset was asked for by name, and the service has none of that name."""


def build_server(
    toolsets: Sequence[Toolset] | None = None,
    *,
    name: str | None = None,
    version: str = "",
    service: Service | None = None,
    settings: ServiceSettings | None = None,
    state: ServiceState | None = None,
) -> MCPServer:
    """The MCP server of ``toolsets``, named ``name`` at ``version``; without them, of
    ``service`` (the installed one when None) at its distribution's version, serving the
    toolsets ``settings.toolsets`` names (all when empty). Its ``serverInfo`` names it, in
    both eras. Its calls run with ``state`` (a new one, as ``settings`` say, when None);
    ``settings`` are the environment's when None.

    Every tool goes through the gate: a tool the service defines but leaves out of its
    toolset's ``TOOLS`` is named in a warning, as is a tool whose answer may stream a
    result larger than a stream carries (:mod:`~mcp_runtime.contract.result_size`), and
    :class:`ContractError` lists every
    violation of every tool, so a server whose tools break the contract never starts.
    How it is served over HTTP (its address, limits and security) is the app's:
    :func:`mcp_runtime.serving.http_app.build_app`.
    """
    settings = settings or load_settings()
    violations: list[ContractViolation] = []
    if toolsets is None:
        service = service or find_service()
        toolsets, violations = _service_toolsets(service, settings)
        name = name or service.name
        version = version or service.version
    elif name is None:
        raise TypeError("build_server(toolsets) needs the server's name: name=...")
    policy = CallPolicy(
        timeout=settings.call_timeout,
        task_timeout=settings.task_timeout,
        mask_errors=settings.mask_errors,
        max_depth=settings.max_json_depth,
        max_result_bytes=settings.max_result_bytes,
        max_streamed_result_bytes=settings.max_streamed_result_bytes,
    )
    state = state if state is not None else ServiceState(settings)
    tools = convert_toolsets(toolsets, violations=violations, policy=policy, state=state)
    for warning in streamed_size_warnings(tools, settings.max_streamed_result_bytes):
        logger.warning("%s", warning)
    for warning in retired_settings(os.environ):
        logger.warning("%s", warning)
    verifier = JwtVerifier.from_settings(settings) if settings.oauth_ready else None
    task_tools = [tool for tool in tools if tool.task is not None]
    engine = None
    if task_tools:
        seal = task_seal(settings, name, task_tools)
        engine = state.tasks if isinstance(state.tasks, TaskEngine) else None
        engine = engine or TaskEngine(engine_settings(settings, name), seal)
        engine.register(task_tools)
        state.tasks = engine
        state.calls.on_draining(engine.stop_taking)
    own_key = engine.seal.keys[0] if engine is not None else new_key()
    store = state.data or open_data_store(settings, name, settings.task_key_list, own_key)
    state.data = store
    store.in_use = any(declares_data_link(tool.output_schema or {}) for tool in tools)
    if serves_data_tool(settings, tools):
        reader = to_mcp_tool(data_tool(store, settings), policy=policy, state=state)
        reader.runtime_owned = True
        tools = [*tools, reader]
    server = ContractServer(
        name,
        version=version,
        tools=list(tools),
        auth=oauth_settings(settings) if verifier is not None else None,
        token_verifier=verifier,
        subscriptions=False,
        extensions=[TaskMethods(engine)] if engine is not None else None,
    )
    read_kept_data(server, store, settings)
    server.middleware.insert(0, ParamsErrors())
    if engine is not None:
        server.middleware.append(TaskRouting(engine, task_tools, server_info_stamp(server)))
        advertise_tasks(server)
    logger.debug("startup gate: the %d tools of %s keep the contract", len(tools), name)
    return without_sdk_spans(server)


def serves_data_tool(settings: ServiceSettings, tools: Sequence[ContractTool]) -> bool:
    """Whether the service serves ``read_data`` (``MCP_DATA_TOOL``; ``auto``: when one of
    ``tools`` declares a ``DataLink`` in its result), unless a tool of its own has the name."""
    if any(tool.name == DATA_TOOL for tool in tools):
        if settings.data_tool == "true":
            logger.warning(
                "the service has a tool named %s: the runtime's own (MCP_DATA_TOOL) is not served",
                DATA_TOOL,
            )
        return False
    if settings.data_tool == "auto":
        return any(declares_data_link(tool.output_schema or {}) for tool in tools)
    return settings.data_tool == "true"


def engine_settings(settings: ServiceSettings, service: str) -> EngineSettings:
    """The task engine's settings for ``service``, from the service's ``settings``."""
    return EngineSettings(
        url=settings.tasks_url,
        service=service,
        ttl=settings.task_ttl,
        max_ttl=settings.task_max_ttl,
        timeout=settings.task_timeout,
        max_per_caller=settings.max_tasks_per_caller,
        poll_interval=settings.task_poll_interval,
        lease=settings.task_lease,
        max_resumes=settings.task_max_resumes,
    )


def task_seal(settings: ServiceSettings, service: str, tools: Sequence[ContractTool]) -> Seal:
    """The seal of what the task ``tools`` keep: of ``MCP_TASK_KEYS``; one of this
    process's own for tasks kept in its memory. Raises :class:`SettingsError` for tasks
    kept on Redis without a key."""
    if settings.task_key_list:
        return Seal(settings.task_key_list)
    if settings.tasks_in_memory:
        return Seal.for_this_process()
    names = ", ".join(tool.name for tool in tools)
    raise SettingsError(
        f"bad setting MCP_TASK_KEYS: the task tools ({names}) keep their tasks on Redis "
        "(MCP_TASKS_URL), sealed with the service's key, and MCP_TASK_KEYS is not set: set it "
        f"to the key `uv run {service} task-key` prints (in Kubernetes, from the Secret that "
        "deploy/kubernetes names; docs/long-calls.md says more)"
    )


def _service_toolsets(
    service: Service, settings: ServiceSettings
) -> tuple[list[Toolset], list[ContractViolation]]:
    """The toolsets of ``service`` that ``settings`` serve, and the violations of those that
    cannot serve; warns of each tool a toolset leaves out of its ``TOOLS``."""
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
    for toolset in loaded:
        for warning in toolset.warnings():
            logger.warning("%s", warning)
    return loaded, toolset_violations(broken)


@deprecated(
    "create_server(name, toolsets) is now build_server(toolsets, name=name); the old name "
    "will be removed in a later release"
)
def create_server(
    name: str,
    toolsets: Sequence[Toolset],
    *,
    settings: ServiceSettings | None = None,
    state: ServiceState | None = None,
) -> MCPServer:
    """The former way to build the server of ``toolsets``: :func:`build_server`."""
    return build_server(toolsets, name=name, settings=settings, state=state)


def task_tool_names(server: MCPServer) -> list[str]:
    """The names of the task tools ``server`` serves."""
    return [
        tool.name
        for tool in served_tools(server)
        if isinstance(tool, ContractTool) and tool.task is not None
    ]


def require_shared_tasks(server: MCPServer, settings: ServiceSettings) -> None:
    """Raises :class:`SettingsError` when ``settings`` serve several worker processes and
    keep the task tools' tasks in memory, where only the process that ran one reads it."""
    tasked = task_tool_names(server)
    if settings.workers > 1 and settings.tasks_in_memory and tasked:
        raise SettingsError(
            f"bad setting MCP_WORKERS: the task tools ({', '.join(tasked)}) keep their tasks "
            "in memory (MCP_TASKS_URL=memory://), where only the process that ran a task can "
            f"read it; to serve {settings.workers} worker processes, keep tasks on Redis "
            "(MCP_TASKS_URL=redis://host:6379/0), or serve MCP_WORKERS=1"
        )


def state_of(server: MCPServer, settings: ServiceSettings | None = None) -> ServiceState:
    """The state the tools of ``server`` run with (a new one, as ``settings`` say, if it
    serves none of the runtime's tools).

    Raises ``ValueError`` if its tools were converted with different states: one process
    drains, and one readiness probe reports, one state.
    """
    states = {
        id(tool.state): tool.state
        for tool in served_tools(server)
        if isinstance(tool, ContractTool)
    }
    if len(states) > 1:
        raise ValueError(
            f"the tools of server {server.name!r} run with {len(states)} different states: "
            "build it with build_server, or convert its tools with one "
            "ServiceState (to_mcp_tool(tool, state=state))"
        )
    return next(iter(states.values())) if states else ServiceState(settings)


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
        hosts += ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:*", "localhost:*", "[::1]:*"]
        origins += ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        origins += ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )
