"""The template's proof: render services across Pythons and answer sets, run their checks.

``nox`` runs the default sessions; docs/testing.md says what each proves (from
tests/sessions.py, the one text of it), and the table printed at the end of the run says
it again for each session that ran, with its time and outcome. ``nox -s benchmark``
measures what the contract costs.
"""

import atexit
import functools
import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import nox

ROOT = Path(__file__).resolve().parent
# The one render harness, shared with the template's tests.
sys.path.insert(0, str(ROOT))
from tests.rendering import (  # noqa: E402
    AWKWARD_NAMES,
    NAME_CELLS,
    NAME_TESTS,
    PYTHONS,
    RECOMPILING_ENVIRONMENT,
    WHOLE_SUITE_CELLS,
    Cell,
    listing_problems,
    runtime_tests_except,
    service_environment,
)
from tests.sessions import DEFAULT, PROVES, SIDE_BY_SIDE, proves  # noqa: E402

HARNESS = ROOT / "tests" / "rendering.py"
RENDERS = Path(tempfile.gettempdir()) / "mcp-service-renders"
COPIER = "copier>=9.13"
NAME_LANES = 4
"""How many services of ``names`` run at once."""
TEMPLATE_TEST_REQUIREMENTS = ["-r", str(ROOT / "tests" / "requirements.txt")]
# A toolset named like one of the runtime's own test modules (tests/runtime/test_serving.py):
# its module and tests import the service's package, whatever it is named.
CLASHING_TOOLSET = "serving"

nox.options.default_venv_backend = "uv"
nox.options.error_on_external_run = True
nox.options.sessions = DEFAULT
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
# The sessions' own tools write their bytecode once too (see RECOMPILING_ENVIRONMENT).
for variable in RECOMPILING_ENVIRONMENT:
    os.environ.pop(variable, None)


# What each session proved, its wall and CPU time: printed as a table at the end of the run.
RECORDS: list[tuple[str, float, float, str, str]] = []
# Where a nox process that ``served`` started writes its records, for the table of the run.
RECORDS_FILE = "MCP_TEMPLATE_NOX_RECORDS"


def recorded(function: Callable[..., None]) -> Callable[..., None]:
    """Record the session's wall time, the CPU time of the programs it ran (each once it
    ended), its outcome and what it proves (``PROVES``) for the table.

    ``nox -l`` shows the start of what it proves; a session missing from ``PROVES`` is a
    KeyError here, on any nox command.
    """
    said = plain(PROVES[function.__name__])

    @functools.wraps(function)
    def session_function(session: nox.Session, **parameters: Any) -> None:
        start, cpu, outcome = time.monotonic(), cpu_of_children(), "failed"
        try:
            function(session, **parameters)
            outcome = "ok"
        finally:
            line = plain(proves(function.__name__, **parameters))
            used = cpu_of_children() - cpu
            record = (session.name, time.monotonic() - start, used, outcome, line)
            RECORDS.append(record)
            if os.environ.get(RECORDS_FILE):  # a session run beside another (``served``)
                with open(os.environ[RECORDS_FILE], "a") as records:
                    records.write(json.dumps(record) + "\n")

    session_function.__doc__ = f"{textwrap.shorten(said, 80, placeholder=' ...')}\n\n{said}"
    return session_function


def cpu_of_children() -> float:
    """The CPU seconds (user and system) of this process's programs that have ended."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def plain(markdown: str) -> str:
    """The text of docs/testing.md's markdown, for a terminal: without its backticks."""
    return markdown.replace("`", "")


@atexit.register
def print_table() -> None:
    """Each session that ran: its wall time, CPU time, outcome, and what it proves."""
    if not RECORDS:
        return
    width = max(len(name) for name, *_ in RECORDS)
    lines = ["", f"{'session'.ljust(width)}   time    cpu  outcome  proves"]
    for name, seconds, cpu, outcome, said in RECORDS:
        lines.append(f"{name.ljust(width)} {seconds:5.0f}s {cpu:5.0f}s  {outcome:<7}  {said}")
    # The sessions run beside each other (indented: inside ``served``) are in its times.
    outer = [record for record in RECORDS if not record[0].startswith(" ")]
    total, cpu = sum(record[1] for record in outer), sum(record[2] for record in outer)
    lines.append(f"{'all sessions'.ljust(width)} {total:5.0f}s {cpu:5.0f}s")
    print("\n".join(lines), file=sys.stderr, flush=True)


