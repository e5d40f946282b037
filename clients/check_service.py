"""Check a rendered service with MCP clients nobody in this project wrote.

Starts the service (``uv run SLUG serve``) on a free loopback port with the
authentication its ``auth`` answer chose: under ``oauth``, trusting a test issuer
(``issuer.py``, the runtime's ``LocalIssuer``) that serves its keys and mints the
clients' token; under ``demo-header``, with the demo credential enabled
(``DEMO_TOKENS=demo-token=demo-user``: the service accepts no token unless told). Then:

- the official conformance suite, every scenario that ``conformance.json`` says
  applies (and fails on a scenario it does not classify), against instances served
  with ``MCP_AUTH=none`` (the suite sends no credential);
- the official TypeScript clients (``ts_client.mjs``): the 1.x SDK, and the 2.x client
  negotiating ``legacy``, ``auto`` and pinned to 2026-07-28; each with the credential,
  without it, and with each JSON setup of ``deploy/clients/`` resolved as its client
  resolves it;
- the MCP Python SDK's 2.x client (``sdk_client.py``, in the service's env) in each of
  its modes;
- LangChain's clients (``langchain_client.py``): langchain-mcp-adapters' own client on
  the SDK's 1.x line (in this script's environment, which has the reference
  requirements, ``reference/requirements.txt``), and ``langchain.mcp``'s ``MCPAdapter``
  (in an environment of its own, with ``langchain[mcp]``);
- every program and Inspector line of the service's docs/clients.md (``docs_snippets.py``),
  as written (its install line, its URL aside), against the service served with its
  ``auth`` answer, with ``MCP_AUTH=none`` and no token (the hello programs), and those of
  a render answering ``auth=demo-header`` against the service served so; the Inspector's
  lines (those of ``deploy/clients/inspector.sh``) run through ``npx``, which brings
  Node.js 22 and the Inspector, after it has installed them once;
- under oauth, the README's quick start as written: ``dev-token``, ``serve`` with the
  settings it printed, and the README's Inspector command sending the token;
- three of these at a time (each waits on its own client more than it computes);
- tasks: the conformance suite's tasks scenarios (its 0.2.0-alpha.12 release), against
  the suite's fixture tools (``tasks_fixtures.py``) served as a toolset of the service,
  keeping its tasks in memory, and in two worker processes on one Redis (a
  ``redis-server`` the check starts); every failure must be one
  ``conformance_tasks.json`` expects, with its reason; and against both, beside the
  scenarios, the clients of tasks: fastmcp-tasks' (``task_clients.py``, in an
  environment of its own), the TypeScript 2.x client with ext-tasks in each era and the
  1.x SDK's experimental tasks (``ts_tasks.mjs``), each calling the long-jobs example
  ``prepare_report`` as a task (its progress the status message, its result typed), a
  task whose tool answers a ``ToolError``, and a task cancelled while it runs; and each
  of these clients reading the result of a task across a rolling restart: two
  processes on one Redis behind a balancer (``rolling.py``), replaced one after the
  other while the tasks run; all of it beside the long calls;
- long calls: a ``long-calls`` toolset added as a team adds one (``scripts/new-toolset``,
  its tools rewritten, ``contract --write``) and served alone, then progress,
  cancellation and results of 5 and 20 MB through the TypeScript clients
  (``ts_long_calls.mjs``: the 1.x SDK and the 2.x client negotiating legacy, which
  post ``notifications/cancelled``, and the 2.x client pinned to 2026-07-28, which
  closes the call's response stream), each of which also finds the call's
  ``cancelled`` outcome in the serve log, and results of 5 and 20 MB through fastmcp's
  ``Client`` and the Python SDK's 2.x client in both eras (``large_results.py``), the
  large results beside the rest; the client's reason to
  cancel must not be logged. It runs last: the service then has a third toolset, so
  run the check on a fresh render.

Usage: python check_service.py SERVICE_DIR SLUG
Needs ``npm ci`` done in this folder. Every failure is printed as
``FAIL <client>: <tool or scenario>: <what>``; the exit status is 1 if there is one.
"""

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import docs_snippets
import rolling
from docs_snippets import Mode
from ports import free_port, listening

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
# The services it starts keep their data in a temporary folder, not the machine's.
ENV = {
    **os.environ,
    "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
    "MCP_DATA_URL": os.environ.get("MCP_DATA_URL") or tempfile.mkdtemp(prefix="mcp-clients-data-"),
}
DEMO_TOKENS = "demo-token=demo-user"
SUBJECT = "client-check-user"
SNIPPET_URL = "http://localhost:8000/mcp"
# The Inspector as the docs give it: npx brings Node.js 22 and the Inspector for the command.
INSPECTOR = docs_snippets.INSPECTOR
# How each client substitutes a variable in its setup: Claude Code ${VAR} (or
# ${VAR:-default}), VS Code ${input:ID} (what the user typed), Cursor ${env:VAR}.
SUBSTITUTIONS = {
    "claude-code": r"\$\{([A-Z_][A-Z0-9_]*)(?::-[^}]*)?\}",
    "vscode": r"\$\{input:([a-z][a-z0-9-]*)\}",
    "cursor": r"\$\{env:([A-Z_][A-Z0-9_]*)\}",
}
# The TypeScript clients: the 1.x SDK, and the 2.x client in each negotiation mode.
TS_CLIENTS = ("sdk-1", "legacy", "auto", "2026-07-28")
# langchain.mcp's client, in an environment of its own (it brings fastmcp).
LANGCHAIN_ENV = [
    *("uv", "run", "--quiet", "--no-project", "--python", sys.executable),
    *("--with", "langchain[mcp]>=1.4,<2", "python"),
]
# multiurl, the downloader of ECMWF's data-store clients, in an environment of its own.
MULTIURL_ENV = [
    *("uv", "run", "--quiet", "--no-project", "--python", sys.executable),
    *("--with", "multiurl>=0.3,<0.4", "python"),
]
# fastmcp-tasks' client, in an environment of its own (it installs with fastmcp 4.1.4 only).
FASTMCP_TASKS_ENV = [
    *("uv", "run", "--quiet", "--no-project", "--python", sys.executable),
    *("--with", "fastmcp-tasks==4.1.4", "python"),
]
# The TypeScript clients of tasks: the 2.x client with ext-tasks in each era, the 1.x SDK.
TS_TASK_CLIENTS = ("ext-tasks", "ext-tasks-legacy", "sdk-1")
# What ts_long_calls.mjs gives as its reason to cancel: a client's text is never logged.
CANCEL_REASON = "the ts-sdk check no longer needs it"
# The long-calls toolset's module, written over what scripts/new-toolset generated.
LONG_CALLS = '''\
"""The long-calls toolset: a call that reports its progress, one that waits to be cancelled,
one whose result is as large as asked, and one that keeps as much data as asked."""

import asyncio
import os
from pathlib import Path
from typing import Annotated, NotRequired

from langchain_core.tools import tool
from pydantic import Field

from mcp_runtime import (
    DataLink,
    ToolError,
    ToolResult,
    keep_data,
    report_progress,
    tool_metadata,
)


class CountUpResult(ToolResult):
    """How many steps were counted."""

    steps: NotRequired[int]


class WaitForCancelResult(ToolResult):
    """The wait ended without a cancel."""


class BigResult(ToolResult):
    """Characters of data."""

    data: NotRequired[str]


class BigFile(ToolResult):
    """Bytes of data, kept for the caller and linked."""

    file: NotRequired[DataLink]


@tool_metadata(title="Count up, step by step", read_only=True, idempotent=True, open_world=False)
@tool
async def count_up(
    steps: Annotated[int, Field(ge=1, le=100, description="How many steps to count, 1 to 100.")],
) -> CountUpResult | ToolError:
    """Count from 1 to `steps`, reporting the progress of each step."""
    for step in range(1, steps + 1):
        await asyncio.sleep(0.05)
        report_progress(step, steps, f"step {step}")
    return CountUpResult(message=f"counted {steps} steps", steps=steps)


@tool_metadata(title="Wait to be cancelled", read_only=True, idempotent=True, open_world=False)
@tool
async def wait_for_cancel() -> WaitForCancelResult | ToolError:
    """Wait a minute, or until the call is cancelled."""
    mark("started")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        mark("cancelled")
        raise
    return WaitForCancelResult(message="waited a minute, and nobody cancelled the call")


@tool_metadata(title="A large result", read_only=True, idempotent=True, open_world=False)
@tool
async def big_result(
    megabytes: Annotated[int, Field(ge=1, le=30, description="Megabytes of data, 1 to 30.")],
    seconds: Annotated[float, Field(ge=0, le=30, description="Seconds to wait first.")] = 0,
    steps: Annotated[int, Field(ge=0, le=10, description="Progress steps to report.")] = 0,
) -> BigResult | ToolError:
    """Answer `megabytes` million characters of data after `seconds`, reporting `steps`."""
    for step in range(1, steps + 1):
        report_progress(step, steps, f"step {step}")
    await asyncio.sleep(seconds)
    return BigResult(message=f"{megabytes} MB", data="x" * (megabytes * 1_000_000))


def mark(name: str) -> None:
    """Leave an empty file ``name`` in the folder LONG_CALLS_DIR names, when it names one."""
    folder = os.environ.get("LONG_CALLS_DIR")
    if folder:
        (Path(folder) / name).touch()


@tool_metadata(title="A large file", read_only=True, idempotent=True, open_world=False)
@tool
async def big_file(
    megabytes: Annotated[int, Field(ge=1, le=30, description="Megabytes of data, 1 to 30.")],
    steps: Annotated[int, Field(ge=0, le=10, description="Progress steps to report.")] = 0,
) -> BigFile | ToolError:
    """Keep `megabytes` million bytes (each byte value in turn) for the caller, reporting
    `steps`, and link them."""
    for step in range(1, steps + 1):
        report_progress(step, steps, f"step {step}")
    data = bytes(range(256)) * (megabytes * 1_000_000 // 256 + 1)
    file = keep_data(data[: megabytes * 1_000_000], name=f"{megabytes}mb.bin")
    return BigFile(message=f"{megabytes} MB kept", file=file)


TOOLS = [count_up, wait_for_cancel, big_result, big_file]
'''
failures: list[str] = []


