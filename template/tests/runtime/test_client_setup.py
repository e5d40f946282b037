"""The client setups in deploy/clients/, read as each client reads them.

Each JSON setup must have the shape its client documents (a small JSON Schema each:
Claude Code's ``.mcp.json``, VS Code's ``.vscode/mcp.json``, Cursor's
``.cursor/mcp.json``), and send exactly the credential the service's ``auth`` answer
needs once the client has substituted its variables: none under ``oauth`` (the client
signs in itself) but ``Authorization: Bearer`` from ``MCP_TOKEN`` in the ``-token``
files; ``x-demo-token`` under ``demo-header``; none under ``none``. The commands (Claude
Code's ``claude mcp add``, the MCP Inspector's UI and CLI) are compared argument by
argument. Claude Desktop's setup starts the service over stdio: its command, run from
this folder, serves the tools. docs/clients.md shows every file as it is.
"""

import json
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_runtime.config.service_defaults import AUTH
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.toolsets import find_service

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "deploy" / "clients"
NAME = find_service().name
URL = f"http://localhost:{ServiceSettings.model_fields['port'].default}/mcp"
DEMO = any(toolset.name == "credential-demo" for toolset in find_service().load_toolsets()[0])
# The credential a setup sends, if any: the header, and what comes before the token.
HEADER, PREFIX = ("Authorization", "Bearer ") if AUTH == "oauth" else ("x-demo-token", "")
SECRET = "a-token-from-the-environment"
TOKEN_FILES = ("claude-code-token.mcp.json", "vscode-token.mcp.json", "cursor-token.mcp.json")
JSON_FILES = ("claude-code.mcp.json", "vscode.mcp.json", "cursor.mcp.json")
COMMAND_FILES = ("claude-code.sh", "inspector.sh")
STDIO_FILES = ("claude-desktop.json",)
# The Inspector, on the Node.js 22 it needs, whatever Node.js runs npx.
INSPECTOR = ["npx", "-y", "-p", "node@22", "-p", "@modelcontextprotocol/inspector@2.12.0"]
INSPECTOR += ["mcp-inspector"]

HEADERS: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
SERVER_NAME: dict[str, Any] = {"pattern": "^[a-zA-Z][a-zA-Z0-9_-]*$"}


def servers_schema(*, typed: bool) -> dict[str, Any]:
    """Servers by name, each a remote server: its ``url``, ``headers``, and ``"type": "http"``."""
    properties = {"url": {"type": "string"}, "headers": HEADERS}
    server = {
        "type": "object",
        "required": ["type", "url"] if typed else ["url"],
        "additionalProperties": False,
        "properties": {"type": {"const": "http"}, **properties} if typed else properties,
    }
    return {
        "type": "object",
        "minProperties": 1,
        "propertyNames": SERVER_NAME,
        "additionalProperties": server,
    }


# Claude Code: a remote server is `"type": "http"` with `url` and optional `headers`.
CLAUDE_CODE = {
    "type": "object",
    "required": ["mcpServers"],
    "additionalProperties": False,
    "properties": {"mcpServers": servers_schema(typed=True)},
}
# VS Code: top-level `servers` (not `mcpServers`), `"type": "http"`, and `inputs` that
# prompt for the values `${input:ID}` stands for.
VSCODE = {
    "type": "object",
    "required": ["servers"],
    "additionalProperties": False,
    "properties": {
        "inputs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "id", "description", "password"],
                "additionalProperties": False,
                "properties": {
                    "type": {"const": "promptString"},
                    "id": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
                    "description": {"type": "string", "minLength": 1},
                    "password": {"const": True},
                },
            },
        },
        "servers": servers_schema(typed=True),
    },
}
# Cursor: `mcpServers`, a remote server being its `url` (and `headers`).
CURSOR = {
    "type": "object",
    "required": ["mcpServers"],
    "additionalProperties": False,
    "properties": {"mcpServers": servers_schema(typed=False)},
}


def substitute(pattern: str, values: Mapping[str, str]) -> Callable[[str], str]:
    """A client's substitution: each match of ``pattern`` is replaced by its variable's value."""

    def resolve(text: str) -> str:
        resolved = re.sub(pattern, lambda match: values.get(match[1], match[0]), text)
        assert "$" not in resolved, f"{text!r} holds a reference its client does not resolve"
        return resolved

    return resolve


ENVIRONMENT = {"MCP_TOKEN": SECRET}
# Claude Code expands ${VAR} (and ${VAR:-default}) from the environment; Cursor ${env:VAR};
# VS Code ${input:ID} with what the user typed at its prompt.
CLIENT_SHAPES: dict[str, tuple[str, dict[str, Any], str]] = {
    "claude-code": ("mcpServers", CLAUDE_CODE, r"\$\{([A-Z_][A-Z0-9_]*)(?::-[^}]*)?\}"),
    "vscode": ("servers", VSCODE, r"\$\{input:([a-z][a-z0-9-]*)\}"),
    "cursor": ("mcpServers", CURSOR, r"\$\{env:([A-Z_][A-Z0-9_]*)\}"),
}


