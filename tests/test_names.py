"""Awkward project names: each renders with the names it should give, lint-clean, deployable.

The names are in awkward_names.json; ``nox -s names`` runs each render's own tests too.
"""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.rendering import AWKWARD_NAMES, read_answers, render

# RFC 1123 labels (most Kubernetes names) and RFC 1035 labels (a Service's name).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
# A container image's repository path component, as the distribution spec defines it.
IMAGE_COMPONENT = re.compile(r"^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$")


@pytest.fixture(scope="module", params=sorted(AWKWARD_NAMES))
def named(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    answers = AWKWARD_NAMES[request.param]["answers"]
    return render(tmp_path_factory.mktemp("names") / request.param, answers)


def gives(service: Path) -> dict[str, str]:
    """The answers the name of ``service`` must give."""
    expected: dict[str, str] = AWKWARD_NAMES[service.name]["gives"]
    return expected


def ruff(service: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("ruff", reason="ruff checks the renders: nox -s template_tests has it")
    command = [sys.executable, "-m", "ruff", *arguments, "--no-cache", "."]
    return subprocess.run(command, cwd=service, capture_output=True, text=True, check=False)


def manifests(service: Path) -> dict[str, dict[str, Any]]:
    folder = service / "deploy" / "kubernetes"
    return {path.name: yaml.safe_load(path.read_text()) for path in sorted(folder.glob("*.yaml"))}


def test_the_name_gives_its_recorded_answers(named: Path) -> None:
    answers = read_answers(named)
    expected = gives(named)
    assert {key: answers[key] for key in expected} == expected
    assert (named / "src" / expected["package_name"] / "toolsets" / "hello.py").is_file()


def test_the_render_passes_ruff_check(named: Path) -> None:
    result = ruff(named, "check", "--output-format=concise")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_render_is_ruff_formatted(named: Path) -> None:
    result = ruff(named, "format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_kubernetes_names_are_valid(named: Path) -> None:
    loaded = manifests(named)
    assert set(loaded) == {
        "deployment.yaml",
        "service.yaml",
        "hpa.yaml",
        "tasks-store.yaml",
        "tasks-store-service.yaml",
        "tasks-store-policy.yaml",
    }
    autoscaler, policy = loaded["hpa.yaml"], loaded["tasks-store-policy.yaml"]
    labels = [*policy["metadata"]["labels"].values()]
    names = [
        autoscaler["metadata"]["name"],
        autoscaler["spec"]["scaleTargetRef"]["name"],
        policy["metadata"]["name"],
    ]
    for deployment, service in (
        (loaded["deployment.yaml"], loaded["service.yaml"]),
        (loaded["tasks-store.yaml"], loaded["tasks-store-service.yaml"]),
    ):
        pod = deployment["spec"]["template"]
        labels += [
            *deployment["metadata"]["labels"].values(),
            *deployment["spec"]["selector"]["matchLabels"].values(),
            *pod["metadata"]["labels"].values(),
            *service["metadata"]["labels"].values(),
            *service["spec"]["selector"].values(),
        ]
        names += [
            deployment["metadata"]["name"],
            *(container["name"] for container in pod["spec"]["containers"]),
        ]
        assert DNS_1035_LABEL.match(service["metadata"]["name"]), service["metadata"]["name"]
    assert [name for name in names if not DNS_LABEL.match(name)] == []
    assert [value for value in labels if not LABEL_VALUE.match(value)] == []


def test_allowed_hosts_are_the_service_dns_names(named: Path) -> None:
    [container] = manifests(named)["deployment.yaml"]["spec"]["template"]["spec"]["containers"]
    environment = {item["name"]: item.get("value") for item in container["env"]}
    hosts = [host.removesuffix(":*") for host in environment["MCP_ALLOWED_HOSTS"].split(",")]
    service_name = manifests(named)["service.yaml"]["metadata"]["name"]
    assert service_name in hosts
    assert all(DNS_LABEL.match(label) for host in hosts for label in host.split(".")), hosts
    assert all(len(host) <= 253 for host in hosts)


def test_image_and_command_are_named_after_the_slug(named: Path) -> None:
    slug = gives(named)["project_slug"]
    recipe = (named / "Dockerfile").read_text()
    [tag] = re.findall(r"^#\s+docker build -t (\S+) \.$", recipe, re.MULTILINE)
    assert tag == slug
    assert IMAGE_COMPONENT.match(tag), tag
    [container] = manifests(named)["deployment.yaml"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"{slug}:latest"
    project = tomllib.loads((named / "pyproject.toml").read_text())["project"]
    assert project["name"] == slug
    assert project["scripts"] == {slug: "mcp_runtime.serving.cli:main"}
    clients = named / "deploy" / "clients"
    assert list(json.loads((clients / "claude-code.mcp.json").read_text())["mcpServers"]) == [slug]
    assert list(json.loads((clients / "vscode.mcp.json").read_text())["servers"]) == [slug]
    assert list(json.loads((clients / "cursor.mcp.json").read_text())["mcpServers"]) == [slug]
