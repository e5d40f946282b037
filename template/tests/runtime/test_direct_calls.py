"""The direct path of ``tools/call`` changes nothing a client sees, in either era.

Two processes of the slow test service, one answering its own tools' calls directly
(the default), one handing every request to the SDK (``MCP_DIRECT_CALLS=false``), are
sent the same requests, as clients of 2026-07-28 and of the 2025 revisions send them:
calls that answer each way a tool can, and requests the SDK refuses (each routing
header wrong, missing or twice, the envelope incomplete, an unsupported revision,
params the revision's schema refuses, a bad Host, an Accept without JSON, a content
type the SDK refuses). Each gets the same HTTP status, content type and JSON-RPC
message, byte for byte, from both; the log of the first shows which of them it
answered directly.
"""

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.types import CallToolResult, ImageContent, TextContent
from mcp_types.methods import serialize_server_result

from mcp_runtime.sdk.direct import text_result
from mcp_runtime.testing import LocalIssuer, RunningServer, run_server

SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
MODERN = "2026-07-28"
DIRECT_LINE = "a tools/call answered directly"
ERROR_ID = re.compile(r"error id [0-9a-f]{12}")
ERROR_ID_BYTES = re.compile(rb"error id [0-9a-f]{12}")
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, ...]]:
    """The service answering directly, and the same service answering through the SDK."""
    env = {
        "SLOW_SERVICE_DIR": str(tmp_path_factory.mktemp("direct")),
        "MCP_TOOLSETS": "answers,counting",
        "MCP_AUTH": "none",
        "MCP_LOG_LEVEL": "DEBUG",
    }
    with (
        run_server(SLOW_SERVICE, env=env) as direct,
        run_server(SLOW_SERVICE, env=env | {"MCP_DIRECT_CALLS": "false"}) as through_sdk,
    ):
        yield direct, through_sdk


SCOPE = "answers:call"


@pytest.fixture(scope="module")
def oauth_servers(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LocalIssuer, RunningServer, RunningServer]]:
    """The same pair under ``MCP_AUTH=oauth``, every call needing the scope SCOPE."""
    with LocalIssuer() as issuer:
        env = {
            "SLOW_SERVICE_DIR": str(tmp_path_factory.mktemp("direct-oauth")),
            "MCP_TOOLSETS": "answers",
            "MCP_LOG_LEVEL": "DEBUG",
            **issuer.environment(RESOURCE, scopes=[SCOPE]),
        }
        with (
            run_server(SLOW_SERVICE, env=env) as direct,
            run_server(SLOW_SERVICE, env=env | {"MCP_DIRECT_CALLS": "false"}) as through_sdk,
        ):
            yield issuer, direct, through_sdk


RESOURCE = "https://answers.example.com/mcp"


def call(
    arguments: object,
    *,
    name: str = "answer",
    request_id: object = 1,
    meta: object = ENVELOPE,
    **params: object,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "arguments": arguments, "_meta": meta, **params}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body}


Headers = dict[str, str | list[str] | None]
"""Headers over :data:`HEADERS`: None drops one, a list sends each value on a line of its own."""

HEADERS: Headers = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": MODERN,
    "mcp-method": "tools/call",
    "mcp-name": "answer",
}

