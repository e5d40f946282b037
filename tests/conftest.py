"""Fixtures for testing the template: real ``copier copy`` runs into temporary folders."""

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.rendering import render

Render = Callable[..., Path]


@pytest.fixture(scope="session")
def renders() -> dict[str, Path]:
    """The renders this test process made, by their answers: ``copier copy`` runs once for
    each set of answers, and each test gets a copy of its render to change as it likes."""
    return {}


@pytest.fixture
def rendered(
    tmp_path: Path, renders: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Render:
    """Render the template with the given answers into a new folder; return it.

    The same answers render the same files: a render of answers rendered before in this
    process is a copy of that render (copier's refusals are never kept, and run each time).
    """
    count = 0

    def render_with(**answers: Any) -> Path:
        nonlocal count
        count += 1
        key = json.dumps(answers, sort_keys=True)
        if key not in renders:
            renders[key] = render(tmp_path_factory.mktemp("render") / "service", answers)
        destination = tmp_path / f"service-{count}"
        shutil.copytree(renders[key], destination, symlinks=True)
        return destination

    return render_with
