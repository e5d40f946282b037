"""Every use of the MCP SDK's server, in one place.

The rest of the runtime reaches the SDK's server through these names only. The SDK's
2.x line (``MCPServer``) hands each call's request context to the tool it calls; the
served tool enters :func:`serving` with it, and the functions here read the request
being served from there: its headers, its JSON-RPC id, its ``_meta``, its protocol
revision and the access token the SDK verified. Protocol types (``mcp.types``) and
the client side are public and stable, and are imported where they are used.

The SDK's log lines that would carry request values are known here too, by logger
and wording (:data:`SDK_LOG_REWRITES`), for the runtime's log filter.
"""

import json
import logging
import re
import warnings
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, get_args

from mcp import types as mcp_types
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.server.mcpserver.exceptions import ToolError as SDKToolError
from mcp.server.mcpserver.tools import Tool as SDKTool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.server.request_state import RequestStateBoundary
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    X_MCP_HEADER_KEY,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp.types import (
    INTERNAL_ERROR,
    CallToolResult,
    ErrorData,
    RequestId,
    RequestParams,
    RequestParamsMeta,
    TextContent,
    ToolExecution,
)
from mcp_types import methods as mcp_methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from starlette.authentication import AuthCredentials
from starlette.requests import HTTPConnection, Request
from starlette.types import Receive, Scope, Send

__all__ = [
    "MODERN_REVISIONS",
    "SDK_LOG_REWRITES",
    "AccessToken",
    "AuthSettings",
    "BearerCheck",
    "CallNext",
    "ContractServer",
    "DataReader",
    "DirectCall",
    "DirectCalls",
    "Extension",
    "HandlerResult",
    "LogRewrite",
    "MCPError",
    "MCPServer",
    "MethodBinding",
    "ReadResourceContents",
    "ResourceError",
    "ResourceNotFoundError",
    "SDKTool",
    "SDKToolError",
    "ServerRequestContext",
    "TaskContext",
    "TokenVerifier",
    "TransportSecurityMiddleware",
    "TransportSecuritySettings",
    "UrlElicitationRequiredError",
    "advertise_tasks",
    "answering_json",
    "answers_chosen_per_request",
    "answers_json",
    "bearer_check",
    "call_result_for",
    "check_accept_headers",
    "check_params",
    "context_token",
    "first_arg",
    "func_metadata",
    "handshake_era",
    "logged_by_sdk_session",
    "pre_parse_json",
    "protocol_version",
    "request_headers",
    "request_id",
    "request_meta",
    "served_tool_names",
    "served_tools",
    "server_info_stamp",
    "serving",
    "task_context",
    "verified_token",
    "without_sdk_spans",
]

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    # The server's name before the SDK's 2.x line, which a service's tests may still
    # annotate with; it warns when used (``__getattr__``).
    FastMCP = MCPServer


def __getattr__(name: str) -> object:
    if name == "FastMCP":
        warnings.warn(
            "mcp_runtime.sdk.FastMCP is the MCP SDK 1.x name of the server: use MCPServer "
            "(from mcp_runtime.testing in tests); the old name will be removed in a later "
            "release",
            DeprecationWarning,
            stacklevel=2,
        )
        return MCPServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_request: ContextVar[ServerRequestContext[Any, Any] | None] = ContextVar(
    "mcp_runtime_request", default=None
)


@contextmanager
def serving(context: Any) -> Iterator[None]:
    """Within the block, the request ``context`` (the SDK's tool context, or None) serves."""
    try:
        request = None if context is None else context.request_context
    except ValueError:  # a tool context outside a request
        request = None
    token = _request.set(request)
    try:
        yield
    finally:
        _request.reset(token)


