"""What ``copier copy`` writes: a complete service, with no Jinja left in it."""

import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import Render
from tests.rendering import ANSWER_SETS, SERVICE_ENVIRONMENT, TEMPLATE, read_answers

# A Jinja expression, statement or comment, as the template's files write them.
JINJA = re.compile(r"\{\{-?\s*[A-Za-z_]|\{%-?\s*[a-z]|\{#")


@pytest.fixture(params=sorted(ANSWER_SETS))
def service(request: pytest.FixtureRequest, rendered: Render) -> Path:
    return rendered(**ANSWER_SETS[request.param])


def test_no_jinja_is_left_in_any_file_or_name(service: Path) -> None:
    """The workflows are not templated (``${{ }}`` is GitHub's): test_repository.py."""
    workflows = service / ".github" / "workflows"
    leftovers = [
        str(path.relative_to(service))
        for path in service.rglob("*")
        if JINJA.search(path.name)
        or path.suffix == ".jinja"
        or (path.is_file() and path.parent != workflows and JINJA.search(path.read_text()))
    ]
    assert leftovers == []


# Every question of copier.yml, and where the service came from (tests/test_adding_a_question.py
# fails while a question is missing).
RECORDED_ANSWERS = {
    "_commit",
    "_src_path",
    "project_name",
    "project_slug",
    "package_name",
    "description",
    "author_name",
    "author_email",
    "python_version",
    "include_credential_demo",
    "auth",
    "license",
}


def test_answers_file_records_every_answer(service: Path) -> None:
    answers = yaml.safe_load((service / ".copier-answers.yml").read_text())
    assert set(answers) >= RECORDED_ANSWERS


def test_pyproject_declares_the_service(service: Path) -> None:
    answers = yaml.safe_load((service / ".copier-answers.yml").read_text())
    project = tomllib.loads((service / "pyproject.toml").read_text())
    slug, package = answers["project_slug"], answers["package_name"]
    assert project["project"]["name"] == slug
    assert project["project"]["requires-python"] == f">={answers['python_version']}"
    assert project["project"]["scripts"] == {slug: "mcp_runtime.serving.cli:main"}
    assert project["project"]["entry-points"]["mcp_runtime.service"] == {
        slug: f"{package}.toolsets"
    }


def test_runtime_is_copied_verbatim(service: Path) -> None:
    """Every runtime module is the template's, byte for byte, but the one the answers write."""
    runtime = service / "src" / "mcp_runtime"
    defaults = "config/service_defaults.py"
    sources = sorted(
        str(path.relative_to(TEMPLATE_RUNTIME)) for path in TEMPLATE_RUNTIME.rglob("*.py")
    )
    assert sorted(str(path.relative_to(runtime)) for path in runtime.rglob("*.py")) == sorted(
        [*sources, defaults]
    )
    for name in sources:
        assert (runtime / name).read_text() == (TEMPLATE_RUNTIME / name).read_text(), name
    answers = yaml.safe_load((service / ".copier-answers.yml").read_text())
    assert (runtime / defaults).read_text() == (
        '"""What this service was rendered with (its Copier answers); the settings override '
        'them."""\n\n'
        f'AUTH = "{answers["auth"]}"\n'
    )


TEMPLATE_RUNTIME = Path(__file__).resolve().parent.parent / "template" / "src" / "mcp_runtime"


def test_credential_demo_follows_its_answer(rendered: Render) -> None:
    with_demo = rendered(include_credential_demo=True, package_name="svc")
    without = rendered(include_credential_demo=False, package_name="svc")
    demo = Path("src/svc/toolsets/credential_demo.py")
    demo_test = Path("tests/test_credential_demo.py")
    assert (with_demo / demo).is_file()
    assert (with_demo / demo_test).is_file()
    assert not (without / demo).exists()
    assert not (without / demo_test).exists()
    assert "x-demo-token" in documentation(with_demo)
    assert "x-demo-token" not in documentation(without)


def documentation(service: Path) -> str:
    """The service's README and its docs/ pages, one after the other."""
    pages = [service / "README.md", *sorted((service / "docs").glob("*.md"))]
    return "\n".join(page.read_text() for page in pages)


def test_special_characters_in_answers_stay_valid_toml(rendered: Render) -> None:
    service = rendered(description='Says "hi" \\ waves', author_name='Ada "The Count" Lovelace')
    project = tomllib.loads((service / "pyproject.toml").read_text())["project"]
    assert project["description"] == 'Says "hi" \\ waves'
    assert project["authors"] == [{"name": 'Ada "The Count" Lovelace', "email": "team@example.com"}]


def test_lint_script_is_executable(service: Path) -> None:
    assert (service / "scripts" / "lint").stat().st_mode & 0o111


def test_python_version_reaches_the_tools(rendered: Render) -> None:
    service = rendered(python_version="3.13")
    pyproject = (service / "pyproject.toml").read_text()
    assert 'target-version = "py313"' in pyproject
    assert 'python_version = "3.13"' in pyproject
    assert (service / ".python-version").read_text().strip() == "3.13"


