"""Fixtures for testing the template: real ``copier copy`` runs into temporary folders."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.rendering import render

Render = Callable[..., Path]


@pytest.fixture
def rendered(tmp_path: Path) -> Render:
    """Render the template with the given answers into a new folder; return it."""
    count = 0

    def render_with(**answers: Any) -> Path:
        nonlocal count
        count += 1
        return render(tmp_path / f"service-{count}", answers)

    return render_with
