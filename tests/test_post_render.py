"""The optional post-render task: run with --trust, skipped otherwise."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import Render
from tests.rendering import SERVICE_ENVIRONMENT, TEMPLATE


def test_the_quick_starts_of_both_readmes_work_as_written(tmp_path: Path) -> None:
    """This repository's "On a fresh machine" line renders a service and serves it; then
    each command of that service's own quick start runs, as written.

    The line is run in a clone without tags, so that ``copier copy`` renders this commit
    (with tags it renders the latest release); its first step, ``pip install copier uv``,
    is what this environment already has. Only the port differs (``MCP_PORT``).
    """
    if shutil.which("uv") is None:
        pytest.skip("the quick starts run uv: nox -s template_tests has it")
    template = tmp_path / "template"
    clone = ["git", "clone", "--quiet", "--no-tags", str(TEMPLATE), str(template)]
    subprocess.run(clone, check=True, capture_output=True)
    install, render_and_serve = fresh_machine_line(template / "README.md").split(" && ", 1)
    assert install == "python -m pip install copier uv"
    printed = serves(render_and_serve, template, seconds=300)  # it renders and syncs first
    service = tmp_path / "my-mcp-service"
    # The closing message lists only what the post-render task left to do.
    next_steps = printed.split("\nNext steps:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split("  #", 1)[0].strip() for line in next_steps[:3]] == [
        "cd ../my-mcp-service",
        "uv run pytest",
        'git add --all && git commit -m "Render the service"',
    ], next_steps
    assert (service / ".git").is_dir()
    # CI installs with `uv sync --locked`: the lock is there to commit with the first commit.
    assert (service / "uv.lock").is_file()
    for command in quick_start(service):
        if command.endswith(" serve"):
            serves(command, service)
            continue
        done = subprocess.run(
            ["bash", "-c", command], cwd=service, env=SERVICE_ENVIRONMENT, capture_output=True
        )
        output = (done.stdout + done.stderr).decode(errors="replace")
        assert done.returncode == 0, f"`{command}` failed:\n{output}"


def fresh_machine_line(readme: Path) -> str:
    """The command of the README's "On a fresh machine" that renders and serves a service."""
    section = readme.read_text().split("## On a fresh machine", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    [line] = block.splitlines()
    return line


def quick_start(service: Path) -> list[str]:
    """The commands of the README's quick start, as written (comments dropped)."""
    readme = (service / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def serves(command: str, folder: Path, seconds: float = 60) -> str:
    """``command``, pasted into a shell in ``folder``, serves the default render's tools
    until it is stopped, and then exits 0; what it printed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**SERVICE_ENVIRONMENT, "MCP_PORT": str(port)}
    environment.pop("MCP_AUTH", None)
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=folder,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        ready = wait_until_ready(f"http://127.0.0.1:{port}/readyz", process, seconds)
    finally:
        with contextlib.suppress(ProcessLookupError):  # it stopped by itself
            os.killpg(process.pid, signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    printed = output.decode(errors="replace")
    assert ready, f"`{command}` did not serve:\n{printed}"
    assert process.returncode == 0, printed
    return printed


def test_ci_runs_the_readmes_test_command() -> None:
    readme = (TEMPLATE / "README.md").read_text()
    section = readme.split("## On a fresh machine", 1)[1]
    command = section.split("```bash\n", 2)[2].split("```", 1)[0].strip()
    assert (TEMPLATE / ".ci/run").read_text().splitlines()[-1] == command


def wait_until_ready(url: str, process: "subprocess.Popen[bytes]", seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                # hello, whoami, prepare_report, retrieve_records and the runtime's read_data
                if json.load(answer) == {"status": "ready", "tools": 5}:
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def test_render_without_tasks_leaves_them_undone(rendered: Render) -> None:
    service = rendered()
    assert not (service / ".git").exists()
    assert not (service / ".venv").exists()