def test_the_readmes_teach_in_at_most_200_lines(rendered: Render) -> None:
    """Reference material lives in docs/ pages, in the template and in a service."""
    for readme in (TEMPLATE_RUNTIME.parents[2] / "README.md", rendered() / "README.md"):
        length = len(readme.read_text().splitlines())
        assert length <= 200, f"{readme} has {length} lines: move reference material to docs/"


DEVELOPER_TOOLING = ("mcp_runtime/devtools/", "mcp_runtime/testing.py")


def test_the_wheel_holds_the_runtime_but_its_developer_tooling(rendered: Render) -> None:
    """What the image installs (`uv sync --no-editable` builds this wheel)."""
    if shutil.which("uv") is None:
        pytest.skip("the wheel is built with uv: nox -s template_tests has it")
    service = rendered()
    build = ["uv", "build", "--wheel", "--quiet", "--out-dir", str(service / "dist")]
    subprocess.run(build, cwd=service, env=SERVICE_ENVIRONMENT, check=True, capture_output=True)
    [wheel] = (service / "dist").glob("*.whl")
    packed = {name for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".py")}
    source = service / "src"
    runtime = {path.relative_to(source).as_posix() for path in source.glob("mcp_runtime/**/*.py")}
    tooling = {name for name in runtime if name.startswith(DEVELOPER_TOOLING)}
    assert len(tooling) > 5, tooling
    expected = runtime - tooling
    assert {name for name in packed if name.startswith("mcp_runtime/")} == expected


def test_a_render_from_a_folder_says_how_to_record_the_templates_git_url(tmp_path: Path) -> None:
    """``copier update`` and the weekly template check need a template they can clone; a
    render that skipped the post-render task lists its steps among those left to do; a
    render of a commit that is not a release says what that means for an update."""
    command = [sys.executable, "-m", "copier", "copy", "--defaults", "--skip-tasks"]
    done = subprocess.run(
        [*command, "--vcs-ref=HEAD", str(TEMPLATE), str(tmp_path / "service")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    service = tmp_path / "service"
    closing = done.stderr.split(f"\nRendered My MCP Service in {service}.\n", 1)[1]
    next_steps = (
        "\nNext steps:\n"
        f"  cd {service}\n"
        "  uv sync                      # create the environment, and uv.lock (the skipped "
        "task's step)\n"
        "  uv run pytest                # your tests, the gate and the contract\n"
        '  git init --quiet && git add --all && git commit -m "Render the service"   '
        "# uv.lock too: CI installs from it\n"
        "  uv run my-mcp-service dev-token > .dev-token   # a local token, then the settings "
        "that verify it\n"
    )
    assert closing.startswith(next_steps), closing
    assert (
        f"The service records its template as a folder on this machine, {TEMPLATE}:\n"
        "`copier update` finds the template only there, and the weekly template check\n"
        "(.github/workflows/template-update.yml) cannot clone it. Record the template's git URL\n"
        "instead, in .copier-answers.yml, before the first commit:\n"
        "  _src_path: https://github.com/<owner>/<template>.git\n"
    ) in closing
    commit = read_answers(service)["_commit"]
    not_a_release = f"\nThe service records the template's commit {commit}, not a release:\n"
    assert (not_a_release in closing) is (re.fullmatch(r"v?\d+(\.\d+)+", str(commit)) is None)


def test_the_docs_inspector_is_the_one_the_client_checks_install(rendered: Render) -> None:
    """The Inspector release the service's docs run through npx is the one nox -s clients
    pins (clients/package.json), so that the checks run the lines as the docs give them."""
    pinned = json.loads((TEMPLATE / "clients" / "package.json").read_text())["dependencies"]
    page = (rendered() / "docs" / "clients.md").read_text()
    versions = set(re.findall(r"-p @modelcontextprotocol/inspector@(\S+) mcp-inspector ", page))
    assert versions == {pinned["@modelcontextprotocol/inspector"]}


def test_a_render_from_a_folder_outside_git_speaks_of_no_commit(tmp_path: Path) -> None:
    """A template that is not a git repository records no commit: the closing message says
    nothing of one (and still says how to record the template's git URL)."""
    plain = tmp_path / "template"
    plain.mkdir()
    kept = ("copier.yml", "template", "includes", "hooks")
    for name in kept:
        source = TEMPLATE / name
        if source.is_dir():
            shutil.copytree(source, plain / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, plain / name)
    command = [sys.executable, "-m", "copier", "copy", "--defaults", "--skip-tasks"]
    done = subprocess.run(
        [*command, str(plain), str(tmp_path / "service")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "_commit" not in read_answers(tmp_path / "service")
    assert "records the template's commit" not in done.stderr
    assert f"a folder on this machine, {plain}:" in done.stderr
