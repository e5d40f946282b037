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
from urllib.parse import urlsplit

import httpx2
import pytest
import yaml

from mcp_runtime.config import service_defaults
from mcp_runtime.config.settings import ServiceSettings, load_settings, require_http_auth
from mcp_runtime.contract.toolsets import find_service
from mcp_runtime.serving.server import build_server, state_of
from mcp_runtime.testing import run_server, serve_http

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
DEFAULT_PORT = ServiceSettings.model_fields["port"].default
NAME = find_service().name


def manifest(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((MANIFESTS / name).read_text())
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


TASK_KEYS = f"{NAME}-task-keys"
A_TASK_KEY = "Q0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0M="


def pod_environment(container: dict[str, Any], namespace: str = "default") -> dict[str, str]:
    """The container's environment as Kubernetes gives it to a pod in ``namespace``:
    ``$(NAME)`` expanded, each secret's key standing in for its value (a key of the
    task keys' Secret for its own)."""
    found: dict[str, str] = {}
    for item in container["env"]:
        if "fieldRef" in item.get("valueFrom", {}):
            assert item["valueFrom"]["fieldRef"] == {"fieldPath": "metadata.namespace"}
            found[item["name"]] = namespace
        elif "valueFrom" in item:
            secret = item["valueFrom"]["secretKeyRef"]
            standing = A_TASK_KEY if secret["name"] == TASK_KEYS else f"secret-{secret['key']}"
            found[item["name"]] = standing
        else:
            found[item["name"]] = re.sub(
                r"\$\((\w+)\)", lambda named: found[named[1]], item["value"]
            )
    return found


def test_manifests_are_the_kinds_a_service_and_its_task_store_need() -> None:
    kinds = {path.name: manifest(path.name)["kind"] for path in MANIFESTS.glob("*.yaml")}
    assert kinds == {
        "kustomization.yaml": "Kustomization",
        "deployment.yaml": "Deployment",
        "service.yaml": "Service",
        "hpa.yaml": "HorizontalPodAutoscaler",
        "tasks-store.yaml": "Deployment",
        "tasks-store-service.yaml": "Service",
        "tasks-store-policy.yaml": "NetworkPolicy",
    }


def test_replicas_keep_their_tasks_on_the_one_task_store(
    deployment: dict[str, Any], container: dict[str, Any]
) -> None:
    """Several replicas need a shared task store: the service's tasks URL names the
    store's Service, with the password the store requires, from the same Secret."""
    assert deployment["spec"]["replicas"] > 1
    url = urlsplit(pod_environment(container)["MCP_TASKS_URL"])
    store = manifest("tasks-store.yaml")
    store_service = manifest("tasks-store-service.yaml")
    assert (url.scheme, url.hostname, url.path) == (
        "redis",
        store_service["metadata"]["name"],
        "/0",
    )
    [port] = store_service["spec"]["ports"]
    assert url.port == port["port"]
    [redis] = store["spec"]["template"]["spec"]["containers"]
    assert [entry["name"] for entry in redis["ports"]] == [port["targetPort"]]
    labels = store["spec"]["template"]["metadata"]["labels"]
    assert store_service["spec"]["selector"].items() <= labels.items()
    secrets = [
        item["valueFrom"]["secretKeyRef"]["name"]
        for item in [*container["env"], *redis["env"]]
        if "secretKeyRef" in item.get("valueFrom", {})
    ]
    assert secrets == [store["metadata"]["name"], TASK_KEYS, store["metadata"]["name"]]
    assert url.password == "secret-password"
    assert redis["args"][:2] == ["--requirepass", "$(REDIS_PASSWORD)"]
    policy = manifest("tasks-store-policy.yaml")["spec"]
    assert policy["podSelector"]["matchLabels"] == store_service["spec"]["selector"]
    [allowed] = policy["ingress"][0]["from"]
    assert allowed["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]


def test_ports_match_the_settings(container: dict[str, Any]) -> None:
    [port] = container["ports"]
    assert port == {"name": "http", "containerPort": DEFAULT_PORT}
    environment = pod_environment(container)
    assert environment["MCP_PORT"] == str(DEFAULT_PORT)
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] == "http"
    [service_port] = manifest("service.yaml")["spec"]["ports"]
    assert service_port["targetPort"] == "http"


def test_binding_beyond_localhost_lists_the_allowed_hosts(container: dict[str, Any]) -> None:
    """The Service's names, in whatever namespace the pod runs."""
    for namespace in ("default", "weather"):
        environment = pod_environment(container, namespace)
        assert environment["MCP_HOST"] == "0.0.0.0"
        hosts = environment["MCP_ALLOWED_HOSTS"].split(",")
        for host in (NAME, f"{NAME}.{namespace}", f"{NAME}.{namespace}.svc.cluster.local"):
            assert {host, f"{host}:*"} <= set(hosts), hosts


def test_the_kustomization_applies_every_manifest_and_names_the_image_once(
    container: dict[str, Any],
) -> None:
    """`kubectl apply -k deploy/kubernetes` applies every manifest of the folder, with the
    image the release workflow pushes (``ghcr.io/<owner>/<repository>``) set in one place."""
    kustomization = manifest("kustomization.yaml")
    files = sorted(path.name for path in MANIFESTS.glob("*.yaml"))
    assert sorted(kustomization["resources"]) == [n for n in files if n != "kustomization.yaml"]
    [image] = [entry for entry in kustomization["images"] if entry["name"] == container["image"]]
    assert image["newName"].startswith("ghcr.io/")
    assert image["newTag"]


def test_the_deployments_settings_serve_over_http(
    container: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The pod starts: its settings load, and are complete for the service's auth mode."""
    monkeypatch.chdir(tmp_path)  # no .env
    for name in [name for name in os.environ if name.startswith("MCP_")]:
        monkeypatch.delenv(name)
    for name, value in pod_environment(container).items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    require_http_auth(settings)
    assert settings.auth == service_defaults.AUTH
    assert settings.task_key_list == (A_TASK_KEY,)
    build_server(settings=settings)  # its task tools start: what they keep is sealed


def test_what_tasks_keep_is_sealed_with_keys_from_a_secret_of_their_own(
    container: dict[str, Any],
) -> None:
    [keys] = [item for item in container["env"] if item["name"] == "MCP_TASK_KEYS"]
    assert keys["valueFrom"] == {"secretKeyRef": {"name": TASK_KEYS, "key": "keys"}}
    made = f'create secret generic {TASK_KEYS} --from-literal=keys="$(uv run {NAME} task-key)"'
    assert made in (MANIFESTS / "kustomization.yaml").read_text()
    assert made in (ROOT / "docs" / "production.md").read_text()


def test_replicas_keep_their_data_where_every_replica_reads_it(
    container: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The data tools keep is on the object store a Secret of its own names, with its
    credentials; the store it names is one the service keeps data on beside its tasks."""
    data = f"{NAME}-data-store"
    assert container["envFrom"] == [{"secretRef": {"name": data}}]
    made = f"create secret generic {data} --from-literal=MCP_DATA_URL=s3://"
    assert made in (MANIFESTS / "kustomization.yaml").read_text()
    assert made in (ROOT / "docs" / "production.md").read_text()
    monkeypatch.chdir(tmp_path)  # no .env
    for name in [name for name in os.environ if name.startswith("MCP_")]:
        monkeypatch.delenv(name)
    for name, value in pod_environment(container).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MCP_DATA_URL", "s3://your-bucket/data")
    settings = load_settings()
    store = state_of(build_server(settings=settings), settings).data
    assert store is not None
    assert store.blobs.location == "the object store s3://your-bucket/data"


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


@pytest.mark.any_python
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
        environment["MCP_DATA_URL"] = str(tmp_path / "data")  # the image's volume, here a folder
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
