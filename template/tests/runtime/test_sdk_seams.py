"""The private parts of the SDK the runtime depends on (``mcp_runtime.sdk.seams``), each
exercised on a real server built as the runtime builds one.

Each test fails the day an SDK release changes the part it holds: the attribute gone or
of another type, the replaced method's signature changed, the fields written in another
order. A failure names the seam to look at before moving to that release.
"""

import inspect
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from langchain_core.tools import tool
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel import Server
from mcp.server.mcpserver.tools import ToolManager
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import JSONRPCError, JSONRPCResponse
from pydantic import BaseModel, Field
from starlette.applications import Starlette

from mcp_runtime import ToolResult, report_progress
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.served_tool import ContractTool
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.sdk import seams
from mcp_runtime.sdk.bearer import bearer_check
from mcp_runtime.sdk.http import AnswerApps, TransportSecuritySettings, answer_apps
from mcp_runtime.sdk.log_rewrites import SDK_LOG_REWRITES
from mcp_runtime.sdk.server import TASKS, ContractServer, advertise_tasks, server_info_stamp
from mcp_runtime.sdk.tools import json_text_keys, pre_parse_json, served_tools
from mcp_runtime.serving.server import build_server

pytestmark = pytest.mark.anyio

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
NO_AUTH = ServiceSettings(auth="none")


@tool
def ping() -> ToolResult:
    """Answer at once."""
    return ToolResult(message="pong")


@tool
def steps() -> ToolResult:
    """Report a step, then answer."""
    report_progress(1, 2, "halfway")
    return ToolResult(message="done")


def built() -> Any:
    """The server of two tools, as the runtime builds it."""
    return build_server(
        [Toolset("seams", (ping, steps))], name="seams", version="1.2.3", settings=NO_AUTH
    )


# --- MCPServer._tool_manager ------------------------------------------------------------


def test_the_tools_served_are_read_from_the_sdks_tool_manager() -> None:
    server = built()
    assert type(server._tool_manager) is ToolManager
    assert list(inspect.signature(ToolManager.list_tools).parameters) == ["self"]
    tools = seams.registered_tools(server)
    assert [tool.name for tool in tools] == ["ping", "steps"]
    assert all(type(tool) is ContractTool for tool in tools)  # the gate's own objects
    assert served_tools(server) == tools


# --- MCPServer._token_verifier ----------------------------------------------------------


class Verifier(TokenVerifier):
    async def verify_token(self, token: str) -> AccessToken | None:
        return None


def test_the_token_verifier_is_the_one_the_server_was_built_with() -> None:
    verifier = Verifier()
    auth = AuthSettings(
        issuer_url="https://issuer.example.com",
        resource_server_url="https://service.example.com/mcp",
        validate_token_resource=False,  # as the runtime's (its verifier checks the audience)
    )
    server = ContractServer("seams", auth=auth, token_verifier=verifier)
    assert seams.token_verifier(server) is verifier
    check = bearer_check(server)
    assert check is not None
    assert check.verifier is verifier
    assert seams.token_verifier(built()) is None
    assert bearer_check(built()) is None


# --- MCPServer._lowlevel_server ---------------------------------------------------------


def test_the_lowlevel_server_stamps_the_servers_identity() -> None:
    server = built()
    assert type(seams.lowlevel_server(server)) is Server
    stamp = server_info_stamp(server)
    assert stamp == {"name": "seams", "version": "1.2.3"}
    stamp["name"] = "changed"  # a fresh copy each time: the caller owns it
    assert server_info_stamp(server) == {"name": "seams", "version": "1.2.3"}


# --- Server.get_capabilities, replaced --------------------------------------------------


