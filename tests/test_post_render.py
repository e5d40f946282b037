"""The optional post-render task: run with --trust, skipped otherwise."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import Render
from tests.rendering import SERVICE_ENVIRONMENT, TEMPLATE


def test_trusted_render_makes_a_git_repository_with_an_environment(tmp_path: Path) -> None:
    service = tmp_path / "trusted"
    command = [sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--quiet"]
    command += ["--vcs-ref=HEAD", str(TEMPLATE), str(service)]
    subprocess.run(command, env=SERVICE_ENVIRONMENT, check=True, capture_output=True)
    assert (service / ".git").is_dir()
    assert (service / ".venv").is_dir() == (shutil.which("uv") is not None)
    # CI installs with `uv sync --locked`: the lock is there to commit with the first commit.
    assert (service / "uv.lock").is_file() == (shutil.which("uv") is not None)
    if shutil.which("uv") is not None:
        serves_as_its_quick_start_says(service)


def quick_start(service: Path) -> list[str]:
    """The commands of the README's quick start, as written (comments dropped)."""
    readme = (service / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def serves_as_its_quick_start_says(service: Path) -> None:
    """The quick start's serve command, pasted into a shell in a default render, serves.

    Only the port differs (``MCP_PORT``, so that tests never take port 8000); the
    command's own text is run as written.
    """
    [serve] = [command for command in quick_start(service) if command.endswith(" serve")]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**SERVICE_ENVIRONMENT, "MCP_PORT": str(port)}
    environment.pop("MCP_AUTH", None)
    process = subprocess.Popen(
        ["bash", "-c", serve],
        cwd=service,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        ready = wait_until_ready(f"http://127.0.0.1:{port}/readyz", process)
    finally:
        with contextlib.suppress(ProcessLookupError):  # it stopped by itself
            os.killpg(process.pid, signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    assert ready, f"`{serve}` did not serve:\n{output.decode(errors='replace')}"
    assert process.returncode == 0, output.decode(errors="replace")


def wait_until_ready(url: str, process: "subprocess.Popen[bytes]") -> bool:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if json.load(answer) == {"status": "ready", "tools": 2}:
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def test_render_without_tasks_leaves_them_undone(rendered: Render) -> None:
    service = rendered()
    assert not (service / ".git").exists()
    assert not (service / ".venv").exists()
