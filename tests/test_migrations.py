"""Update migrations run as scripts, as copier update runs them, on answers files."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.rendering import TEMPLATE

ANSWER_NEW_QUESTIONS = TEMPLATE / "hooks" / "answer_new_questions.py"
OLD_ANSWERS = "# Changes here will be overwritten by Copier\n_commit: 0.9.0\nproject_name: Q\n"


def answer_new_questions(folder: Path) -> None:
    subprocess.run(
        [sys.executable, str(ANSWER_NEW_QUESTIONS), ".copier-answers.yml"], cwd=folder, check=True
    )


def test_a_service_from_before_the_questions_keeps_its_behaviour(tmp_path: Path) -> None:
    """The demo header it served; no licence granted (the release rendered none)."""
    answers = tmp_path / ".copier-answers.yml"
    answers.write_text(OLD_ANSWERS)
    answer_new_questions(tmp_path)
    assert answers.read_text() == (
        OLD_ANSWERS + "auth: demo-header\nlicense: LicenseRef-Proprietary\n"
    )


@pytest.mark.parametrize("auth", ["oauth", "none", "demo-header"])
def test_a_recorded_auth_answer_is_kept(tmp_path: Path, auth: str) -> None:
    answers = tmp_path / ".copier-answers.yml"
    answers.write_text(f"{OLD_ANSWERS}auth: {auth}\nlicense: MIT\nproject_slug: q\n")
    before = answers.read_text()
    answer_new_questions(tmp_path)
    assert answers.read_text() == before


@pytest.mark.parametrize("license", ["MIT", "Apache-2.0", "BSD-3-Clause"])
def test_a_recorded_licence_is_kept(tmp_path: Path, license: str) -> None:
    answers = tmp_path / ".copier-answers.yml"
    answers.write_text(f"{OLD_ANSWERS}auth: oauth\nlicense: {license}\n")
    before = answers.read_text()
    answer_new_questions(tmp_path)
    assert answers.read_text() == before


def test_a_service_with_auth_but_no_licence_gets_only_the_licence(tmp_path: Path) -> None:
    answers = tmp_path / ".copier-answers.yml"
    answers.write_text(f"{OLD_ANSWERS}auth: oauth")  # no final newline
    answer_new_questions(tmp_path)
    assert answers.read_text() == f"{OLD_ANSWERS}auth: oauth\nlicense: LicenseRef-Proprietary\n"


def test_no_answers_file_is_left_alone(tmp_path: Path) -> None:
    answer_new_questions(tmp_path)
    assert list(tmp_path.iterdir()) == []