def handshake_era(scope: Scope) -> bool:
    """Whether an HTTP request speaks a revision of the ``initialize`` era (2025-11-25 and
    before), as the SDK routes it: by its ``MCP-Protocol-Version`` header, absent on an
    ``initialize``. Later revisions are stateless: each request carries its revision."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"mcp-protocol-version":
            return value.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS
    return True


# How the SDK answers each POST ----------------------------------------------------------

_json_answers: ContextVar[bool] = ContextVar("mcp_runtime_json_answers", default=False)


class _PerRequestAnswers(StreamableHTTPSessionManager):
    """The SDK's session manager, answering each request as :func:`answering_json` says.

    The manager reads ``json_response`` for each request it serves (to build a stateless
    request's transport, and for each request of 2026-07-28); here that read is the
    request's own choice, made by the front.
    """

    @property
    def json_response(self) -> bool:
        return _json_answers.get()

    @json_response.setter
    def json_response(self, value: bool) -> None:
        """The constructor's choice is replaced by each request's."""


def answers_chosen_per_request(server: MCPServer) -> None:
    """Make ``server``'s streamable HTTP app answer each request one JSON body or an SSE
    stream as the request's :func:`answering_json` chose. Call after building the app."""
    manager = server.session_manager
    manager.__dict__.pop("json_response", None)
    manager.__class__ = _PerRequestAnswers


def answers_json() -> bool:
    """Whether the request being served is answered one ``application/json`` body."""
    return _json_answers.get()


@contextmanager
def answering_json(json: bool) -> Iterator[None]:
    """Within the block, the request served is answered one ``application/json`` body
    (``json``), or as an SSE stream; the SDK answers a stateful session's requests of the
    ``initialize`` era the way the session was opened."""
    token = _json_answers.set(json)
    try:
        yield
    finally:
        _json_answers.reset(token)


def func_metadata(arguments: type[BaseModel], output_schema: dict[str, Any]) -> FuncMetadata:
    """What the SDK keeps about a tool's function: its arguments model and output schema.

    Built without validation: ``arguments`` is the tool's own model, already checked.
    """
    # The SDK types it as its own argument base; it reads only the model's fields.
    return FuncMetadata.model_construct(
        arg_model=arguments,  # type: ignore[arg-type]
        output_schema=output_schema,
    )


def json_text_keys(arguments: type[BaseModel]) -> frozenset[str]:
    """The argument keys whose string value the SDK may decode as JSON text: each field's
    name and alias, mapped as the SDK maps them, where the field is not annotated ``str``."""
    fields: dict[str, FieldInfo] = {}
    for name, field in arguments.model_fields.items():
        fields[name] = field
        if field.alias:
            fields[field.alias] = field
    return frozenset(key for key, field in fields.items() if field.annotation is not str)


def pre_parse_json(
    metadata: FuncMetadata, arguments: dict[str, Any], json_keys: frozenset[str]
) -> dict[str, Any]:
    """Arguments as the SDK reads them: JSON text sent for a list or object is decoded.

    ``json_keys`` is :func:`json_text_keys` of the arguments' model: with no string
    under any of them, there is nothing to decode, and ``arguments`` comes back as is.
    """
    if json_keys and any(isinstance(arguments.get(key), str) for key in json_keys):
        return metadata.pre_parse_json(arguments)
    return arguments


def request_headers() -> Mapping[str, str] | None:
    """The HTTP headers of the request being served; None outside an HTTP request."""
    request = getattr(_request.get(), "request", None)
    headers = getattr(request, "headers", None)
    return headers if isinstance(headers, Mapping) else None


def request_id() -> RequestId | None:
    """The JSON-RPC id of the request being served; None outside a request."""
    context = _request.get()
    return None if context is None else context.request_id


def request_meta() -> RequestParamsMeta | None:
    """The ``_meta`` of the request being served; None when it has none, or outside one."""
    context = _request.get()
    return None if context is None else context.meta


def protocol_version() -> str | None:
    """The protocol revision of the request being served; None outside a request."""
    context = _request.get()
    return None if context is None else context.protocol_version


def without_sdk_spans(server: MCPServer) -> MCPServer:
    """``server`` without the SDK's own span per message: the runtime traces each call once."""
    server.middleware[:] = [
        middleware
        for middleware in server.middleware
        if not isinstance(middleware, OpenTelemetryMiddleware)
    ]
    return server


DataReader = Callable[[str, ServerRequestContext[Any, Any]], Awaitable[ReadResourceContents | None]]
"""Reads a resource the runtime keeps (its URI, the request's context): its contents, None
when the URI is not one of its own; raises ``ResourceNotFoundError`` or ``ResourceError``."""


class ContractServer(MCPServer):
    """The SDK's server, whose ``tools/list`` names each task tool's ``execution.taskSupport``
    (its tool's ``task``: the 2025-11-25 field; the 2026-07-28 schema drops it), and whose
    ``resources/read`` answers the runtime's own resources (:meth:`read_kept_with`) with
    their media type before the SDK's registered ones."""

    _kept_reader: DataReader | None = None
    _kept_templates: tuple[mcp_types.ResourceTemplate, ...] = ()

    def read_kept_with(self, reader: DataReader, template: mcp_types.ResourceTemplate) -> None:
        """Answer ``resources/read`` with ``reader`` first; list ``template``."""
        self._kept_reader = reader
        self._kept_templates = (template,)

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        reader = self._kept_reader
        if reader is not None and context is not None:
            try:
                request = context.request_context
            except ValueError:  # read outside a request: the SDK's resources only
                request = None
            contents = None if request is None else await reader(str(uri), request)
            if contents is not None:
                return [contents]
        return await super().read_resource(uri, context)

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        return [*await super().list_resource_templates(), *self._kept_templates]

    async def list_tools(self) -> list[mcp_types.Tool]:
        listed = await super().list_tools()
        support = {
            tool.name: task
            for tool in served_tools(self)
            if (task := getattr(tool, "task", None)) is not None
        }
        if not support:
            return listed
        return [
            tool.model_copy(update={"execution": ToolExecution(task_support=support[tool.name])})
            if tool.name in support
            else tool
            for tool in listed
        ]


def served_tool_names(server: MCPServer) -> list[str]:
    """The names of the tools ``server`` serves, in the order it lists them."""
    return [tool.name for tool in served_tools(server)]


def served_tools(server: MCPServer) -> list[SDKTool]:
    """The tools ``server`` serves, in the order it lists them."""
    return server._tool_manager.list_tools()


def verified_token() -> AccessToken | None:
    """The access token the SDK verified for the HTTP request being served; else None."""
    request = getattr(_request.get(), "request", None)
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, Mapping) else None
    return user.access_token if isinstance(user, AuthenticatedUser) else None


