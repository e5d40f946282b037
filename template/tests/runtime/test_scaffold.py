"""scripts/new-toolset and scripts/new-tool.

What they write is served, passes the service's tests and lint, and is recorded in
the contract snapshot; bad input exits 2 with a message, and no file changes.
"""

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_runtime.contract.toolsets import find_service
from mcp_runtime.devtools import scaffold

ROOT = Path(__file__).resolve().parents[2]
SERVICE_FILES = ("src", "tests", "contract", "scripts", "pyproject.toml")
CACHES = shutil.ignore_patterns("__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache")
UV_RUN = "uv run --quiet "


def snapshot() -> dict[str, str]:
    """Every file of the service's sources, tests and contract, with a hash of its content."""
    files = [*ROOT.joinpath("src").rglob("*.py"), *ROOT.joinpath("tests").rglob("*.py")]
    files += list(ROOT.joinpath("contract").glob("*.json"))
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def files_of(folder: Path) -> dict[Path, bytes]:
    """Every file in ``folder`` with its content, but the bytecode Python writes itself."""
    return {
        path: path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture
def unchanged(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run from the service's root, and check that no file changed."""
    monkeypatch.chdir(ROOT)
    before = snapshot()
    yield
    assert snapshot() == before


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One mypy cache for the module's copies of the service: a copy of the service's own
    (``MYPY_CACHE_DIR``, else ``.mypy_cache``) when there is one, which mypy revalidates
    file by file, so that the copies do not check every library again."""
    cache = tmp_path_factory.mktemp("mypy") / "cache"
    seed = Path(os.environ.get("MYPY_CACHE_DIR") or ROOT / ".mypy_cache")
    if seed.is_dir():
        shutil.copytree(seed, cache)
    return str(cache)


@pytest.fixture(scope="module")
def copy_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where each test copies the service: one place, so that the mypy cache stays valid."""
    return tmp_path_factory.mktemp("scaffold") / "service"


@pytest.fixture
def service(copy_folder: Path) -> Path:
    """A fresh copy of this service: its sources, tests, contract, scripts and settings."""
    shutil.rmtree(copy_folder, ignore_errors=True)
    for name in SERVICE_FILES:
        if ROOT.joinpath(name).is_dir():
            shutil.copytree(ROOT / name, copy_folder / name, ignore=CACHES)
        else:
            shutil.copy2(ROOT / name, copy_folder / name)
    return copy_folder


def run(service: Path, *command: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """``python -m COMMAND`` in the copy ``service``, as the service's scripts run it through
    ``uv run`` (the environment's programs first on PATH), importing the copy's code.
    ``variables`` are added to the environment."""

    def first(entry: str, variable: str) -> str:
        return os.pathsep.join(filter(None, [entry, os.environ.get(variable)]))

    environment = {
        **os.environ,
        "PATH": first(str(Path(sys.executable).parent), "PATH"),
        "PYTHONPATH": first(str(service / "src"), "PYTHONPATH"),
        **variables,
    }
    return subprocess.run(
        [sys.executable, "-m", *command],
        cwd=service,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


def test_lint_refuses_an_import_that_is_not_a_declared_dependency(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    package = tmp_path / "src" / "team_code"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("import yaml\nimport not_a_dependency\n")
    checked = run(tmp_path, "deptry", "src")
    output = re.sub(r"\x1b\[[0-9;]*m", "", checked.stdout + checked.stderr)
    assert checked.returncode == 1, output
    assert "DEP004 'yaml' imported but declared as a dev dependency" in output
    missing = "DEP001 'not_a_dependency' imported but missing from the dependency definitions"
    assert missing in output


def recorded_tools(service: Path) -> list[str]:
    """The names of the tools in the service's contract snapshot, as often as they appear."""
    contract = json.loads((service / "contract" / "tools.json").read_text())
    return [entry["name"] for entry in contract["tools"]]


def contract_report(service: Path) -> str:
    """What ``contract`` says of the service (exit 0: no breaking change)."""
    checked = run(service, "mcp_runtime", "contract")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return checked.stdout


def check_written(
    service: Path,
    tools: set[str],
    before: list[str],
    report: str,
    mypy_cache: str,
    tasked: frozenset[str] = frozenset(),
    keeping: frozenset[str] = frozenset(),
) -> None:
    """The service with the new tools passes scripts/lint; their tests pass (a task tool,
    one of ``tasked``, has a test more: a run that takes its task over; a tool that keeps
    data, one of ``keeping``, two more: a run taken over, a file too large), collected
    beside the runtime's tests of the same file names; the contract snapshot records each
    new tool once, as served, and ``contract`` reports what it did before (for a fresh
    service: no difference)."""
    lint = (service / "scripts" / "lint").read_text().splitlines()
    commands = [line.removeprefix(UV_RUN).split() for line in lint if line.startswith(UV_RUN)]
    assert [command[0] for command in commands] == ["ruff", "ruff", "mypy", "deptry"]
    for command in commands:
        linted = run(service, *command, MYPY_CACHE_DIR=mypy_cache)
        assert linted.returncode == 0, linted.stdout + linted.stderr

    written = [f"tests/test_{tool}.py" for tool in sorted(tools)]
    namesakes = [f"tests/runtime/test_{tool}.py" for tool in sorted(tools)]
    present = [path for path in namesakes if (service / path).is_file()]
    tested = run(
        service,
        "pytest",
        "-q",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        *written,
        *present,
        "--deselect",
        "tests/runtime/",
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    passed = 3 * len(tools) + len(tasked) + 2 * len(keeping)
    assert tested.stdout.splitlines()[-1].startswith(f"{passed} passed"), tested.stdout

    assert sorted(recorded_tools(service)) == sorted([*before, *tools])
    assert contract_report(service) == report


def skip_if_the_service_uses(*names: str) -> None:
    """Skip when the service already has a toolset, tool or tests of its own by one of these
    names (the names of runtime modules and tests, which a new service does not use)."""
    toolsets, _ = find_service().load_toolsets()
    used = {toolset.name for toolset in toolsets}
    used |= {tool.name for toolset in toolsets for tool in toolset.tools}
    used |= {path.stem.removeprefix("test_") for path in ROOT.glob("tests/test_*.py")}
    if taken := sorted(used & set(names)):
        pytest.skip(f"the service has a toolset, tool or tests of its own named {taken}")


@pytest.mark.any_python  # the template's matrix lints a task toolset on each Python
def test_toolsets_and_a_tool_named_like_runtime_modules_and_tests_are_created(
    service: Path, mypy_cache: str
) -> None:
    """Toolsets named like the runtime's modules and tests (``http`` is also the standard
    library's, and its tool keeps data; ``cli``'s tool may run as a task), and a tool named
    like a runtime test that runs only as a task, in one copy of the service: all are
    linted, tested, served and recorded together."""
    skip_if_the_service_uses("serving", "cli", "http", "gate")
    before, report = recorded_tools(service), contract_report(service)
    tasks = {"cli": "optional", "gate": "required"}
    for name in ("serving", "cli", "http"):
        task = ["--task", tasks[name]] if name in tasks else []
        task += ["--keeps-data"] if name == "http" else []
        created = run(service, "mcp_runtime.devtools.scaffold", "new-toolset", name, *task)
        assert created.returncode == 0, created.stderr
        assert created.stdout.startswith(
            f"Normalised '{name}' to the toolset '{name}' (module {name}.py).\n"
            f"Created the toolset '{name}':\n"
        )
        assert f"uv run {find_service().name} contract --write {name}  " in created.stdout
    added = run(
        service, "mcp_runtime.devtools.scaffold", "new-tool", "hello", "gate", "--task", "required"
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("Added the tool 'gate' to the toolset 'hello':\n")
    assert (service / "tests" / "runtime" / "test_gate.py").read_bytes() == (
        ROOT / "tests" / "runtime" / "test_gate.py"
    ).read_bytes()
    recorded = json.loads((service / "contract" / "tools.json").read_text())["tools"]
    http = next(entry for entry in recorded if entry["name"] == "http")
    assert set(http["outputSchema"]["oneOf"][0]["properties"]) == {
        "message",
        "request_id",
        "rows",
        "file",
    }
    support = {entry["name"]: entry.get("execution") for entry in recorded}
    assert {name: support[name] for name in ("serving", "cli", "http", "gate")} == {
        "serving": None,
        "cli": {"taskSupport": "optional"},
        "http": None,
        "gate": {"taskSupport": "required"},
    }
    tools = {"serving", "cli", "http", "gate"}
    tasked, keeping = frozenset({"cli", "gate"}), frozenset({"http"})
    check_written(service, tools, before, report, mypy_cache, tasked=tasked, keeping=keeping)


@pytest.mark.parametrize("keeps_data", [False, True], ids=["", "keeps-data"])
@pytest.mark.parametrize("task", [None, "optional", "required"])
@pytest.mark.parametrize("package", ["acme", "mcp_tools", "zeta"])
def test_written_tests_sort_their_imports_for_any_package_name(
    package: str, task: str | None, keeps_data: bool
) -> None:
    """The tests as written, before ruff tidies them, of a plain tool, of task tools and of
    tools that keep data: whether the package sorts before, beside or after
    ``mcp_runtime``, its import comes right after the runtime's."""
    names = scaffold.Names("forecast")
    module = f"{package}.toolsets.weather"
    text = scaffold.tool_tests(module, names, "weather", task, keeps_data)
    first_party = f"lint.isort.known-first-party = ['{package}']"
    stdin = ["--stdin-filename", "tests/test_forecast.py", "-"]
    for command in (["check", "--config", first_party], ["format", "--check"]):
        linted = subprocess.run(
            [sys.executable, "-m", "ruff", *command, *stdin],
            cwd=ROOT,
            input=text,
            capture_output=True,
            text=True,
            check=False,
        )
        assert linted.returncode == 0, linted.stdout + linted.stderr


def test_names_a_module_binds_are_taken() -> None:
    source = "import a.b\nfrom c import d as e\nf_records: dict[str, str] = {}\ng = h = 1\n"
    source += "class I:\n    j = 1\n\n\ndef k() -> None:\n    m = 1\n"
    assert scaffold.bound_names(ast.parse(source)) == {"a", "e", "f_records", "g", "h", "I", "k"}


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert scaffold.main(list(argv)) == 2
    output = capsys.readouterr()
    assert output.out == ""
    assert output.err.endswith("\nNothing was written.\n")
    return output.err.removeprefix("error: ").removesuffix("\nNothing was written.\n")


@pytest.mark.usefixtures("unchanged")
def test_empty_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "  ")
    assert message == "The toolset name is empty: give a name such as 'weather data'."


@pytest.mark.usefixtures("unchanged")
def test_name_without_letters_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "!!!")
    assert message.startswith("The toolset name '!!!' has no letter or digit")


@pytest.mark.usefixtures("unchanged")
def test_name_that_cannot_be_an_identifier_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "3D Maps")
    assert message == (
        "The toolset name '3D Maps' gives '3d_maps', which cannot be a Python identifier: "
        "start it with a letter."
    )


@pytest.mark.usefixtures("unchanged")
def test_keyword_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "Class")
    assert message.startswith("The toolset name 'Class' gives 'class', a Python keyword")


@pytest.mark.usefixtures("unchanged")
def test_name_the_written_code_imports_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-tool", "hello", "Connect")
    assert message == (
        "The tool name 'Connect' gives 'connect', which would hide `connect` (the tool's "
        "tests import it from mcp_runtime.testing): choose another name, such as "
        "'connect_tools'."
    )


@pytest.mark.usefixtures("unchanged")
def test_existing_toolset_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-toolset", "Hello")
    assert message.startswith("The toolset 'hello' already exists")
    assert "scripts/new-tool hello NAME" in message


@pytest.mark.usefixtures("unchanged")
def test_existing_tool_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-tool", "hello", "Hello")
    assert message == (
        "The tool name 'hello' is already used by the toolset 'hello': "
        "tool names are unique across the service; choose another name."
    )


@pytest.mark.usefixtures("unchanged")
def test_tool_for_a_missing_toolset_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-tool", "no-such-toolset", "lookup")
    assert message.startswith("There is no toolset 'no-such-toolset': the service has ")


@pytest.mark.usefixtures("unchanged")
def test_tool_name_is_checked_like_a_toolset_name(capsys: pytest.CaptureFixture[str]) -> None:
    message = refusal(capsys, "new-tool", "hello", "import")
    assert message.startswith("The tool name 'import' gives 'import', a Python keyword")


def test_existing_test_file_is_refused(service: Path) -> None:
    team_test = service / "tests" / "test_lookup.py"
    team_test.write_text('"""The team\'s own tests of a lookup."""\n')
    before = files_of(service)
    refused = run(service, "mcp_runtime.devtools.scaffold", "new-tool", "hello", "lookup")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        "error: tests/test_lookup.py already exists: choose another tool name, or move that "
        "file.\nNothing was written.\n"
    )
    assert files_of(service) == before


def test_help_explains_the_rules(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        scaffold.main(["new-toolset", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    usage = "usage: scripts/new-toolset [-h] [--task {optional,required}] [--keeps-data]"
    assert text.startswith(usage)
    rules = ("normalised", "exit status 2", "keyword", "overwrite", "restored", "MCP task")
    for rule in (*rules, "docs/large-results.md"):
        assert rule in text
