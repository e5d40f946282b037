"""Whatever a tool raises, its call gets exactly one answer and the server keeps serving,
in both protocol eras.

An unexpected exception is masked: the answer names the tool and an error id, never
the exception's text; a ``ToolException`` message is sent as written.
"""

import pytest
from harness import MASKED, Server, error_text, toolset

UNEXPECTED = [
    "system_exit",
    "keyboard_interrupt",
    "base_exception",
    "generator_exit",
    "unprintable",
    "cancelled",
    "runtime_secret",
]


@pytest.mark.parametrize("kind", UNEXPECTED)
@pytest.mark.parametrize("tool", ["raise_sync", "raise_async"])
def test_an_unexpected_exception_gets_one_masked_answer(
    server: Server, tool: str, kind: str, era: str
) -> None:
    answer = server.call(tool, {"kind": kind}, era=era)
    assert answer.status == 200, answer
    assert answer.body.strip(), "an empty body"
    text = error_text(answer.result)
    match = MASKED.fullmatch(text)
    assert match, f"not the masked message: {text!r}"
    assert match["tool"] == tool
    server.assert_alive()


@pytest.mark.parametrize("tool", ["raise_sync", "raise_async"])
def test_a_tool_exception_message_passes_through(server: Server, tool: str, era: str) -> None:
    answer = server.call(tool, {"kind": "tool_exception"}, era=era)
    assert error_text(answer.result) == toolset().REFUSAL
    server.assert_alive()