class BearerCheck:
    """The SDK's bearer-token check of a request, answering its own 401 when it fails.

    The front runs it before it reads a request's body, so a request without a valid
    token costs no body parse; the SDK checks the token again, as it always does.
    """

    def __init__(self, verifier: TokenVerifier, auth: AuthSettings) -> None:
        self.backend = BearerAuthBackend(verifier)
        url = auth.resource_server_url
        metadata_url = build_resource_metadata_url(url) if url is not None else None
        self.refusal = RequireAuthMiddleware(None, [], metadata_url)

    async def check(self, scope: Scope, receive: Receive, send: Send) -> AccessToken | None:
        """The request's verified bearer token; None once the SDK's 401 is sent."""
        authenticated = await self.backend.authenticate(HTTPConnection(scope))
        if authenticated is not None:
            _, user = authenticated
            if isinstance(user, AuthenticatedUser):
                return user.access_token
        await self.refusal({"type": "http"}, receive, send)
        return None


def bearer_check(server: MCPServer) -> BearerCheck | None:
    """The bearer-token check of ``server``; None when it does not verify tokens."""
    verifier = server._token_verifier
    auth = server.settings.auth
    return BearerCheck(verifier, auth) if verifier is not None and auth is not None else None


# 2026-07-28 tools/call, answered without the SDK's request machinery --------------------

Caller = Callable[[dict[str, Any], Any], Awaitable[CallToolResult]]
"""Runs one call of a tool: its arguments and the request's context, to its result."""


@dataclass(frozen=True)
class DirectRequest:
    """What the runtime reads of a request's context: the HTTP request, the JSON-RPC id,
    the ``_meta`` (as the SDK parses it), the protocol revision."""

    request: Request
    request_id: RequestId
    meta: RequestParamsMeta | None
    protocol_version: str


