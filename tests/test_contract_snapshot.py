"""A rendered service's CI fails on a breaking change to a tool, and passes once recorded."""

import subprocess
from pathlib import Path

import pytest

from tests.rendering import SERVICE_ENVIRONMENT, render


def run(service: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=service, env=SERVICE_ENVIRONMENT, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = render(tmp_path_factory.mktemp("contract") / "service", {"package_name": "svc"})
    assert run(folder, "uv", "sync", "--quiet").returncode == 0
    return folder


def test_fresh_service_matches_its_published_contract(service: Path) -> None:
    checked = run(service, "uv", "run", "my-mcp-service", "contract")
    assert (checked.returncode, checked.stdout) == (0, "The live contract matches the snapshot.\n")


def test_renamed_result_key_fails_ci_until_recorded(service: Path) -> None:
    hello = service / "src" / "svc" / "toolsets" / "hello.py"
    source = hello.read_text()
    assert source.count("greeting") >= 3
    hello.write_text(
        source.replace("greeting: NotRequired", "salutation: NotRequired").replace(
            "greeting=greeting", "salutation=greeting"
        )
    )
    (service / "tests" / "test_hello.py").unlink()  # the team's test of the old key

    ci = run(
        service, "uv", "run", "pytest", "-q", "-n", "0", "tests/runtime/test_contract_snapshot.py"
    )
    assert ci.returncode == 1
    assert "hello: result key greeting: result key removed (before: string; after: absent)" in (
        ci.stdout
    )
    checked = run(service, "uv", "run", "my-mcp-service", "contract")
    assert checked.returncode == 1
    assert checked.stdout.startswith("Breaking changes (1): clients that call these tools break\n")
    assert "hello: result key salutation: result key added" in checked.stdout

    assert run(service, "uv", "run", "my-mcp-service", "contract", "--write").returncode == 0
    ci = run(
        service, "uv", "run", "pytest", "-q", "-n", "0", "tests/runtime/test_contract_snapshot.py"
    )
    assert ci.returncode == 0, ci.stdout
    assert '"salutation"' in (service / "contract" / "tools.json").read_text()