@nox.session
@recorded
def template_tests(session: nox.Session) -> None:
    session.install(*TEMPLATE_TEST_REQUIREMENTS)
    # Three workers on two cores: a few modules of long tests (the quick starts, the first
    # week, the contract snapshot) kept two workers waiting on the slowest (77% busy).
    pytest = ["pytest", "tests", "--ignore=tests/test_update.py", "-n", "3"]
    session.run(*pytest, "--dist", "loadfile", *session.posargs)


@nox.session
@recorded
def update(session: nox.Session) -> None:
    session.install(*TEMPLATE_TEST_REQUIREMENTS)
    # Three workers on two cores: its two long tests (about 50 s each) on two, the rest on
    # the third.
    session.run("pytest", "tests/test_update.py", "-n", "3", *session.posargs)


@nox.session
@recorded
def lint(session: nox.Session) -> None:
    # Ruff on every folder of this repository's own Python, and the noxfile; deptry on the
    # Python that runs in this repository's environments (the rest runs in a render's).
    requirements = ["requirements-dev.txt", "tests/requirements.txt"]
    session.install("ruff>=0.11", "deptry>=0.23", *(f"-r{path}" for path in requirements))
    paths = ["hooks", "tests", "clients", "benchmarks", "hostile", "reference", "noxfile.py"]
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)
    session.run("deptry", ".")  # as pyproject.toml's [tool.deptry] says


@nox.session
@nox.parametrize("cell", list(WHOLE_SUITE_CELLS), ids=[cell.id for cell in WHOLE_SUITE_CELLS])
@recorded
def service(session: nox.Session, cell: Cell) -> None:
    session.install(COPIER)
    folder, recorded_answers = render_cell(session, cell)
    slug, package = recorded_answers["project_slug"], recorded_answers["package_name"]
    pytest = ["uv", "run", "--quiet", "pytest", "-q"]
    with session.chdir(folder):
        in_service(session, "uv", "--quiet", "sync", "--python", interpreter(cell.python))
        in_service(session, "scripts/lint")  # first: the suite's scaffold tests reuse its cache
        # Each way in once: check through the command (before the suite, whose servers then
        # read the bytecode it wrote), schema through ``python -m``.
        in_service(session, "uv", "run", "--quiet", slug, "check")
        # Three workers on two cores: the suite waits on the servers it starts more than it
        # computes (measured: 109 s against 126 s with two). The tests marked any_python (of
        # processes, the task store, pytest's collection) run on the first Python only.
        once = [] if cell.python == PYTHONS[0] else ["-m", "not any_python"]
        in_service(session, *pytest, "--runtime-suite", "-n", "3", *once, *session.posargs)
        schema = ["uv", "run", "--quiet", "python", "-m", package, "schema"]
        listing = in_service(session, *schema, silent=True)
        expect(session, listing_problems(json.loads(listing), {"hello"}))


