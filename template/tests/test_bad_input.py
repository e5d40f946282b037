"""Bad input over streamable HTTP: each gets a clear JSON-RPC or isError answer, and the
server keeps answering the next request correctly."""

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcp_runtime.testing import serve_http

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
GREETING = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}


class RawSession:
    """An initialized MCP session spoken as raw HTTP, so that any bytes can be sent."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=60)
        self.headers = dict(HEADERS)
        self.next_id = 0
        response = self.http.post(
            url,
            headers=self.headers,
            json=self.request(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bad-input", "version": "1"},
                },
            ),
        )
        assert response.status_code == 200, response.text
        if "mcp-session-id" in response.headers:  # stateful serving (MCP_STATELESS=false)
            self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = "2025-06-18"
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.http.post(url, headers=self.headers, json=initialized).status_code == 202

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def send(self, body: bytes) -> tuple[int, dict[str, Any]]:
        """POST ``body``; the status and the one JSON-RPC message answered."""
        response = self.http.post(self.url, headers=self.headers, content=body)
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
    "body",
    [
        {"id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "1.0", "id": 1, "method": "tools/list"},
        [1, 2],
        "just a string",
    ],
    ids=["no-jsonrpc", "method-not-a-string", "wrong-version", "array", "string"],
)
def test_wrong_json_rpc_shape_is_refused(session: RawSession, body: object) -> None:
    status, message = session.send(json.dumps(body).encode())
    assert status == 400
    assert message["error"]["message"].startswith("Validation error")
    session.still_answers()


def test_unknown_method_is_a_json_rpc_error(session: RawSession) -> None:
    status, message = session.send(json.dumps(session.request("no/such", {})).encode())
    assert status == 200
    assert message["error"]["code"] < 0
    session.still_answers()


def test_call_without_a_tool_name_is_a_json_rpc_error(session: RawSession) -> None:
    status, message = session.send(json.dumps(session.request("tools/call", {})).encode())
    assert status == 200
    assert message["error"]["code"] == -32602
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
    assert error_text(session.call("hello", arguments)) == (
        f"Invalid arguments for tool 'hello': {problem}"
    )
    session.still_answers()


def test_arguments_that_are_not_an_object_are_refused(session: RawSession) -> None:
    status, message = session.send(
        json.dumps(session.request("tools/call", {"name": "hello", "arguments": [1]})).encode()
    )
    assert status == 200
    assert message["error"]["code"] == -32602
    session.still_answers()


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
