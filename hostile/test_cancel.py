"""Cancels from clients that break the rules: malformed notifications, other callers' calls.

A running call of the suite's caller (JSON-RPC id 1) must survive every malformed
``notifications/cancelled`` and a well-formed one sent with another caller's token,
and stop for its own caller's cancel. Every notification is answered, never with a 500.
"""

import json
import threading
import time
from typing import Any

import httpx2
import pytest
from harness import Answer, Server

CALL_SECONDS = 3.0
RUNNING = 'mcp_tool_calls_in_flight{tool="sleep_async"} 1.0'


def cancel(params: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


MALFORMED: dict[str, object] = {
    "no params": {"jsonrpc": "2.0", "method": "notifications/cancelled"},
    "params an array": cancel([1]),
    "params a string": cancel("1"),
    "no requestId": cancel({"reason": "because"}),
    "requestId an object": cancel({"requestId": {"$ne": None}}),
    "requestId an array": cancel({"requestId": [1]}),
    "requestId a boolean": cancel({"requestId": True}),
    "requestId null": cancel({"requestId": None}),
    "requestId a fraction": cancel({"requestId": 1.5}),
    "requestId a 400-digit number": cancel({"requestId": 10**400}),
    "requestId 100 KB of text": cancel({"requestId": "1" * 100_000}),
    "reason an object": cancel({"requestId": 999, "reason": {"nested": [1, 2]}}),
    "a batch of cancels": [cancel({"requestId": 1}), cancel({"requestId": 1})],
    "cancels in a request's clothing": {**cancel({"requestId": 1}), "id": 7},
}


class Running:
    """``sleep_async`` called with JSON-RPC id 1 in a thread, once it runs; then its answer."""

    def __init__(self, server: Server) -> None:
        self.answer: Answer | None = None
        self.mark = server.mark()
        self.thread = threading.Thread(target=self._call, args=(server,))
        self.thread.start()
        deadline = time.monotonic() + 5
        while RUNNING not in httpx2.get(f"{server.base}/metrics", timeout=5).text:
            assert time.monotonic() < deadline, "the call did not start"
            time.sleep(0.05)

    def _call(self, server: Server) -> None:
        self.answer = server.call("sleep_async", {"seconds": CALL_SECONDS}, seconds=30)

    def result(self) -> dict[str, Any]:
        self.thread.join(timeout=30)
        assert self.answer is not None
        result: dict[str, Any] = self.answer.result
        return result


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_cancel_is_answered_and_stops_nothing(server: Server, body: object) -> None:
    running = Running(server)
    answer = server.post(json.dumps(body).encode())
    # 202 (a notification), 400, or 200 with a JSON-RPC error (a request: it has an id).
    assert answer.status in (200, 202, 400), (answer.status, answer.body[:300])
    if answer.status == 200:
        assert "error" in answer.message, answer.message
    assert b"Traceback" not in answer.body
    result = running.result()
    assert result.get("isError") is not True, result
    assert result["structuredContent"] == {"message": f"slept {CALL_SECONDS:g} s"}
    assert "Traceback" not in server.log_since(running.mark)
    server.assert_alive()


def test_another_callers_cancel_stops_nothing_and_the_callers_own_does(server: Server) -> None:
    mallory = server.issuer.token(subject="mallory", audience=server.url, expires_in=3600)
    running = Running(server)
    stranger = server.post(cancel({"requestId": 1}), headers={"authorization": f"Bearer {mallory}"})
    assert stranger.status == 202
    result = running.result()
    assert result["structuredContent"] == {"message": f"slept {CALL_SECONDS:g} s"}

    running = Running(server)
    own = server.post(cancel({"requestId": 1, "reason": "the user pressed stop"}))
    assert own.status == 202
    result = running.result()
    assert result["isError"] is True
    assert result["content"][0]["text"] == "Tool 'sleep_async' was cancelled by the client."
    assert server.wait_for_call_lines(running.mark, "sleep_async")[-1] == "cancelled"
    assert "the user pressed stop" not in server.log_since(running.mark)
    server.assert_alive()