def report(client: str, subject: str, problem: str | None) -> None:
    if problem is None:
        print(f"ok   {client}: {subject}")
    else:
        failures.append(f"{client}: {subject}: {problem}")
        print(f"FAIL {client}: {subject}: {problem}")


def run(
    *command: str, cwd: Path = HERE, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def served(
    service: Path, slug: str, port: int | None = None, line: str | None = None, **settings: str
) -> Iterator[str]:
    """The service serving streamable HTTP on a loopback port; yields its MCP URL.

    It serves as ``uv run SLUG serve``, or as ``line`` pasted into a shell (with
    ``MCP_PORT`` set), with ``settings`` in its environment; its output goes to a log.
    """
    port = port or free_port()
    log_path = service / f"serve-{port}.log"
    log = log_path.open("w")
    command = ["uv", "run", "--quiet", slug, "serve", "--port", str(port)]
    process = subprocess.Popen(
        ["bash", "-c", line] if line else command,
        cwd=service,
        env={**ENV, **settings, "MCP_PORT": str(port)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        if not listening(port, 120, process):
            sys.exit(f"the service did not start:\n{log_path.read_text()}")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        log.close()


def conformance(url: str, stateful_url: str) -> None:
    classified = json.loads((HERE / "conformance.json").read_text())
    groups = {
        url: classified["applies"],
        stateful_url: classified["applies_when_stateful"],
    }
    not_applicable = classified["not_applicable"]
    listed = run(*CONFORMANCE, "list", "--server").stdout
    scenarios = re.findall(r"^\s+- (\S+)", listed, re.MULTILINE)
    if not scenarios:
        report("conformance suite", "list", f"no scenario listed:\n{listed}")
    known = {name for group in groups.values() for name in group} | set(not_applicable)
    for scenario in scenarios:
        if scenario not in known:
            report(
                "conformance suite",
                scenario,
                "a scenario conformance.json does not classify: add it to 'applies' "
                "or to 'not_applicable' with the reason",
            )
    for target, applies in groups.items():
        for scenario in applies:
            if scenario not in scenarios:
                report("conformance suite", scenario, "no longer a scenario of the suite")
                continue
            result = run(*CONFORMANCE, "server", "--url", target, "--scenario", scenario)
            summary = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", result.stdout)
            passed = (
                summary and summary[1] == summary[2] and summary[3] == "0" and summary[2] != "0"
            )
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
            report("conformance suite", scenario, None if passed else f"did not pass:\n{tail}")
    applying = sum(len(group) for group in groups.values())
    print(f"conformance suite: {applying} scenarios apply, {len(not_applicable)} do not")


# Each release of the suite by its own entry point: both name their command `conformance`.
CONFORMANCE = ["node", str(HERE / "node_modules/@modelcontextprotocol/conformance/dist/index.js")]
CONFORMANCE_TASKS = ["node", str(HERE / "node_modules/conformance-tasks/dist/index.js")]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextmanager
def redis_server() -> Iterator[str]:
    """A ``redis-server`` of the check's own on a free loopback port; yields its URL."""
    port = free_port()
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    process = subprocess.Popen(
        [*command, "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    try:
        if not listening(port, 10, process):
            sys.exit("redis-server did not start: the tasks checks need it")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


def shared_tasks(redis_url: str) -> dict[str, str]:
    """The settings that keep a service's tasks on ``redis_url``, sealed with a new key."""
    return {
        "MCP_TASKS_URL": redis_url,
        "MCP_TASK_KEYS": base64.urlsafe_b64encode(os.urandom(32)).decode(),
    }


def add_task_fixtures(service: Path) -> None:
    """The suite's fixture tools of its tasks scenarios, as a toolset of the service."""
    [toolsets] = (service / "src").glob("*/toolsets")
    (toolsets / "tasks_fixtures.py").write_text((HERE / "tasks_fixtures.py").read_text())


def task_conformance(service: Path, slug: str) -> None:
    """The suite's tasks scenarios (0.2.0-alpha.12), against the service keeping its tasks
    in memory, and against two worker processes keeping them on one Redis; every failure
    must be one ``conformance_tasks.json`` expects, with its reason. The task clients run
    against both, beside the scenarios."""
    classified = json.loads((HERE / "conformance_tasks.json").read_text())
    expected = classified["expected_failures"]
    listed = ANSI.sub("", run(*CONFORMANCE_TASKS, "list", "--server").stdout)
    listed_tasks = set(re.findall(r"^\s+- (tasks-\S+)", listed, re.MULTILINE))
    known = set(classified["scenarios"]) | set(classified["not_run"])
    for scenario in sorted(listed_tasks - known):
        report("conformance suite (tasks)", scenario, "not classified in conformance_tasks.json")
    settings = {"MCP_AUTH": "none", "MCP_TOOLSETS": "tasks-fixtures,long-jobs"}
    with (
        redis_server() as redis_url,
        served(service, slug, **settings) as memory_url,
        served(service, slug, **settings, **shared_tasks(redis_url), MCP_WORKERS="2") as redis,
        ThreadPoolExecutor(max_workers=1) as lane,
    ):
        stores = (("memory://", memory_url), ("Redis, two workers", redis))
        clients = [lane.submit(task_clients, store, url) for store, url in stores]
        for store, url in stores:
            failed_anywhere: set[str] = set()
            for scenario in classified["scenarios"]:
                if scenario not in listed_tasks:
                    report("conformance suite (tasks)", scenario, "no longer a scenario")
                    continue
                command = [*CONFORMANCE_TASKS, "server", "--url", url, "--scenario", scenario]
                output = ANSI.sub("", run(*command, timeout=120).stdout)
                failed = {
                    f"{scenario}:{check}"
                    for check in re.findall(r"\[([\w-]+)\s*\]\s+FAILURE", output)
                }
                failed_anywhere |= failed
                ran = re.search(r"Passed: (\d+)/(\d+)", output)
                problems = [f"{check} failed" for check in sorted(failed - set(expected))]
                if ran is None or ran[2] == "0":
                    problems.append("it ran no check:\n" + output[-600:])
                report(
                    f"conformance suite (tasks, {store})",
                    scenario,
                    "; ".join(problems) or None,
                )
            for check in sorted(set(expected) - failed_anywhere):
                report(
                    f"conformance suite (tasks, {store})",
                    check,
                    "passes now: take it out of conformance_tasks.json's expected failures",
                )
        for running in clients:
            running.result()


ROLLING_START_SECONDS = 60.0
"""How long the rolling restart waits, at most, for the task clients' tasks to start."""


def rolling_restart(service: Path, slug: str) -> None:
    """Each task client creates a task (``slow_compute``) on two processes of the service
    on one Redis, behind a balancer; once every task runs, both processes are replaced,
    one after the other (each handing its tasks on at the end of its grace), and only
    then may the tasks end; each client reads its task's result, through the processes
    that replaced them, with its default settings."""
    folder = tempfile.TemporaryDirectory(prefix="rolling-")
    started, released = Path(folder.name) / "started", Path(folder.name) / "released"
    settings = {
        "MCP_AUTH": "none",
        "MCP_TOOLSETS": "tasks-fixtures,long-jobs",
        "MCP_SHUTDOWN_GRACE": "1",
        "MCP_TASK_POLL_INTERVAL": "0.5",
        "TASKS_FIXTURES_STARTED": str(started),
        "TASKS_FIXTURES_RELEASED": str(released),
    }
    store = "Redis, a rolling restart"
    chosen = {"MCP_TASK_CHECKS": "rolling"}
    with (
        folder,
        redis_server() as redis_url,
        rolling.behind_a_balancer(
            service, slug, {**ENV, **settings, **shared_tasks(redis_url)}
        ) as (url, processes),
        ThreadPoolExecutor(max_workers=1 + len(TS_TASK_CLIENTS)) as lanes,
    ):
        fastmcp = [*FASTMCP_TASKS_ENV, str(HERE / "task_clients.py"), url, store]
        clients = [lanes.submit(script, "fastmcp-tasks client", fastmcp, HERE, chosen)]
        for flavour in TS_TASK_CLIENTS:
            command = ["node", str(HERE / "ts_tasks.mjs"), url, store]
            env = {**chosen, "MCP_TS_CLIENT": flavour}
            clients.append(lanes.submit(script, f"ts tasks client ({flavour})", command, HERE, env))
        # The restart begins once every client's task runs (a client can take seconds to
        # start on a busy machine), and the tasks run until it has ended, so that each is
        # running when the process it runs on stops, however long each step takes.
        deadline = time.monotonic() + ROLLING_START_SECONDS
        while len(runs_started(started)) < len(clients) and time.monotonic() < deadline:
            time.sleep(0.1)
        processes.replace_oldest()
        processes.replace_oldest()
        released.touch()
        for running in clients:
            running.result()
    handed = sum(log.read_text().count("was handed on at shutdown") for log in processes.logs)
    report(
        "task clients (a rolling restart)",
        "each task was running when a process it ran on stopped",
        None if handed >= len(clients) else f"{handed} hand-ons for {len(clients)} tasks",
    )


def runs_started(started: Path) -> list[str]:
    """The runs of ``slow_compute`` started so far, one label each (``tasks_fixtures.py``)."""
    return started.read_text().splitlines() if started.exists() else []


def task_clients(store: str, url: str) -> None:
    """Tasks through fastmcp-tasks' client (``task_clients.py``) and the TypeScript
    clients (``ts_tasks.mjs``), against ``url``, a service keeping its tasks in ``store``."""
    fastmcp = [*FASTMCP_TASKS_ENV, str(HERE / "task_clients.py"), url, store]
    script("fastmcp-tasks client", fastmcp, HERE, {})
    for flavour in TS_TASK_CLIENTS:
        command = ["node", str(HERE / "ts_tasks.mjs"), url, store]
        script(f"ts tasks client ({flavour})", command, HERE, {"MCP_TS_CLIENT": flavour})


def readme_dev_token(service: Path, slug: str, ready: "Future[None]") -> None:
    """The quick start of the service's README under oauth, as written: ``dev-token``,
    ``serve`` with the settings it printed, then the Inspector command the README shows,
    sending the token: whoami answers the token's subject, ``developer``."""
    readme = (service / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"^```bash\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    lines = [line.split("  #", 1)[0].strip() for block in blocks for line in block.splitlines()]
    token_line = next((line for line in lines if " dev-token " in line), None)
    serve_line = next((line for line in lines if line.endswith(" serve")), None)
    client = [line for line in lines if line.startswith(("export MCP_TOKEN=", INSPECTOR))]
    if token_line is None or serve_line is None or len(client) != 2:
        report("readme quick start", "dev-token", f"no dev-token, serve and client line: {blocks}")
        return
    made = run("bash", "-c", token_line, cwd=service)
    if made.returncode != 0:
        report("readme quick start", token_line, made.stderr.strip()[-800:])
        return
    ready.result()  # npx has the Inspector
    with served(service, slug, line=serve_line) as url:
        script = "\n".join(client).replace(SNIPPET_URL, url)  # as written: npx, Node.js 22
        called = run("bash", "-e", "-c", script, cwd=service, timeout=180)
    try:
        answer = json.loads(called.stdout)
        account = answer["structuredContent"]["account"]
        problem = None if account == "developer" else f"unexpected answer {answer!r}"
    except (ValueError, KeyError, TypeError):
        problem = f"exit {called.returncode}: {(called.stdout + called.stderr).strip()[-800:]}"
    report("readme quick start", "dev-token, serve, the Inspector: whoami", problem)


def answered(service: Path, question: str) -> str:
    """The service's answer to a template question, from its .copier-answers.yml."""
    answers = (service / ".copier-answers.yml").read_text()
    found = re.search(rf"^{question}: (\S+)$", answers, re.MULTILINE)
    return found[1].strip("'\"") if found else ""


Credentials = tuple[dict[str, str], dict[str, Any]]


@contextmanager
def credentials(service: Path, auth: str, url: str) -> Iterator[Credentials]:
    """The settings that serve ``url`` with ``auth``, and what a client sends and gets back.

    The client side: ``auth``, ``headers`` (the credential), ``token`` (the value of
    MCP_TOKEN the setups in deploy/clients/ substitute), ``account`` (what whoami answers
    with the credential), and ``issuer`` under oauth.
    """
    if auth == "oauth":
        command = ["uv", "run", "--quiet", "python", str(HERE / "issuer.py"), url, SUBJECT]
        issuer = subprocess.Popen(
            command, cwd=service, env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert issuer.stdin is not None
        assert issuer.stdout is not None
        try:
            line = issuer.stdout.readline()
            if not line:
                sys.exit("the test issuer did not start")
            started = json.loads(line)
            token = started["token"]
            yield (
                started["environment"],
                {
                    "auth": auth,
                    "headers": {"Authorization": f"Bearer {token}"},
                    "token": token,
                    "account": SUBJECT,
                    "issuer": started["issuer"],
                },
            )
        finally:
            issuer.stdin.close()
            issuer.wait(timeout=30)
    elif auth == "demo-header":
        yield (
            {"MCP_AUTH": auth, "DEMO_TOKENS": DEMO_TOKENS},
            {
                "auth": auth,
                "headers": {"x-demo-token": "demo-token"},
                "token": "demo-token",
                "account": "demo-user",
            },
        )
    else:
        yield {"MCP_AUTH": "none"}, {"auth": auth, "headers": {}, "token": None, "account": None}


def substitute(pattern: str, values: dict[str, str], text: str) -> str:
    """``text`` with each match of ``pattern`` replaced by the value of the variable it names."""
    return re.sub(pattern, lambda found: values.get(found[1], found[0]), text)


def setups(service: Path, url: str, client: dict[str, Any]) -> list[dict[str, Any]]:
    """Each JSON setup of a remote server in deploy/clients/, resolved as its client
    resolves it, for ``url`` (Claude Desktop's starts the service over stdio: the service's
    test_client_setup.py runs it).

    Each is ``{"name", "url", "headers"}``: the variables substituted with the client's own
    syntax (MCP_TOKEN, or what the user types at VS Code's prompt, being the token).
    """
    resolved = []
    for path in sorted((service / "deploy" / "clients").glob("*.mcp.json")):  # remote setups
        client_name = path.name.split(".")[0].removesuffix("-token")
        config = json.loads(path.read_text())
        [server] = config["servers" if client_name == "vscode" else "mcpServers"].values()
        values = {"MCP_TOKEN": client["token"] or ""}
        values |= {entry["id"]: client["token"] or "" for entry in config.get("inputs", [])}
        headers = {
            name: substitute(SUBSTITUTIONS[client_name], values, value)
            for name, value in server.get("headers", {}).items()
        }
        resolved.append(
            {"name": path.name, "url": server["url"].replace(SNIPPET_URL, url), "headers": headers}
        )
    return resolved


def script(client: str, command: list[str], cwd: Path, env: dict[str, str]) -> None:
    result = run(*command, cwd=cwd, env=env)
    print(result.stdout, end="")
    if result.returncode != 0:
        lines = [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]
        failures.extend(line.removeprefix("FAIL ") for line in lines)
        if not lines:
            report(client, "run", f"exit {result.returncode}: {result.stderr.strip()[-800:]}")


def add_long_calls(service: Path, slug: str) -> bool:
    """Add the long-calls toolset as a team would; whether every step succeeded.

    ``scripts/new-toolset long_calls``, then its module rewritten with the tools of
    ``LONG_CALLS``, the generated tests of the example tool removed, and the contract
    recorded with ``contract --write`` (which runs the startup gate on the new tools).
    """
    scaffolded = run("scripts/new-toolset", "long_calls", cwd=service)
    if scaffolded.returncode != 0:
        report("long calls", "scripts/new-toolset long_calls", scaffolded.stderr.strip()[-800:])
        return False
    [module] = service.glob("src/*/toolsets/long_calls.py")
    module.write_text(LONG_CALLS)
    (service / "tests" / "test_long_calls.py").unlink()
    recorded = run("uv", "run", "--quiet", slug, "contract", "--write", cwd=service)
    problem = (recorded.stdout + recorded.stderr).strip()[-800:]
    report("long calls", "contract --write", None if recorded.returncode == 0 else problem)
    return recorded.returncode == 0


def long_calls(service: Path, slug: str) -> None:
    """Progress, cancellation and large results through the TypeScript clients (the 1.x
    SDK, and the 2.x client negotiating legacy and pinned to 2026-07-28), and large
    results through fastmcp's client in both eras, beside them; no cancel reason logged."""
    if not add_long_calls(service, slug):
        return
    port = free_port()
    big_port = next(other for other in iter(free_port, None) if other != port)
    with (
        tempfile.TemporaryDirectory() as markers,
        served(
            service,
            slug,
            port,
            MCP_AUTH="none",
            MCP_TOOLSETS="long-calls",
            LONG_CALLS_DIR=markers,
        ) as url,
        # The large results, beside on an instance of their own: without a verified
        # caller, a 2025 cancel matches a call by its id alone, and these clients'
        # calls would share ids with the cancelled one.
        served(service, slug, big_port, MCP_AUTH="none", MCP_TOOLSETS="long-calls") as big_url,
    ):
        log = service / f"serve-{port}.log"
        large = [*LANGCHAIN_ENV, str(HERE / "large_results.py"), big_url]
        ranged = [*MULTIURL_ENV, str(HERE / "ranged_download.py"), big_url]
        command = ["node", str(HERE / "ts_long_calls.mjs"), url]
        big_command = ["node", str(HERE / "ts_long_calls.mjs"), big_url]
        flavours = ("sdk-1", "legacy", "2026-07-28")
        big_log = str(service / f"serve-{big_port}.log")
        big = {"MCP_CHECKS": "big", "LONG_CALLS_DIR": markers, "SERVE_LOG": big_log}
        pool = ThreadPoolExecutor(len(flavours) + 2)
        beside = [
            pool.submit(script, "large results", large, HERE, {}),
            pool.submit(script, "a ranged downloader", ranged, HERE, {}),
        ] + [
            pool.submit(
                script,
                f"ts client ({flavour})",
                big_command,
                HERE,
                {**big, "MCP_TS_CLIENT": flavour},
            )
            for flavour in flavours
        ]
        for flavour in flavours:
            for marker in Path(markers).iterdir():
                marker.unlink()
            environment = {"LONG_CALLS_DIR": markers, "SERVE_LOG": str(log)}
            script(
                f"ts client ({flavour})", command, HERE, {**environment, "MCP_TS_CLIENT": flavour}
            )
        for running in beside:
            running.result()
        pool.shutdown()
        leaked = "the client's reason is in it" if CANCEL_REASON in log.read_text() else None
        report("serve log", "wait_for_cancel: no reason to cancel logged", leaked)


def docs_pages(service: Path) -> dict[str, Path]:
    """docs/clients.md of the service, and of a render with ``auth=demo-header`` (the page
    differs only in the credential its programs and lines send), by the page's ``auth``."""
    auth = answered(service, "auth")
    pages = {auth: service / "docs" / "clients.md"}
    if auth != "demo-header":
        folder = service.parent / f"{service.name}-demo-header"
        shutil.rmtree(folder, ignore_errors=True)
        harness = HERE.parent / "tests" / "rendering.py"
        done = run(sys.executable, str(harness), str(folder), '{"auth": "demo-header"}')
        if done.returncode != 0:
            sys.exit(f"the demo-header render failed:\n{done.stderr}")
        pages["demo-header"] = folder / "docs" / "clients.md"
    return pages


def warm_up_npx(page: Path) -> None:
    """Let npx install the Inspector (and Node.js 22) once, as the page's lines ask for it,
    before those lines run side by side (each would install it again, into one folder)."""
    [command] = {line.split(" mcp-inspector ")[0] for line in inspector_lines(page)}
    done = run("bash", "-c", f"{command} mcp-inspector --help", timeout=300)
    if done.returncode != 0:
        report("inspector", "npx", f"exit {done.returncode}: {done.stderr.strip()[-800:]}")


def inspector_lines(page: Path) -> list[str]:
    """The Inspector's lines of a page."""
    return [s.text for s in docs_snippets.snippets(page.read_text()) if s.kind == "inspector"]


def docs_snippets_check(
    page: Path,
    service: Path,
    mode: Mode,
    only: str,
    ready: "Future[None] | None" = None,
) -> None:
    """The programs (``only`` "programs") or the Inspector lines ("inspector", and "web"
    with the web UI) of a docs/clients.md, run in ``mode`` (once ``ready`` is done); or
    only the hello programs ("hello")."""
    if ready is not None:
        ready.result()
    inspector = {name for name in docs_snippets.EXPECTED if "." not in name}
    names = {
        "programs": {name for name in docs_snippets.EXPECTED if "." in name},
        "inspector": inspector - {"web"},  # the web UI once is enough
        "web": inspector,
        "hello": {"hello_sdk.py", "hello_fastmcp.py", "hello.mjs"},
    }[only]
    for name, problem in docs_snippets.check(page, service, mode, names):
        report(f"docs/clients.md ({mode.label})", name, problem)


def main(service: Path, slug: str) -> int:
    auth = answered(service, "auth")
    demo = any(service.glob("src/*/toolsets/credential_demo.py"))
    pages = docs_pages(service)
    warming = ThreadPoolExecutor(max_workers=1)
    npx_warmed = warming.submit(warm_up_npx, pages[auth])
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    whoami = {"oauth": SUBJECT, "demo-header": "demo-user", "none": "Authentication is off"}
    with (
        credentials(service, auth, url) as (settings, client),
        served(service, slug, port, **settings),
        served(service, slug, MCP_AUTH="none") as open_url,
        served(service, slug, MCP_STATELESS="false", MCP_AUTH="none") as stateful_url,
        served(service, slug, MCP_AUTH="demo-header", DEMO_TOKENS=DEMO_TOKENS) as demo_url,
    ):
        client["setups"] = setups(service, url, client)
        # The token travels to the clients in the environment, never on a command line.
        secret = {"MCP_CLIENT_CHECK": json.dumps(client)}
        python = ["uv", "run", "--quiet", "python", str(HERE / "sdk_client.py"), url]
        adapters = [sys.executable, str(HERE / "langchain_client.py"), "adapters", url]
        langchain = [*LANGCHAIN_ENV, str(HERE / "langchain_client.py"), "langchain", url]
        modes = {
            auth: Mode(auth, url, client["token"], whoami[auth], demo),
            "demo-header": Mode("demo-header", demo_url, "demo-token", "demo-user", demo),
        }
        unset = Mode("none", open_url, None, whoami["none"], demo)
        # In the order the lanes take them: the longest first, those that wait for npx last.
        checks: list[Callable[[], None]] = [
            partial(conformance, open_url, stateful_url),
            *(
                partial(docs_snippets_check, pages[label], service, mode, "programs")
                for label, mode in modes.items()
            ),
            partial(docs_snippets_check, pages[auth], service, unset, "hello"),
            *(
                partial(
                    script,
                    f"ts client ({flavour})",
                    ["node", str(HERE / "ts_client.mjs"), url],
                    HERE,
                    {**secret, "MCP_TS_CLIENT": flavour},
                )
                for flavour in TS_CLIENTS
            ),
            partial(script, "python sdk client", python, service, secret),
            partial(script, "langchain-mcp-adapters client", adapters, HERE, secret),
            partial(script, "langchain.mcp client", langchain, HERE, secret),
        ]
        checks += [
            partial(
                docs_snippets_check,
                pages[label],
                service,
                mode,
                "web" if label == auth else "inspector",
                npx_warmed,
            )
            for label, mode in modes.items()
        ]
        if auth == "oauth":
            checks.append(partial(readme_dev_token, service, slug, npx_warmed))
        with ThreadPoolExecutor(max_workers=3) as lanes:
            for done in [lanes.submit(check) for check in checks]:
                done.result()
    warming.shutdown()
    add_task_fixtures(service)
    with ThreadPoolExecutor(max_workers=3) as lanes:
        beside = lanes.submit(task_conformance, service, slug)
        rolled = lanes.submit(rolling_restart, service, slug)
        long_calls(service, slug)
        beside.result()
        rolled.result()
    if failures:
        print(f"\n{len(failures)} client check(s) failed:", file=sys.stderr)
        print("\n".join(f"  {failure}" for failure in failures), file=sys.stderr)
        return 1
    print("\nevery client check passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]).resolve(), sys.argv[2]))
