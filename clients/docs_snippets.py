"""The programs and command lines of a rendered service's docs/clients.md, run as written.

The page names each program by its first line (``# hello_sdk.py: ...``, ``// hello.mjs:
...``) and gives its install line in the ``bash`` block before it. Each runs against a
served service, with ``MCP_TOKEN`` set as a user sets it (or unset), the page's
``http://localhost:8000/mcp`` being the served URL (the only change):

- a Python program in an environment of its own made from its install line
  (``pip install X`` runs as ``uv run --no-project --with X``);
- a JavaScript program with Node.js 22 and the packages of this folder's
  ``package.json``, each of which the install line names in a range that admits it;
- each Inspector line of the page's ``bash`` blocks, pasted into a shell as written
  (``npx`` brings Node.js 22 and the Inspector itself), from the service's folder; the
  web UI until it says it is up.

What each must print is in :data:`EXPECTED` (white space aside); a program or line of
the page that it does not know, or that the page no longer has, is a failure too, so
that the page and this check change together.
"""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PAGE_URL = "http://localhost:8000/mcp"
INSPECTOR = "npx -y -p node@22 -p @modelcontextprotocol/inspector@"
GREETING = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}
REPORT = "A report on rain in 3 sections."


@dataclass(frozen=True)
class Snippet:
    """A program of the page (``kind`` python or js, named by its file), or an Inspector
    line (``kind`` inspector, named by what it does); with the install line before it."""

    kind: str
    name: str
    text: str
    install: str = ""


@dataclass(frozen=True)
class Mode:
    """How the service is served for a run: its URL, the MCP_TOKEN a user would set (None:
    unset), what whoami answers (the account, or a part of its text), and whether the
    service has the credential demo."""

    label: str
    url: str
    token: str | None
    whoami: str
    demo: bool


def snippets(page: str) -> list[Snippet]:
    """The page's programs and Inspector lines, in order."""
    found: list[Snippet] = []
    install = ""
    for language, text in re.findall(r"^```(\w*)\n(.*?)^```$", page, re.MULTILINE | re.DOTALL):
        first = text.splitlines()[0] if text else ""
        if language == "bash" and first.startswith(("pip install ", "npm install ")):
            install = first
        elif language in ("python", "js"):
            named = re.match(r"^(?:#|//) (\w+\.(?:py|mjs)):", first)
            if named:
                found.append(Snippet(language, named[1], text, install))
        elif language == "bash":
            for line in text.splitlines():
                if line.startswith(INSPECTOR):
                    found.append(Snippet("inspector", inspector_name(line), line))
    return found


def inspector_name(line: str) -> str:
    """What an Inspector line does: ``web``, ``list``, ``call hello`` or ``stdio``."""
    words = shlex.split(line)
    if "--web" in words:
        return "web"
    if "--" in words:
        return "stdio"
    method = words[words.index("--method") + 1]
    return "list" if method == "tools/list" else f"call {words[words.index('--tool-name') + 1]}"


def whoami_expected(mode: Mode, quote: str) -> list[str]:
    """What a program prints of whoami: the account's entry, or the text's start."""
    if not mode.demo:
        return []
    if mode.whoami.startswith("Authentication is off"):
        return [mode.whoami]
    return [f"account{quote}: '{mode.whoami}'" if quote else f"account: '{mode.whoami}'"]


# Per program or line: what it must print, for a mode.
EXPECTED: dict[str, Callable[[Mode], list[str]]] = {
    "hello_sdk.py": lambda mode: [f"False {GREETING!r}", *whoami_expected(mode, "'")],
    "hello_fastmcp.py": lambda mode: [f"False {GREETING!r}", *whoami_expected(mode, "'")],
    "report_task.py": lambda mode: ["section 1 of 3 written", f"completed {{'message': '{REPORT}'"],
    "cancel_task.py": lambda mode: ["cancelled "],
    "hello.mjs": lambda mode: [
        "false { message: 'Hello, Ada!', greeting: 'Hello, Ada!' }",
        *whoami_expected(mode, ""),
    ],
    "report_task.mjs": lambda mode: [
        "ran as task ",
        "section 1 of 3 written",
        f"completed {{ message: '{REPORT}'",
    ],
    "list": lambda mode: ['"name": "hello"', '"name": "prepare_report"', '"outputSchema"'],
    "call hello": lambda mode: ['"structuredContent": {', '"greeting": "Hello, Ada!"'],
    "stdio": lambda mode: ['"greeting": "Hello, Ada!"'],
    "web": lambda mode: ["MCP Inspector Web is up and running at:"],
}


