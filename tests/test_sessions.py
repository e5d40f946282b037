"""What each nox session proves is said once, in tests/sessions.py: the docs show it."""

import re

from tests.rendering import TEMPLATE, WHOLE_SUITE_CELLS
from tests.sessions import PROVES, TESTING, proves, table


def test_the_docs_table_of_sessions_is_the_one_text() -> None:
    assert table() in TESTING.read_text(), (
        "docs/testing.md's table 'What each session proves' is not tests/sessions.py's "
        "PROVES: write it with `python -m tests.sessions`"
    )


def test_each_session_that_records_what_it_proves_is_said_once() -> None:
    """Each session of noxfile.py that prints what it proves (``@recorded``) has its text,
    and each text its session."""
    noxfile = (TEMPLATE / "noxfile.py").read_text()
    recording = re.findall(r"^@recorded\ndef (\w+)\(", noxfile, re.MULTILINE)
    assert sorted(recording) == sorted(PROVES)


def test_each_cell_of_service_says_its_answers() -> None:
    lines = [proves("service", cell) for cell in WHOLE_SUITE_CELLS]
    assert len(set(lines)) == len(WHOLE_SUITE_CELLS)
    assert all(
        line.startswith(f"Python {cell.python}, ")
        for line, cell in zip(lines, WHOLE_SUITE_CELLS, strict=True)
    )