# (what, body, headers over HEADERS (None drops one), answered directly)
CASES: list[tuple[str, object, Headers, bool]] = [
    ("a result", call({"kind": "ok", "text": "Ada"}), {}, True),
    ("a result, non-ASCII", call({"kind": "ok", "text": "Zoë ✓ 𝄞"}), {}, True),
    ("a string id", call({"kind": "ok"}, request_id="a-1"), {}, True),
    ("id 0", call({"kind": "ok"}, request_id=0), {}, True),
    ("a ToolError", call({"kind": "tool_error", "text": "x"}), {}, True),
    ("a ToolException", call({"kind": "tool_exception", "text": "x"}), {}, True),
    ("an exception, masked", call({"kind": "exception", "text": "x"}), {}, True),
    ("a broken result", call({"kind": "broken"}), {}, True),
    ("a missing argument", call({}), {}, True),
    ("an argument of the wrong type", call({"kind": 7}), {}, True),
    ("no arguments", {**call({}), "params": {"name": "answer", "_meta": ENVELOPE}}, {}, True),
    (
        "client info",
        call(
            {"kind": "ok"},
            meta={**ENVELOPE, "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}},
        ),
        {},
        True,
    ),
    (
        "a trace context",
        call(
            {"kind": "ok"},
            meta={
                **ENVELOPE,
                "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            },
        ),
        {},
        True,
    ),
    ("an unknown tool", call({}, name="nothing"), {"mcp-name": "nothing"}, False),
    # No tool the gate builds declares an Mcp-Param header: one sent is not checked.
    ("an Mcp-Param header", call({"kind": "ok"}), {"mcp-param-kind": "other"}, True),
    ("arguments not an object", call([1]), {}, False),
    ("Mcp-Name wrong", call({"kind": "ok"}), {"mcp-name": "other"}, False),
    ("Mcp-Name missing", call({"kind": "ok"}), {"mcp-name": None}, False),
    ("Mcp-Method wrong", call({"kind": "ok"}), {"mcp-method": "tools/list"}, False),
    ("Mcp-Name twice", call({"kind": "ok"}), {"mcp-name": ["answer", "answer"]}, False),
    ("Mcp-Method twice", call({"kind": "ok"}), {"mcp-method": ["tools/call"] * 2}, False),
    (
        "MCP-Protocol-Version twice",
        call({"kind": "ok"}),
        {"mcp-protocol-version": [MODERN] * 2},
        False,
    ),
    ("another header twice", call({"kind": "ok"}), {"x-trace": ["a", "b"]}, True),
    (
        "no capabilities",
        call({"kind": "ok"}, meta={"io.modelcontextprotocol/protocolVersion": MODERN}),
        {},
        False,
    ),
    ("no _meta", call({"kind": "ok"}, meta=None), {}, False),
    (
        "an unsupported revision",
        call(
            {"kind": "ok"},
            meta={**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"},
        ),
        {"mcp-protocol-version": "2099-01-01"},
        False,
    ),
    ("a request state", call({"kind": "ok"}, requestState="forged"), {}, False),
    ("a task", call({"kind": "ok"}, task={"ttl": 1000}), {}, False),
    ("a name of the wrong type", call({"kind": "ok"}, name=7), {}, False),  # type: ignore[arg-type]
    ("a bad Host", call({"kind": "ok"}), {"host": "evil.example"}, False),
    ("an Accept without JSON", call({"kind": "ok"}), {"accept": "text/event-stream"}, False),
    ("an envelope with more", {**call({"kind": "ok"}), "extra": 1}, {}, False),
]


CASES.append(("numbers", call({"kind": "numbers"}), {}, True))


def legacy_call(arguments: object, *, request_id: object = 1, **params: object) -> dict[str, Any]:
    """A ``tools/call`` as a client of the 2025 revisions sends it (no envelope)."""
    body: dict[str, Any] = {"name": "answer", "arguments": arguments, **params}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body}


LEGACY_HEADERS: Headers = {
    "mcp-protocol-version": "2025-11-25",
    "mcp-method": None,
    "mcp-name": None,
}
LEGACY_CASES: list[tuple[str, object, Headers, bool]] = [
    ("a result", legacy_call({"kind": "ok", "text": "Ada"}), {}, True),
    (
        "a result, no revision header",
        legacy_call({"kind": "ok"}),
        {"mcp-protocol-version": None},
        True,
    ),
    (
        "a result, 2025-06-18",
        legacy_call({"kind": "ok"}),
        {"mcp-protocol-version": "2025-06-18"},
        True,
    ),
    (
        "a result, 2025-03-26",
        legacy_call({"kind": "ok"}),
        {"mcp-protocol-version": "2025-03-26"},
        True,
    ),
    ("a result, non-ASCII", legacy_call({"kind": "ok", "text": "Zoë ✓ 𝄞"}), {}, True),
    ("numbers", legacy_call({"kind": "numbers"}), {}, True),
    ("a string id", legacy_call({"kind": "ok"}, request_id="a-1"), {}, True),
    ("id 0", legacy_call({"kind": "ok"}, request_id=0), {}, True),
    ("a ToolError", legacy_call({"kind": "tool_error", "text": "x"}), {}, True),
    ("a ToolException", legacy_call({"kind": "tool_exception", "text": "x"}), {}, True),
    ("an exception, masked", legacy_call({"kind": "exception", "text": "x"}), {}, True),
    ("a broken result", legacy_call({"kind": "broken"}), {}, True),
    ("a missing argument", legacy_call({}), {}, True),
    ("an argument of the wrong type", legacy_call({"kind": 7}), {}, True),
    ("no arguments", {**legacy_call({}), "params": {"name": "answer"}}, {}, True),
    ("a _meta", legacy_call({"kind": "ok"}, _meta={"anything": [1, 2]}), {}, True),
    ("routing headers, ignored", legacy_call({"kind": "ok"}), {"mcp-name": "other"}, True),
    (
        "a progress token",
        legacy_call({"kind": "ok"}, _meta={"progressToken": "p"}),
        {"accept": "application/json"},
        False,
    ),
    ("an unknown tool", {**legacy_call({}), "params": {"name": "nothing"}}, {}, False),
    ("a task", legacy_call({"kind": "ok"}, task={"ttl": 1000}), {}, False),
    ("a _meta not an object", legacy_call({"kind": "ok"}, _meta=[1]), {}, False),
    ("a bad Host", legacy_call({"kind": "ok"}), {"host": "evil.example"}, False),
    ("an Accept without JSON", legacy_call({"kind": "ok"}), {"accept": "text/event-stream"}, False),
    (
        "a Content-Type the SDK refuses",
        legacy_call({"kind": "ok"}),
        {"content-type": "application/json-patch+json"},
        False,
    ),
    (
        "an unknown revision",
        legacy_call({"kind": "ok"}),
        {"mcp-protocol-version": "2024-01-01"},
        False,
    ),
    ("an envelope with more", {**legacy_call({"kind": "ok"}), "extra": 1}, {}, False),
]


def send(server: RunningServer, body: object, headers: Headers) -> httpx2.Response:
    sent = [
        (name, value)
        for name, values in (HEADERS | headers).items()
        for value in ([values] if isinstance(values, str) else values or [])
    ]
    return httpx2.post(server.url, content=json.dumps(body), headers=sent, timeout=30)


# Two processes of one Python compared, request by request (on the first Python only): the
# direct path itself answers in every other test of HTTP, on every Python.
ONE_PYTHON = pytest.mark.any_python


@ONE_PYTHON
@pytest.mark.parametrize(
    ("what", "body", "headers", "direct"), LEGACY_CASES, ids=[c[0] for c in LEGACY_CASES]
)
def test_the_direct_answer_of_a_2025_call_is_the_sdks(
    servers: tuple[RunningServer, RunningServer],
    what: str,
    body: object,
    headers: Headers,
    direct: bool,
) -> None:
    test_the_direct_answer_is_the_sdks(servers, what, body, LEGACY_HEADERS | headers, direct)


@ONE_PYTHON
@pytest.mark.parametrize(("what", "body", "headers", "direct"), CASES, ids=[c[0] for c in CASES])
def test_the_direct_answer_is_the_sdks(
    servers: tuple[RunningServer, RunningServer],
    what: str,
    body: object,
    headers: Headers,
    direct: bool,
) -> None:
    direct_server, through_sdk = servers
    before = direct_server.log().count(DIRECT_LINE)
    answered = send(direct_server, body, headers)
    expected = send(through_sdk, body, headers)
    assert direct_server.log().count(DIRECT_LINE) == before + direct, what
    assert DIRECT_LINE not in through_sdk.log()
    assert answered.status_code == expected.status_code, (answered.text, expected.text)
    content_type = answered.headers.get("content-type")
    assert content_type == expected.headers.get("content-type")
    # Each masked failure has an error id of its own.
    assert ERROR_ID.sub("ID", answered.text) == ERROR_ID.sub("ID", expected.text)
    assert ERROR_ID_BYTES.sub(b"ID", answered.content) == ERROR_ID_BYTES.sub(
        b"ID", expected.content
    )
    if "masked" in what:
        assert "secret" not in answered.text


@ONE_PYTHON
@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize(
    ("what", "scopes", "direct"),
    [("a token with the scope", [SCOPE], True), ("a token without it", ["other"], False)],
)
def test_under_oauth_the_direct_answer_is_the_sdks_and_knows_its_caller(
    oauth_servers: tuple[LocalIssuer, RunningServer, RunningServer],
    era: str,
    what: str,
    scopes: list[str],
    direct: bool,
) -> None:
    issuer, direct_server, through_sdk = oauth_servers
    token = issuer.token(subject="ada", audience=RESOURCE, scopes=scopes, expires_in=600)
    headers: Headers = {"authorization": f"Bearer {token}"}
    body = call({"kind": "caller"})
    if era != MODERN:
        headers |= LEGACY_HEADERS
        body = legacy_call({"kind": "caller"})
    before = direct_server.log().count(DIRECT_LINE)
    answered = send(direct_server, body, headers)
    expected = send(through_sdk, body, headers)
    assert direct_server.log().count(DIRECT_LINE) == before + direct, what
    assert answered.status_code == expected.status_code == (200 if direct else 403)
    assert answered.text == expected.text
    assert answered.headers.get("www-authenticate") == expected.headers.get("www-authenticate")
    if direct:
        assert answered.json()["result"]["structuredContent"]["message"] == "caller ada"


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.text(), min_size=1, max_size=3),
    structured=st.none() | st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=5),
    is_error=st.booleans(),
)
def test_a_text_result_is_written_as_the_sdks_serialization_writes_it(
    texts: list[str], structured: dict[str, Any] | None, is_error: bool
) -> None:
    """The direct path writes a result of text blocks and JSON values without the SDK's
    check of it: member for member, in the same order, what that check returns."""
    blocks = [TextContent(type="text", text=text) for text in texts]
    result = CallToolResult(content=blocks, structured_content=structured, is_error=is_error)
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    expected = serialize_server_result("tools/call", MODERN, dumped)
    assert json.dumps(text_result(result)) == json.dumps(expected)


@pytest.mark.parametrize(
    "result",
    [
        CallToolResult(content=[TextContent(type="text", text="x")], _meta={"k": 1}),
        CallToolResult(content=[TextContent(type="text", text="x", _meta={})]),
        CallToolResult(content=[TextContent(type="text", text="x", annotations={"priority": 1.0})]),
        CallToolResult(content=[ImageContent(type="image", data="AA==", mimeType="image/png")]),
    ],
    ids=["a _meta", "a block's _meta", "annotations", "an image"],
)
def test_any_other_result_goes_through_the_sdks_serialization(result: CallToolResult) -> None:
    assert text_result(result) is None
