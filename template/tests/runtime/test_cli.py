"""The command line: serve, check, schema and contract, and its messages on bad input."""

import gc
import importlib
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jwt
import pytest

from mcp_runtime import ToolError
from mcp_runtime.contract.snapshot import SNAPSHOT, read_snapshot, render
from mcp_runtime.contract.toolsets import Service, ServiceNotFoundError, find_service
from mcp_runtime.serving import cli

GOOD_TOOLSET = '''
from typing import NotRequired

from langchain_core.tools import tool

from mcp_runtime import ToolError, ToolResult


class EchoResult(ToolResult):
    """The echoed text."""

    text: NotRequired[str]


@tool
def echo(text: str) -> EchoResult | ToolError:
    """Echo the text back."""
    return EchoResult(message=text, text=text)


TOOLS = [echo]
'''

BAD_TOOLSET = '''
from langchain_core.tools import tool

from mcp_runtime import ToolResult


@tool
def untyped(text: str):
    """Return without an annotation."""
    return {"message": text}


@tool
def optional(text: str) -> ToolResult | None:
    """Return maybe nothing."""
    return None


TOOLS = [untyped, optional]
'''


@pytest.fixture
def sample_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Path:
    """A service whose toolsets package lives in a temporary folder; returns that folder."""
    package = f"sample_toolsets_{request.node.name.replace('[', '_').replace(']', '')}"
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "good.py").write_text(textwrap.dedent(GOOD_TOOLSET))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "find_service", lambda: Service("sample", package))
    return folder


def test_check_passes_on_the_service(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check"]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_check_counts_the_tools(sample_service: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check"]) == 0
    assert capsys.readouterr().out == "ok: 1 tools of sample keep the contract\n"


