"""A rendered repository keeps itself current: licence, hooks, Renovate, CI, releases.

The licence each answer renders; the pre-commit hooks (the checks of scripts/lint, run by
pre-commit itself in a rendered service); the Renovate config against Renovate's own
schema; the workflows through actionlint, and the CI step that asks for a committed
uv.lock. ``tests/test_update.py`` runs the scheduled template check against a real
template history.
"""

import ast
import datetime
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.licenses import canonicalize_license_expression
from packaging.requirements import Requirement

from tests.conftest import Render
from tests.rendering import SERVICE_ENVIRONMENT, TEMPLATE

LICENCES = ["LicenseRef-Proprietary", "MIT", "Apache-2.0", "BSD-3-Clause"]
WORKFLOWS = TEMPLATE / "template" / ".github" / "workflows"
YEAR = datetime.date.today().year


def run(folder: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``folder`` with the service's environment; never raises."""
    return subprocess.run(
        command, cwd=folder, env=SERVICE_ENVIRONMENT, capture_output=True, text=True, check=False
    )


def tool(name: str) -> str:
    """The path of a command installed beside this Python (nox -s template_tests has it)."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed: nox -s template_tests installs it")
    return found


def workflow(service: Path, name: str) -> dict[Any, Any]:
    loaded = yaml.safe_load((service / ".github" / "workflows" / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def step(job: dict[str, Any], name: str) -> dict[str, Any]:
    """The step of ``job`` with this ``name`` or ``id``."""
    found = [s for s in job["steps"] if name in (s.get("name"), s.get("id"))]
    assert len(found) == 1, f"no single step {name!r}"
    return found[0]


# The licence ------------------------------------------------------------------------------


@pytest.mark.parametrize("licence", LICENCES)
def test_each_licence_is_declared_and_written(rendered: Render, licence: str) -> None:
    service = rendered(license=licence, author_name='Ada "The Count" Lovelace')
    project = tomllib.loads((service / "pyproject.toml").read_text())["project"]
    assert project["license"] == canonicalize_license_expression(licence) == licence
    assert project["license-files"] == ["LICENSE"]
    text = (service / "LICENSE").read_text()
    assert text.endswith(".\n")
    assert not text.endswith("\n\n")
    holder = f'{YEAR} Ada "The Count" Lovelace'
    if licence == "Apache-2.0":
        assert text == (TEMPLATE / "includes" / "licenses" / "Apache-2.0.jinja").read_text()
        assert "Apache License\n                           Version 2.0, January 2004" in text
    elif licence == "MIT":
        assert text.startswith(f"MIT License\n\nCopyright (c) {holder}\n\nPermission is hereby")
    elif licence == "BSD-3-Clause":
        assert text.startswith(f"Copyright (c) {YEAR}, {holder[5:]}\n\nRedistribution and use")
        assert "3. Neither the name of the copyright holder" in text
    else:
        assert text.startswith(f"Copyright (c) {holder}. All rights reserved.\n")
        assert "No licence to use, copy, modify" in text


def test_new_services_grant_nothing_by_default(rendered: Render) -> None:
    service = rendered()
    assert "license: LicenseRef-Proprietary\n" in (service / ".copier-answers.yml").read_text()
    assert "All rights reserved." in (service / "LICENSE").read_text()


def test_an_unknown_licence_is_refused(rendered: Render) -> None:
    with pytest.raises(ValueError, match="Invalid choice for 'license'"):
        rendered(license="GPL-3.0-only")


# pre-commit -------------------------------------------------------------------------------


def lint_commands(service: Path) -> list[str]:
    """The commands scripts/lint runs, without ``uv run --quiet``."""
    lines = (service / "scripts" / "lint").read_text().splitlines()
    return [line.removeprefix("uv run --quiet ") for line in lines if line.startswith("uv run")]


def test_pre_commit_hooks_run_the_checks_of_scripts_lint(rendered: Render) -> None:
    service = rendered()
    config = yaml.safe_load((service / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert [repo["repo"] for repo in config["repos"]] == ["local"]  # nothing to clone
    tools = [hook["entry"] for hook in hooks if hook["entry"].startswith("uv run --quiet ")]
    assert [entry.removeprefix("uv run --quiet ") for entry in tools] == lint_commands(service)
    for hook in hooks:
        assert hook["language"] in {"system", "pygrep"}, hook["id"]


def test_pre_commit_passes_a_fresh_service_and_stops_a_lint_error(rendered: Render) -> None:
    service = rendered()
    assert run(service, "uv", "sync", "--quiet").returncode == 0
    assert run(service, "git", "init", "--quiet").returncode == 0
    assert run(service, "git", "add", "--all").returncode == 0
    pre_commit = ["uv", "run", "--quiet", "pre-commit", "run", "--all-files", "--color=never"]
    clean = run(service, *pre_commit)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    hello = next(service.glob("src/*/toolsets/hello.py"))
    hello.write_text("import os\n" + hello.read_text())
    (service / "NOTES.md").write_text("<<<<<<< before updating\nours\n=======\ntheirs\n")
    run(service, "git", "add", "--all")
    failed = run(service, *pre_commit)
    assert failed.returncode == 1
    assert re.search(r"^ruff check\.+Failed$", failed.stdout, re.MULTILINE), failed.stdout
    assert re.search(r"^no conflict markers.*\.+Failed$", failed.stdout, re.MULTILINE)
    assert "F401" in failed.stdout
    assert "NOTES.md:1:<<<<<<< before updating" in failed.stdout


# Renovate ---------------------------------------------------------------------------------


def renovate_config(service: Path) -> dict[str, Any]:
    loaded = json.loads((service / ".github" / "renovate.json").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_renovate_config_is_valid_by_renovates_schema(rendered: Render) -> None:
    config = rendered() / ".github" / "renovate.json"
    checked = run(
        config.parent, tool("check-jsonschema"), "--builtin-schema", "vendor.renovate", config.name
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_renovate_config_uses_only_documented_options(rendered: Render) -> None:
    """Renovate's schema lets unknown keys through: each key must be one of its options."""
    check_jsonschema = pytest.importorskip("check_jsonschema")
    vendored = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor"
    schema = json.loads((vendored / "renovate.json").read_text())
    options = set(schema["properties"])
    rule_options = set(schema["definitions"]["packageRules"]["items"]["allOf"][0]["properties"])
    config = renovate_config(rendered())
    assert sorted(set(config) - options - {"$schema"}) == []
    assert sorted(set(config["lockFileMaintenance"]) - options) == []
    assert [sorted(set(rule) - rule_options) for rule in config["packageRules"]] == [[], [], []]


def template_owned_dependencies(service: Path) -> set[str]:
    """The runtime's dependencies, the dev group and the build backend, as pyproject lists them."""
    text = (service / "pyproject.toml").read_text()
    runtime = text.split("dependencies = [", 1)[1].split("# The service's own dependencies", 1)[0]
    project = tomllib.loads(text)
    requirements = re.findall(r'^\s*"([^"]+)",', runtime, re.MULTILINE)
    requirements += project["dependency-groups"]["dev"]
    requirements += project["build-system"]["requires"]
    return {Requirement(requirement).name.lower() for requirement in requirements}


def test_renovate_leaves_the_templates_ranges_to_copier_update(rendered: Render) -> None:
    service = rendered()
    config = renovate_config(service)
    assert config["lockFileMaintenance"]["enabled"] is True
    rule, _, _ = config["packageRules"]
    assert rule["rangeStrategy"] == "in-range-only"
    assert rule["matchManagers"] == ["pep621"]
    assert set(rule["matchDepNames"]) == template_owned_dependencies(service)
    assert "starlette" in rule["matchDepNames"]  # the parse above found the lists


def test_renovate_proposes_the_sdks_next_minor_release(rendered: Render) -> None:
    """The MCP SDK's range is one minor release; Renovate replaces it with the next (a
    rule after the one above, so it wins for these two), weekly, in one pull request,
    and leaves a major release to ``copier update``. (A rule matching update types may
    not set a range strategy: Renovate refuses it.)"""
    service = rendered()
    project = tomllib.loads((service / "pyproject.toml").read_text())["project"]
    assert project["dependencies"][:2] == ["mcp>=2.3,<2.4", "mcp-types>=2.3,<2.4"]
    config = renovate_config(service)
    _, rule, _ = config["packageRules"]
    assert rule["matchManagers"] == ["pep621"]
    assert rule["matchDepNames"] == ["mcp", "mcp-types"]
    assert rule["rangeStrategy"] == "replace"
    assert rule["allowedVersions"] == "<3"
    assert rule["groupName"] == "MCP SDK"
    assert rule["schedule"] == config["lockFileMaintenance"]["schedule"]
    assert "matchUpdateTypes" not in rule


def test_renovate_proposes_dockets_next_minor_release(rendered: Render) -> None:
    """Docket's range is one minor release too, replaced weekly by the next, for the
    runtime's suite (its tests of Docket's behaviours among them) to run on."""
    service = rendered()
    dependencies = tomllib.loads((service / "pyproject.toml").read_text())["project"]
    assert "pydocket>=0.27.2,<0.28" in dependencies["dependencies"]
    config = renovate_config(service)
    _, _, rule = config["packageRules"]
    assert rule["matchDepNames"] == ["pydocket"]
    assert rule["rangeStrategy"] == "replace"
    assert rule["allowedVersions"] == "<1"
    assert rule["schedule"] == config["lockFileMaintenance"]["schedule"]


def test_renovate_ignores_every_template_owned_file_with_dependencies(rendered: Render) -> None:
    service = rendered()
    ignored = renovate_config(service)["ignorePaths"]
    owned = [".github/workflows/" + path.name for path in sorted(WORKFLOWS.glob("*.yml"))]
    owned += [".pre-commit-config.yaml", ".python-version", "Dockerfile"]
    for path in owned:
        assert path in ignored
        assert (service / path).is_file(), path
    assert {"scripts/**", "src/mcp_runtime/**", "tests/runtime/**"} <= set(ignored)


# Workflows --------------------------------------------------------------------------------


def test_workflows_are_copied_verbatim(rendered: Render) -> None:
    """Not templated: `${{ }}` in them is GitHub's, and `copier update` diffs them as they are."""
    rendered_workflows = rendered() / ".github" / "workflows"
    names = sorted(path.name for path in WORKFLOWS.iterdir())
    assert names == ["ci.yml", "release.yml", "template-update.yml"]
    assert sorted(path.name for path in rendered_workflows.iterdir()) == names
    for name in names:
        assert (rendered_workflows / name).read_bytes() == (WORKFLOWS / name).read_bytes()


def test_workflows_pass_actionlint(rendered: Render) -> None:
    service = rendered()
    run(service, "git", "init", "--quiet")
    linted = run(service, tool("actionlint"), "-no-color")
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_ci_installs_exactly_the_lock_and_runs_every_check(rendered: Render) -> None:
    steps = workflow(rendered(), "ci.yml")["jobs"]["test"]["steps"]
    commands = [s["run"] for s in steps if "run" in s]
    assert commands[1:] == [
        "uv sync --locked",
        "uv run pytest --runtime-suite",
        "scripts/lint",
        "uv run python -m mcp_runtime check",
    ]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses == ["actions/checkout@v7", "astral-sh/setup-uv@v9.0.0"]


def test_ci_asks_for_a_committed_lock_file(rendered: Render) -> None:
    service = rendered()
    script = step(workflow(service, "ci.yml")["jobs"]["test"], "Check that uv.lock is committed")
    missing = run(service, "bash", "-e", "-c", script["run"])
    assert missing.returncode == 1
    assert "uv.lock is not committed" in missing.stdout
    assert "run `uv lock`, then commit uv.lock" in missing.stdout
    (service / "uv.lock").write_text("version = 1\n")
    assert run(service, "bash", "-e", "-c", script["run"]).returncode == 0


def test_release_publishes_the_image_of_a_tag_after_ci(rendered: Render) -> None:
    service = rendered()
    release = workflow(service, "release.yml")
    assert release[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads `on` as true
    assert release["jobs"]["ci"] == {"uses": "./.github/workflows/ci.yml"}
    image = release["jobs"]["image"]
    assert image["needs"] == "ci"
    assert image["permissions"] == {"contents": "read", "packages": "write"}
    assert release["permissions"] == {"contents": "read"}
    assert step(image, "meta")["with"]["images"] == "ghcr.io/${{ github.repository }}"
    assert "type=semver,pattern={{version}}" in step(image, "meta")["with"]["tags"]
    pushed = [s for s in image["steps"] if s.get("uses") == "docker/build-push-action@v7"]
    assert pushed[0]["with"]["push"] is True
    assert "workflow_call" in workflow(service, "ci.yml")[True]


def test_template_check_runs_weekly_and_on_demand(rendered: Render) -> None:
    check = workflow(rendered(), "template-update.yml")
    assert set(check[True]) == {"schedule", "workflow_dispatch"}
    assert check["permissions"] == {"contents": "read", "issues": "write"}
    script = step(check["jobs"]["check"], "check")["run"]
    assert "copier>=9.13,<10' copier check-update --output-format json" in script


# docs/runtime.md --------------------------------------------------------------------------


def test_every_module_global_the_runtime_sets_is_named_in_docs_runtime() -> None:
    """docs/runtime.md says what the runtime keeps in module globals: each name that a
    ``global`` statement of the runtime rebinds is named there, as "`NAME` in `MODULE`"."""
    runtime = TEMPLATE / "template" / "src" / "mcp_runtime"
    rebound = {
        (path.relative_to(runtime).as_posix(), name)
        for path in runtime.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Global)
        for name in node.names
    }
    assert rebound, "no global statement found: the test reads the wrong folder"
    page = " ".join((TEMPLATE / "docs" / "runtime.md").read_text().split())
    missing = [
        f"`{name}` in `{module}`"
        for module, name in sorted(rebound)
        if f"`{name}` in `{module}`" not in page
    ]
    assert missing == [], f"docs/runtime.md does not say: {missing}"


def test_docs_runtime_names_every_module_of_each_part() -> None:
    """The parts' table of docs/runtime.md names each part's modules, no more, no fewer."""
    runtime = TEMPLATE / "template" / "src" / "mcp_runtime"
    rows = {}
    for line in (TEMPLATE / "docs" / "runtime.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("/`"):
            rows[cells[0].strip("`/")] = set(re.findall(r"`([^`]+)`", cells[1]))
    parts = sorted(path.name for path in runtime.iterdir() if (path / "__init__.py").exists())
    assert sorted(rows) == parts
    for part, named in rows.items():
        folder = runtime / part
        modules = {
            path.name.removesuffix(".jinja").removesuffix(".py")
            for path in folder.iterdir()
            if path.name.endswith((".py", ".py.jinja")) and path.name != "__init__.py"
        }
        modules |= {f"{path.name}/" for path in folder.iterdir() if (path / "__init__.py").exists()}
        assert named == modules, part
