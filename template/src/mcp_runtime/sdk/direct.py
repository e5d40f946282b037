"""A ``tools/call`` of one of the service's own tools answered directly, in both eras:
the SDK's checks and answer, without its request machinery.

The one copy of the SDK's request handling in the runtime. The SDK's server serves a
stateless request through a transport, a dispatcher and a session task built for it
(the 2025 revisions), or through its classification ladder and runner (2026-07-28):
two thirds of the cost of a short call. This module answers the calls that need none
of it, and is held to the SDK's answers, byte for byte, by the parity test
(``tests/runtime/test_direct_calls.py``): it fails when the SDK changes under it.
"""

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool as SDKTool
from mcp.server.request_state import RequestStateBoundary
from mcp.server.runner import modern_error_data
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, X_MCP_HEADER_KEY
from mcp.types import (
    INTERNAL_ERROR,
    CallToolResult,
    ErrorData,
    RequestId,
    RequestParams,
    TextContent,
)
from mcp_types import methods as mcp_methods
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Scope

from mcp_runtime.sdk.bearer import AccessToken, set_request_user
from mcp_runtime.sdk.context import BuiltContext, BuiltRequest
from mcp_runtime.sdk.http import (
    accepts_json,
    first_header,
    legacy_version,
    modern_version,
    names_json,
)
from mcp_runtime.sdk.seams import token_verifier
from mcp_runtime.sdk.server import server_info_stamp

__all__ = ["DirectCall", "DirectCalls"]

logger = logging.getLogger(__name__)

SERVER_INFO = "io.modelcontextprotocol/serverInfo"
CONTENT_TYPE = b"content-type"
KEPT_VERDICTS = 64  # the verdicts on distinct Content-Types kept (most clients send one)
ENVELOPE_MEMBERS = frozenset({"jsonrpc", "id", "method", "params"})
PARAMS_MEMBERS = frozenset({"name", "arguments", "_meta"})
ID_TYPES = (str, int)
COMPACT = json.JSONEncoder(separators=(",", ":"))  # json.dumps(..., separators=(",", ":"))

ToolRunner = Callable[[dict[str, Any], Any], Awaitable[CallToolResult]]
"""A tool's ``run``: one call's arguments and the request's context, to its result."""


@dataclass(frozen=True)
class DirectCall:
    """A ``tools/call`` the direct path answers: its tool's run, its id, its arguments,
    its revision, whether that is of the 2026-07-28 era, and its context."""

    run: ToolRunner
    request_id: RequestId
    arguments: dict[str, Any]
    version: str
    modern: bool
    context: BuiltContext


