"""The one harness of the template's tests and of the nox matrix: render, then a first week.

``render`` runs ``copier copy`` as a user would; ``first_week`` is what a team does in a
new service. ``noxfile.py`` imports this module too, so it needs only the standard
library until it renders (copier) or reads answers (yaml). Run as a script, it renders:
``python tests/rendering.py DESTINATION '{"project_name": "Climate Data"}'`` prints the
recorded answers as JSON on its last line.
"""

import json
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE.parent

# What a tool runner (nox, an activated venv) sets to point uv at its own environment;
# a rendered service must use its own, as it does on a team's machine.
FOREIGN_ENVIRONMENT = ("UV_PROJECT_ENVIRONMENT", "UV_PYTHON", "VIRTUAL_ENV")
# Unset in a rendered service, so that Python writes each module's bytecode at its first
# import and every later process reads it; set, each process compiles all it imports again.
RECOMPILING_ENVIRONMENT = ("PYTHONDONTWRITEBYTECODE",)
# The renders of one test process share a mypy cache (mypy revalidates each module by its
# hash, and keys the cache by Python version): each render checks only its own modules.
TEST_PROCESS = os.environ.get("PYTEST_XDIST_WORKER", "main")
MYPY_CACHE = Path(tempfile.gettempdir()) / "mcp-template-tests" / f"mypy-{TEST_PROCESS}"


def service_environment(
    mypy_cache: Path | None = None, outer: Mapping[str, str | None] = os.environ
) -> dict[str, str]:
    """The environment a rendered service's commands run in, as on a team's machine.

    ``outer`` (this process's environment) without what points uv at another environment
    (FOREIGN_ENVIRONMENT) or makes Python recompile (RECOMPILING_ENVIRONMENT), nor a variable
    ``outer`` unsets (None); with ``mypy_cache`` as mypy's cache, if given.
    """
    unset = FOREIGN_ENVIRONMENT + RECOMPILING_ENVIRONMENT
    environment = {
        key: value for key, value in outer.items() if key not in unset and value is not None
    }
    if mypy_cache is not None:
        environment["MYPY_CACHE_DIR"] = str(mypy_cache)
    return environment


# The tests' commands in a rendered service.
SERVICE_ENVIRONMENT = service_environment(MYPY_CACHE)

# Named answer sets: the nox matrix and these tests render each of them.
ANSWER_SETS: dict[str, dict[str, Any]] = json.loads((HERE / "answer_sets.json").read_text())

# Project names that must all render, lint and pass their tests: each with why it is
# awkward, its answers, and the answers it must give (recorded in .copier-answers.yml).
AWKWARD_NAMES: dict[str, dict[str, Any]] = json.loads((HERE / "awkward_names.json").read_text())

# The matrix of rendered services that nox runs: pairwise, not a full product. The oldest
# and the newest Python, and each answer set, have a service that runs the whole runtime
# suite; each awkward name has a service of its own, on each Python, that runs the team's
# tests and the runtime's tests that read the name (NAME_TESTS), and each ``auth`` mode is
# one of them. tests/test_matrix.py holds it to that.
PYTHONS = ("3.11", "3.12", "3.13")


@dataclass(frozen=True)
class Cell:
    """One rendered service of the matrix: its Python, and an answer set or awkward name."""

    python: str
    answer_set: str | None = None
    awkward_name: str | None = None

    @property
    def id(self) -> str:
        return f"{self.python}-{self.answer_set or self.awkward_name}"

    @property
    def answers(self) -> dict[str, Any]:
        """The answers to render with: the answer set's or the name's, and the Python."""
        chosen = ANSWER_SETS[self.answer_set] if self.answer_set else {}
        if self.awkward_name:
            chosen = AWKWARD_NAMES[self.awkward_name]["answers"]
        return {**chosen, "python_version": self.python}


