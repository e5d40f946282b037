"""Bad input over streamable HTTP: each gets a clear JSON-RPC or isError answer, and the
server keeps answering the next request correctly."""

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from mcp_runtime.testing import serve_http

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
GREETING = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
LEGACY = "2025-06-18"
MODERN = "2026-07-28"
ERAS = [LEGACY, MODERN]


def status_for(era: str) -> int:
    """The HTTP status of an error answering a request by its id: its own from 2026-07-28."""
    return 200 if era == LEGACY else 400


class RawSession:
    """An initialized MCP session spoken as raw HTTP, so that any bytes can be sent."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx2.Client(timeout=60)
        self.headers = dict(HEADERS)
        self.next_id = 0
        response = self.http.post(
            url,
            headers=self.headers,
            json=self.request(
                "initialize",
                {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "bad-input", "version": "1"},
                },
            ),
        )
        assert response.status_code == 200, response.text
        if "mcp-session-id" in response.headers:  # stateful serving (MCP_STATELESS=false)
            self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = LEGACY
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.http.post(url, headers=self.headers, json=initialized).status_code == 202

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def send(self, body: bytes, era: str = LEGACY) -> tuple[int, dict[str, Any]]:
        """POST ``body`` as a client of ``era`` sends it; the status and the one JSON-RPC
        message answered."""
        headers = self.headers if era == LEGACY else {**HEADERS, "mcp-protocol-version": era}
        response = self.http.post(self.url, headers=headers, content=body)
        text = response.text
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
        message: dict[str, Any] = json.loads(text)
        return response.status_code, message

    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        body = json.dumps(self.request("tools/call", {"name": name, "arguments": arguments}))
        status, message = self.send(body.encode())
        assert status == 200
        result: dict[str, Any] = message["result"]
        return result

    def still_answers(self) -> None:
        assert self.call("hello", {"name": "Ada"})["structuredContent"] == GREETING


@pytest.fixture(scope="module")
def session() -> Iterator[RawSession]:
    with serve_http() as url:
        raw = RawSession(url)
        yield raw
        raw.http.close()


def tool_error(result: dict[str, Any]) -> dict[str, Any]:
    """The ``ToolError`` of an ``isError`` result: its ``structuredContent``, which its text
    block holds too, as JSON."""
    assert result["isError"] is True
    [block] = result["content"]
    error: dict[str, Any] = result["structuredContent"]
    assert json.loads(block["text"]) == error
    return error


def error_text(result: dict[str, Any]) -> str:
    assert result["isError"] is True
    assert "structuredContent" not in result
    [block] = result["content"]
    text: str = block["text"]
    return text


@pytest.mark.parametrize("body", [b"{not json", b"", b'{"jsonrpc": "2.0", "id": 1,'])
def test_malformed_json_is_a_parse_error(session: RawSession, body: bytes) -> None:
    status, message = session.send(body)
    assert status == 400
    assert message["error"]["code"] == -32700
    assert message["error"]["message"].startswith("Parse error")
    session.still_answers()


@pytest.mark.parametrize("body", [b"\xff\xfe binary", b'{"name": "\xe9t\xe9"}'])
def test_body_that_is_not_utf8_is_a_parse_error(session: RawSession, body: bytes) -> None:
    assert session.send(body) == (
        400,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: the request body is not UTF-8 JSON"},
        },
    )
    session.still_answers()


@pytest.mark.parametrize(
    ("body", "code", "problem"),
    [
        (
            {"id": 1, "method": "tools/list"},
            -32600,
            'Invalid request: `jsonrpc` must be "2.0", not null (or missing)',
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "method": 5},
            -32600,
            "Invalid request: `method` must be a string, not a number",
        ),
        (
            {"jsonrpc": "1.0", "id": 1, "method": "tools/list"},
            -32600,
            'Invalid request: `jsonrpc` must be "2.0", not a string',
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": ["hunter2"]},
            -32602,
            "Invalid params: `params` must be an object, not an array",
        ),
    ],
    ids=["no-jsonrpc", "method-not-a-string", "wrong-version", "params-array"],
)
@pytest.mark.parametrize("era", ERAS)
def test_a_request_of_the_wrong_shape_is_answered_with_its_id(
    session: RawSession, body: dict[str, Any], code: int, problem: str, era: str
) -> None:
    status, message = session.send(json.dumps(body).encode(), era)
    assert (status, message) == (
        status_for(era),
        {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": problem}},
    )
    session.still_answers()


@pytest.mark.parametrize("body", [[1, 2], "just a string"], ids=["array", "string"])
def test_a_body_that_is_no_message_is_refused(session: RawSession, body: object) -> None:
    status, message = session.send(json.dumps(body).encode())
    assert status == 400
    assert message["id"] is None
    assert message["error"]["message"].startswith("Validation error")
    session.still_answers()


@pytest.mark.parametrize(
    ("request_id", "kind"),
    [
        (None, "null"),
        (1.5, "a number with a fraction or an exponent"),
        (1.0, "a number with a fraction or an exponent"),
        (True, "a boolean"),
        ({"n": 1}, "an object"),
        ([1], "an array"),
        ("\ud800", "a string holding a lone UTF-16 surrogate escape"),
    ],
    ids=["null", "fraction", "one-point-zero", "boolean", "object", "array", "lone-surrogate"],
)
@pytest.mark.parametrize("method", ["tools/list", "tools/call"])
@pytest.mark.parametrize("era", ERAS)
def test_a_request_whose_id_the_protocol_forbids_is_an_invalid_request(
    session: RawSession, request_id: object, kind: str, method: str, era: str
) -> None:
    params = {"name": "hello", "arguments": {"name": "Ada"}} if method == "tools/call" else {}
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    # json.dumps sends a lone surrogate as its escape, such as \ud800.
    assert session.send(json.dumps(body).encode(), era) == (
        400,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": f"Invalid request: `id` must be a string or an integer, not {kind}",
            },
        },
    )
    session.still_answers()


def test_unknown_method_is_a_json_rpc_error(session: RawSession) -> None:
    status, message = session.send(json.dumps(session.request("no/such", {})).encode())
    assert status == 200
    assert message["error"]["code"] < 0
    session.still_answers()


def test_unknown_tool_is_an_error_result(session: RawSession) -> None:
    assert error_text(session.call("no_such_tool", {})) == "Unknown tool: no_such_tool"
    session.still_answers()


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"name": 5}, "name: Input should be a valid string"),
        ({"name": None}, "name: Input should be a valid string"),
        ({"name": ["Ada"]}, "name: Input should be a valid string"),
        ({}, "name: Field required"),
    ],
    ids=["int", "null", "list", "missing"],
)
def test_bad_arguments_are_named(
    session: RawSession, arguments: dict[str, Any], problem: str
) -> None:
    """hello has the ``ToolError`` arm: the error is one, as ``structuredContent`` and as
    the text (all that some agent frameworks hand the model)."""
    assert tool_error(session.call("hello", arguments)) == {
        "error": "invalid_argument",
        "detail": f"Invalid arguments for tool 'hello': {problem}",
    }
    session.still_answers()


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({}, "`name` must be the tool's name, a string, not null (or missing)"),
        ({"name": 5, "arguments": {}}, "`name` must be the tool's name, a string, not a number"),
        (
            {"name": "hello", "arguments": ["hunter2"]},
            "`arguments` must be an object of the tool's arguments by name, not an array",
        ),
        (
            {"name": "hello", "arguments": "hunter2"},
            "`arguments` must be an object of the tool's arguments by name, not a string",
        ),
        (["hunter2"], "`params` must be an object with `name` and `arguments`, not an array"),
    ],
    ids=["no-name", "name-number", "arguments-array", "arguments-string", "params-array"],
)
def test_a_malformed_call_says_which_field_is_wrong_without_its_value(
    session: RawSession, params: object, problem: str
) -> None:
    request = {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params}
    status, message = session.send(json.dumps(request).encode())
    assert (status, message) == (
        200,
        {
            "jsonrpc": "2.0",
            "id": 41,
            "error": {"code": -32602, "message": f"Invalid params of tools/call: {problem}"},
        },
    )
    session.still_answers()


LEVELS = "'alert', 'critical', 'debug', 'emergency', 'error', 'info', 'notice' or 'warning'"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "bad-input", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
CAPABILITIES = '_meta["io.modelcontextprotocol/clientCapabilities"]'
GREET = {"name": "hello", "arguments": {"name": "Ada"}}


@pytest.mark.parametrize(
    ("era", "method", "params", "problem"),
    [
        (LEGACY, "tools/list", {"cursor": 7}, "`cursor` must be a string, not a number"),
        (
            LEGACY,
            "tools/call",
            {**GREET, "_meta": {"progressToken": ["hunter2"]}},
            "`_meta.progressToken` must be a string or an integer, not an array",
        ),
        (LEGACY, "logging/setLevel", {"level": "hunter2"}, f"`level` must be one of {LEVELS}"),
        (LEGACY, "ping", {"_meta": "hunter2"}, "`_meta` must be an object, not a string"),
        (
            LEGACY,
            "initialize",
            {"protocolVersion": LEGACY, "capabilities": ["hunter2"], "clientInfo": {}},
            "`capabilities` must be an object, not an array; `clientInfo.name` is required; "
            "`clientInfo.version` is required",
        ),
        (
            MODERN,
            "tools/list",
            {"_meta": {**ENVELOPE, "io.modelcontextprotocol/clientInfo": "hunter2"}},
            '`_meta["io.modelcontextprotocol/clientInfo"]` must be an object, not a string',
        ),
        (
            MODERN,
            "tools/call",
            {**GREET, "_meta": {**ENVELOPE, "progressToken": ["hunter2"]}},
            "`_meta.progressToken` must be a string or an integer, not an array",
        ),
        (
            MODERN,
            "tools/list",
            {
                "_meta": {
                    **ENVELOPE,
                    "io.modelcontextprotocol/clientCapabilities": {
                        "extensions": {"x" * 65: "hunter2"}
                    },
                }
            },
            f'`{CAPABILITIES}.extensions["*"]` must be an object, not a string',
        ),
    ],
    ids=[
        "cursor",
        "progress-token",
        "log-level",
        "meta",
        "initialize",
        "2026-client-info",
        "2026-progress-token",
        "2026-long-key",
    ],
)
def test_params_that_break_their_methods_schema_are_named_without_their_values(
    session: RawSession, era: str, method: str, params: dict[str, Any], problem: str
) -> None:
    request = {"jsonrpc": "2.0", "id": 42, "method": method, "params": params}
    headers = session.headers
    if era == MODERN:  # stateless, with the revision's routing headers
        headers = {**HEADERS, "mcp-protocol-version": era, "mcp-method": method}
        headers |= {"mcp-name": "hello"} if method == "tools/call" else {}
    response = session.http.post(session.url, headers=headers, json=request)
    assert (response.status_code, response.json()) == (
        status_for(era),
        {
            "jsonrpc": "2.0",
            "id": 42,
            "error": {"code": -32602, "message": f"Invalid params of {method}: {problem}"},
        },
    )
    session.still_answers()


def test_a_malformed_call_without_a_usable_id_is_a_bad_request(session: RawSession) -> None:
    request = {"jsonrpc": "2.0", "method": "tools/call", "params": "hunter2"}
    status, message = session.send(json.dumps(request).encode())
    assert (status, message) == (
        400,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32602,
                "message": "Invalid params of tools/call: `params` must be an object with `name` "
                "and `arguments`, not a string",
            },
        },
    )


def test_a_very_large_argument_is_answered(session: RawSession) -> None:
    name = "x" * 1_000_000
    result = session.call("hello", {"name": name})
    assert result["structuredContent"] == {
        "message": f"Hello, {name}!",
        "greeting": f"Hello, {name}!",
    }
    session.still_answers()


@pytest.mark.parametrize(
    "name", ["Zoë", "名前", "🌍🚀", "tab\there", "bell\u0007", "nul\u0000byte", "rtl\u202eevil"]
)
def test_unicode_and_control_characters_round_trip(session: RawSession, name: str) -> None:
    result = session.call("hello", {"name": name})
    greeting = f"Hello, {name.strip()}!"
    assert result["structuredContent"] == {"message": greeting, "greeting": greeting}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    session.still_answers()


def call_with_arguments(session: RawSession, arguments: str) -> bytes:
    """A call of ``hello`` whose arguments are the JSON text ``arguments``, sent as written."""
    session.next_id += 1
    return (
        f'{{"jsonrpc": "2.0", "id": {session.next_id}, "method": "tools/call", '
        f'"params": {{"name": "hello", "arguments": {arguments}}}}}'
    ).encode()


def too_deep(request_id: int | None) -> dict[str, Any]:
    message = "Invalid request: arrays and objects are nested too deeply; the limit is 64 levels"
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": message}}


@pytest.mark.parametrize("arrays", [62, 900])
@pytest.mark.parametrize("era", ERAS)
def test_json_nested_deeper_than_the_limit_is_refused(
    session: RawSession, arrays: int, era: str
) -> None:
    # The call's own objects nest 3 deep: the name's arrays take it past MCP_MAX_JSON_DEPTH (64).
    name = "[" * arrays + "]" * arrays
    body = call_with_arguments(session, f'{{"name": {name}}}')
    assert session.send(body, era) == (status_for(era), too_deep(session.next_id))
    session.still_answers()


def test_json_too_deep_to_read_its_id_is_refused_without_one(session: RawSession) -> None:
    name = "[" * 100_000 + "]" * 100_000
    body = call_with_arguments(session, f'{{"name": {name}}}')
    assert session.send(body) == (400, too_deep(None))
    session.still_answers()


def test_json_nested_as_deep_as_the_limit_reaches_the_tool(session: RawSession) -> None:
    name = "[" * 61 + "]" * 61
    status, message = session.send(call_with_arguments(session, f'{{"name": {name}}}'))
    assert status == 200
    assert tool_error(message["result"]) == {
        "error": "invalid_argument",
        "detail": "Invalid arguments for tool 'hello': name: Input should be a valid string",
    }


SURROGATE = "a lone UTF-16 surrogate escape (such as \\ud800 without its pair); send valid Unicode"


@pytest.mark.parametrize(
    ("arguments", "place"),
    [
        (r'{"name": "\ud800"}', "`arguments.name` holds"),
        (r'{"name": "\uDFFF"}', "`arguments.name` holds"),
        (r'{"name": "a\udc00\ud800b"}', "`arguments.name` holds"),
        (r'{"name": "\ud83cA"}', "`arguments.name` holds"),
        (r'{"name": "Ada", "\ud800": 1}', "a key in `arguments` holds"),
        (r'{"name": "Ada", "tags": [["x", "\udfff"]]}', "`arguments.tags.0.1` holds"),
    ],
    ids=["high", "low", "reversed-pair", "high-then-letter", "in-a-key", "in-a-list"],
)
@pytest.mark.parametrize("era", ERAS)
def test_a_lone_surrogate_escape_is_answered_with_the_requests_id(
    session: RawSession, arguments: str, place: str, era: str
) -> None:
    body = call_with_arguments(session, arguments)
    assert session.send(body, era) == (
        status_for(era),
        {
            "jsonrpc": "2.0",
            "id": session.next_id,
            "error": {"code": -32602, "message": f"Invalid params: {place} {SURROGATE}"},
        },
    )
    session.still_answers()


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        (
            r'{"jsonrpc": "2.0", "id": "call-7", "method": "tools/\ud800"}',
            ("call-7", -32600, f"Invalid request: `method` holds {SURROGATE}"),
        ),
        (
            r'{"jsonrpc": "2.0", "method": "notifications/\ud800"}',
            (None, -32600, f"Invalid request: `method` holds {SURROGATE}"),
        ),
        (
            r'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"\ud800": 1}}',
            (None, -32602, f"Invalid params: a key in `params` holds {SURROGATE}"),
        ),
    ],
    ids=["in-a-method", "in-a-notification", "in-a-notifications-key"],
)
def test_a_lone_surrogate_outside_the_arguments_is_named(
    session: RawSession, body: str, answer: tuple[str | None, int, str]
) -> None:
    request_id, code, text = answer
    assert session.send(body.encode()) == (
        200 if request_id is not None else 400,
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}},
    )
    session.still_answers()


@pytest.mark.parametrize(
    ("arguments", "name"),
    [(r'{"name": "\ud83c\udf0d"}', "🌍"), (r'{"name": "\\ud800"}', "\\ud800")],
    ids=["pair", "escaped-backslash"],
)
def test_surrogate_pairs_and_escaped_backslashes_are_answered(
    session: RawSession, arguments: str, name: str
) -> None:
    status, message = session.send(call_with_arguments(session, arguments))
    assert status == 200
    greeting = f"Hello, {name}!"
    assert message["result"]["structuredContent"] == {"message": greeting, "greeting": greeting}


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "OPTIONS"])
def test_stateless_endpoint_takes_post_only(session: RawSession, method: str) -> None:
    response = session.http.request(method, session.url, headers=session.headers, timeout=10)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": f"Method not allowed: {method}; this stateless MCP endpoint takes POST "
            "(it has no GET stream)",
        },
    }
    session.still_answers()


def test_stateful_endpoint_keeps_its_get_stream() -> None:
    with serve_http(env={"MCP_STATELESS": "false"}) as url:
        raw = RawSession(url)
        with raw.http.stream("GET", url, headers=raw.headers, timeout=10) as stream:
            status, content_type = stream.status_code, stream.headers["content-type"]
        raw.http.close()
    assert (status, content_type) == (200, "text/event-stream")
