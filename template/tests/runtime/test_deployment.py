"""The deployment artefacts, read as data: they parse, and agree with the service.

No container engine runs in tests: the image recipe is read, the manifests are
parsed, and the endpoints they point at are requested from a served instance.
"""

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from mcp_runtime.config import service_defaults
from mcp_runtime.config.settings import ServiceSettings, load_settings, require_http_auth
from mcp_runtime.contract.toolsets import find_service
from mcp_runtime.testing import run_server, serve_http

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PORT = ServiceSettings.model_fields["port"].default
NAME = find_service().name


def manifest(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "deploy" / "kubernetes" / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(scope="module")
def deployment() -> dict[str, Any]:
    return manifest("deployment.yaml")


@pytest.fixture(scope="module")
def container(deployment: dict[str, Any]) -> dict[str, Any]:
    [only] = deployment["spec"]["template"]["spec"]["containers"]
    assert isinstance(only, dict)
    return only


def test_manifests_are_the_three_kinds() -> None:
    names = ("deployment.yaml", "service.yaml", "hpa.yaml")
    kinds = {name: manifest(name)["kind"] for name in names}
    assert kinds == {
        "deployment.yaml": "Deployment",
        "service.yaml": "Service",
        "hpa.yaml": "HorizontalPodAutoscaler",
    }


def test_ports_match_the_settings(container: dict[str, Any]) -> None:
    [port] = container["ports"]
    assert port == {"name": "http", "containerPort": DEFAULT_PORT}
    environment = {item["name"]: item["value"] for item in container["env"]}
    assert environment["MCP_PORT"] == str(DEFAULT_PORT)
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] == "http"
    [service_port] = manifest("service.yaml")["spec"]["ports"]
    assert service_port["targetPort"] == "http"


def test_binding_beyond_localhost_lists_the_allowed_hosts(container: dict[str, Any]) -> None:
    environment = {item["name"]: item["value"] for item in container["env"]}
    assert environment["MCP_HOST"] == "0.0.0.0"
    hosts = environment["MCP_ALLOWED_HOSTS"].split(",")
    assert f"{NAME}:*" in hosts


def test_the_deployments_settings_serve_over_http(
    container: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The pod starts: its settings load, and are complete for the service's auth mode."""
    monkeypatch.chdir(tmp_path)  # no .env
    for name in [name for name in os.environ if name.startswith("MCP_")]:
        monkeypatch.delenv(name)
    for item in container["env"]:
        monkeypatch.setenv(item["name"], item["value"])
    settings = load_settings()
    require_http_auth(settings)
    assert settings.auth == service_defaults.AUTH


def test_pods_are_scraped_on_the_container_port(
    deployment: dict[str, Any], container: dict[str, Any]
) -> None:
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(container["ports"][0]["containerPort"]),
        "prometheus.io/path": "/metrics",
    }
    with serve_http() as url:
        answer = httpx2.get(url.removesuffix("/mcp") + annotations["prometheus.io/path"])
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")


def test_probes_point_at_real_endpoints(container: dict[str, Any]) -> None:
    paths = [container[probe]["httpGet"]["path"] for probe in ("livenessProbe", "readinessProbe")]
    assert paths == ["/healthz", "/readyz"]
    with serve_http() as url:
        base = url.removesuffix("/mcp")
        statuses = [httpx2.get(base + path).status_code for path in paths]
    assert statuses == [200, 200]