@nox.session
@recorded
def names(session: nox.Session) -> None:
    # Four names run at a time: most of their steps use one core (two kept the cores 86%
    # busy), and seven names take two rounds.
    # ``nox -s names -- q long`` runs those only.
    session.install(COPIER)
    chosen = [cell for cell in NAME_CELLS if cell.awkward_name in session.posargs]
    unknown = set(session.posargs) - {cell.awkward_name for cell in NAME_CELLS}
    expect(session, [f"{name!r} is not one of NAME_CELLS' names" for name in sorted(unknown)])
    harness = [str(Path(session.virtualenv.location, "bin", "python")), str(HARNESS)]
    failures = []
    with ThreadPoolExecutor(max_workers=NAME_LANES) as lanes:
        running = {lanes.submit(name_checks, cell, harness): cell for cell in chosen or NAME_CELLS}
        for done in as_completed(running):
            cell = running[done]
            try:
                took = done.result()
            except CellFailedError as failure:
                failures.append(cell.id)
                session.log(f"names: {cell.id} failed:\n{failure}")
            except Exception as error:  # a check that could not even read its output
                failures.append(cell.id)
                session.log(f"names: {cell.id} failed: {type(error).__name__}: {error}")
            else:
                session.log(f"names: {cell.id} passed in {took}")
    expect(session, [f"{cell} failed (its log is above)" for cell in failures])


def step_name(command: tuple[str, ...]) -> str:
    """What a command of a cell runs, for its time: ``sync``, ``pytest``, ``check`` ..."""
    words = [word for word in command if not word.startswith("-")]
    if words[:2] == ["uv", "run"]:
        return "pytest" if words[2] == "pytest" else words[-1]  # pytest, or a subcommand
    return words[1] if words[0] == "uv" else words[0]


class CellFailedError(Exception):
    """A check of a rendered service failed; the message is the cell's log."""


def name_checks(cell: Cell, harness: list[str]) -> str:
    """The checks of ``names`` for one cell, in its own folder and mypy cache: its time, and
    each step's."""
    start, log, steps = time.monotonic(), [], []
    folder = RENDERS / f"names-{cell.awkward_name}"
    shutil.rmtree(folder, ignore_errors=True)
    # The run's shared mypy cache as a seed, in the cell's own folder: two run at once.
    cache = folder.parent / f".mypy_cache-{cell.awkward_name}"
    shutil.rmtree(cache, ignore_errors=True)
    if (RENDERS / ".mypy_cache").is_dir():
        shutil.copytree(RENDERS / ".mypy_cache", cache)
    in_cell, harness_environment = service_environment(cache), service_environment()

    def run(*command: str, where: Path | None = folder) -> str:
        log.append(f"$ {' '.join(command)}")
        env = in_cell if where else harness_environment
        began = time.monotonic()
        done = subprocess.run(command, cwd=where, env=env, capture_output=True, text=True)
        took = time.monotonic() - began
        log.append(f"{done.stdout}{done.stderr}(took {took:.1f}s)")
        steps.append(f"{step_name(command) if where else 'render'} {took:.0f}s")
        if done.returncode != 0:
            log.append(f"exited {done.returncode}")
            raise CellFailedError("\n".join(log))
        return done.stdout

    def expect_none(problems: list[str]) -> None:
        if problems:
            raise CellFailedError("\n".join([*log, *problems]))

    printed = run(*harness, str(folder), json.dumps(cell.answers), where=None)
    recorded_answers = json.loads(printed.splitlines()[-1])
    expect_none(wrong_answers(cell, recorded_answers))
    slug, package = recorded_answers["project_slug"], recorded_answers["package_name"]
    pytest = ["uv", "run", "--quiet", "pytest", "-q"]
    run("uv", "--quiet", "sync", "--python", interpreter(cell.python))
    # A task toolset: the task scaffold's code (checkpoints) linted for the cell's Python.
    run("scripts/new-toolset", CLASHING_TOOLSET, "--task", "optional")
    run("scripts/lint")
    share_mypy_cache(cache, cell.python)
    run(*pytest, "-n", "0", *runtime_tests_except(folder, *NAME_TESTS))
    run("uv", "run", "--quiet", slug, "check")
    listing = run("uv", "run", "--quiet", "python", "-m", package, "schema")
    expect_none(listing_problems(json.loads(listing), {"hello", CLASHING_TOOLSET}))
    shutil.rmtree(cache, ignore_errors=True)
    return f"{time.monotonic() - start:.0f}s ({', '.join(steps)})"


