"""HTTP limits: no GET stream in stateless mode, slow clients timed out, connections capped.

MCP_READ_TIMEOUT=0.5 and MCP_MAX_CONNECTIONS=4.
"""

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest
from harness import PROTOCOL, Launcher, Server, Slot, raw_connection

READ_TIMEOUT = 0.5
MAX_CONNECTIONS = 4


@pytest.fixture(scope="module")
def slot(launch: Launcher) -> Slot:
    return Slot(
        launch,
        MCP_READ_TIMEOUT=str(READ_TIMEOUT),
        MCP_MAX_CONNECTIONS=str(MAX_CONNECTIONS),
        MCP_CALL_TIMEOUT="5",
    )


def test_get_on_the_mcp_endpoint_is_405_when_stateless(server: Server) -> None:
    headers = {
        "accept": "text/event-stream",
        "mcp-protocol-version": PROTOCOL,
        **server.credentials,
    }
    with (
        httpx2.Client(timeout=1) as client,
        client.stream("GET", server.url, headers=headers) as got,
    ):
        assert got.status_code == 405, got.headers
    server.assert_alive()


def test_a_half_sent_request_head_is_closed_after_the_read_timeout(server: Server) -> None:
    with raw_connection(server) as connection:
        connection.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n".encode())
        connection.settimeout(READ_TIMEOUT * 4)
        started = time.monotonic()
        try:
            while connection.recv(4096):
                pass  # a 408 answer may come first; the connection must close
        except TimeoutError:
            pytest.fail(f"the connection was still open {time.monotonic() - started:.1f} s later")
        except ConnectionResetError:
            pass
    server.assert_alive()


def test_connections_past_the_limit_are_answered_503(server: Server) -> None:
    def slow_call() -> int:
        return server.call("sleep_async", {"seconds": 2}).status

    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with ThreadPoolExecutor(MAX_CONNECTIONS) as pool:
        held = [pool.submit(slow_call) for _ in range(MAX_CONNECTIONS)]
        time.sleep(0.5)  # the calls are in flight, each on a connection of its own
        try:
            extra = httpx2.post(
                server.url, json=request, headers=server.headers, timeout=5
            ).status_code
        except httpx2.HTTPError as exc:
            pytest.fail(f"the connection past the limit got no answer: {exc!r}")
        statuses = [future.result() for future in held]
    assert extra == 503
    assert statuses == [200] * MAX_CONNECTIONS
    server.assert_alive()


def test_idle_connections_do_not_count_forever(server: Server) -> None:
    """Connections that opened and sent nothing are closed, so they free their place."""
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(READ_TIMEOUT * 3)
        server.assert_alive()
    finally:
        for connection in idle:
            connection.close()
