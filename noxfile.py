"""The template's proof: render services across Pythons and answer sets, run their checks.

``nox`` runs the default sessions: ``template_tests`` (questions, validators,
renders, scaffolds, contract snapshots), ``lint`` (this repo's Python),
``service`` (for each supported Python and named answer set, a rendered service's
tests, lint, ``check`` and ``schema``, before and after scaffolding), ``update``
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
import tempfile
from pathlib import Path
from typing import Any

import nox

ROOT = Path(__file__).resolve().parent
PYTHONS = ["3.11", "3.12", "3.13"]
ANSWER_SETS: dict[str, dict[str, Any]] = json.loads(
    (ROOT / "tests" / "answer_sets.json").read_text()
)
# What nox sets to point uv at a session's environment.
SESSION_ENVIRONMENT_VARIABLES = ("UV_PROJECT_ENVIRONMENT", "UV_PYTHON", "VIRTUAL_ENV")
TEMPLATE_TEST_REQUIREMENTS = ["copier>=9.4", "pytest>=8.3", "pyyaml>=6"]

nox.options.default_venv_backend = "uv"
nox.options.error_on_external_run = True
nox.options.sessions = ["template_tests", "lint", "service", "update", "clients", "hostile"]
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")


@nox.session
def template_tests(session: nox.Session) -> None:
    """The template's own tests: questions, validators, what a render writes."""
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
    """Render a service for ``python_version`` with an answer set; run its own checks."""
    session.install("copier>=9.4")
    folder = render(session, {**ANSWER_SETS[answers], "python_version": python_version})
    recorded = read_answers(folder)
    slug, package = recorded["project_slug"], recorded["package_name"]
    with session.chdir(folder):
        uv = ["uv", "--quiet"]
        python = interpreter(python_version)
        in_service(session, *uv, "sync", "--python", python)
        in_service(session, *uv, "run", "pytest", "-q", *session.posargs)
        in_service(session, "scripts/lint")
        in_service(session, *uv, "run", slug, "check")
        in_service(session, *uv, "run", "python", "-m", package, "check")
        listing = in_service(session, *uv, "run", slug, "schema", silent=True)
        check_listing(session, listing, {"hello"})

        # A team's first week: two toolsets (one name to normalise), then one more tool.
        in_service(session, "scripts/new-toolset", "Weather Data")
        in_service(session, "scripts/new-toolset", "reports")
        in_service(session, "scripts/new-tool", "weather-data", "Forecast")
        in_service(session, *uv, "run", "pytest", "-q")
        in_service(session, "scripts/lint")
        in_service(session, *uv, "run", slug, "check")
        listing = in_service(session, *uv, "run", slug, "schema", silent=True)
        check_listing(session, listing, {"hello", "weather_data", "forecast", "reports"})


@nox.session
def clients(session: nox.Session) -> None:
    """A rendered service against MCP clients nobody here wrote (see clients/)."""
    session.install("copier>=9.4")
    folder = render(session, {})
    slug = read_answers(folder)["project_slug"]
    with session.chdir(folder):
        in_service(session, "uv", "--quiet", "sync", "--python", interpreter(PYTHONS[0]))
    with session.chdir(ROOT / "clients"):
        session.run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", external=True)
    in_service(session, "python", str(ROOT / "clients" / "check_service.py"), str(folder), slug)


@nox.session
def hostile(session: nox.Session) -> None:
    """A rendered service serving the hostile toolset, against the hostile suite (hostile/).

    The suite runs inside the service, in its own environment; it starts the service's
    ``serve`` command itself, once per module and setting.
    """
    session.install("copier>=9.4")
    folder = render_hostile(session)
    with session.chdir(folder):
        uv = ["uv", "--quiet"]
        in_service(session, *uv, "sync", "--python", interpreter(PYTHONS[0]))
        suite = ["pytest", "-p", "no:cacheprovider", str(ROOT / "hostile"), *session.posargs]
        in_service(session, *uv, "run", "--with", "rfc3339-validator", *suite)


def render_hostile(session: nox.Session) -> Path:
    """A service rendered with the default answers, serving ``hostile/toolset.py`` too."""
    folder = render(session, {})
    package = read_answers(folder)["package_name"]
    toolsets = folder / "src" / package / "toolsets"
    shutil.copyfile(ROOT / "hostile" / "toolset.py", toolsets / "hostile.py")
    return folder


@nox.session
def benchmark(session: nox.Session) -> None:
    """What the contract costs, as ratios against baselines run alongside (not a test)."""
    session.install("copier>=9.4")
    folder = render(session, {})
    with session.chdir(folder):
        in_service(session, "uv", "--quiet", "sync", "--python", interpreter(PYTHONS[0]))
        script = str(ROOT / "benchmarks" / "contract_cost.py")
        in_service(session, "uv", "run", "--quiet", "python", script, *session.posargs)


def check_listing(session: nox.Session, listing: object, expected: set[str]) -> None:
    """The ``schema`` output lists ``expected`` tools (at least), each with an outputSchema."""
    assert isinstance(listing, str)
    tools = {tool["name"]: tool for tool in json.loads(listing)["tools"]}
    missing = expected - set(tools)
    untyped = [
        name for name, tool in tools.items() if tool.get("outputSchema", {}).get("type") != "object"
    ]
    if missing or untyped:
        session.error(f"schema lacks the tools {sorted(missing)}; without outputSchema: {untyped}")


def in_service(session: nox.Session, *command: str, silent: bool = False) -> Any:
    """Run ``command`` in a rendered service as its team would: in the service's own .venv.

    nox points uv at the session's environment; the service must use its own.
    """
    isolated: dict[str, str | None] = dict.fromkeys(SESSION_ENVIRONMENT_VARIABLES)
    return session.run(*command, env=isolated, external=True, silent=silent)


def render(session: nox.Session, answers: dict[str, Any]) -> Path:
    """``copier copy`` this working tree into a fresh folder for the session; return it."""
    # Outside .nox/: linters skip folders named like tool caches, and would lint nothing.
    slug = re.sub(r"[^A-Za-z0-9]+", "-", session.name).strip("-")
    folder = Path(tempfile.gettempdir()) / "mcp-service-renders" / slug
    if folder.exists():
        shutil.rmtree(folder)
    data = [f"--data={key}={value}" for key, value in answers.items()]
    session.run(
        "copier",
        "copy",
        "--vcs-ref=HEAD",
        "--defaults",
        "--skip-tasks",
        "--quiet",
        *data,
        str(ROOT),
        str(folder),
    )
    return folder


def read_answers(folder: Path) -> dict[str, str]:
    """The answers a render recorded (flat ``key: value`` YAML)."""
    answers = {}
    for line in (folder / ".copier-answers.yml").read_text().splitlines():
        key, separator, value = line.partition(": ")
        if separator and not line.startswith("#"):
            answers[key.strip()] = value.strip().strip("'\"")
    return answers


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
