"""Payloads no client should send and results no tool should return.

A lone surrogate in a request is a JSON-RPC error answering it by its id, naming where
it is; a request whose id the protocol forbids is an invalid request, never taken for a
notification; 1,000 levels of nesting is a JSON-RPC error with a 4xx status; a lone
surrogate, a naive datetime or a value JSON cannot carry in a result is a contract
violation, naming its key; a deep recursive result is sent valid or refused, never lost.
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


# Each era as a raw request speaks it: a refusal of a request with a usable id is a
# JSON-RPC answer to it, 200 in the initialize era and 400 from 2026-07-28.
ERAS = {"2025-06-18": ({}, 200), "2026-07-28": ({"mcp-protocol-version": "2026-07-28"}, 400)}
SURROGATE = "a lone UTF-16 surrogate escape (such as \\ud800 without its pair); send valid Unicode"


@pytest.mark.parametrize(
    ("arguments", "place"),
    [
        (r'{"text": "\ud800"}', "`arguments.text` holds"),
        (r'{"text": "a\udfffb"}', "`arguments.text` holds"),
        (r'{"\ud800": "key"}', "a key in `arguments` holds"),
    ],
    ids=["high", "low", "key"],
)
@pytest.mark.parametrize("era", ERAS)
def test_a_lone_surrogate_in_a_request_is_answered_with_its_id(
    server: Server, arguments: str, place: str, era: str
) -> None:
    headers, status = ERAS[era]
    mark = server.mark()
    answer = server.post(call_body(arguments), headers=headers)
    assert (answer.status, answer.message) == (
        status,
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32602, "message": f"Invalid params: {place} {SURROGATE}"},
        },
    )
    assert server.call_lines(mark, "echo") == []  # the tool never ran
    server.assert_alive()


@pytest.mark.parametrize(
    ("request_id", "kind"),
    [
        (None, "null"),
        (1.5, "a number with a fraction or an exponent"),
        (False, "a boolean"),
        ({"n": 7}, "an object"),
        ([7], "an array"),
    ],
    ids=["null", "fraction", "boolean", "object", "array"],
)
@pytest.mark.parametrize("era", ERAS)
def test_a_request_whose_id_the_protocol_forbids_is_answered(
    server: Server, request_id: object, kind: str, era: str
) -> None:
    headers, _ = ERAS[era]
    mark = server.mark()
    params = {"name": "echo", "arguments": {"text": "hi"}}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    answer = server.post(body, headers=headers)
    assert (answer.status, answer.message) == (
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
    assert server.call_lines(mark, "echo") == []
    server.assert_alive()


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        ("nan", "anything.*.*: NaN or infinity, which JSON cannot carry"),
        ("bytes", "blob: bytes that are not UTF-8 text"),
    ],
)
def test_a_value_json_cannot_carry_is_named_by_its_key_never_shown(
    server: Server, kind: str, problem: str, era: str
) -> None:
    mark = server.mark()
    answer = server.call("unserializable", {"kind": kind}, era=era)
    assert error_text(answer.result) == (
        f"{violation_prefix('unserializable')} `LooseResult`: {problem}"
    )
    assert "4471" not in answer.body.decode() + server.log_since(mark)
    server.assert_alive()


def test_a_lone_surrogate_in_a_result_is_a_contract_violation(server: Server, era: str) -> None:
    answer = server.call("lone_surrogate", {}, era=era)
    answer.body.decode("utf-8")  # what is sent is UTF-8
    assert error_text(answer.result).startswith(violation_prefix("lone_surrogate"))
    server.assert_alive()


@pytest.mark.parametrize("levels", [126, 1000])
def test_a_deep_recursive_result_is_sent_valid_or_refused(
    server: Server, levels: int, era: str
) -> None:
    result = server.call("chain", {"levels": levels}, era=era).result  # validated if structured
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
    server: Server, era: str
) -> None:
    result = await client_call(server, "moment", {"aware": False}, era=era)
    assert error_text(result).startswith(violation_prefix("moment"))
    server.assert_alive()


async def test_an_aware_datetime_is_sent_and_checks_as_date_time(server: Server, era: str) -> None:
    result = await client_call(server, "moment", {"aware": True}, era=era)  # formats checked
    assert result["isError"] is False, result
    assert result["structuredContent"] == {"message": "a moment", "at": "2024-05-17T12:30:00Z"}
    server.assert_alive()
