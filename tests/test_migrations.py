"""Update migrations run as scripts, as copier update runs them, on answers files."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.rendering import TEMPLATE

ANSWER_NEW_QUESTIONS = TEMPLATE / "hooks" / "answer_new_questions.py"
OLD_ANSWERS = "# Changes here will be overwritten by Copier\n_commit: 0.9.0\nproject_name: Q\n"


def answer_new_questions(folder: Path) -> None:
    subprocess.run(
        [sys.executable, str(ANSWER_NEW_QUESTIONS), ".copier-answers.yml"], cwd=folder, check=True
    )


def test_a_service_from_before_the_questions_keeps_its_behaviour(tmp_path: Path) -> None:
    """The demo header it served; no licence granted (the release rendered none)."""
    answers = tmp_path / ".copier-answers.yml"
    answers.write_text(OLD_ANSWERS)
    answer_new_questions(tmp_path)
    assert answers.read_text() == (
        OLD_ANSWERS + "auth: demo-header\nlicense: LicenseRef-Proprietary\n"
    )


@pytest.mark.parametrize("auth", ["oauth", "none", "demo-header"])
def test_a_recorded_auth_answer_is_kept(tmp_path: Path, auth: str) -> None:
    answers = tmp_path / ".copier-answers.yml"
    answers.write_text(f"{OLD_ANSWERS}auth: {auth}\nlicense: MIT\nproject_slug: q\n")
    before = answers.read_text()
    answer_new_questions(tmp_path)
    assert answers.read_text() == before


@pytest.mark.parametrize("license", ["MIT", "Apache-2.0", "BSD-3-Clause"])
def test_a_recorded_licence_is_kept(tmp_path: Path, license: str) -> None:
    answers = tmp_path / ".copier-answers.yml"
    answers.write_text(f"{OLD_ANSWERS}auth: oauth\nlicense: {license}\n")
    before = answers.read_text()
    answer_new_questions(tmp_path)
    assert answers.read_text() == before


def test_a_service_with_auth_but_no_licence_gets_only_the_licence(tmp_path: Path) -> None:
    answers = tmp_path / ".copier-answers.yml"
    answers.write_text(f"{OLD_ANSWERS}auth: oauth")  # no final newline
    answer_new_questions(tmp_path)
    assert answers.read_text() == f"{OLD_ANSWERS}auth: oauth\nlicense: LicenseRef-Proprietary\n"


def test_no_answers_file_is_left_alone(tmp_path: Path) -> None:
    answer_new_questions(tmp_path)
    assert list(tmp_path.iterdir()) == []


RUNTIME_PARTS = TEMPLATE / "hooks" / "runtime_parts.py"
# The last commit of this repository whose runtime held its modules side by side.
FLAT_RUNTIME = "9a7be3d"
TEAM_TEST = '''"""The team's test, from before the runtime's parts."""

import pytest

from mcp_runtime import ToolResult
from mcp_runtime.oauth_testing import LocalIssuer
from mcp_runtime.sdk import FastMCP
from mcp_runtime.settings import ServiceSettings, SettingsError, load_settings
from mcp_runtime.testing import connect
from mcp_runtime.tool_threads import ToolBusyError, ToolThreads, default_share, never_started
from svc.toolsets.hello import hello

PATCHED = "mcp_runtime.auth.JwtVerifier"
SERVED = "mcp_runtime.serving.serve"
'''
TEAM_TEST_AFTER = '''"""The team's test, from before the runtime's parts."""

import pytest

from mcp_runtime import ToolResult
from mcp_runtime.config.settings import ServiceSettings, SettingsError, load_settings
from mcp_runtime.devtools.local_issuer import LocalIssuer
from mcp_runtime.execution.tool_threads import (
    ToolBusyError,
    ToolThreads,
    default_share,
    never_started,
)
from mcp_runtime.sdk import FastMCP
from mcp_runtime.testing import connect
from svc.toolsets.hello import hello

PATCHED = "mcp_runtime.auth.oauth.JwtVerifier"
SERVED = "mcp_runtime.serving.processes.serve"
'''


def runtime_parts(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUNTIME_PARTS), str(TEMPLATE), FLAT_RUNTIME],
        cwd=folder,
        check=True,
        capture_output=True,
        text=True,
    )


def service_before_the_parts(folder: Path, files: dict[str, bytes]) -> None:
    """A git repository whose last commit holds ``files`` and the runtime's modules side
    by side (one, unedited), which the update has removed."""
    server = f"{FLAT_RUNTIME}:template/src/mcp_runtime/server.py"
    old = subprocess.run(["git", "show", server], cwd=TEMPLATE, capture_output=True, check=True)
    for name, content in {"src/mcp_runtime/server.py": old.stdout, **files}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(content)
    subprocess.run(["git", "init", "--quiet"], cwd=folder, check=True)
    subprocess.run(["git", "add", "--all"], cwd=folder, check=True)
    identity = ["-c", "user.name=Team", "-c", "user.email=team@example.com"]
    commit = ["git", *identity, "commit", "--quiet", "--message", "Render"]
    subprocess.run(commit, cwd=folder, check=True)
    (folder / "src/mcp_runtime/server.py").unlink()  # as the update removes it


def test_the_teams_imports_follow_the_runtime_into_its_parts(tmp_path: Path) -> None:
    """Renamed, sorted as the service's lint sorts them, and wrapped where too long;
    a second run, or a file in the new layout, is left byte for byte."""
    hello = b"from mcp_runtime import ToolResult, tool_metadata\r\n"
    service_before_the_parts(
        tmp_path,
        {
            "tests/test_team.py": TEAM_TEST.encode(),
            "tests/runtime/test_gate.py": b"from mcp_runtime.gate import to_fastmcp\n",
            "src/svc/toolsets/hello.py": hello,
        },
    )
    team = tmp_path / "tests/test_team.py"

    told = runtime_parts(tmp_path).stderr
    assert team.read_text() == TEAM_TEST_AFTER
    assert told == "tests/test_team.py: now imports the runtime's modules from their parts\n"
    runtime_test = (tmp_path / "tests/runtime/test_gate.py").read_bytes()
    assert runtime_test == b"from mcp_runtime.gate import to_fastmcp\n"  # the template's
    assert (tmp_path / "src/svc/toolsets/hello.py").read_bytes() == hello

    assert runtime_parts(tmp_path).stderr == ""
    assert team.read_text() == TEAM_TEST_AFTER


def test_awkward_files_keep_every_byte_but_the_names(tmp_path: Path) -> None:
    """Line ends kept; a form feed or a line separator in a string is no line end; a file
    that is not UTF-8, or that git does not track, is left as it is."""
    crlf = (
        'PAGE = "\x0c\u2028"\r\n'
        "from mcp_runtime.sdk import MCPServer\r\n"
        "from mcp_runtime.tool_result import ToolResult\r\n"
    ).encode()
    latin = "from mcp_runtime.settings import load_settings  # café\n".encode("latin-1")
    service_before_the_parts(tmp_path, {"tests/test_crlf.py": crlf, "tests/test_latin.py": latin})
    untracked = tmp_path / "venv/lib/site.py"
    untracked.parent.mkdir(parents=True)
    untracked.write_text("from mcp_runtime.settings import load_settings\n")

    told = runtime_parts(tmp_path).stderr.splitlines()

    assert (tmp_path / "tests/test_crlf.py").read_bytes() == (
        'PAGE = "\x0c\u2028"\r\n'
        "from mcp_runtime.contract.tool_result import ToolResult\r\n"
        "from mcp_runtime.sdk import MCPServer\r\n"
    ).encode()
    assert (tmp_path / "tests/test_latin.py").read_bytes() == latin
    assert untracked.read_text() == "from mcp_runtime.settings import load_settings\n"
    assert told == [
        "tests/test_crlf.py: now imports the runtime's modules from their parts",
        "tests/test_latin.py: not UTF-8, left as it is",
    ]


def test_a_service_on_the_parts_already_is_left_alone(tmp_path: Path) -> None:
    """Its ``from mcp_runtime.serving import cli`` names a part, not the old module."""
    team = tmp_path / "tests/test_team.py"
    team.parent.mkdir()
    team.write_text("from mcp_runtime.serving import cli\nfrom mcp_runtime.auth import oauth\n")
    assert runtime_parts(tmp_path).stderr == ""
    assert (
        team.read_text()
        == "from mcp_runtime.serving import cli\nfrom mcp_runtime.auth import oauth\n"
    )


def test_no_module_of_the_runtime_today_is_renamed() -> None:
    """Each module of the template's runtime, as a dotted name, stays; each name a
    moved module gets is a module of the runtime."""
    sys.path.insert(0, str(RUNTIME_PARTS.parent))
    try:
        from runtime_parts import MOVED, renamed
    finally:
        sys.path.remove(str(RUNTIME_PARTS.parent))
    runtime = TEMPLATE / "template/src"
    modules = {
        ".".join(path.relative_to(runtime).parts).removesuffix(".jinja").removesuffix(".py")
        for path in runtime.glob("mcp_runtime/**/*.py*")
        if path.name != "__init__.py"
    }
    text = "\n".join(f"from {name} import x; {name}.attribute" for name in sorted(modules))
    assert renamed(text) == text
    assert {f"mcp_runtime.{new}" for new in MOVED.values()} <= modules


RELOCK = TEMPLATE / "hooks" / "relock.py"
TEAM_LOCK = 'version = 1\n\n[[package]]\nname = "humanize"\nversion = "4.11.0"\n'


def relock(
    folder: Path, *arguments: str, python: str = sys.executable
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, str(RELOCK), *arguments],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )


def test_the_teams_lock_and_environment_wait_out_the_update_and_come_back(tmp_path: Path) -> None:
    """Set aside before the merge (where copier would delete them), back after it, in place
    of anything the update wrote by their names."""
    (tmp_path / "uv.lock").write_text(TEAM_LOCK)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    said = relock(tmp_path, "set-aside").stderr
    assert said == (
        "uv.lock and .venv: set aside in .copier-update-kept/ while the update merges, back "
        "at its end (should it stop before, the next update brings them back)\n"
    )
    assert not (tmp_path / "uv.lock").exists()
    assert not (tmp_path / ".venv").exists()
    (tmp_path / "uv.lock").write_text("written by the update\n")
    (tmp_path / ".venv").mkdir()
    # Without a pyproject.toml's requirements to lock, the lock is left as it came back.
    (tmp_path / "pyproject.toml").write_text("<<<<<<< before updating\n[project]\n")
    done = relock(tmp_path, "restore", "True")
    assert (tmp_path / "uv.lock").read_text() == TEAM_LOCK
    assert (tmp_path / ".venv" / "pyvenv.cfg").read_text() == "home = /usr/bin\n"
    assert not (tmp_path / ".copier-update-kept").exists()
    assert done.stderr == (
        "uv.lock: left as it was, since pyproject.toml has conflicts; once they are "
        "resolved, `uv sync` brings the lock and the environment to it.\n"
    )


def test_a_service_without_a_lock_gets_none_when_tasks_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "svc"\nversion = "0.1.0"\n')
    relock(tmp_path, "set-aside")
    done = relock(tmp_path, "restore", "True")
    assert (done.stdout, done.stderr) == ("", "")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pyproject.toml"]


def test_what_an_interrupted_update_left_aside_comes_back_first(tmp_path: Path) -> None:
    left = tmp_path / ".copier-update-kept"
    left.mkdir()
    (left / "uv.lock").write_text(TEAM_LOCK)
    relock(tmp_path, "set-aside")
    relock(tmp_path, "restore", "True")
    assert (tmp_path / "uv.lock").read_text() == TEAM_LOCK


def test_the_environment_copier_runs_from_stays_in_place(tmp_path: Path) -> None:
    """`uv run copier update` in the service: its Python is in .venv, which must stay."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", ".venv"], cwd=tmp_path, check=True
    )
    (tmp_path / "uv.lock").write_text(TEAM_LOCK)
    said = relock(tmp_path, "set-aside", python=str(tmp_path / ".venv" / "bin" / "python")).stderr
    assert said.startswith("uv.lock: set aside in .copier-update-kept/ while the update merges")
    assert (tmp_path / ".venv" / "pyvenv.cfg").is_file()
    assert (tmp_path / ".copier-update-kept" / "uv.lock").read_text() == TEAM_LOCK
