"""copier update on a service with a real git history: fixes arrive, the team's work stays.

A template history is built from this repository: release 0.9.0 is its commit
``OLD_LAYOUT``, whose services held the runtime's tests in ``tests/``; release 0.10.0
is its commit ``LAST_SDK1``, the last whose services ran on the MCP SDK's 1.x line;
release 1.0.0 is the working tree as it is; release 1.1.0 adds a runtime fix, a change
to pyproject.toml, a new question and a new wording of the MIT licence. A service
rendered at 1.0.0, 0.10.0 or 0.9.0, then worked on as a team would, is updated to 1.1.0
with ``copier update --defaults``; the scheduled template check (``copier
check-update``, as the service's workflow runs it) tells a service at 1.0.0 that 1.1.0
is out.
"""

import io
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from tests.rendering import SERVICE_ENVIRONMENT, TEMPLATE, runtime_tests_except

ENVIRONMENT = {
    **SERVICE_ENVIRONMENT,
    "GIT_AUTHOR_NAME": "Service Team",
    "GIT_AUTHOR_EMAIL": "team@example.com",
    "GIT_COMMITTER_NAME": "Service Team",
    "GIT_COMMITTER_EMAIL": "team@example.com",
}
COPIER = [sys.executable, "-m", "copier"]

RUNTIME_LINE = (
    "Owned by the template and updated by ``copier update``; do not edit it in a service."
)
RUNTIME_FIX = RUNTIME_LINE.replace("in a service.", "in a service (runtime 1.1.0).")
# The last commit of this repository whose services held the runtime's tests in tests/.
OLD_LAYOUT = "fb9f34d"
# The last commit of this repository whose services ran on the MCP SDK's 1.x line.
LAST_SDK1 = "41b5e0d"
# A runtime dependency's bound that release 1.1.0 raises.
RAISED_BOUND = '"pyjwt[crypto]>=2.12"'
CONFLICT_MARKER = re.compile(r"^(<<<<<<<|=======|>>>>>>>)( |$)", re.MULTILINE)