def share_mypy_cache(cache: Path, python: str) -> None:
    """Add ``cache``'s part for ``python`` to the run's shared mypy cache when it has none
    (no whole suite runs on that Python): the names that start after on that Python seed
    theirs from it, rather than check every library again."""
    shared, part = RENDERS / ".mypy_cache" / python, cache / python
    if shared.exists() or not part.is_dir():
        return
    staging = Path(tempfile.mkdtemp(dir=RENDERS, prefix=".mypy-part-"))
    try:
        shutil.copytree(part, staging / python)
        shared.parent.mkdir(exist_ok=True)
        (staging / python).rename(shared)  # whole, or not at all
    except OSError:
        pass  # another name shared its part first
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@nox.session
@recorded
def clients(session: nox.Session) -> None:
    # The clients, and the conformance suite's classification, are in clients/.
    # The reference requirements: langchain-mcp-adapters' client, on the SDK's 1.x line.
    session.install(COPIER, "-r", str(ROOT / "reference" / "requirements.txt"))
    folder, recorded_answers = render(session, {})
    with session.chdir(folder):
        in_service(session, "uv", "--quiet", "sync", "--python", interpreter(PYTHONS[0]))
    with session.chdir(ROOT / "clients"):
        session.run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", external=True)
    check = str(ROOT / "clients" / "check_service.py")
    in_service(session, "python", check, str(folder), recorded_answers["project_slug"])


@nox.session(venv_backend="none")
@recorded
def served(session: nox.Session) -> None:
    side_by_side(session, SIDE_BY_SIDE["served"])


def side_by_side(session: nox.Session, names: tuple[str, ...]) -> None:
    """Each of ``names`` in a nox process of its own, at once: their logs follow, one after
    the other, and their rows join the table of this run."""
    records = Path(tempfile.mkdtemp(prefix="nox-records-")) / "records.jsonl"
    environment = {**os.environ, RECORDS_FILE: str(records)}
    RENDERS.mkdir(parents=True, exist_ok=True)
    running = {}
    failed = []
    try:
        for name in names:
            log = (RENDERS / f"{re.sub(r'[^A-Za-z0-9]+', '-', name).strip('-')}.log").open("w")
            command = [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "-s", name]
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment,
                start_new_session=True,  # its servers and clients stop with it
            )
            running[name] = (process, log)
        for name, (process, log) in running.items():
            if process.wait() != 0:
                failed.append(name)
            log.close()
            session.log(f"{session.name}: the log of `nox -s {name}`:")
            print(Path(log.name).read_text(), flush=True)
    finally:  # interrupted: the sessions, and all they started, stop too
        for process, _ in running.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
    if records.is_file():
        for line in records.read_text().splitlines():
            name, seconds, cpu, outcome, said = json.loads(line)
            RECORDS.append((f"  {name}", seconds, cpu, outcome, said))
    expect(session, [f"`nox -s {name}` failed (its log is above)" for name in failed])


@nox.session
@recorded
def hostile(session: nox.Session) -> None:
    # The hostile toolset and suite are in hostile/. The suite runs inside the service, in its
    # own environment, in four workers: it waits on timeouts and grace periods more than it
    # computes; an idle worker takes tests from a busy one (``--dist worksteal``), so the
    # modules with long tests end together. It starts the service's ``serve`` command itself,
    # in each worker once for the modules of default settings and once for each module of
    # other settings. Its modules import ``harness`` from
    # hostile/, so it is collected with the prepend import mode whatever the service's own
    # pytest settings say.
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
            "-n",
            "4",
            "--dist",
            "worksteal",
            str(ROOT / "hostile"),
            *session.posargs,
        ]
        in_service(session, *uv, "run", "--with", "rfc3339-validator", *suite)


def render_hostile(session: nox.Session) -> Path:
    """A service rendered with the default answers, serving ``hostile/toolset.py`` and
    ``hostile/task_toolset.py`` too."""
    folder, recorded = render(session, {})
    toolsets = folder / "src" / recorded["package_name"] / "toolsets"
    shutil.copyfile(ROOT / "hostile" / "toolset.py", toolsets / "hostile.py")
    shutil.copyfile(ROOT / "hostile" / "task_toolset.py", toolsets / "hostile_tasks.py")
    return folder


