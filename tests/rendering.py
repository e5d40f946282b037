"""Render the template with copier, as a user would: the one helper every check uses."""

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import copier

TEMPLATE = Path(__file__).resolve().parent.parent

# What a tool runner (nox, an activated venv) sets to point uv at its own environment;
# a rendered service must use its own, as it does on a team's machine.
FOREIGN_ENVIRONMENT = ("UV_PROJECT_ENVIRONMENT", "UV_PYTHON", "VIRTUAL_ENV")
SERVICE_ENVIRONMENT = {k: v for k, v in os.environ.items() if k not in FOREIGN_ENVIRONMENT}

# Named answer sets: the nox matrix and these tests render each of them.
ANSWER_SETS: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "answer_sets.json").read_text()
)


def render(destination: Path, answers: Mapping[str, Any]) -> Path:
    """``copier copy`` of this working tree (uncommitted changes included) with ``answers``.

    Unanswered questions take their defaults; post-render tasks are skipped, so
    the result shows that a service is complete without them.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", copier.errors.DirtyLocalWarning)
        copier.run_copy(
            str(TEMPLATE),
            destination,
            data=dict(answers),
            defaults=True,
            skip_tasks=True,
            vcs_ref="HEAD",
            quiet=True,
        )
    return destination