def test_the_replaced_get_capabilities_keeps_the_sdks_signature() -> None:
    parameters = inspect.signature(Server.get_capabilities).parameters
    assert [(name, part.kind, part.default) for name, part in parameters.items()] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("notification_options", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("experimental_capabilities", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("extensions", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("protocol_version", inspect.Parameter.KEYWORD_ONLY, None),
    ]


async def test_the_extended_capabilities_are_those_each_era_is_answered_with() -> None:
    """The SDK answers ``initialize`` (2025-11-25) and ``server/discover`` (2026-07-28)
    through the replaced method: tasks are declared in the first only."""
    server = built()
    advertise_tasks(server)
    lowlevel = seams.lowlevel_server(server)
    assert lowlevel.create_initialization_options().capabilities.tasks == TASKS
    assert lowlevel.get_capabilities(protocol_version=MODERN).tasks is None
    async with served(server) as apps:
        initialized = await post(apps.whole, initialize(), LEGACY)
        discovered = await post(apps.whole, discover(), MODERN)
    assert initialized.status_code == 200, initialized.text
    assert initialized.json()["result"]["capabilities"]["tasks"] == TASKS.model_dump(
        by_alias=True, exclude_none=True
    )
    assert discovered.status_code == 200, discovered.text
    assert "tasks" not in discovered.json()["result"]["capabilities"]


# --- mcp.server._otel.OpenTelemetryMiddleware -------------------------------------------


def test_the_sdks_span_middleware_is_the_one_taken_out() -> None:
    from mcp.server._otel import OpenTelemetryMiddleware

    fresh = ContractServer("seams")
    assert [type(part) for part in fresh.middleware].count(OpenTelemetryMiddleware) == 1
    assert seams.without_sdk_spans(fresh) is fresh
    assert not any(isinstance(part, OpenTelemetryMiddleware) for part in fresh.middleware)
    assert not any(isinstance(part, OpenTelemetryMiddleware) for part in built().middleware)


# --- FuncMetadata.model_construct -------------------------------------------------------


class Arguments(BaseModel):
    names: list[str]
    label: str = ""
    limits: dict[str, int] = Field(default_factory=dict, alias="limitsByName")


def test_the_unvalidated_func_metadata_has_every_field_the_sdk_reads() -> None:
    assert list(FuncMetadata.model_fields) == [
        "arg_model",
        "output_schema",
        "output_model",
        "wrap_output",
    ]
    required = [name for name, field in FuncMetadata.model_fields.items() if field.is_required()]
    assert required == ["arg_model"]  # every other one has its default, unvalidated
    metadata = seams.func_metadata(Arguments, {"type": "object"})
    arguments: type[BaseModel] = metadata.arg_model  # typed as the SDK's own base
    assert arguments is Arguments
    assert metadata.output_schema == {"type": "object"}
    assert (metadata.output_model, metadata.wrap_output) == (None, False)


def test_json_text_is_decoded_for_the_keys_the_sdk_decodes() -> None:
    metadata = seams.func_metadata(Arguments, {"type": "object"})
    sent = {"names": '["a", "b"]', "label": '["kept"]', "limitsByName": '{"x": 1}'}
    keys = json_text_keys(Arguments)
    assert keys == {"names", "limits", "limitsByName"}
    decoded = {"names": ["a", "b"], "label": '["kept"]', "limitsByName": {"x": 1}}
    assert metadata.pre_parse_json(sent) == decoded
    assert pre_parse_json(metadata, sent, keys) == decoded
    served = seams.registered_tools(built())[0]  # the gate builds its metadata so
    assert type(served.fn_metadata) is FuncMetadata
    assert issubclass(served.fn_metadata.arg_model, BaseModel)


# --- Router.lifespan_context of the SDK's app, replaced ---------------------------------


async def test_the_answer_apps_run_within_the_streaming_apps_lifespan() -> None:
    server = built()
    apps = apps_of(server)
    assert type(apps.whole) is Starlette
    assert type(apps.streaming) is Starlette
    with pytest.raises(RuntimeError, match="Task group is not initialized"):
        await post(apps.whole, initialize(), LEGACY)  # the SDK starts it in its lifespan only
    async with apps.streaming.router.lifespan_context(apps.streaming):
        answered = await post(apps.whole, initialize(), LEGACY)
        streamed = await post(apps.streaming, initialize(), LEGACY)
    assert answered.status_code == 200
    assert answered.headers["content-type"] == "application/json"
    assert streamed.status_code == 200
    assert streamed.headers["content-type"].startswith("text/event-stream")


# --- The order the SDK writes an answer's members in -----------------------------------


def test_the_sdks_messages_declare_their_members_in_the_order_read() -> None:
    assert list(JSONRPCResponse.model_fields) == ["jsonrpc", "id", "result"]
    assert list(JSONRPCError.model_fields) == ["jsonrpc", "id", "error"]


@pytest.mark.parametrize("version", [LEGACY, MODERN])
async def test_an_answer_the_sdk_streams_starts_as_the_front_reads_it(version: str) -> None:
    async with served(built()) as apps:
        answer = await post(apps.streaming, progressed_call(version), version)
    assert answer.headers["content-type"].startswith("text/event-stream"), answer.text
    events = sse_data(answer.content)
    assert [json.loads(data).get("method") for data in events] == [
        "notifications/progress",
        None,
    ]
    notice, result = events
    assert result.startswith(b'{"jsonrpc":"2.0","id":7,"result":{')
    assert seams.starts_as_answer(result)
    assert not seams.starts_as_answer(notice)
    error = JSONRPCError.model_validate(
        {"jsonrpc": "2.0", "id": "a", "error": {"code": -32602, "message": "x"}}
    )
    written = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    assert written.startswith(b'{"jsonrpc":"2.0","id":"a","error":{')
    assert seams.starts_as_answer(written)


# --- The SDK's private modules whose log lines are rewritten ----------------------------


def test_each_private_sdk_logger_rewritten_is_still_the_sdks() -> None:
    private = [
        name for name in SDK_LOG_REWRITES if any(part.startswith("_") for part in name.split("."))
    ]
    assert private == ["mcp.server._streamable_http_modern"]
    for name in private:
        module = __import__(name, fromlist=["logger"])
        assert module.logger.name == name


# --- Helpers ----------------------------------------------------------------------------


def apps_of(server: Any) -> AnswerApps:
    """The server's answer apps, built as the runtime builds them (stateless)."""
    return answer_apps(
        server,
        streamable_http_path="/mcp",
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


@asynccontextmanager
async def served(server: Any) -> AsyncIterator[AnswerApps]:
    """The server's answer apps, within their lifespan."""
    apps = apps_of(server)
    async with apps.streaming.router.lifespan_context(apps.streaming):
        yield apps


ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def initialize() -> dict[str, Any]:
    params = {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


def discover() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": ENVELOPE}}


def progressed_call(version: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"progressToken": "p"}
    if version == MODERN:
        meta |= ENVELOPE
    params = {"name": "steps", "arguments": {}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


async def post(app: Any, message: dict[str, Any], version: str) -> httpx2.Response:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
    }
    if message["method"] == "initialize":
        del headers["mcp-protocol-version"]
    if version == MODERN:
        headers["mcp-method"] = message["method"]
        name = message["params"].get("name")
        if name is not None:
            headers["mcp-name"] = name
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.post("/mcp", content=json.dumps(message), headers=headers)


def sse_data(body: bytes) -> list[bytes]:
    """The data of each SSE event in ``body`` that has any."""
    events = body.replace(b"\r\n", b"\n").split(b"\n\n")
    found = []
    for event in events:
        lines = [
            line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")
        ]
        if lines and any(lines):
            found.append(b"\n".join(lines))
    return found