@nox.session
def reference_listings(session: nox.Session) -> None:
    """Record langchain-mcp-adapters' listing of the runtime's parity corpus (not a test).

    In an environment of its own with mcp 1.x and langchain-mcp-adapters 0.3.2 (the
    reference conversion, capped below mcp 2): run it after a change to the corpus in
    the runtime's tests/runtime/test_parity.py, and commit the file it writes.
    """
    session.install("-r", str(ROOT / "reference" / "requirements.txt"))
    output = ROOT / "template" / "tests" / "runtime" / "parity_reference.json"
    script = str(ROOT / "reference" / "record_listings.py")
    session.run("python", script, str(ROOT / "template"), str(output))


@nox.session
def benchmark(session: nox.Session) -> None:
    """What the contract costs, as ratios against baselines run alongside (not a test)."""
    session.install(COPIER)
    folder, _ = render(session, {})
    with session.chdir(folder):
        in_service(session, "uv", "--quiet", "sync", "--python", interpreter(PYTHONS[0]))
        script = str(ROOT / "benchmarks" / "contract_cost.py")
        # fastmcp 4.x, on the same mcp: the HTTP baseline beside the SDK's own server.
        fastmcp = ["--with", "fastmcp>=4,<5"]
        in_service(session, "uv", "run", "--quiet", *fastmcp, "python", script, *session.posargs)


def expect(session: nox.Session, problems: list[str]) -> None:
    """Fail the session with every problem found, if there is one."""
    if problems:
        session.error("; ".join(problems))


def in_service(session: nox.Session, *command: str, silent: bool = False) -> str:
    """Run ``command`` in a rendered service as its team would: in the service's own .venv.

    nox points uv at the session's environment; the service must use its own. Returns
    what the command printed when ``silent`` (nox then shows it only if it fails).
    """
    # nox runs a command in this process's environment with the session's over it: the
    # service's instead, every other variable of those unset. One mypy cache for every render
    # of the run (mypy keys it by Python version, and revalidates each module by its hash):
    # each render checks only its own modules, and the cells run side by side, each of its
    # own Python, write apart.
    outer = {**os.environ, **session.env}
    environment = service_environment(RENDERS / ".mypy_cache", outer)
    unset = dict.fromkeys(outer.keys() - environment.keys())
    output = session.run(*command, env={**unset, **environment}, external=True, silent=silent)
    return output if isinstance(output, str) else ""


def render(session: nox.Session, answers: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """Render with the harness into a fresh folder for the session; the folder and answers.

    The harness (tests/rendering.py) runs in the session's environment, with its copier.
    """
    # Outside .nox/: linters skip folders named like tool caches, and would lint nothing.
    slug = re.sub(r"[^A-Za-z0-9]+", "-", session.name).strip("-")
    folder = RENDERS / slug
    if folder.exists():
        shutil.rmtree(folder)
    printed = session.run("python", str(HARNESS), str(folder), json.dumps(answers), silent=True)
    assert isinstance(printed, str)
    recorded: dict[str, Any] = json.loads(printed.splitlines()[-1])
    return folder, recorded


def render_cell(session: nox.Session, cell: Cell) -> tuple[Path, dict[str, Any]]:
    """Render ``cell``; fail the session if an awkward name records other answers than it gives."""
    folder, recorded_answers = render(session, cell.answers)
    expect(session, wrong_answers(cell, recorded_answers))
    return folder, recorded_answers


def wrong_answers(cell: Cell, recorded_answers: dict[str, Any]) -> list[str]:
    """How the answers a render recorded differ from those its awkward name gives."""
    gives = AWKWARD_NAMES[cell.awkward_name]["gives"] if cell.awkward_name else {}
    return [
        f"{key} is {recorded_answers[key]!r}, not {value!r}"
        for key, value in gives.items()
        if recorded_answers[key] != value
    ]


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
