"""The log an operator reads: one line per call, and no noise from clients that leave.

Every call leaves exactly one ``tool=NAME outcome=...`` line; a call cut short by
its client leaving leaves ``outcome=cancelled``; a client that leaves mid-body
leaves no traceback and no ERROR.
"""

import time
from typing import Any

import httpx2
import pytest
from harness import Launcher, Server, Slot, raw_connection

TIMEOUT = 1.0


@pytest.fixture(scope="module")
def slot(launch: Launcher) -> Slot:
    return Slot(launch, MCP_CALL_TIMEOUT=str(TIMEOUT))


CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("hello", {"name": "Ada"}, "ok"),
    ("echo", {"text": " "}, "tool_error"),
    ("refuse", {}, "tool_error"),
    ("bounded", {"count": 11}, "bad_arguments"),
    ("bounded", {}, "bad_arguments"),
    ("scores", {}, "contract_violation"),
    ("lone_surrogate", {}, "contract_violation"),
    ("moment", {"aware": False}, "contract_violation"),
    ("raise_sync", {"kind": "runtime_secret"}, "exception"),
    ("raise_sync", {"kind": "system_exit"}, "exception"),
    ("raise_sync", {"kind": "generator_exit"}, "exception"),
    ("raise_async", {"kind": "keyboard_interrupt"}, "exception"),
    ("raise_async", {"kind": "generator_exit"}, "exception"),
    ("raise_async", {"kind": "cancelled"}, "exception"),
    ("raise_async", {"kind": "unprintable"}, "exception"),
    ("sleep_sync", {"seconds": TIMEOUT * 3}, "timeout"),
    ("sleep_async", {"seconds": TIMEOUT * 3}, "timeout"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "outcome"),
    CALLS,
    ids=[f"{tool}-{outcome}-{i}" for i, (tool, _, outcome) in enumerate(CALLS)],
)
def test_every_call_leaves_one_line(
    server: Server, tool: str, arguments: dict[str, Any], outcome: str
) -> None:
    mark = server.mark()
    server.call(tool, arguments)
    assert server.wait_for_call_lines(mark, tool) == [outcome]
    server.assert_alive()


@pytest.mark.parametrize("tool", ["sleep_async", "sleep_sync"])
def test_a_call_cut_short_by_its_client_leaves_one_cancelled_line(
    server: Server, tool: str
) -> None:
    mark = server.mark()
    request = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {"seconds": TIMEOUT * 0.8}},
    }
    with (
        httpx2.Client(timeout=httpx2.Timeout(5, read=TIMEOUT / 4)) as client,
        pytest.raises(httpx2.ReadTimeout),
    ):
        client.post(server.url, json=request, headers=server.headers)
    # The connection is closed now; the tool would have finished within its deadline.
    assert server.wait_for_call_lines(mark, tool, seconds=TIMEOUT * 3) == ["cancelled"]
    server.assert_alive()


def test_a_client_that_leaves_mid_body_leaves_no_error(server: Server) -> None:
    mark = server.mark()
    head = (
        "POST /mcp HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{server.port}\r\n"
        "Content-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
        f"Authorization: Bearer {server.token}\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    with raw_connection(server) as connection:
        connection.sendall(head.encode() + b'{"jsonrpc"')
    server.assert_alive()
    time.sleep(0.5)  # what the server logs about it, it logs at once
    log = server.log_since(mark)
    assert "Traceback" not in log, log
    assert " ERROR " not in log, log
