"""Loopback ports for the clients check's servers: a free one, and waiting for one to
listen."""

import socket
import subprocess
import time
from typing import Any


def free_port() -> int:
    """A loopback port no process listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def listening(port: int, seconds: float, process: "subprocess.Popen[Any] | None" = None) -> bool:
    """Whether something listens on the loopback ``port`` within ``seconds`` (and before
    ``process``, when given, exits)."""
    deadline = time.monotonic() + seconds
    while (process is None or process.poll() is None) and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False
