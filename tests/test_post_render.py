"""The optional post-render task: run with --trust, skipped otherwise."""

import shutil
import warnings
from pathlib import Path

import copier
import pytest

from tests.conftest import Render
from tests.rendering import TEMPLATE


def test_trusted_render_makes_a_git_repository_with_an_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a user runs it: not inside another tool's environment.
    for variable in ("UV_PROJECT_ENVIRONMENT", "UV_PYTHON", "VIRTUAL_ENV"):
        monkeypatch.delenv(variable, raising=False)
    service = tmp_path / "trusted"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", copier.errors.DirtyLocalWarning)
        copier.run_copy(
            str(TEMPLATE), service, defaults=True, unsafe=True, vcs_ref="HEAD", quiet=True
        )
    assert (service / ".git").is_dir()
    assert (service / ".venv").is_dir() == (shutil.which("uv") is not None)


def test_render_without_tasks_leaves_them_undone(rendered: Render) -> None:
    service = rendered()
    assert not (service / ".git").exists()
    assert not (service / ".venv").exists()
