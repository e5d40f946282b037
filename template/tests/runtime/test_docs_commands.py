"""The commands the README and docs/ give, read as the shell and the command line read them.

Each command of the service (``uv run NAME ...``, in a ``bash`` block or in a code span
outside the commands table's syntax summaries) is one its command line accepts, options
and all; each script named (``scripts/...``) is there and executable. What the commands
do is proven where they run: the quick start (the template's tests), the Inspector and
the client setups (``nox -s clients``, test_client_setup.py), the image's run lines
(test_deployment.py), the update and its way back (the template's update tests).
"""

import os
import re
import shlex
from pathlib import Path

import pytest

from mcp_runtime.contract.toolsets import find_service
from mcp_runtime.serving import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NAME = find_service().name
BLOCK = re.compile(r"^```(?:bash|sh)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`\n]*\buv run [^`\n]*)`")


def shell_lines(page: Path) -> list[str]:
    """The lines of the page's shell blocks, and its code spans that run ``uv run``."""
    text = page.read_text()
    lines = [line for block in BLOCK.findall(text) for line in block.splitlines()]
    lines += [span for span in SPAN.findall(text) if "[" not in span]  # not a syntax summary
    return [line.split("  #", 1)[0].strip() for line in lines if not line.startswith("#")]


def service_commands() -> list[tuple[str, list[str]]]:
    """Each page's commands of the service: the page, and the arguments after the name."""
    found = []
    for page in PAGES:
        for line in shell_lines(page):
            for command in line.split("&&"):
                words = shlex.split(command.replace("$(", "(").replace("\\|", "|"))
                for at in range(len(words) - 2):
                    if words[at : at + 2] == ["uv", "run"] and words[at + 2] == NAME:
                        found.append((page.name, words[at + 3 :]))
    return found


def test_the_docs_give_commands_of_the_service() -> None:
    """So that the test below checks something: the quick start's commands at least."""
    named = {arguments[0] for _, arguments in service_commands() if arguments}
    assert {"serve", "check", "schema", "contract"} <= named


@pytest.mark.parametrize(("page", "arguments"), service_commands())
def test_each_command_of_the_service_is_one_its_command_line_accepts(
    page: str, arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    redirected = [at for at, word in enumerate(arguments) if word[:1] in {">", "<", "|"}]
    arguments = arguments[: redirected[0]] if redirected else arguments
    try:
        cli._parser(NAME).parse_args(arguments)
    except SystemExit:
        pytest.fail(f"{page}: `{NAME} {' '.join(arguments)}`: {capsys.readouterr().err}")


def test_each_script_the_docs_name_is_there_and_runs() -> None:
    named = {
        word
        for page in PAGES
        for line in shell_lines(page)
        for word in re.findall(r"(?<![\w/.])scripts/[\w-]+", line)
    }
    assert "scripts/lint" in named
    for script in sorted(named):
        assert os.access(ROOT / script, os.X_OK), f"{script} is not an executable script"
