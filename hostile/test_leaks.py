"""Nothing secret leaves through an answer, and argument values stay out of the log, in
both protocol eras.

An unexpected exception answers a generic message with an error id, and the log
keeps the details under that id (MCP_MASK_ERRORS=false sends the text instead);
a contract violation never shows a dict's keys, which are data; a malformed call
is answered clearly and its values appear nowhere in the log, even at DEBUG.
"""

import json
from typing import Any

import pytest
from harness import (
    MASKED,
    Launcher,
    Server,
    Slot,
    client_call,
    error_text,
    toolset,
    violation_prefix,
)

pytestmark = pytest.mark.anyio

SECRET = "hunter2"
SECRET_KEY = "acct-4471-secret"


@pytest.fixture(scope="module")
def slot(launch: Launcher) -> Slot:
    return Slot(launch, MCP_LOG_LEVEL="DEBUG", MCP_CALL_TIMEOUT="5")


@pytest.mark.parametrize("tool", ["raise_sync", "raise_async"])
async def test_an_unexpected_error_is_masked_and_logged_under_its_id(
    server: Server, tool: str, era: str
) -> None:
    mark = server.mark()
    text = error_text(await client_call(server, tool, {"kind": "runtime_secret"}, era=era))
    assert SECRET not in text
    match = MASKED.fullmatch(text)
    assert match, f"not the masked message: {text!r}"
    assert match["tool"] == tool
    log = server.log_since(mark)
    assert match["id"] in log
    after_id = log[log.index(match["id"]) :]
    assert "Traceback" in after_id, log
    assert "RuntimeError" in after_id, log
    server.assert_alive()


@pytest.mark.parametrize(
    ("tool", "arguments"), [("refuse", {}), ("raise_sync", {"kind": "tool_exception"})]
)
async def test_a_tool_exception_message_is_sent_as_written(
    server: Server, tool: str, arguments: dict[str, Any]
) -> None:
    text = error_text(await client_call(server, tool, arguments))
    assert text == toolset().REFUSAL
    server.assert_alive()


async def test_unmasked_errors_send_the_exception_text(launch: Launcher) -> None:
    server = launch(MCP_MASK_ERRORS="false", MCP_CALL_TIMEOUT="5")
    text = error_text(await client_call(server, "raise_sync", {"kind": "runtime_secret"}))
    assert f"db password={SECRET}" in text
    server.assert_alive()


async def test_a_violation_under_a_dict_key_does_not_show_the_key(server: Server, era: str) -> None:
    mark = server.mark()
    text = error_text(await client_call(server, "scores", {}, era=era))
    assert text.startswith(violation_prefix("scores"))
    assert SECRET_KEY not in text
    server.assert_alive()
    assert SECRET_KEY not in server.log_since(mark)


async def test_a_bad_argument_value_stays_out_of_answer_and_log(server: Server, era: str) -> None:
    mark = server.mark()
    text = error_text(await client_call(server, "bounded", {"count": SECRET}, era=era))
    assert "count" in text
    assert SECRET not in text
    server.assert_alive()
    assert SECRET not in server.log_since(mark)


MALFORMED: dict[str, tuple[object, str]] = {
    "arguments-string": ({"name": "hello", "arguments": SECRET}, "arguments"),
    "arguments-list": ({"name": "hello", "arguments": [SECRET]}, "arguments"),
    "arguments-dict-key": ({"name": "hello", "arguments": {"name": {SECRET: 1}}}, "name"),
    "params-list": ([SECRET], "params"),
}


@pytest.mark.parametrize(("params", "named"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_call_is_refused_clearly_without_logging_its_values(
    server: Server, params: object, named: str
) -> None:
    mark = server.mark()
    request = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}
    answer = server.post(json.dumps(request).encode())
    message = answer.message
    if "error" in message:
        said = message["error"]["message"] + json.dumps(message["error"].get("data", ""))
    else:  # an isError result: hello's ToolError (invalid_argument), whose text is its JSON
        result = message["result"]
        assert result.get("isError") is True, result
        [block] = result["content"]
        said = block["text"]
    server.assert_alive()
    problems = []
    if named not in said:
        problems.append(f"the answer does not say what was wrong with `{named}`: {said}")
    if SECRET in answer.body.decode():
        problems.append(f"the answer repeats the value: {said}")
    if SECRET in server.log_since(mark):
        problems.append(f"the log holds the value:\n{server.log_since(mark)}")
    assert not problems, "\n".join(problems)