@dataclass(frozen=True)
class DirectContext:
    """The context a tool is called with on the direct path."""

    request_context: DirectRequest


@dataclass(frozen=True)
class DirectCall:
    """A ``tools/call`` the direct path answers: its tool's caller, its id, its arguments,
    its revision and its context."""

    call: Caller
    request_id: RequestId
    arguments: dict[str, Any]
    version: str
    context: DirectContext


class DirectCalls:
    """Answers a 2026-07-28 ``tools/call`` of one of ``callers`` (the tools it may serve
    this way, by name, less those whose input schema declares ``Mcp-Param`` headers) as
    the SDK's server answers it, without its request machinery; ``passed_by`` names the
    server middleware that has nothing to do for their calls.

    A request is taken only when the SDK would serve it to the tool: its Host, Origin and
    content type pass the SDK's checks, it accepts JSON, its envelope and routing headers
    pass the SDK's classification and its params the revision's schema, and the server
    has no middleware of its own; anything else goes to the SDK as it came, so every
    refusal is the SDK's own. (The SDK's own middleware of a server, which seals the
    ``requestState`` of multi-round-trip results, has nothing to do for a call without
    one whose result is complete, as every result of the gate's tools is.) The answer is
    what the SDK's would be, held to it by a parity test: the tool's result as the
    revision's schema shapes it, with ``resultType`` and the ``serverInfo`` stamp; an
    error the tool's run raises is the SDK's error for it.
    """

    def __init__(
        self,
        server: MCPServer,
        callers: Mapping[str, SDKTool],
        passed_by: tuple[type, ...] = (),
    ) -> None:
        self.server = server
        # The server middleware with nothing to do for these callers' calls.
        self.passed_by = (RequestStateBoundary, *passed_by)
        # A tool whose input schema declares Mcp-Param headers is the SDK's, which checks
        # them. The gate's input schemas carry no such key today (a parity case sends one
        # unchecked): this keeps the two alike should one ever pass through.
        self.callers: dict[str, Caller] = {
            name: tool.run
            for name, tool in callers.items()
            if X_MCP_HEADER_KEY not in json.dumps(tool.parameters)
        }
        auth = server.settings.auth
        self.verifies = server._token_verifier is not None and auth is not None
        self.required_scopes = list(auth.required_scopes or []) if auth is not None else []
        manager = server.session_manager
        self.security = TransportSecurityMiddleware(manager.security_settings)
        info = server._lowlevel_server.server_info
        self.stamp = info.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def take(
        self, scope: Scope, message: object, access: AccessToken | None
    ) -> DirectCall | None:
        """The call ``message`` (a parsed POST of ``scope``) makes, if this path answers it.

        When the server verifies tokens, ``access`` is the request's, verified by the
        front; a request without one, or whose token lacks a scope every call needs, is
        the SDK's to refuse.
        """
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return None
        if self.verifies and (
            access is None or any(need not in access.scopes for need in self.required_scopes)
        ):
            return None
        if (
            message.keys() - {"jsonrpc", "id", "method", "params"}
            or message.get("jsonrpc") != "2.0"
        ):
            return None
        request_id, params = message.get("id"), message.get("params")
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return None
        if not isinstance(params, dict) or params.keys() - {"name", "arguments", "_meta"}:
            return None
        if any(not isinstance(part, self.passed_by) for part in self.server.middleware):
            return None  # the server's own middleware runs in the SDK's path
        call = self.callers.get(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments", {})
        if call is None or not isinstance(arguments, dict):
            return None
        request = Request(scope)
        if await self.security.validate_request(request, is_post=True) is not None:
            return None
        if not check_accept_headers(request)[0]:
            return None
        pairs = [
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]
        ]
        if find_duplicated_routing_header(pairs) is not None:
            return None
        # Keyed by lowercase name, the first of each kept, as the SDK's mapping reads them.
        headers = {name.lower(): value for name, value in reversed(pairs)}
        verdict = classify_inbound_request(message, headers=headers)
        if isinstance(verdict, InboundLadderRejection):
            return None
        version = verdict.protocol_version
        try:
            mcp_methods.validate_client_request("tools/call", version, params)
            meta = RequestParams.model_validate(params, by_name=False).meta
        except (KeyError, ValueError, ValidationError):
            return None
        if access is not None and self.verifies:
            # As the SDK's authentication sets them, for the tool to read its caller.
            scope["user"] = AuthenticatedUser(access)
            scope["auth"] = AuthCredentials(access.scopes)
        context = DirectContext(DirectRequest(request, request_id, meta, version))
        return DirectCall(call, request_id, arguments, version, context)

    async def answer(self, call: DirectCall) -> tuple[int, bytes]:
        """Run ``call``; its HTTP status and JSON-RPC answer, as the SDK's would be."""
        try:
            result = await call.call(call.arguments, call.context)
        except MCPError as exc:
            return self._error(call, modern_error_data(exc))
        except Exception as exc:  # the tool's run answers every failure itself: a bug
            logger.exception("a tool's run raised an unexpected exception")
            result = CallToolResult(
                content=[TextContent(type="text", text=str(exc))], is_error=True
            )
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            dumped = mcp_methods.serialize_server_result("tools/call", call.version, dumped)
        except ValidationError:
            logger.exception("a tool's result does not fit its revision's schema")
            invalid = ErrorData(code=INTERNAL_ERROR, message="Handler returned an invalid result")
            return self._error(call, invalid)
        if dumped.get("resultType") is None:
            dumped["resultType"] = "complete"
        meta = dumped.get("_meta")
        if meta is None:
            dumped["_meta"] = {SERVER_INFO: dict(self.stamp)}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO) is None:
            dumped["_meta"] = {**meta, SERVER_INFO: dict(self.stamp)}
        body = {"jsonrpc": "2.0", "id": call.request_id, "result": dumped}
        return 200, json.dumps(body, separators=(",", ":")).encode()

    @staticmethod
    def _error(call: DirectCall, error: ErrorData) -> tuple[int, bytes]:
        data = error.model_dump(mode="json", by_alias=True, exclude_none=True)
        body = {"jsonrpc": "2.0", "id": call.request_id, "error": data}
        return ERROR_CODE_HTTP_STATUS.get(error.code, 200), json.dumps(
            body, separators=(",", ":")
        ).encode()