def run(folder: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``folder``; fail the test with its output if it fails."""
    result = subprocess.run(
        command, cwd=folder, env=ENVIRONMENT, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}{result.stderr}"
        )
    return result


def commit(folder: Path, message: str) -> None:
    run(folder, "git", "add", "--all")
    run(folder, "git", "commit", "--quiet", "--message", message)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def extract(repo: Path, release: str, revision: str) -> None:
    """Write this repository's tree at ``revision`` into ``repo``, as ``release``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision],
        cwd=TEMPLATE,
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        pytest.fail(
            f"Release {release} is commit {revision} of this repository, which git cannot "
            f"read here ({archive.stderr.decode().strip()}): fetch the full history "
            "(`git fetch --unshallow`)."
        )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(repo, filter="data")


@pytest.fixture(scope="module")
def template_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This template as a git repository with four releases: 0.9.0, 0.10.0, 1.0.0, 1.1.0."""
    repo = tmp_path_factory.mktemp("template") / "repo"
    repo.mkdir()
    extract(repo, "0.9.0", OLD_LAYOUT)
    run(repo, "git", "init", "--quiet", "--initial-branch=main")
    commit(repo, "Release 0.9.0: the runtime's tests in tests/")
    run(repo, "git", "tag", "0.9.0")

    run(repo, "git", "rm", "-r", "--quiet", ".")
    extract(repo, "0.10.0", LAST_SDK1)
    commit(repo, "Release 0.10.0: the last on the MCP SDK's 1.x line")
    run(repo, "git", "tag", "0.10.0")

    run(repo, "git", "rm", "-r", "--quiet", ".")
    listed = run(TEMPLATE, "git", "ls-files", "--cached", "--others", "--exclude-standard")
    for name in listed.stdout.splitlines():
        source = TEMPLATE / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    commit(repo, "Release 1.0.0")
    run(repo, "git", "tag", "1.0.0")

    edit(repo / "template/src/mcp_runtime/__init__.py", RUNTIME_LINE, RUNTIME_FIX)
    edit(repo / "template/pyproject.toml.jinja", '"pydantic>=2.11,<3"', '"pydantic>=2.12,<3"')
    edit(repo / "template/pyproject.toml.jinja", '"pyjwt[crypto]>=2.10.1"', RAISED_BOUND)
    edit(
        repo / "template/pyproject.toml.jinja",
        "[project.scripts]",
        '[project.urls]\nHomepage = "{{ homepage }}"\n\n[project.scripts]',
    )
    edit(repo / "includes/licenses/MIT.jinja", "MIT License\n", "The MIT License\n")
    with (repo / "copier.yml").open("a") as questions:
        questions.write(
            "\nhomepage:\n  type: str\n  help: The service's home page\n"
            '  default: "https://example.com/{{ project_slug }}"\n'
        )
    commit(repo, "Release 1.1.0: a runtime fix, a dependency bound, a new question")
    run(repo, "git", "tag", "1.1.0")
    return repo


def render_at(template_repo: Path, folder: Path, release: str, *data: str) -> Path:
    """A service rendered at ``release`` (with ``data``: more answers) and committed."""
    run(
        template_repo.parent,
        *COPIER,
        "copy",
        "--defaults",
        "--skip-tasks",
        "--quiet",
        f"--vcs-ref={release}",
        "--data=package_name=svc",
        *(f"--data={answer}" for answer in data),
        str(template_repo),
        str(folder),
    )
    run(folder, "git", "init", "--quiet", "--initial-branch=main")
    commit(folder, f"Render the template at {release}")
    return folder


def update(folder: Path, *, tasks: bool = False) -> subprocess.CompletedProcess[str]:
    """``copier update --defaults --trust``, with the template's post-render task when
    ``tasks`` (as a team runs it: ``uv sync`` in the service and in Copier's two scratch
    renders) or without it (``--skip-tasks``: the migrations still run), where a test is
    about what the merge leaves in the files. Returns what it printed."""
    skip = [] if tasks else ["--skip-tasks"]
    return run(folder, *COPIER, "update", "--defaults", "--trust", "--quiet", *skip)


def render_like(template_repo: Path, service: Path) -> Path:
    """A fresh render at the service's release, with the answers the service recorded."""
    answers = yaml.safe_load((service / ".copier-answers.yml").read_text())
    data = [f"{key}={value}" for key, value in answers.items() if not key.startswith("_")]
    fresh = service.parent / "fresh"
    return render_at(template_repo, fresh, answers["_commit"], *data)


# What the template owns in a service, which an update must leave as a fresh render has it.
RUNTIME_FOLDERS = ("src/mcp_runtime", "tests/runtime", "scripts")


def runtime_differences(service: Path, fresh: Path) -> list[str]:
    """The files of the runtime, its tests and scripts that differ between two services."""

    def files(root: Path) -> dict[str, bytes]:
        return {
            str(path.relative_to(root)): path.read_bytes()
            for folder in RUNTIME_FOLDERS
            for path in (root / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        }

    updated, rendered = files(service), files(fresh)
    names = sorted(set(updated) | set(rendered))
    return [name for name in names if updated.get(name) != rendered.get(name)]


def works_as_the_team_runs_it(service: Path, *runtime_tests: str) -> str:
    """``uv sync``; with the whole suite collected, the team's tests and the runtime's gate
    and contract tests (and ``runtime_tests``); ``scripts/lint``. The rest of the runtime's
    suite is a fresh render's (``runtime_differences``), which the nox matrix runs whole.
    Returns what pytest printed."""
    run(service, "uv", "sync", "--quiet")
    kept = ("tests/runtime/test_contract.py", "tests/runtime/test_contract_snapshot.py")
    kept += runtime_tests
    pytest = ["uv", "run", "pytest", "-v", "-n", "0", "-p", "no:cacheprovider"]
    tested = run(service, *pytest, *runtime_tests_except(service, *kept)).stdout
    assert re.search(r"^=+ \d+ passed, \d+ deselected\b", tested, re.MULTILINE), tested
    ran = {line.split("::")[0] for line in tested.splitlines() if " PASSED" in line}
    assert set(kept) | {"tests/test_hello.py"} <= ran, tested
    run(service, "scripts/lint")
    return tested


def leftovers(folder: Path) -> list[str]:
    """Files that show an unfinished merge: .rej files, or conflict marker lines."""
    found = []
    for path in sorted(folder.rglob("*")):
        if ".git" in path.parts or ".venv" in path.parts or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if path.suffix == ".rej" or CONFLICT_MARKER.search(text):
            found.append(str(path.relative_to(folder)))
    return found


# A team's test on two of the runtime's modules, as the runtime was before its parts.
TEAM_RUNTIME_TEST = '''"""The team's checks of the runtime it relies on."""

from langchain_core.tools import tool

from mcp_runtime import ToolResult, to_fastmcp
from mcp_runtime.oauth_testing import LocalIssuer
from mcp_runtime.tool_threads import default_share


@tool
def ping() -> ToolResult:
    """Answer at once."""
    return ToolResult(message="pong")


def test_a_tool_converted_by_a_former_name_keeps_its_contract() -> None:
    schema = to_fastmcp(ping).output_schema
    assert schema is not None
    assert schema["required"] == ["message"]


def test_the_test_issuer_serves_on_loopback() -> None:
    with LocalIssuer() as issuer:
        assert issuer.issuer.startswith("http://127.0.0.1:")


def test_a_tool_may_hold_half_the_threads() -> None:
    assert default_share(8) == 4
'''
TEAM_RUNTIME_TEST_AFTER = TEAM_RUNTIME_TEST.replace(
    "mcp_runtime.oauth_testing", "mcp_runtime.devtools.local_issuer"
).replace("mcp_runtime.tool_threads", "mcp_runtime.execution.tool_threads")


# What the team's weather toolset adds: a client of the feed, with its own dependency.
WEATHER_FEED = '''

def feed_client() -> httpx.Client:
    """The national weather feed's HTTP client."""
    return httpx.Client(base_url="https://feed.example.com")
'''


def test_update_carries_fixes_and_keeps_the_teams_work(template_repo: Path, tmp_path: Path) -> None:
    """A service of the last release on the SDK's 1.x line, with a team's toolsets (their
    tests read results by the 1.x client's names), a dependency and README sections,
    updated to the latest release as a team runs it: the move to the SDK's 2.x line, a
    runtime fix, a dependency bound and a new question arrive; the team's files stay as
    they were; its tests, lint and both eras of clients pass."""
    service = render_at(template_repo, tmp_path / "service", "0.10.0")
    assert '"mcp>=1.30,<2"' in (service / "pyproject.toml").read_text()
    run(service, "uv", "sync", "--quiet")
    run(service, "scripts/new-toolset", "Weather Data")
    run(service, "scripts/new-toolset", "reports")
    written = (service / "tests/test_weather_data.py").read_text()
    assert "result.structuredContent" in written  # the names of the SDK's 1.x client
    run(service, "uv", "add", "--quiet", "httpx>=0.27")  # which its weather toolset uses
    toolset = service / "src/svc/toolsets/weather_data.py"
    edit(
        toolset,
        "from langchain_core.tools import tool\n",
        "import httpx\nfrom langchain_core.tools import tool\n",
    )
    toolset.write_text(toolset.read_text() + WEATHER_FEED)
    (service / "tests/test_team_runtime.py").write_text(TEAM_RUNTIME_TEST)
    readme = service / "README.md"
    edit(readme, "## Quick start", "## On call\n\nPage the weather team.\n\n## Quick start")
    readme.write_text(readme.read_text() + "\n## Data sources\n\nThe national weather feed.\n")
    commit(service, "Add toolsets, a dependency, README sections")
    team_owned = [
        "contract/tools.json",
        "src/svc/toolsets/weather_data.py",
        "src/svc/toolsets/reports.py",
        "tests/test_weather_data.py",
        "tests/test_reports.py",
    ]
    before = {name: (service / name).read_bytes() for name in team_owned}

    update(service, tasks=True)

    assert leftovers(service) == []
    assert {name: (service / name).read_bytes() for name in team_owned} == before
    text = readme.read_text()  # the template's sections changed around the team's
    assert "## On call\n\nPage the weather team.\n" in text
    assert text.endswith("\n## Data sources\n\nThe national weather feed.\n")
    assert RUNTIME_FIX in (service / "src/mcp_runtime/__init__.py").read_text()
    project = tomllib.loads((service / "pyproject.toml").read_text())["project"]
    assert "mcp>=2.3,<2.4" in project["dependencies"]
    assert "httpx>=0.27" in project["dependencies"]
    assert "pydantic>=2.12,<3" in project["dependencies"]
    assert project["urls"] == {"Homepage": "https://example.com/my-mcp-service"}
    answers = (service / ".copier-answers.yml").read_text()
    assert "_commit: 1.1.0" in answers
    assert "homepage: https://example.com/my-mcp-service" in answers
    assert "auth: oauth\n" in answers  # answered at 0.10.0, kept

    # Its test on the runtime's modules imports them from their parts (hooks/runtime_parts.py).
    assert (service / "tests/test_team_runtime.py").read_text() == TEAM_RUNTIME_TEST_AFTER
    assert runtime_differences(service, render_like(template_repo, service)) == []
    # The team's lock is never merged with the template's (which conflicts once the SDK's
    # line changes): the update moved it to the merged requirements (the SDK's 2.x line),
    # with the team's dependency kept, so CI's `uv sync --locked` installs what it pins.
    run(service, "uv", "lock", "--check")
    locked = locked_versions(service / "uv.lock")
    assert locked["mcp"].startswith("2."), locked["mcp"]
    assert "httpx2" in locked
    assert "httpx" in locked
    tested = works_as_the_team_runs_it(service, "tests/runtime/test_eras.py")
    # Its test of a former name of the runtime passes, warned of the new name.
    assert "test_a_tool_converted_by_a_former_name_keeps_its_contract PASSED" in tested
    assert "DeprecationWarning: to_fastmcp is now to_mcp_tool" in tested


def locked_versions(lock: Path) -> dict[str, str]:
    """Each package ``lock`` pins, with its version."""
    packages = tomllib.loads(lock.read_text())["package"]
    return {entry["name"]: entry.get("version", "") for entry in packages}


# What the team locks, and what release 1.1.0 (RAISED_BOUND) must move of it.
TEAM_DEPENDENCY = ("humanize", "4.11.0")  # `uv add humanize==4.11.0`
TEAM_LOCK_PIN = ("certifi", "2024.12.14")  # `uv lock --upgrade-package certifi==...`
BELOW_THE_NEW_BOUND = ("pyjwt", "2.10.1")


def test_an_update_moves_the_teams_lock_only_as_far_as_its_own_changes_require(
    template_repo: Path, tmp_path: Path
) -> None:
    """A service at 1.0.0 whose team added a dependency with its version pinned, locked
    one package at an older version, and locked pyjwt below the bound that 1.1.0
    raises: the update to 1.1.0 moves pyjwt, and nothing else; the
    lock matches the merged pyproject.toml at once (`uv lock --check`, as CI's `uv sync
    --locked`), and the environment holds what it pins."""
    service = render_at(template_repo, tmp_path / "service", "1.0.0")
    run(service, "uv", "add", "--quiet", "==".join(TEAM_DEPENDENCY))
    for pin in (TEAM_LOCK_PIN, BELOW_THE_NEW_BOUND):
        run(service, "uv", "lock", "--quiet", "--upgrade-package", "==".join(pin))
    run(service, "uv", "sync", "--quiet")
    commit(service, "Add a dependency; lock certifi and pyjwt where we tested them")
    before = locked_versions(service / "uv.lock")
    assert before[BELOW_THE_NEW_BOUND[0]] == BELOW_THE_NEW_BOUND[1]

    updated = update(service, tasks=True)

    assert leftovers(service) == []
    run(service, "uv", "lock", "--check")
    after = locked_versions(service / "uv.lock")
    moved = sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )
    assert moved == ["pyjwt"], moved
    assert Version(after["pyjwt"]) >= Version("2.12"), after["pyjwt"]
    for name, version in (TEAM_DEPENDENCY, TEAM_LOCK_PIN):
        assert after[name] == version
    assert f"uv.lock: pyjwt 2.10.1 -> {after['pyjwt']}, as the updated" in updated.stdout
    # The environment holds what the lock pins: the team's dependency, the moved pyjwt.
    probe = "import humanize, jwt; print(humanize.__version__, jwt.__version__)"
    installed = run(service, "uv", "run", "--no-sync", "python", "-c", probe).stdout.split()
    assert installed == [TEAM_DEPENDENCY[1], after["pyjwt"]]


def test_edit_to_a_template_owned_file_survives_when_the_template_left_it(
    template_repo: Path, tmp_path: Path
) -> None:
    service = render_at(template_repo, tmp_path / "service", "1.0.0")
    server = service / "src/mcp_runtime/serving/server.py"
    edit(server, '"""Build the MCP server', '"""Build the MCP server (patched here)')
    commit(service, "Patch the runtime locally")

    update(service)

    assert leftovers(service) == []
    assert '"""Build the MCP server (patched here)' in server.read_text()
    assert RUNTIME_FIX in (service / "src/mcp_runtime/__init__.py").read_text()


def test_edit_that_the_template_also_changed_shows_as_a_conflict(
    template_repo: Path, tmp_path: Path
) -> None:
    service = render_at(template_repo, tmp_path / "service", "1.0.0")
    init = service / "src/mcp_runtime/__init__.py"
    edit(init, RUNTIME_LINE, RUNTIME_LINE.replace("in a service.", "in this service!"))
    commit(service, "Edit the runtime's docstring")

    updated = update(service)

    assert leftovers(service) == ["src/mcp_runtime/__init__.py"]
    text = init.read_text()
    assert "in this service!" in text
    assert RUNTIME_FIX in text
    # The update names the file; until it is resolved, lint (which CI runs) refuses it.
    assert updated.stderr.endswith(
        "\ncopier update left conflicts in 1 file(s), where your edits and the template's "
        "changes touch the same lines:\n  src/mcp_runtime/__init__.py\nIn each, keep the "
        "lines you want between `<<<<<<< before updating` and `>>>>>>> after updating`, "
        "delete the marker lines, and `git add` the file. Until then scripts/lint, the "
        "pre-commit hook and CI refuse the service. To undo the whole update instead: git "
        'reset --hard && git clean -fd (docs/updating.md, "Conflicts").\n\n'
    ), updated.stderr
    marker = text.splitlines().index("<<<<<<< before updating") + 1
    lint = subprocess.run(
        ["scripts/lint"], cwd=service, env=ENVIRONMENT, capture_output=True, text=True
    )
    assert lint.returncode == 1
    assert lint.stdout.startswith(f"src/mcp_runtime/__init__.py:{marker}:<<<<<<< before updating\n")
    assert lint.stderr.startswith("lint: conflict markers (above) left by a merge or `copier")

    # The way back that docs/updating.md gives returns to the last commit, where the plain
    # `git checkout -- .` is refused: copier marks the file unmerged.
    refused = subprocess.run(["git", "checkout", "--", "."], cwd=service, capture_output=True)
    assert b"is unmerged" in refused.stderr
    docs = (service / "docs" / "updating.md").read_text()
    way_back = docs.split("If the update went wrong", 1)[1].split("```bash\n", 1)[1]
    run(service, "bash", "-e", "-c", way_back.split("```", 1)[0])
    assert run(service, "git", "status", "--porcelain").stdout == ""
    assert RUNTIME_LINE.replace("in a service.", "in this service!") in init.read_text()
    assert leftovers(service) == []


EXHAUSTED_DOC = "Whether every thread is taken, so a new sync call must wait."


def test_edit_to_a_runtime_module_follows_it_into_its_part(
    template_repo: Path, tmp_path: Path
) -> None:
    """A release before the runtime's parts: the update removes the edited module, and
    its edit is merged into the module's new place."""
    service = render_at(template_repo, tmp_path / "service", "0.10.0")
    old = service / "src/mcp_runtime/tool_threads.py"
    edit(old, EXHAUSTED_DOC, EXHAUSTED_DOC.replace("taken,", "taken (patched here),"))
    commit(service, "Patch the runtime locally")

    update(service)

    assert leftovers(service) == []
    assert not old.exists()
    moved = (service / "src/mcp_runtime/execution/tool_threads.py").read_text()
    released = template_repo / "template/src/mcp_runtime/execution/tool_threads.py"
    patched = EXHAUSTED_DOC.replace("taken,", "taken (patched here),")
    assert moved == released.read_text().replace(EXHAUSTED_DOC, patched)


# A team's work on a service rendered at 0.9.0, before the runtime's tests moved.
SDK1_IMPORT = "from mcp.server.fastmcp import FastMCP\n"
SDK2_NAME = "from mcp_runtime.sdk import MCPServer as FastMCP\n"
BUILD_SERVER = "from mcp_runtime import build_server\n"
TESTING = "from mcp_runtime.testing import connect\n"
TEAM_HELLO_TEST = """

def test_hello_greets_the_team() -> None:
    assert hello.invoke({"name": "Team"})["greeting"] == "Hello, Team!"
"""
TEAM_FIXTURE = '''

@pytest.fixture
def team_city() -> str:
    """The city the team's tests ask about."""
    return "Lisbon"
'''
TEAM_TEST_MODULE = '''"""The team's own tests, with the team's own fixture."""


def test_team_city(team_city: str) -> None:
    assert team_city == "Lisbon"
'''
TEAM_DEPLOYMENT_TEST = '''

def test_autoscaler_fits_our_cluster() -> None:
    """Our cluster runs at most ten replicas of a service."""
    assert manifest("hpa.yaml")["spec"]["maxReplicas"] <= 10
'''
# What a service's tests/ holds after the update: the team's files only.
TEAM_TESTS = [
    "conftest.py",
    "test_credential_demo.py",
    "test_hello.py",
    "test_team.py",
    "test_weather_data.py",
]


def runtime_tests(template: Path) -> list[str]:
    """The runtime's tests a release renders in tests/runtime/ (default answers)."""
    folder = template / "template" / "tests" / "runtime"
    return sorted(re.sub(r"\{%.*?%\}", "", path.name) for path in folder.iterdir())


def test_update_moves_the_runtime_tests_and_keeps_the_teams_tests(
    template_repo: Path, tmp_path: Path
) -> None:
    service = render_at(template_repo, tmp_path / "service", "0.9.0")
    tests = service / "tests"
    assert (tests / "test_serving.py").is_file()  # the old layout
    run(service, "uv", "sync", "--quiet")
    run(service, "scripts/new-toolset", "Weather Data")
    (tests / "test_hello.py").write_text((tests / "test_hello.py").read_text() + TEAM_HELLO_TEST)
    (tests / "conftest.py").write_text((tests / "conftest.py").read_text() + TEAM_FIXTURE)
    (tests / "test_team.py").write_text(TEAM_TEST_MODULE)
    deployment = tests / "test_deployment.py"  # the template's, edited here
    deployment.write_text(deployment.read_text() + TEAM_DEPLOYMENT_TEST)
    commit(service, "Add a toolset, tests, a fixture; extend a runtime test")
    team_owned = ["tests/test_team.py", "src/svc/toolsets/weather_data.py"]
    before = {name: (service / name).read_bytes() for name in team_owned}
    # Each imports the SDK's 1.x server name: the update makes it the runtime's
    # (hooks/sdk2_names.py), in its sorted place, and changes nothing else.
    conftest, scaffolded = (tests / "conftest.py").read_text(), tests / "test_weather_data.py"
    written = scaffolded.read_text()

    update(service, tasks=True)

    assert leftovers(service) == []
    conftest = conftest.replace(SDK1_IMPORT, "").replace(BUILD_SERVER, BUILD_SERVER + SDK2_NAME)
    assert (tests / "conftest.py").read_text() == conftest
    written = written.replace(SDK1_IMPORT, "").replace(TESTING, SDK2_NAME + TESTING)
    assert scaffolded.read_text() == written
    assert sorted(path.name for path in tests.iterdir() if path.is_file()) == TEAM_TESTS
    assert sorted(path.name for path in (tests / "runtime").iterdir()) == runtime_tests(
        template_repo
    )
    assert {name: (service / name).read_bytes() for name in team_owned} == before
    assert (tests / "test_hello.py").read_text().endswith(TEAM_HELLO_TEST)
    released = (template_repo / "template/tests/runtime/test_deployment.py").read_text()
    assert (tests / "runtime/test_deployment.py").read_text() == released + TEAM_DEPLOYMENT_TEST
    assert RUNTIME_FIX in (service / "src/mcp_runtime/__init__.py").read_text()
    # Release 0.9.0 asked no `auth` question: the service keeps the demo header it served.
    assert "auth: demo-header\n" in (service / ".copier-answers.yml").read_text()
    assert (
        'AUTH = "demo-header"'
        in (service / "src/mcp_runtime/config/service_defaults.py").read_text()
    )

    fresh = render_like(template_repo, service)
    assert runtime_differences(service, fresh) == ["tests/runtime/test_deployment.py"]
    works_as_the_team_runs_it(service, "tests/runtime/test_deployment.py")
    # The snapshot recorded before tool metadata: the new fields are compatible changes.
    contract = ["uv", "run", "my-mcp-service", "contract"]
    report = run(service, *contract).stdout
    assert "hello: title: " in report
    assert "not recorded" in report
    run(service, *contract, "--write")
    assert run(service, *contract).stdout.strip() == "The live contract matches the snapshot."


def test_edit_to_a_moved_runtime_test_that_the_template_also_changed_shows_as_a_conflict(
    template_repo: Path, tmp_path: Path
) -> None:
    service = render_at(template_repo, tmp_path / "service", "0.9.0")
    scaffold = service / "tests/test_scaffold.py"
    old_root = "ROOT = Path(__file__).resolve().parent.parent\n"
    edit(scaffold, old_root, old_root.replace("\n", "  # the service's root\n"))
    commit(service, "Comment a runtime test")

    update(service)

    assert leftovers(service) == ["tests/runtime/test_scaffold.py"]
    assert not scaffold.exists()
    text = (service / "tests/runtime/test_scaffold.py").read_text()
    assert "ROOT = Path(__file__).resolve().parent.parent  # the service's root\n" in text
    assert "ROOT = Path(__file__).resolve().parents[2]\n" in text


# Licences: an update never grants rights, and never rewrites a team's LICENSE.
TEAM_LICENSE = "Copyright (c) 2024 Weather Team. Licensed to our customers under contract.\n"


def test_an_update_never_rewrites_the_teams_licence(template_repo: Path, tmp_path: Path) -> None:
    service = render_at(template_repo, tmp_path / "service", "1.0.0", "license=MIT")
    licence = service / "LICENSE"
    assert licence.read_text().startswith("MIT License\n")
    edit(licence, "MIT License\n", "MIT License (ours, with a notice below)\n")
    licence.write_text(licence.read_text() + "\nThird-party notices: NOTICE.md\n")
    commit(service, "Our licence notice")
    before = licence.read_bytes()

    update(service)

    assert leftovers(service) == []
    assert licence.read_bytes() == before
    assert tomllib.loads((service / "pyproject.toml").read_text())["project"]["license"] == "MIT"


@pytest.mark.parametrize("own_licence", [False, True], ids=["no-licence", "own-licence"])
def test_a_service_from_before_the_licence_question_is_granted_nothing(
    template_repo: Path, tmp_path: Path, own_licence: bool
) -> None:
    service = render_at(template_repo, tmp_path / "service", "0.9.0")
    assert not (service / "LICENSE").exists()
    if own_licence:
        (service / "LICENSE").write_text(TEAM_LICENSE)
        commit(service, "Our licence")

    update(service)

    assert leftovers(service) == []
    assert "license: LicenseRef-Proprietary\n" in (service / ".copier-answers.yml").read_text()
    project = tomllib.loads((service / "pyproject.toml").read_text())["project"]
    assert (project["license"], project["license-files"]) == ("LicenseRef-Proprietary", ["LICENSE"])
    licence = (service / "LICENSE").read_text()
    if own_licence:
        assert licence == TEAM_LICENSE
    else:
        assert licence.startswith("Copyright (c) ")
        assert "Service Team. All rights reserved.\n" in licence


def run_template_check(service: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run the check step of the service's template-update workflow, as GitHub runs it;
    return how it ended and the file of its outputs."""
    steps = yaml.safe_load((service / ".github/workflows/template-update.yml").read_text())
    (script,) = [s["run"] for s in steps["jobs"]["check"]["steps"] if s.get("id") == "check"]
    outputs = service.parent / "github-output"
    outputs.write_text("")
    result = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=service,
        env={**ENVIRONMENT, "GITHUB_OUTPUT": str(outputs)},
        capture_output=True,
        text=True,
        check=False,
    )
    return result, outputs


def template_check(service: Path) -> dict[str, str]:
    """What the check step of the service's template-update workflow writes to its outputs."""
    result, outputs = run_template_check(service)
    assert result.returncode == 0, result.stdout + result.stderr
    return dict(line.split("=", 1) for line in outputs.read_text().splitlines())


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ("1.0.0", {"available": "true", "current": "1.0.0", "latest": "1.1.0"}),
        ("1.1.0", {"available": "false", "current": "1.1.0", "latest": "1.1.0"}),
    ],
)
def test_the_scheduled_check_finds_a_newer_template_release(
    template_repo: Path, tmp_path: Path, release: str, expected: dict[str, str]
) -> None:
    service = render_at(template_repo, tmp_path / "service", release)
    assert template_check(service) == expected


def test_the_scheduled_check_says_how_to_record_a_template_it_cannot_clone(
    template_repo: Path, tmp_path: Path
) -> None:
    """A service rendered from a folder that the runner does not have: the check fails
    with the advice the render gave, not only copier's clone error."""
    service = render_at(template_repo, tmp_path / "service", "1.0.0")
    answers = service / ".copier-answers.yml"
    answers.write_text(
        re.sub(r"^_src_path: .*$", "_src_path: /home/ada/template", answers.read_text(), flags=re.M)
    )
    result, outputs = run_template_check(service)
    assert result.returncode == 1
    assert outputs.read_text() == ""
    assert (
        "::error file=.copier-answers.yml::The template cannot be read from /home/ada/template, "
        "the _src_path of .copier-answers.yml (a service rendered from a folder records that "
        "folder, which only its machine has). Record the template's git URL there instead, "
        "such as _src_path: https://github.com/<owner>/<template>.git, commit it"
    ) in result.stdout