def test_pods_request_resources_and_run_unprivileged(
    deployment: dict[str, Any], container: dict[str, Any]
) -> None:
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_the_read_only_root_keeps_a_writable_temporary_directory(
    deployment: dict[str, Any], container: dict[str, Any]
) -> None:
    # Several workers merge their metrics in a temporary directory (tempfile: /tmp).
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    [mount] = [mount for mount in container["volumeMounts"] if mount["mountPath"] == "/tmp"]
    pod = deployment["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert volumes[mount["name"]]["emptyDir"]["medium"] == "Memory"


def test_autoscaler_targets_the_deployment(deployment: dict[str, Any]) -> None:
    target = manifest("hpa.yaml")["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    selector = manifest("service.yaml")["spec"]["selector"]
    assert selector == deployment["spec"]["selector"]["matchLabels"]


def image_environment() -> dict[str, str]:
    """The settings the image's runtime stage sets with ``ENV`` (but ``PATH``)."""
    recipe = (ROOT / "Dockerfile").read_text()
    runtime_stage = recipe.split(" AS runtime", 1)[1]
    [block] = re.findall(r"^ENV ((?:.*\\\n)*.*)$", runtime_stage, re.MULTILINE)
    pairs = shlex.split(block.replace("\\\n", " "))
    return {name: value for name, value in (pair.split("=", 1) for pair in pairs) if name != "PATH"}


def run_lines() -> list[list[str]]:
    """The ``docker run`` commands the Dockerfile's header gives, split as a shell would."""
    recipe = (ROOT / "Dockerfile").read_text()
    return [shlex.split(line) for line in re.findall(r"^#   (docker run .*)$", recipe, re.M)]


def test_the_images_run_lines_serve_as_pasted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``docker run`` line of the Dockerfile, run here as the image runs it: its
    command, with the image's settings and the line's ``-e`` settings (the port aside).
    Under ``oauth`` one line serves for real, verifying tokens; one is a local trial."""
    lines = run_lines()
    assert len(lines) == (2 if service_defaults.AUTH == "oauth" else 1)
    recipe = (ROOT / "Dockerfile").read_text()
    [command] = re.findall(r"^CMD (\[.*\])$", recipe, re.MULTILINE)
    for line in lines:
        assert line[:4] == ["docker", "run", "-p", f"{DEFAULT_PORT}:{DEFAULT_PORT}"]
        assert line[-1] == NAME
        options = line[4:-1]
        assert options[::2] == ["-e"] * (len(options) // 2), line
        settings = dict(option.split("=", 1) for option in options[1::2])
        for name in [name for name in os.environ if name.startswith("MCP_")]:
            monkeypatch.delenv(name)  # the image's environment has only its own settings
        monkeypatch.chdir(tmp_path)  # and no .env file
        environment = {**image_environment(), **settings}
        process = [sys.executable if part == "python" else part for part in json.loads(command)]
        with run_server(process, env=environment) as server:
            ready = httpx2.get(f"{server.base_url}/readyz")
            assert ready.status_code == 200, server.log()
            host = settings["MCP_ALLOWED_HOSTS"].split(",")[0].replace("*", str(server.port))
            answer = httpx2.post(
                server.url,
                headers={"host": host, "accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
            verifying = settings.get("MCP_AUTH", service_defaults.AUTH) == "oauth"
            assert answer.status_code == (401 if verifying else 200), server.log()


def test_image_is_multi_stage_built_with_uv() -> None:
    recipe = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM \S+ AS (\w+)$", recipe, re.MULTILINE)
    assert stages == ["build", "runtime"]
    # Both syncs install exactly the committed lock, which the image copies with the licence.
    assert recipe.count("uv sync --locked --no-dev") == 2
    assert re.search(r"^COPY pyproject.toml README.md LICENSE uv.lock \./$", recipe, re.MULTILINE)


def test_image_runs_as_a_non_root_user() -> None:
    recipe = (ROOT / "Dockerfile").read_text()
    users = re.findall(r"^USER (\S+)$", recipe, re.MULTILINE)
    assert users, "the image sets no USER"
    assert users[-1].split(":")[0] not in {"root", "0"}


def test_image_healthcheck_requests_the_liveness_endpoint() -> None:
    recipe = (ROOT / "Dockerfile").read_text()
    [check] = re.findall(r"^HEALTHCHECK .*\n\s+CMD (.*)$", recipe, re.MULTILINE)
    assert f"http://127.0.0.1:{DEFAULT_PORT}/healthz" in check
    assert re.search(rf"^EXPOSE {DEFAULT_PORT}$", recipe, re.MULTILINE)


def test_no_deployment_artefact_sets_demo_tokens() -> None:
    """A deployed service accepts no built-in credential: the demo store stays empty."""
    artefacts = [ROOT / "Dockerfile", *sorted((ROOT / "deploy").rglob("*.*"))]
    assert len(artefacts) > 2
    for path in artefacts:
        assert "DEMO_TOKENS" not in path.read_text(), f"{path.relative_to(ROOT)} sets DEMO_TOKENS"


def test_image_copies_no_dotenv_file() -> None:
    """A developer's ``.env`` (which may enable the demo token) never enters the image."""
    recipe = (ROOT / "Dockerfile").read_text()
    copied = re.findall(r"^COPY (?!--from)(.*) \S+$", recipe, re.MULTILINE)
    assert copied, "the recipe copies nothing from the build context"
    sources = {source for line in copied for source in line.split() if not source.startswith("-")}
    assert sources.isdisjoint({".", "./", ".env", "*"}), sources