SERVER_INFO = "io.modelcontextprotocol/serverInfo"
MODERN_REVISIONS = frozenset(MODERN_PROTOCOL_VERSIONS)


# Tasks: a call that outlives its request ------------------------------------------------


class TaskContext:
    """The context a task's tool is called with: no HTTP request (a task's run reads its
    caller and declared headers from the task), with the task's id as its JSON-RPC id and
    progress token; a progress report sets the task's status message (:attr:`progress`
    is the task engine's sink for it)."""

    def __init__(self, request_context: DirectRequest) -> None:
        self.request_context = request_context
        self.progress: Any = None

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        sink = self.progress
        if sink is None:
            return
        if message is None:
            message = f"{progress:g} of {total:g}" if total is not None else f"{progress:g}"
        await sink(message)


def task_context(task_id: str, version: str) -> TaskContext:
    """The context of a run of task ``task_id``, created in protocol revision ``version``."""
    meta: RequestParamsMeta = {"progress_token": task_id}
    request = DirectRequest(None, f"task:{task_id}", meta, version)  # type: ignore[arg-type]
    return TaskContext(request)


def check_params(method: str, version: str, params: Mapping[str, Any]) -> None:
    """Raise pydantic's ``ValidationError`` unless ``params`` keep the schema of ``method``
    in revision ``version``, as the SDK checks them before its handler runs."""
    mcp_methods.validate_client_request(method, version, params)


def call_result_for(result: dict[str, Any], version: str) -> dict[str, Any]:
    """A stored ``CallToolResult`` (JSON) as revision ``version`` shapes it."""
    shaped = mcp_methods.serialize_server_result("tools/call", version, result)
    if version in MODERN_REVISIONS and shaped.get("resultType") is None:
        shaped["resultType"] = "complete"
    return shaped


