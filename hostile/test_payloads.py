"""Payloads no client should send and results no tool should return.

A lone surrogate or 1,000 levels of nesting in a request is a JSON-RPC error with a
4xx status; a lone surrogate or a naive datetime in a result is a contract violation;
a deep recursive result is sent valid or refused, never lost.
"""

from typing import Any

import pytest
from harness import Server, client_call, error_text, violation_prefix
from jsonschema import Draft202012Validator

pytestmark = pytest.mark.anyio


def call_body(arguments: str) -> bytes:
    """A ``tools/call`` of ``echo`` whose arguments are the JSON text ``arguments``."""
    return (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
        f'"params": {{"name": "echo", "arguments": {arguments}}}}}'
    ).encode()


def test_the_format_checker_checks_date_time() -> None:
    checker = Draft202012Validator.FORMAT_CHECKER
    assert checker.conforms("2024-05-17T12:30:00Z", "date-time")
    assert not checker.conforms("2024-05-17T12:30:00", "date-time")


@pytest.mark.parametrize(
    "arguments",
    [r'{"text": "\ud800"}', r'{"text": "a\udfffb"}', r'{"\ud800": "key"}'],
    ids=["high", "low", "key"],
)
def test_a_lone_surrogate_in_a_request_is_a_parse_error(server: Server, arguments: str) -> None:
    answer = server.post(call_body(arguments))
    assert answer.status == 400, answer
    assert answer.message["error"]["code"] == -32700, answer.message
    server.assert_alive()


def test_a_lone_surrogate_in_a_result_is_a_contract_violation(server: Server) -> None:
    answer = server.call("lone_surrogate", {})
    answer.body.decode("utf-8")  # what is sent is UTF-8
    assert error_text(answer.result).startswith(violation_prefix("lone_surrogate"))
    server.assert_alive()


@pytest.mark.parametrize("levels", [126, 1000])
def test_a_deep_recursive_result_is_sent_valid_or_refused(server: Server, levels: int) -> None:
    result = server.call("chain", {"levels": levels}).result  # validated when structured
    if "structuredContent" in result:
        assert result["isError"] is False, result
    else:
        assert error_text(result).startswith(violation_prefix("chain"))
    server.assert_alive()


@pytest.mark.parametrize("where", ["arguments", "body"])
def test_a_request_nested_1000_levels_deep_is_refused(server: Server, where: str) -> None:
    mark = server.mark()
    nested = "[" * 1000 + "]" * 1000
    body = call_body(f'{{"text": {nested}}}') if where == "arguments" else nested.encode()
    answer = server.post(body)
    assert 400 <= answer.status < 500, answer
    error: dict[str, Any] = answer.message["error"]
    assert error["code"] in (-32700, -32600, -32602), error
    server.assert_alive()
    assert "Traceback" not in server.log_since(mark)


async def test_a_naive_datetime_for_aware_datetime_is_a_contract_violation(
    server: Server,
) -> None:
    result = await client_call(server, "moment", {"aware": False})
    assert error_text(result).startswith(violation_prefix("moment"))
    server.assert_alive()


async def test_an_aware_datetime_is_sent_and_checks_as_date_time(server: Server) -> None:
    result = await client_call(server, "moment", {"aware": True})  # validated, formats too
    assert result["isError"] is False, result
    assert result["structuredContent"] == {"message": "a moment", "at": "2024-05-17T12:30:00Z"}
    server.assert_alive()