def sends_credential(file_name: str) -> bool:
    """Whether a setup carries the credential: the ``-token`` files, and the demo header."""
    return file_name in TOKEN_FILES or (AUTH == "demo-header" and DEMO)


def expected_files() -> set[str]:
    return {*JSON_FILES, *COMMAND_FILES, *STDIO_FILES, *(TOKEN_FILES if AUTH == "oauth" else ())}


def test_each_client_has_its_setup_for_the_auth_answer() -> None:
    assert {path.name for path in CLIENTS.iterdir()} == expected_files()


@pytest.mark.parametrize("file_name", sorted(expected_files() - {*COMMAND_FILES, *STDIO_FILES}))
def test_json_setup_has_its_clients_shape_and_credential(file_name: str) -> None:
    client = file_name.removesuffix(".mcp.json").removesuffix("-token")
    key, schema, reference = CLIENT_SHAPES[client]
    config = json.loads((CLIENTS / file_name).read_text())
    Draft202012Validator.check_schema(schema)
    problems = [error.message for error in Draft202012Validator(schema).iter_errors(config)]
    assert problems == [], problems
    [(name, server)] = config[key].items()
    assert (name, server["url"]) == (NAME, URL)
    inputs = {entry["id"]: entry for entry in config.get("inputs", [])}
    values = {**ENVIRONMENT} if client != "vscode" else dict.fromkeys(inputs, SECRET)
    resolve = substitute(reference, values)
    headers = {header: resolve(value) for header, value in server.get("headers", {}).items()}
    expected = {HEADER: PREFIX + SECRET} if sends_credential(file_name) else {}
    assert headers == expected
    used = set(re.findall(reference, json.dumps(server))) if client == "vscode" else set()
    assert set(inputs) == used, "VS Code prompts for exactly the inputs its headers use"


def commands(file_name: str) -> list[list[str]]:
    """The commands of a setup script, each split into its arguments as a shell would."""
    lines = (CLIENTS / file_name).read_text().splitlines()
    return [shlex.split(line) for line in lines if line.strip() and not line.startswith("#")]


def header_option(sent: bool) -> list[str]:
    return ["--header", f"{HEADER}: {PREFIX}$MCP_TOKEN"] if sent else []


def test_claude_code_command_adds_the_http_server() -> None:
    add = ["claude", "mcp", "add", "--transport", "http", NAME, URL]
    if AUTH == "oauth":
        expected = [add, add + header_option(True)]
    else:
        expected = [add + header_option(sends_credential("claude-code.sh"))]
    assert commands("claude-code.sh") == expected


def test_inspector_commands_open_the_ui_and_call_from_the_cli() -> None:
    demo_header = sends_credential("inspector.sh")
    web_header = header_option(demo_header)
    cli_header = header_option(demo_header or AUTH == "oauth")
    cli = [*INSPECTOR, "--cli", URL, "--transport", "http"]
    hello = ["--method", "tools/call", "--tool-name", "hello", "--tool-arg", "name=Ada"]
    stdio = ["--", "uv", "run", NAME, "serve", "--transport", "stdio"]
    assert commands("inspector.sh") == [
        [*INSPECTOR, "--web", "--transport", "http", "--server-url", URL, *web_header],
        [*cli, "--method", "tools/list", *cli_header],
        [*cli, *hello, *cli_header],
        [*INSPECTOR, "--cli", *hello, *stdio],
    ]


# Claude Desktop: `mcpServers`, a local server being the `command` it starts, with its
# `args` (and `env`).
CLAUDE_DESKTOP = {
    "type": "object",
    "required": ["mcpServers"],
    "additionalProperties": False,
    "properties": {
        "mcpServers": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": SERVER_NAME,
            "additionalProperties": {
                "type": "object",
                "required": ["command", "args"],
                "additionalProperties": False,
                "properties": {
                    "command": {"type": "string", "minLength": 1},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
        }
    },
}


@pytest.mark.anyio
async def test_claude_desktops_setup_starts_the_service_over_stdio() -> None:
    config = json.loads((CLIENTS / "claude-desktop.json").read_text())
    problems = [error.message for error in Draft202012Validator(CLAUDE_DESKTOP).iter_errors(config)]
    assert problems == [], problems
    [(name, server)] = config["mcpServers"].items()
    assert name == NAME
    placeholder = f"/path/to/{NAME}"
    assert server["args"].count(placeholder) == 1
    args = [str(ROOT) if arg == placeholder else arg for arg in server["args"]]
    parameters = StdioServerParameters(command=server["command"], args=args, cwd=ROOT.parent)
    with anyio.fail_after(120):  # a command that serves no stdio never answers
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("hello", {"name": "Ada"})
    assert (result.is_error, result.structured_content) == (
        False,
        {"message": "Hello, Ada!", "greeting": "Hello, Ada!"},
    )


def test_the_docs_show_every_setup_as_it_is() -> None:
    page = (ROOT / "docs" / "clients.md").read_text()
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)
    for path in sorted(CLIENTS.iterdir()):
        assert f"`deploy/clients/{path.name}`" in page, f"docs/clients.md does not name {path.name}"
        assert path.read_text() in blocks, f"docs/clients.md does not show {path.name} as it is"
