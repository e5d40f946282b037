"""The optional post-render task: run with --trust, skipped otherwise."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import Render
from tests.rendering import TEMPLATE

# What a tool runner (nox, an activated venv) sets to point uv at its own environment.
FOREIGN_ENVIRONMENT = ("UV_PROJECT_ENVIRONMENT", "UV_PYTHON", "VIRTUAL_ENV")


def test_trusted_render_makes_a_git_repository_with_an_environment(tmp_path: Path) -> None:
    service = tmp_path / "trusted"
    environment = {k: v for k, v in os.environ.items() if k not in FOREIGN_ENVIRONMENT}
    command = [sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--quiet"]
    command += ["--vcs-ref=HEAD", str(TEMPLATE), str(service)]
    subprocess.run(command, env=environment, check=True, capture_output=True)
    assert (service / ".git").is_dir()
    assert (service / ".venv").is_dir() == (shutil.which("uv") is not None)


def test_render_without_tasks_leaves_them_undone(rendered: Render) -> None:
    service = rendered()
    assert not (service / ".git").exists()
    assert not (service / ".venv").exists()
