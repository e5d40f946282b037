"""What ``uv run pytest`` runs: the team's tests and the runtime's checks of the team's
tools by default, the runtime's whole suite with ``--runtime-suite`` or when named."""

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_runtime.devtools.pytest_plugin import TEAM_CHECKS

pytestmark = pytest.mark.any_python  # pytest's collection, whatever the Python

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "tests" / "runtime"


def collected(*arguments: str) -> set[str]:
    """The test modules ``pytest`` collects in the service's root with ``arguments``."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0"]
    listed = subprocess.run(
        [*command, "-p", "no:cacheprovider", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line.split("::")[0] for line in listed.splitlines() if "::" in line}


TEAM_TESTS = {str(path.relative_to(ROOT)) for path in ROOT.glob("tests/test_*.py")}
RUNTIME_TESTS = {str(path.relative_to(ROOT)) for path in RUNTIME.glob("test_*.py")}
CHECKS = {f"tests/runtime/{name}" for name in TEAM_CHECKS}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ((), TEAM_TESTS | CHECKS),
        (("--runtime-suite",), TEAM_TESTS | RUNTIME_TESTS),
        (("tests/runtime",), RUNTIME_TESTS),
        (
            ("tests/runtime/test_gate.py", "tests"),
            TEAM_TESTS | CHECKS | {"tests/runtime/test_gate.py"},
        ),
    ],
    ids=["default", "option", "folder named", "module named"],
)
def test_the_runtime_suite_runs_when_asked_for(
    arguments: tuple[str, ...], expected: set[str]
) -> None:
    assert CHECKS <= RUNTIME_TESTS  # the checks the team's runs keep are still there
    assert collected(*arguments) == expected