def test_check_lists_every_violation_and_exits_1(
    sample_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (sample_service / "bad.py").write_text(BAD_TOOLSET)
    assert cli.main(["check"]) == 1
    output = capsys.readouterr()
    assert output.out == ""
    assert output.err.startswith("error: 2 tool contract violations:\n")
    assert "bad/untyped: [return-annotation]" in output.err
    assert "bad/optional: [return-type]" in output.err
    assert "Traceback" not in output.err


def test_toolset_without_tools_list_is_a_violation(
    sample_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (sample_service / "empty.py").write_text('"""Nothing here."""\n')
    assert cli.main(["check"]) == 1
    assert "empty: [toolset] " in capsys.readouterr().err


def test_toolset_that_fails_to_import_is_a_violation(
    sample_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (sample_service / "broken.py").write_text("import no_such_module_here\n")
    assert cli.main(["check"]) == 1
    error = capsys.readouterr().err
    assert "broken: [toolset] " in error
    assert "ModuleNotFoundError" in error


def test_private_modules_are_not_toolsets(
    sample_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (sample_service / "_helpers.py").write_text("VALUE = 1\n")
    assert cli.main(["check"]) == 0
    assert capsys.readouterr().out == "ok: 1 tools of sample keep the contract\n"


FORGOTTEN_TOOL = (
    GOOD_TOOLSET.replace("echo", "shout")
    + """

@tool
def whisper(text: str) -> EchoResult | ToolError:
    \"\"\"Whisper the text.\"\"\"
    return EchoResult(message=text.lower(), text=text.lower())


@tool
def _draft(text: str) -> EchoResult | ToolError:
    \"\"\"Not served, on purpose.\"\"\"
    return EchoResult(message=text, text=text)
"""
)

UNLISTED_WARNING = (
    "toolset forgetful: the tool `whisper` of {package}.forgetful is not in its TOOLS "
    "list, so it is not served: add it to TOOLS, or name it `_whisper` to keep it unserved"
)


def test_a_tool_left_out_of_tools_is_named_by_check_and_at_startup(
    sample_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check`` builds the server as ``serve`` does at startup: the warning is logged."""
    (sample_service / "forgetful.py").write_text(FORGOTTEN_TOOL)
    # A tool imported from another toolset is that toolset's: no warning here.
    (sample_service / "borrowing.py").write_text(
        f"from {sample_service.name}.good import echo\n\nTOOLS = []\n"
    )
    assert cli.main(["check"]) == 0  # a warning, not a refusal
    output = capsys.readouterr()
    assert output.out == "ok: 2 tools of sample keep the contract\n"
    warning = UNLISTED_WARNING.format(package=sample_service.name)
    assert output.err.count(warning) == 1, output.err
    assert "`_draft`" not in output.err
    assert "borrowing" not in output.err


def test_the_docstrings_name_every_command_or_none() -> None:
    """The command line's docstring names each of its commands; the ``python -m`` entries
    name none, so that none goes stale."""
    import mcp_runtime.__main__ as runtime_main

    package = find_service().toolsets_package.split(".")[0]
    service_main = importlib.import_module(f"{package}.__main__")
    parser = cli._parser("service")
    commands = {name for action in parser._actions if action.choices for name in action.choices}
    named = set(re.findall(r"``([a-z-]+)``", cli.__doc__ or ""))
    assert named >= commands, "the command line's docstring misses a command"
    for entry in (runtime_main, service_main):
        assert not set(re.findall(r"\b[a-z-]+\b", entry.__doc__ or "")) & commands


def test_schema_prints_tools_list(sample_service: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schema"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing == {
        "tools": [
            {
                "name": "echo",
                "title": "Echo",
                "description": "Echo the text back.",
                "inputSchema": {
                    "description": "Echo the text back.",
                    "properties": {"text": {"title": "Text", "type": "string"}},
                    "required": ["text"],
                    "title": "echo",
                    "type": "object",
                },
                "outputSchema": {
                    "type": "object",
                    "oneOf": [
                        {
                            "description": "The echoed text.",
                            "properties": {
                                "message": {"title": "Message", "type": "string"},
                                "text": {"title": "Text", "type": "string"},
                            },
                            "required": ["message"],
                            "title": "EchoResult",
                            "type": "object",
                        },
                        {
                            "description": ToolError.__doc__,
                            "properties": {
                                "error": {"title": "Error", "type": "string"},
                                "detail": {"title": "Detail", "type": "string"},
                            },
                            "required": ["error", "detail"],
                            "title": "ToolError",
                            "type": "object",
                        },
                    ],
                },
                "annotations": {
                    "readOnlyHint": False,
                    "destructiveHint": True,
                    "idempotentHint": False,
                    "openWorldHint": True,
                },
            }
        ]
    }


def test_schema_refuses_a_broken_service(
    sample_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (sample_service / "bad.py").write_text(BAD_TOOLSET)
    assert cli.main(["schema"]) == 1
    assert capsys.readouterr().out == ""


SECOND_TOOLSET = '''
from typing import NotRequired

from langchain_core.tools import tool

from mcp_runtime import ToolError, ToolResult


class ShoutResult(ToolResult):
    """The shouted text."""

    loud: NotRequired[str]


@tool
def shout(text: str) -> ShoutResult | ToolError:
    """Shout the text back."""
    return ShoutResult(message=text.upper(), loud=text.upper())


TOOLS = [shout]
'''


def stale(name: str) -> dict[str, Any]:
    """A recorded entry that differs from anything the service serves."""
    return {"name": name, "description": "As recorded.", "inputSchema": {}, "outputSchema": {}}


@pytest.fixture
def recorded(
    sample_service: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Run in a folder whose snapshot records an old ``echo``, and ``gone``; serve ``shout``."""
    (sample_service / "second.py").write_text(SECOND_TOOLSET)
    monkeypatch.chdir(tmp_path)
    snapshot = {"tools": [stale("echo"), stale("gone")]}
    (tmp_path / SNAPSHOT).parent.mkdir()
    (tmp_path / SNAPSHOT).write_text(render(snapshot))
    return snapshot


def test_contract_write_records_the_live_contract(
    recorded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["contract", "--write"]) == 0
    assert capsys.readouterr().out == "wrote contract/tools.json: 2 tools\n"
    tools = read_snapshot(SNAPSHOT)["tools"]
    assert [entry["name"] for entry in tools] == ["echo", "shout"]
    assert tools[0]["description"] == "Echo the text back."


def test_contract_write_of_a_tool_leaves_the_others_as_recorded(
    recorded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["contract", "--write", "shout"]) == 0
    assert capsys.readouterr().out == "wrote contract/tools.json: 3 tools (shout recorded anew)\n"
    tools = read_snapshot(SNAPSHOT)["tools"]
    assert [entry["name"] for entry in tools] == ["echo", "gone", "shout"]
    assert tools[:2] == [stale("echo"), stale("gone")]
    assert tools[2]["outputSchema"]["oneOf"][0]["title"] == "ShoutResult"


def test_contract_write_refuses_a_tool_it_does_not_serve(
    recorded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["contract", "--write", "shout", "gone"]) == 2
    output = capsys.readouterr()
    assert output.out == ""
    assert output.err == "error: the service serves no tool named gone: name one of echo, shout\n"
    assert read_snapshot(SNAPSHOT) == recorded


@pytest.mark.parametrize("port", ["http", "70000", "-1"])
def test_serve_refuses_a_bad_port(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--port", port])
    assert exited.value.code == 2
    assert "is not a port number" in capsys.readouterr().err


def test_serve_refuses_an_unknown_transport(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--transport", "sse"])
    assert exited.value.code == 2
    assert "invalid choice: 'sse'" in capsys.readouterr().err


def test_missing_service_is_explained(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def not_installed() -> Service:
        raise ServiceNotFoundError("No MCP service is installed in this environment.")

    monkeypatch.setattr(cli, "find_service", not_installed)
    assert cli.main(["check"]) == 2
    assert capsys.readouterr().err == "error: No MCP service is installed in this environment.\n"


def test_importing_the_runtime_leaves_the_collector_as_it_found_it() -> None:
    """The cyclic collector is paused only while the runtime imports: on here (this process
    imported the runtime with it on), and still off in a process that had turned it off.
    What the import built is in the oldest generation, unwalked, and nothing is frozen."""
    assert gc.isenabled()
    code = "import gc; gc.disable(); import mcp_runtime; print(gc.isenabled())"
    imported = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert (imported.returncode, imported.stdout, imported.stderr) == (0, "False\n", "")
    code = (
        "import gc; import mcp_runtime; "
        "print(gc.get_freeze_count(), *(len(gc.get_objects(n)) for n in range(3)))"
    )
    imported = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    frozen, youngest, middle, oldest = map(int, imported.stdout.split())
    assert frozen == 0
    assert oldest > 50 * (youngest + middle), (youngest, middle, oldest)


SCOPED_TOOLSET = '''
from langchain_core.tools import tool

from mcp_runtime import ToolError, ToolResult, tool_metadata


@tool_metadata(scopes=["forecasts:read", "archive"])
@tool
def forecast() -> ToolResult | ToolError:
    """Forecast."""
    return ToolResult(message="sunny")
'''


def test_dev_token_grants_the_scopes_the_service_needs_by_default(
    sample_service: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (sample_service / "scoped.py").write_text(SCOPED_TOOLSET + "\nTOOLS = [forecast]\n")
    monkeypatch.chdir(sample_service.parent)
    monkeypatch.setenv("MCP_OAUTH_SCOPES", "mcp:call")
    assert cli.main(["dev-token", "--hours", "1.5"]) == 0
    output = capsys.readouterr()
    granted = jwt.decode(output.out.splitlines()[0], options={"verify_signature": False})
    assert granted["scope"] == "archive forecasts:read mcp:call"
    assert granted["exp"] - granted["iat"] == 5400
    assert "(scopes: archive, forecasts:read, mcp:call), valid 1.5 hours" in output.err