def context_token(ctx: ServerRequestContext[Any, Any]) -> AccessToken | None:
    """The access token the SDK (or the front) verified for the request ``ctx`` serves."""
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("user") if isinstance(scope, Mapping) else None
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def server_info_stamp(server: MCPServer) -> dict[str, Any]:
    """The ``serverInfo`` a 2026-07-28 result carries in its ``_meta``."""
    info = server._lowlevel_server.server_info
    return info.model_dump(by_alias=True, mode="json", exclude_none=True)


def advertise_tasks(server: MCPServer) -> None:
    """Make ``server``'s ``initialize`` answer (2025-11-25) declare tasks: listed,
    cancelled, and created by ``tools/call``."""
    lowlevel = server._lowlevel_server
    capabilities = lowlevel.get_capabilities

    def with_tasks(*args: Any, **kwargs: Any) -> mcp_types.ServerCapabilities:
        found = capabilities(*args, **kwargs)
        if kwargs.get("protocol_version") in MODERN_REVISIONS:
            return found
        tasks = mcp_types.ServerTasksCapability(
            list=mcp_types.TasksListCapability(),
            cancel=mcp_types.TasksCancelCapability(),
            requests=mcp_types.ServerTasksRequestsCapability(
                tools=mcp_types.TasksToolsCapability(call=mcp_types.TasksCallCapability())
            ),
        )
        return found.model_copy(update={"tasks": tasks})

    lowlevel.get_capabilities = with_tasks  # type: ignore[method-assign]


# The SDK's log lines that would carry request values ------------------------------------


class LogRewrite(NamedTuple):
    """How a library's log line that would carry request values is rewritten: the start of
    its text; the level of the new line (None: the same); the new text (None: the line is
    dropped, as it repeats one rewritten already); whether its traceback stays."""

    start: str
    level: int | None
    text: str | Callable[[logging.LogRecord], str] | None
    keep_traceback: bool = True


def first_arg(record: logging.LogRecord) -> object:
    """The first argument of a log record's message."""
    return record.args[0] if isinstance(record.args, tuple) and record.args else None


def logged_by_sdk_session(record: logging.LogRecord) -> bool:
    """Whether a line of the root logger comes from the SDK's session (which logs there)."""
    return record.pathname.replace("\\", "/").endswith("/mcp/shared/session.py")


def _message_type(message: object) -> str:
    """The type of a message the SDK received: a schema name, never its contents."""
    if isinstance(message, BaseException):
        return type(message).__name__
    root = getattr(getattr(message, "request", message), "root", message)
    return type(root).__name__


def _methods(union: Any) -> dict[str, str]:
    """Member class name to method, for ``types.ClientRequest`` or ``ClientNotification``."""
    members = get_args(union)
    return {member.__name__: member.model_fields["method"].default for member in members}


def _refused(kind: str, record: logging.LogRecord, methods: dict[str, str]) -> str:
    """What was refused, and its method when the SDK's validation error names a known one."""
    locations = re.findall(r"^(\w+)\.(.+)$", str(record.msg), re.MULTILINE)
    refused = {name for name, rest in locations if rest == "method"}
    fitting = {methods[name] for name, _ in locations if name in methods and name not in refused}
    if len(fitting) == 1:
        return f"Refused a {fitting.pop()} {kind}: its params do not validate (values not logged)"
    return f"Refused a {kind}: its method is unknown or its params do not validate"


_REQUESTS = _methods(mcp_types.ClientRequest)
_NOTIFICATIONS = _methods(mcp_types.ClientNotification)

