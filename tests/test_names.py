"""Awkward project names: each renders with the names it should give, lint-clean, deployable.

The names are in awkward_names.json; ``nox -s names`` runs each render's own tests too.
"""

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


# The longest namespace Kubernetes accepts: the allowed hosts hold it.
LONGEST_NAMESPACE = "n" * 63


def allowed_hosts(container: dict[str, Any], namespace: str) -> list[str]:
    """The container's MCP_ALLOWED_HOSTS as a pod in ``namespace`` reads it."""
    environment = {item["name"]: item.get("value") for item in container["env"]}
    return environment["MCP_ALLOWED_HOSTS"].replace("$(POD_NAMESPACE)", namespace).split(",")


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
        "kustomization.yaml",
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


def test_allowed_hosts_are_the_service_dns_names_in_the_pods_namespace(named: Path) -> None:
    [container] = manifests(named)["deployment.yaml"]["spec"]["template"]["spec"]["containers"]
    service_name = manifests(named)["service.yaml"]["metadata"]["name"]
    [namespace] = [item for item in container["env"] if item["name"] == "POD_NAMESPACE"]
    assert namespace["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    hosts = [host.removesuffix(":*") for host in allowed_hosts(container, LONGEST_NAMESPACE)]
    assert hosts == [
        service_name,
        service_name,
        *(
            f"{service_name}.{LONGEST_NAMESPACE}{suffix}"
            for suffix in ("", "", ".svc", ".svc", ".svc.cluster.local", ".svc.cluster.local")
        ),
    ]
    assert all(DNS_LABEL.match(label) for host in hosts for label in host.split(".")), hosts
    assert all(len(host) <= 253 for host in hosts)


def test_image_and_command_are_named_after_the_slug(named: Path) -> None:
    slug = gives(named)["project_slug"]
    recipe = (named / "Dockerfile").read_text()
    [tag] = re.findall(r"^#\s+docker build -t (\S+) \.$", recipe, re.MULTILINE)
    assert tag == slug
    assert IMAGE_COMPONENT.match(tag), tag
    [container] = manifests(named)["deployment.yaml"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == slug  # the name kustomization.yaml gives the image of
    project = tomllib.loads((named / "pyproject.toml").read_text())["project"]
    assert project["name"] == slug
    assert project["scripts"] == {slug: "mcp_runtime.serving.cli:main"}
    clients = named / "deploy" / "clients"
    assert list(json.loads((clients / "claude-code.mcp.json").read_text())["mcpServers"]) == [slug]
    assert list(json.loads((clients / "vscode.mcp.json").read_text())["servers"]) == [slug]
    assert list(json.loads((clients / "cursor.mcp.json").read_text())["mcpServers"]) == [slug]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl builds the manifests")
def test_kustomize_builds_every_object_with_the_released_image(named: Path) -> None:
    """`kubectl kustomize deploy/kubernetes`, as `kubectl apply -k` builds it: every object
    of the folder, the service's image the one the release workflow pushes (its version
    the service's), and every name one object gives another found among them."""
    folder = named / "deploy" / "kubernetes"
    built = subprocess.run(
        ["kubectl", "kustomize", str(folder)], capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, built.stderr
    objects = [document for document in yaml.safe_load_all(built.stdout) if document]
    files = {name: loaded for name, loaded in manifests(named).items()}
    kustomization = files.pop("kustomization.yaml")
    assert sorted(kustomization["resources"]) == sorted(files)
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in files.values()
    )
    by_kind: dict[str, dict[str, dict[str, Any]]] = {}
    for found in objects:
        by_kind.setdefault(found["kind"], {})[found["metadata"]["name"]] = found
    slug = gives(named)["project_slug"]
    version = tomllib.loads((named / "pyproject.toml").read_text())["project"]["version"]
    service = by_kind["Deployment"][slug]["spec"]["template"]
    [container] = service["spec"]["containers"]
    image = re.fullmatch(
        r"ghcr\.io/(?P<owner>[^/]+)/(?P<repository>[^:]+):(?P<tag>.+)", container["image"]
    )
    assert image is not None, container["image"]
    assert (image["repository"], image["tag"]) == (slug, version)
    assert IMAGE_COMPONENT.match(image["owner"]), image["owner"]
    release = (named / ".github" / "workflows" / "release.yml").read_text()
    assert "images: ghcr.io/${{ github.repository }}" in release
    # Each selector, target and secret names an object of the build.
    deployments = by_kind["Deployment"].values()
    for exposed in by_kind["Service"].values():
        selector = exposed["spec"]["selector"].items()
        assert any(
            selector <= d["spec"]["template"]["metadata"]["labels"].items() for d in deployments
        )
    for scaler in by_kind["HorizontalPodAutoscaler"].values():
        assert scaler["spec"]["scaleTargetRef"]["name"] in by_kind["Deployment"]
    store = f"{slug[:51].rstrip('-')}-tasks-store"
    containers = [c for d in deployments for c in d["spec"]["template"]["spec"]["containers"]]
    secrets = {
        item["valueFrom"]["secretKeyRef"]["name"]
        for c in containers
        for item in c.get("env", [])
        if "secretKeyRef" in item.get("valueFrom", {})
    }
    secrets |= {item["secretRef"]["name"] for c in containers for item in c.get("envFrom", [])}
    keys, data = f"{slug}-task-keys", f"{slug}-data-store"
    assert secrets == {store, keys, data}  # the three Secrets the docs say to create first
    for secret in (store, keys, data):
        assert (
            f"kubectl create secret generic {secret} "
            in (folder / "kustomization.yaml").read_text()
        )
        assert f" create secret generic {secret} " in (named / "docs" / "production.md").read_text()