class DirectCalls:
    """Answers a stateless ``tools/call`` of one of ``tools`` (those it may serve this
    way, by name, less those whose input schema declares ``Mcp-Param`` headers) as
    the SDK's server answers it, one JSON body; ``passed_by`` names the server
    middleware that has nothing to do for their calls, and ``hosts_checked`` says the
    request's Host and Origin have passed the SDK's own check of them already (with the
    server's settings), which this path then does not run again.

    A request is taken only when the SDK would serve it to the tool: its Host, Origin
    and content type pass the SDK's checks, it accepts JSON, its envelope is plain
    JSON-RPC, its params the revision's schema (and, from 2026-07-28, its envelope and
    routing headers the SDK's classification), it asks no progress, and the server has
    no middleware of its own; anything else goes to the SDK as it came, so every
    refusal is the SDK's own. (The SDK's own middleware of a server, which seals the
    ``requestState`` of multi-round-trip results, has nothing to do for a call without
    one whose result is complete, as every result of the gate's tools is.) The answer
    is what the SDK's would be: the tool's result as the revision's schema shapes it
    (from 2026-07-28 with ``resultType`` and the ``serverInfo`` stamp), or the SDK's
    error for what the tool's run raised, with the SDK's HTTP status.
    """

    def __init__(
        self,
        server: MCPServer,
        tools: Mapping[str, SDKTool],
        passed_by: tuple[type, ...] = (),
        *,
        hosts_checked: bool = False,
    ) -> None:
        self.server = server
        # The server middleware with nothing to do for these tools' calls.
        self.passed_by = (RequestStateBoundary, *passed_by)
        # A tool whose input schema declares Mcp-Param headers is the SDK's, which checks
        # them. The gate's input schemas carry no such key today (a parity case sends one
        # unchecked): this keeps the two alike should one ever pass through.
        self.runners: dict[str, ToolRunner] = {
            name: tool.run
            for name, tool in tools.items()
            if X_MCP_HEADER_KEY not in json.dumps(tool.parameters)
        }
        auth = server.settings.auth
        self.verifies = token_verifier(server) is not None and auth is not None
        self.required_scopes = list(auth.required_scopes or []) if auth is not None else []
        security = server.session_manager.security_settings
        if hosts_checked and security is not None:
            # Host and Origin refused by the SDK's rules already: its Content-Type check stays.
            security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.security = TransportSecurityMiddleware(security)
        # Without its Host and Origin check, the SDK's check reads the Content-Type alone:
        # its verdict is kept for each distinct one.
        self.types_only = not self.security.settings.enable_dns_rebinding_protection
        self.types: dict[bytes | None, bool] = {}
        self.stamp = server_info_stamp(server)

    async def take(
        self, scope: Scope, message: object, access: AccessToken | None, modern: bool
    ) -> DirectCall | None:
        """The call ``message`` (a parsed POST of ``scope``) makes, if this path answers it.

        When the server verifies tokens, ``access`` is the request's, verified by the
        front; a request without one, or whose token lacks a scope every call needs, is
        the SDK's to refuse. ``modern``: the request speaks 2026-07-28 or later, as
        :func:`~mcp_runtime.sdk.http.speaks_handshake_era` says.
        """
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return None
        if self.verifies and (
            access is None or any(need not in access.scopes for need in self.required_scopes)
        ):
            return None
        if not message.keys() <= ENVELOPE_MEMBERS or message.get("jsonrpc") != "2.0":
            return None
        request_id, params = message.get("id"), message.get("params")
        if isinstance(request_id, bool) or not isinstance(request_id, ID_TYPES):
            return None
        if not isinstance(params, dict) or not params.keys() <= PARAMS_MEMBERS:
            return None
        for part in self.server.middleware:
            if not isinstance(part, self.passed_by):
                return None  # the server's own middleware runs in the SDK's path
        run = self.runners.get(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments", {})
        if run is None or not isinstance(arguments, dict):
            return None
        request = Request(scope)
        content_type = first_header(scope, CONTENT_TYPE)
        if not await self._passes_security(request, content_type):
            return None
        if not accepts_json(scope):
            return None
        if modern:
            version = modern_version(scope, message)
        elif names_json(content_type):
            version = legacy_version(scope)
        else:
            return None
        if version is None:
            return None
        try:
            mcp_methods.validate_client_request("tools/call", version, params)
            meta = RequestParams.model_validate(params, by_name=False).meta
        except (KeyError, ValueError, ValidationError):
            return None
        if meta is not None and meta.get("progress_token") is not None:
            return None  # the SDK drops its progress on a JSON answer, and logs each
        if access is not None and self.verifies:
            set_request_user(scope, access)  # for the tool to read its caller
        context = BuiltContext(BuiltRequest(request, request_id, meta, version))
        return DirectCall(run, request_id, arguments, version, modern, context)

    async def _passes_security(self, request: Request, content_type: bytes | None) -> bool:
        """Whether the request passes the SDK's check of a POST's headers (its Content-Type,
        and its Host and Origin unless the front has checked them)."""
        if not self.types_only:
            return await self.security.validate_request(request, is_post=True) is None
        passes = self.types.get(content_type)
        if passes is None:
            passes = await self.security.validate_request(request, is_post=True) is None
            if len(self.types) >= KEPT_VERDICTS:
                self.types.clear()
            self.types[content_type] = passes
        return passes

    async def answer(self, call: DirectCall) -> tuple[int, bytes]:
        """Run ``call``; its HTTP status and JSON-RPC answer, as the SDK's would be."""
        try:
            result = await call.run(call.arguments, call.context)
        except MCPError as exc:
            return _error(call, modern_error_data(exc) if call.modern else exc.error)
        except Exception as exc:  # the tool's run answers every failure itself: a bug
            logger.exception("a tool's run raised an unexpected exception")
            result = CallToolResult(
                content=[TextContent(type="text", text=str(exc))], is_error=True
            )
        shaped = text_result(result) if call.modern else None
        if shaped is not None:
            dumped = shaped
        else:
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            try:
                dumped = mcp_methods.serialize_server_result("tools/call", call.version, dumped)
            except ValidationError:
                logger.exception("a tool's result does not fit its revision's schema")
                invalid = ErrorData(
                    code=INTERNAL_ERROR, message="Handler returned an invalid result"
                )
                return _error(call, invalid)
        if not call.modern:
            body = {"jsonrpc": "2.0", "id": call.request_id, "result": dumped}
            return 200, pydantic_core.to_json(body)
        if dumped.get("resultType") is None:
            dumped["resultType"] = "complete"
        meta = dumped.get("_meta")
        if meta is None:
            dumped["_meta"] = {SERVER_INFO: dict(self.stamp)}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO) is None:
            dumped["_meta"] = {**meta, SERVER_INFO: dict(self.stamp)}
        body = {"jsonrpc": "2.0", "id": call.request_id, "result": dumped}
        return 200, COMPACT.encode(body).encode()


def text_result(result: CallToolResult) -> dict[str, Any] | None:
    """``result`` as the 2026-07-28 schema's serialization writes it, when it is made of
    text blocks and JSON values only, as every result of the gate's tools is; None for
    any other result.

    That serialization checks such a result and changes nothing in it but the order of
    its members (the schema's: by name), so this writes it in that order without the
    check; ``tests/runtime/test_direct_calls.py`` holds the two alike.
    """
    if result.meta is not None or result.result_type is None:
        return None
    content = []
    for block in result.content:
        if (
            type(block) is not TextContent
            or block.annotations is not None
            or block.meta is not None
        ):
            return None
        content.append({"text": block.text, "type": "text"})
    shaped: dict[str, Any] = {
        "content": content,
        "isError": result.is_error,
        "resultType": result.result_type,
    }
    if result.structured_content is not None:
        shaped["structuredContent"] = result.structured_content
    return shaped


def _error(call: DirectCall, error: ErrorData) -> tuple[int, bytes]:
    """The SDK's answer of ``error`` to ``call``: from 2026-07-28 with the error's own HTTP
    status, and before it 200, each as that era's entry writes it."""
    if not call.modern:
        data = error.model_dump(mode="json", by_alias=True, exclude_unset=True)
        body = {"jsonrpc": "2.0", "id": call.request_id, "error": data}
        return 200, pydantic_core.to_json(body)
    data = error.model_dump(mode="json", by_alias=True, exclude_none=True)
    body = {"jsonrpc": "2.0", "id": call.request_id, "error": data}
    return ERROR_CODE_HTTP_STATUS.get(error.code, 200), COMPACT.encode(body).encode()