SDK_LOG_REWRITES: dict[str, list[LogRewrite]] = {
    # Per logger of the SDK: its lines that would carry request values, rewritten.
    "mcp.server.lowlevel.server": [
        LogRewrite(
            "Received message: ", None, lambda r: f"Received message: {_message_type(first_arg(r))}"
        ),
        LogRewrite(
            "Received exception from stream",
            logging.DEBUG,
            "Received an error from the transport in place of a message (text not logged)",
        ),
        LogRewrite("Warning: ", None, lambda r: f"Warning: {first_arg(r)} (text not logged)"),
        LogRewrite("Tool cache miss for ", None, "Tool cache miss, refreshing the cache"),
        LogRewrite("Tool '%s' not listed", None, "tools/call named a tool that is not listed"),
        LogRewrite("Request %s cancelled", None, "A request was cancelled by its client"),
        LogRewrite("Response for %s dropped", None, "A response was dropped: the transport closed"),
    ],
    # mcp.shared.session logs on the root logger (only its lines are rewritten there).
    "root": [
        LogRewrite("Failed to validate request", None, lambda r: _refused("request", r, _REQUESTS)),
        LogRewrite("Message that failed validation", None, None),
        LogRewrite(
            "Failed to validate notification",
            None,
            lambda r: _refused("notification", r, _NOTIFICATIONS),
        ),
        LogRewrite("Progress callback raised", None, "A progress callback raised an exception"),
        LogRewrite(
            "Unhandled exception in receive loop", None, "Unhandled exception in receive loop"
        ),
        LogRewrite("Response ID ", None, "A response's ID matches no pending request"),
    ],
    # The SDK's 2.x line: its dispatcher, its runner and its high-level server.
    "mcp.shared.jsonrpc_dispatcher": [
        LogRewrite(
            "transport yielded exception",
            logging.DEBUG,
            "The transport yielded an error in place of a message (text not logged)",
        ),
        LogRewrite(
            "dropping response for unknown", None, "A response's id matches no pending request"
        ),
        LogRewrite(
            "waiter for request id", None, "A response came for a request no longer awaited"
        ),
        LogRewrite(
            "transport_builder raised; rejecting", None, "A request was refused: no transport"
        ),
    ],
    "mcp.server.runner": [
        LogRewrite("dropped %r: not defined at", None, "Dropped a notification its revision lacks"),
        LogRewrite(
            "dropped %r: malformed params", None, "Dropped a notification: its params are malformed"
        ),
        LogRewrite(
            "handler for %r returned an invalid result",
            None,
            "A handler returned a result the protocol refuses (values not logged)",
            keep_traceback=False,  # a validation error's traceback shows values
        ),
        LogRewrite(
            "dropped a frame received before", None, "Dropped a frame sent before any request"
        ),
        LogRewrite(
            "no handler for notification", None, "No handler for a notification (method not logged)"
        ),
    ],
    "mcp.server.mcpserver.server": [
        LogRewrite(
            "Tool %r rejected arguments", None, "tools/call refused: its arguments do not validate"
        ),
        LogRewrite(
            "Tool %r failed", None, "tools/call failed: the tool is unknown or reported an error"
        ),
        LogRewrite(
            "Tool %r raised", None, "A tool raised an unexpected exception (name not logged)"
        ),
    ],
    "mcp.server._streamable_http_modern": [
        LogRewrite(
            "acknowledged and dropped", None, "Acknowledged and dropped a client notification"
        ),
    ],
    "mcp.server.streamable_http": [
        LogRewrite(
            "Session terminated with request", None, "A session ended with a request in flight"
        ),
        LogRewrite(
            "Dropped message related to request", None, "Dropped a message: JSON responses only"
        ),
        LogRewrite("Stored ", None, "Stored an event for resumption"),
    ],
    "mcp.server.streamable_http_manager": [
        LogRewrite(
            "Rejecting request for session",
            None,
            "Rejected a request for a session opened with another credential",
        ),
        LogRewrite(
            "Rejected request with unknown", None, "Rejected a request: its session id is unknown"
        ),
        LogRewrite(
            "Created new transport with session", None, "Opened a session (its id not logged)"
        ),
    ],
    "mcp.server.transport_security": [
        # The front's HostCheck refuses these first, and logs the line that names the fix.
        LogRewrite("Invalid Host header", None, None),
        LogRewrite("Invalid Origin header", None, None),
        LogRewrite(
            "Invalid Content-Type", None, "Refused a POST request: its Content-Type is not JSON"
        ),
    ],
}
