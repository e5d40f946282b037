"""The optional post-render task: run with --trust, skipped otherwise."""

import shutil
import subprocess
import sys
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


def test_render_without_tasks_leaves_them_undone(rendered: Render) -> None:
    service = rendered()
    assert not (service / ".git").exists()
    assert not (service / ".venv").exists()