def check(
    page: Path, service: Path, mode: Mode, only: set[str] | None = None
) -> list[tuple[str, str | None]]:
    """Run the page's programs and lines (those named in ``only``, when given) in ``mode``;
    each with its problem, or None. Every program of ``EXPECTED`` must be on the page."""
    found = snippets(page.read_text())
    wanted = set(EXPECTED) if only is None else only
    results: list[tuple[str, str | None]] = [
        (name, "not on the page") for name in sorted(wanted - {s.name for s in found})
    ]
    for snippet in found:
        if snippet.name not in EXPECTED:
            results.append((snippet.name, "the check knows nothing of it: add it to EXPECTED"))
        elif snippet.name in wanted:
            results.append((snippet.name, run(snippet, service, mode)))
    return results


def environment(mode: Mode) -> dict[str, str]:
    """The environment of a program: PATH with Node.js 22 first, MCP_TOKEN as the user set it."""
    bin_folder = HERE / "node_modules" / ".bin"
    variables = {**os.environ, "PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}"}
    variables.pop("MCP_TOKEN", None)
    if mode.token is not None:
        variables["MCP_TOKEN"] = mode.token
    return variables


def run(snippet: Snippet, service: Path, mode: Mode) -> str | None:
    """Run ``snippet`` in ``mode``; None when it printed what it must, else the problem."""
    text = snippet.text.replace(PAGE_URL, mode.url)
    if snippet.kind in ("python", "js"):
        if snippet.kind == "python":
            problem = python_requirements(snippet.install)
            runner = ["uv", "run", "--quiet", "--no-project", "--python", sys.executable]
            runner += [f"--with={requirement}" for requirement in requirements(snippet.install)]
            runner.append("python")
        else:
            problem, runner = npm_packages(snippet.install), ["node"]
        if problem:
            return problem
        with tempfile.TemporaryDirectory(dir=HERE, prefix=".snippet-") as folder:
            path = Path(folder) / snippet.name
            path.write_text(text)
            return outcome(snippet, mode, [*runner, str(path)], Path(folder))
    if snippet.name == "web":
        return web_ui(text, service, mode)
    return outcome(snippet, mode, ["bash", "-c", text], service)


def outcome(snippet: Snippet, mode: Mode, command: list[str], folder: Path) -> str | None:
    """Run ``command``; None when it exits 0 and prints all it must, else what went wrong."""
    done = subprocess.run(
        command,
        cwd=folder,
        env=environment(mode),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    printed = " ".join(done.stdout.split())  # however a client breaks its lines
    missing = [
        part for part in EXPECTED[snippet.name](mode) if " ".join(part.split()) not in printed
    ]
    if done.returncode == 0 and not missing:
        return None
    tail = (done.stdout + done.stderr).strip()[-900:]
    if mode.token:
        tail = tail.replace(mode.token, "<token>")
    return f"exit {done.returncode}, missing {missing}:\n{tail}"


def web_ui(line: str, service: Path, mode: Mode) -> str | None:
    """The Inspector's web UI, started as written, until it says it is up; then stopped."""
    process = subprocess.Popen(
        ["bash", "-c", line],
        cwd=service,
        env={**environment(mode), "BROWSER": "none"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            line_out = process.stdout.readline()
            if not line_out:
                break
            seen.append(line_out)
            if all(part in "".join(seen) for part in EXPECTED["web"](mode)):
                return None
        return f"it did not say it is up:\n{''.join(seen)[-900:]}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def requirements(install: str) -> list[str]:
    """The requirements of a ``pip install`` line."""
    return shlex.split(install)[2:]


def python_requirements(install: str) -> str | None:
    """What is wrong with a Python program's install line, if anything."""
    if not install.startswith("pip install ") or not requirements(install):
        return f"no `pip install` line before it (found {install!r})"
    return None


def npm_packages(install: str) -> str | None:
    """What is wrong with a JavaScript program's install line: it names each package in a
    range that admits the version this folder's package.json installs for the check."""
    if not install.startswith("npm install "):
        return f"no `npm install` line before it (found {install!r})"
    pinned: dict[str, Any] = json.loads((HERE / "package.json").read_text())["dependencies"]
    problems = []
    for spec in shlex.split(install)[2:]:
        name, _, wanted = spec.rpartition("@")
        version = pinned.get(name)
        if version is None:
            problems.append(f"{name} is not in clients/package.json")
        elif not (version == wanted or version.startswith(f"{wanted}.")):
            problems.append(f"{spec} does not admit {version}, which the check installs")
    return "; ".join(problems) or None
