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


TEAM_TESTS = {str(path.relative_to(ROOT)) for path in ROOT.glob("tests/test_*.py")}
RUNTIME_TESTS = {str(path.relative_to(ROOT)) for path in RUNTIME.glob("test_*.py")}
CHECKS = {f"tests/runtime/{name}" for name in TEAM_CHECKS}

# Collects with each set of arguments in turn, in one process: pytest.main runs again and
# again in it, and imports each test module once.
COLLECTING = """
import sys
import pytest

for arguments in sys.argv[1:]:
    print("collecting:", arguments, flush=True)
    code = pytest.main(["--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                        *arguments.split()])
    if code != 0:
        sys.exit(int(code))
"""


def collections(*arguments: tuple[str, ...]) -> dict[tuple[str, ...], set[str]]:
    """The test modules ``pytest`` collects in the service's root with each of
    ``arguments``."""
    listed = subprocess.run(
        [sys.executable, "-c", COLLECTING, *(" ".join(each) for each in arguments)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: dict[tuple[str, ...], set[str]] = {}
    modules: set[str] = set()
    for line in listed.splitlines():
        if line.startswith("collecting:"):
            modules = found.setdefault(tuple(line.split()[1:]), set())
        elif "::" in line:
            modules.add(line.split("::")[0])
    return found


def test_the_runtime_suite_runs_when_asked_for() -> None:
    """By default, with the option, with its folder named, and with one of its modules
    named beside the team's folder: the modules each collects (in one process, run after
    run, so that each module is imported once)."""
    assert CHECKS <= RUNTIME_TESTS  # the checks the team's runs keep are still there
    expected = {
        (): TEAM_TESTS | CHECKS,
        ("--runtime-suite",): TEAM_TESTS | RUNTIME_TESTS,
        ("tests/runtime",): RUNTIME_TESTS,
        ("tests/runtime/test_gate.py", "tests"): TEAM_TESTS
        | CHECKS
        | {"tests/runtime/test_gate.py"},
    }
    assert collections(*expected) == expected