# Services that run the whole runtime suite (nox -s service): the Python in between
# renders, lints and runs the team's tests in three services of NAME_CELLS.
WHOLE_SUITE_CELLS = (
    Cell("3.11", answer_set="defaults"),  # auth oauth, the credential demo
    Cell("3.13", answer_set="slugified-no-demo"),  # auth none, no demo, MIT
)
# Services that run the team's tests and NAME_TESTS (nox -s names): each awkward name.
# In the order nox -s names starts them, four at a time: the other names of 3.12 last, so
# that they seed their mypy cache from the first's (no whole suite writes one for 3.12).
NAME_CELLS = (
    Cell("3.12", awkward_name="zeta-tools"),
    Cell("3.11", awkward_name="climate-data"),
    Cell("3.13", awkward_name="mcp-tools"),
    Cell("3.11", awkward_name="route-66"),
    Cell("3.13", awkward_name="long"),
    Cell("3.12", awkward_name="3d-printing"),
    Cell("3.12", awkward_name="q"),
)
# The runtime's tests whose assertions depend on the form of the service's name (its
# length, its digits): Kubernetes names, client setups, the gate and contract over every
# tool. Each name runs them.
NAME_TESTS = (
    "tests/runtime/test_client_setup.py",
    "tests/runtime/test_contract.py",
    "tests/runtime/test_contract_snapshot.py",
    "tests/runtime/test_deployment.py",
)
# The runtime's tests that read the name too, only as an opaque label: what they assert
# holds for any name the questions accept, so the whole-suite services prove it.
NAME_AS_LABEL = {
    "tests/runtime/test_eras.py": "compares serverInfo with the service's name and version",
    "tests/runtime/test_cli.py": "imports the service package's __main__, whatever it is named",
    "tests/runtime/test_docs_commands.py": "finds the service's command in the docs by its name",
    "tests/runtime/test_logs.py": "adds a folder to the toolsets package, whatever it is named",
    "tests/runtime/test_scaffold.py": "prints the command named after the service",
    "tests/runtime/test_serving.py": "adds a module to a copy of the toolsets package (reload)",
    "tests/runtime/test_tracing.py": "the spans' service.name equals the service's name",
}

# A team's first week: two toolsets (one name to normalise), then one more tool.
FIRST_WEEK: tuple[tuple[str, ...], ...] = (
    ("scripts/new-toolset", "Weather Data"),
    ("scripts/new-toolset", "reports"),
    ("scripts/new-tool", "weather-data", "Forecast"),
)
FIRST_WEEK_TOOLS = frozenset({"weather_data", "reports", "forecast"})
FIRST_WEEK_TESTS = ("tests/test_weather_data.py", "tests/test_reports.py", "tests/test_forecast.py")

# Runs a command in a rendered service, with the service's own environment, and returns
# what it printed; it fails (raises) when the command exits non-zero.
Run = Callable[..., str]


def render(destination: Path, answers: Mapping[str, Any]) -> Path:
    """``copier copy`` of this working tree (uncommitted changes included) with ``answers``.

    Unanswered questions take their defaults; post-render tasks are skipped, so
    the result shows that a service is complete without them.
    """
    import copier  # here: noxfile.py imports this module where copier may be missing

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


def read_answers(service: Path) -> dict[str, Any]:
    """The answers a render recorded in its ``.copier-answers.yml``."""
    import yaml  # here too: a dependency of copier

    loaded = yaml.safe_load((service / ".copier-answers.yml").read_text())
    assert isinstance(loaded, dict)
    return loaded


@dataclass(frozen=True)
class Week:
    """What the first week printed: each scaffold, the tests, ``check``; and the listing."""

    scaffolds: list[str]
    tests: str
    check: str
    listing: dict[str, Any]


def first_week(run: Run, slug: str, *tests: str) -> Week:
    """Scaffold ``FIRST_WEEK``, then run ``tests`` (all if none), lint, ``check``, ``schema``."""
    scaffolds = [run(*command) for command in FIRST_WEEK]
    tested = run("uv", "run", "--quiet", "pytest", "-q", *tests)
    run("scripts/lint")
    checked = run("uv", "run", "--quiet", slug, "check")
    listing = json.loads(run("uv", "run", "--quiet", slug, "schema"))
    return Week(scaffolds, tested, checked, listing)


def runtime_tests_except(service: Path, *kept: str) -> list[str]:
    """pytest options that deselect the runtime's test modules of ``service`` but ``kept``:
    the whole suite is still collected (``--runtime-suite``: so its modules import beside
    the team's), and the team's tests run with the kept ones."""
    modules = sorted(path.relative_to(service) for path in service.glob("tests/runtime/test_*.py"))
    return [
        "--runtime-suite",
        *(
            option
            for module in modules
            if str(module) not in kept
            for option in ("--deselect", str(module))
        ),
    ]


def listing_problems(listing: Mapping[str, Any], expected: set[str]) -> list[str]:
    """What is wrong with a ``schema`` listing that must hold ``expected`` tools, all typed."""
    tools = {tool["name"]: tool for tool in listing["tools"]}
    problems = [f"the tool {name!r} is not listed" for name in sorted(expected - set(tools))]
    problems += [
        f"the tool {name!r} has no object outputSchema"
        for name, tool in sorted(tools.items())
        if tool.get("outputSchema", {}).get("type") != "object"
    ]
    return problems


def main(arguments: list[str]) -> None:
    """Render into ``arguments[0]`` with the answers ``arguments[1]`` (a JSON object)."""
    destination, answers = Path(arguments[0]), json.loads(arguments[1])
    render(destination, answers)
    print(json.dumps(read_answers(destination)))


if __name__ == "__main__":
    main(sys.argv[1:])
