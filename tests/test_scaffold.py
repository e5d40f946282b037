"""scripts/new-toolset and scripts/new-tool in a rendered service with its own environment."""

import subprocess
from functools import partial
from pathlib import Path

import pytest

from tests.rendering import (
    FIRST_WEEK_TESTS,
    FIRST_WEEK_TOOLS,
    SERVICE_ENVIRONMENT,
    first_week,
    render,
)


def run(service: Path, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=service, env=SERVICE_ENVIRONMENT, capture_output=True, text=True, check=check
    )


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rendered service with its environment, as `uv sync` makes it."""
    folder = render(tmp_path_factory.mktemp("scaffold") / "service", {"package_name": "svc"})
    run(folder, "uv", "sync", "--quiet")
    return folder


def files_of(service: Path) -> dict[str, bytes]:
    folders = [service / "src", service / "tests", service / "contract"]
    return {
        str(path): path.read_bytes()
        for folder in folders
        for path in folder.rglob("*.*")
        if "__pycache__" not in path.parts
    }


def test_failure_after_writing_restores_every_file(service: Path) -> None:
    before = files_of(service)
    too_long = "a" * 130  # an identifier, but longer than MCP allows a tool name
    result = run(service, "scripts/new-toolset", too_long, check=False)
    assert result.returncode == 1
    assert "every file was restored" in result.stderr
    assert "[tool-name]" in result.stderr
    assert files_of(service) == before


def output(service: Path, *command: str) -> str:
    return run(service, *command).stdout


def test_first_week_toolsets_and_tools_are_served_tested_and_clean(service: Path) -> None:
    """A team's first week: scaffolds, their tests with the gate's, lint, check, schema."""
    contract_tests = "tests/runtime/test_contract.py"
    week = first_week(partial(output, service), "my-mcp-service", *FIRST_WEEK_TESTS, contract_tests)
    created, _, added = week.scaffolds
    assert created.startswith(
        "Normalised 'Weather Data' to the toolset 'weather-data' (module weather_data.py).\n"
    )
    assert "src/svc/toolsets/weather_data.py" in created
    assert added.startswith("Added the tool 'forecast' to the toolset 'weather-data':")
    assert " passed" in week.tests
    assert " failed" not in week.tests
    assert week.check == "ok: 7 tools of my-mcp-service keep the contract\n"
    schemas = {tool["name"]: tool["outputSchema"] for tool in week.listing["tools"]}
    examples = {"hello", "whoami", "prepare_report", "retrieve_records", "read_data"}
    assert set(schemas) == {*examples, *FIRST_WEEK_TOOLS}
    assert schemas["forecast"]["oneOf"][0]["title"] == "ForecastResult"
    assert schemas["weather_data"]["oneOf"][0]["required"] == ["message"]
    assert set(schemas["reports"]["oneOf"][0]["properties"]) == {"message", "key", "record"}
