"""Check a rendered service with MCP clients nobody in this project wrote.

Starts the service (``uv run SLUG serve``) on a free loopback port, with the demo
credential enabled (``DEMO_TOKENS=demo-token=demo-user``: the service accepts no
token unless told), and runs:

- the official conformance suite, every scenario that ``conformance.json`` says
  applies (and fails on a scenario it does not classify);
- the official TypeScript SDK client (``ts_client.mjs``);
- langchain-mcp-adapters' own client (``langchain_client.py``, in the service's env);
- the MCP Inspector's CLI mode: tools/list and tools/call.

Usage: python check_service.py SERVICE_DIR SLUG
Needs ``npm ci`` done in this folder. Every failure is printed as
``FAIL <client>: <tool or scenario>: <what>``; the exit status is 1 if there is one.
"""

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
DEMO_TOKENS = "demo-token=demo-user"
failures: list[str] = []


def report(client: str, subject: str, problem: str | None) -> None:
    if problem is None:
        print(f"ok   {client}: {subject}")
    else:
        failures.append(f"{client}: {subject}: {problem}")
        print(f"FAIL {client}: {subject}: {problem}")


def run(*command: str, cwd: Path = HERE, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout, check=False
    )


@contextmanager
def served(service: Path, slug: str, **settings: str) -> Iterator[str]:
    """The service serving streamable HTTP on a free loopback port; yields its MCP URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log_path = service / f"serve-{port}.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        ["uv", "run", "--quiet", slug, "serve", "--port", str(port)],
        cwd=service,
        env={**ENV, **settings},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"the service did not start:\n{log_path.read_text()}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def conformance(url: str, stateful_url: str) -> None:
    classified = json.loads((HERE / "conformance.json").read_text())
    groups = {
        url: classified["applies"],
        stateful_url: classified["applies_when_stateful"],
    }
    not_applicable = classified["not_applicable"]
    listed = run("conformance", "list", "--server").stdout
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
            result = run("conformance", "server", "--url", target, "--scenario", scenario)
            summary = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", result.stdout)
            passed = (
                summary and summary[1] == summary[2] and summary[3] == "0" and summary[2] != "0"
            )
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
            report("conformance suite", scenario, None if passed else f"did not pass:\n{tail}")
    applying = sum(len(group) for group in groups.values())
    print(f"conformance suite: {applying} scenarios apply, {len(not_applicable)} do not")


def inspector(url: str) -> None:
    def cli(*arguments: str) -> object:
        result = run("mcp-inspector", "--cli", url, *arguments, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"exit {result.returncode}: {result.stderr.strip()[-500:]}")
        return json.loads(result.stdout)

    checks = {
        ("tools/list", "lists every tool with an outputSchema"): (
            ["--method", "tools/list"],
            lambda answer: (
                sorted(
                    tool["name"]
                    for tool in answer["tools"]
                    if tool["outputSchema"]["type"] == "object"
                )
                == ["hello", "whoami"]
            ),
        ),
        ("hello", "tools/call"): (
            ["--method", "tools/call", "--tool-name", "hello", "--tool-arg", "name=Ada"],
            lambda answer: (
                answer["structuredContent"] == {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
                and not answer["isError"]
            ),
        ),
        ("whoami", "tools/call with its header"): (
            [
                "--method",
                "tools/call",
                "--tool-name",
                "whoami",
                "--header",
                "x-demo-token: demo-token",
            ],
            lambda answer: answer["structuredContent"]["account"] == "demo-user",
        ),
    }
    for (tool, what), (arguments, accept) in checks.items():
        try:
            answer = cli(*arguments)
            problem = None if accept(answer) else f"unexpected answer {answer!r}"
        except Exception as exc:  # the check reports any failure, whatever its kind
            problem = f"{type(exc).__name__}: {exc}"
        report("inspector cli", f"{tool}: {what}", problem)


def script(client: str, command: list[str], cwd: Path) -> None:
    result = run(*command, cwd=cwd)
    print(result.stdout, end="")
    if result.returncode != 0:
        lines = [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]
        failures.extend(line.removeprefix("FAIL ") for line in lines)
        if not lines:
            report(client, "run", f"exit {result.returncode}: {result.stderr.strip()[-800:]}")


def main(service: Path, slug: str) -> int:
    with (
        served(service, slug, DEMO_TOKENS=DEMO_TOKENS) as url,
        served(service, slug, MCP_STATELESS="false", DEMO_TOKENS=DEMO_TOKENS) as stateful_url,
    ):
        conformance(url, stateful_url)
        script("ts-sdk client", ["node", str(HERE / "ts_client.mjs"), url], HERE)
        langchain = ["uv", "run", "--quiet", "python", str(HERE / "langchain_client.py"), url]
        script("langchain client", langchain, service)
        inspector(url)
    if failures:
        print(f"\n{len(failures)} client check(s) failed:", file=sys.stderr)
        print("\n".join(f"  {failure}" for failure in failures), file=sys.stderr)
        return 1
    print("\nevery client check passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]).resolve(), sys.argv[2]))
