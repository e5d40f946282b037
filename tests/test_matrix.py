"""The nox matrix covers what it claims: no Python, answer set, mode or name left out."""

import re
from pathlib import Path

import yaml

from tests.rendering import (
    ANSWER_SETS,
    AWKWARD_NAMES,
    NAME_AS_LABEL,
    NAME_CELLS,
    NAME_TESTS,
    PYTHONS,
    TEMPLATE,
    WHOLE_SUITE_CELLS,
    Cell,
)

QUESTIONS = yaml.safe_load((TEMPLATE / "copier.yml").read_text())
RUNTIME_TESTS = TEMPLATE / "template" / "tests" / "runtime"


def whole(key: str) -> set[str]:
    """The values of the answer ``key`` among the services that run the whole suite."""
    return answered(key, WHOLE_SUITE_CELLS)


def answered(key: str, cells: tuple[Cell, ...]) -> set[str]:
    """The values of the answer ``key`` among ``cells``."""
    default = QUESTIONS[key]["default"]
    return {cell.answers.get(key, default) for cell in cells}


def test_the_oldest_and_the_newest_python_run_the_whole_suite() -> None:
    assert {cell.python for cell in WHOLE_SUITE_CELLS} == {PYTHONS[0], PYTHONS[-1]}


def test_each_answer_set_runs_the_whole_suite() -> None:
    assert {cell.answer_set for cell in WHOLE_SUITE_CELLS} - {None} == set(ANSWER_SETS)


def test_each_auth_mode_has_a_service() -> None:
    """The runtime's suite serves without authentication unless a test is about it (its
    conftest.py), whatever the answer: an ``auth`` answer reaches the service's defaults
    and the team's tests, which every service of the matrix runs."""
    modes = set(QUESTIONS["auth"]["choices"].values())
    assert answered("auth", (*WHOLE_SUITE_CELLS, *NAME_CELLS)) == modes
    assert whole("auth") == {"oauth", "none"}


def test_with_and_without_the_credential_demo_run_the_whole_suite() -> None:
    assert whole("include_credential_demo") == {True, False}


def test_each_awkward_name_has_one_service() -> None:
    names = [cell.awkward_name for cell in (*WHOLE_SUITE_CELLS, *NAME_CELLS) if cell.awkward_name]
    assert sorted(names) == sorted(AWKWARD_NAMES)
    assert all(cell.answer_set is None for cell in NAME_CELLS)


def test_each_python_serves_an_awkward_name() -> None:
    assert {cell.python for cell in NAME_CELLS} == set(PYTHONS)


def test_session_ids_are_unique() -> None:
    ids = [cell.id for cell in (*WHOLE_SUITE_CELLS, *NAME_CELLS)]
    assert len(ids) == len(set(ids))


def test_every_runtime_test_that_reads_the_name_is_classified() -> None:
    """A runtime test module that reads the service's name either runs for every awkward
    name (NAME_TESTS) or says why the name's form does not matter to it (NAME_AS_LABEL)."""
    reading = {
        f"tests/runtime/{path.name}"
        for path in RUNTIME_TESTS.glob("test_*.py")
        if re.search(r"find_service\(\)\.(name|toolsets_package)|^NAME = ", path.read_text(), re.M)
        or "SERVICE = find_service()" in path.read_text()
    }
    assert reading == set(NAME_TESTS) | set(NAME_AS_LABEL)
    assert all(Path(TEMPLATE / "template" / name).is_file() for name in NAME_TESTS)
