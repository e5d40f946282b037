"""The service's command line: ``serve``, ``check``, ``schema``, ``contract``, ``dev-token``,
``task-key``.

Installed as the console script named after the service, and run by
``python -m <package>``. A problem is reported in one message (exit 1 for
contract violations, 2 for bad usage or setup), never as a traceback.
"""

import argparse
import asyncio
import functools
import gc
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp_runtime.auth.local_keys import DEV_ISSUER_FOLDER, dev_token
from mcp_runtime.config.settings import (
    ServiceSettings,
    SettingsError,
    load_settings,
    require_http_auth,
)
from mcp_runtime.contract.snapshot import (
    SNAPSHOT,
    compare,
    live_contract,
    read_snapshot,
    record,
    render,
    report,
)
from mcp_runtime.contract.toolsets import (
    Service,
    ServiceNotFoundError,
    find_service,
    source_folder,
)
from mcp_runtime.contract.violations import ContractError
from mcp_runtime.observability.logs import configure_logging
from mcp_runtime.observability.tracing import check_tracing_settings, configure_tracing
from mcp_runtime.sdk import served_tools
from mcp_runtime.serving import processes
from mcp_runtime.serving.http_app import MCP_PATH, process_app
from mcp_runtime.serving.server import UnknownToolsetError, build_server, require_shared_tasks
from mcp_runtime.tasks.sealing import new_key

__all__ = ["main"]

TRANSPORTS = ("streamable-http", "stdio")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    gc.freeze()  # what the imports built lives as long as the process (see mcp_runtime)
    try:
        service = find_service()
    except ServiceNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = _parser(service.name).parse_args(argv)
    args.service = service
    try:
        overrides = {name: getattr(args, name, None) for name in ("host", "port", "workers")}
        args.settings = load_settings(**overrides)
        configure_logging(args.settings.log_level, args.settings.log_format)
        return int(args.run(args))
    except ContractError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (SettingsError, UnknownToolsetError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _parser(name: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=name, description=f"Run and inspect the {name} MCP service."
    )
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="serve the tools over MCP")
    serve.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="streamable-http",
        help="streamable-http serves http://HOST:PORT/mcp; stdio serves one client "
        "on standard input and output (default: %(default)s)",
    )
    serve.add_argument("--host", help="address to bind (default: MCP_HOST, or 127.0.0.1)")
    serve.add_argument("--port", type=_port, help="port to bind (default: MCP_PORT, or 8000)")
    serve.add_argument(
        "--workers",
        type=_workers,
        help="worker processes for streamable HTTP (default: MCP_WORKERS, or 1)",
    )
    serve.add_argument(
        "--reload",
        action="store_true",
        help="for development: serve anew, with one worker, whenever a .py file of the "
        "service's source changes, appears or goes away (a new or changed tool)",
    )
    serve.set_defaults(run=_serve)

    check = commands.add_parser(
        "check", help="run the startup gate; print every violation, exit 1 if any"
    )
    check.set_defaults(run=_check)

    schema = commands.add_parser(
        "schema", help="print the tools/list answer as JSON, with each outputSchema"
    )
    schema.set_defaults(run=_schema)

    contract = commands.add_parser(
        "contract",
        help="compare the live contract with contract/tools.json; exit 1 on a breaking change",
    )
    contract.add_argument(
        "--write",
        nargs="*",
        metavar="TOOL",
        help="record the live contract in contract/tools.json; with TOOL names, record only "
        "those tools and leave every other tool as recorded",
    )
    contract.set_defaults(run=_contract)

    token = commands.add_parser(
        "dev-token",
        help="print a development access token, then the settings that make `serve` verify it",
        description="Sign an access token with a local key kept in "
        f"{DEV_ISSUER_FOLDER.as_posix()}/ (made on first use) and print it on the first line, "
        "then the settings (NAME=value, one a line) under which `serve` verifies it as it "
        "verifies an authorization server's tokens. For development only: no other service "
        "trusts the key.",
    )
    token.add_argument(
        "--subject", default="developer", help="the caller the token names (default: %(default)s)"
    )
    token.add_argument(
        "--scopes",
        type=_scope_list,
        help="scopes the token grants, comma-separated (default: MCP_OAUTH_SCOPES and every "
        "scope a served tool needs)",
    )
    token.add_argument(
        "--hours",
        type=_hours,
        default=24,
        help="how long the token stays valid (default: %(default)s)",
    )
    token.add_argument(
        "--resource-url",
        help="the MCP endpoint the token is for, its audience (default: http://localhost:PORT/mcp)",
    )
    token.set_defaults(run=_dev_token)

    task_key = commands.add_parser(
        "task-key",
        help="print a new key for MCP_TASK_KEYS, which seals what tasks keep on Redis",
        description="Print a new random key (Fernet: 32 bytes, URL-safe base64) on one line. "
        "Set MCP_TASK_KEYS to it; to replace a key, put the new one first "
        "(MCP_TASK_KEYS=new,old) and drop the old one once the tasks it sealed have expired "
        "(MCP_TASK_MAX_TTL after they ended).",
    )
    task_key.set_defaults(run=_task_key)
    return parser


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0 to 65535)")
    return port


def _workers(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers (1 to 64)")
    return int(text)


def _scope_list(text: str) -> list[str]:
    scopes = [scope.strip() for scope in text.split(",") if scope.strip()]
    for scope in scopes:
        if any(character.isspace() or character in '"\\' for character in scope):
            raise argparse.ArgumentTypeError(
                f"{scope!r} is not an OAuth scope: separate scopes with commas, such as "
                "--scopes forecasts:read,forecasts:write"
            )
    return scopes


def _hours(text: str) -> float:
    try:
        hours = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not 0 < hours <= 24 * 366:
        raise argparse.ArgumentTypeError(f"{text} is not a number of hours (above 0, to 8784)")
    return hours


def _serve(args: argparse.Namespace) -> int:
    settings: ServiceSettings = args.settings
    server = build_server(service=args.service, settings=settings)
    check_tracing_settings()
    if args.transport == "stdio":
        if args.reload:
            raise SettingsError(
                "--reload serves streamable HTTP: a stdio client starts the service itself"
            )
        configure_tracing(server.name)
        server.run("stdio")
        return 0
    require_http_auth(settings, command=args.service.name)
    if args.reload:
        return _serve_reloading(args.service, settings)
    if settings.workers > 1 and not settings.stateless:
        raise SettingsError(
            "bad setting MCP_WORKERS: stateful sessions (MCP_STATELESS=false) live in one "
            "process; serve them with MCP_WORKERS=1"
        )
    require_shared_tasks(server, settings)
    print(
        f"Serving {server.name} on http://{settings.host}:{settings.port}"
        f"{MCP_PATH} ({settings.workers} worker(s))",
        file=sys.stderr,
    )
    if settings.workers == 1:  # this process serves the server it built
        processes.serve(settings, functools.partial(process_app, settings, server))
    else:  # each worker builds its own from the same settings
        processes.serve(settings, functools.partial(process_app, settings))
    return 0


def _serve_reloading(service: Service, settings: ServiceSettings) -> int:
    """Serve over HTTP in one worker process, started anew when the source changes."""
    if settings.workers > 1:
        raise SettingsError(
            f"--reload serves one worker process, and MCP_WORKERS is {settings.workers}: "
            "leave out --workers (and MCP_WORKERS) to reload"
        )
    source = source_folder(service)
    print(
        f"Serving {service.name} on http://{settings.host}:{settings.port}{MCP_PATH}, "
        f"reloading when a .py file of {source} changes",
        file=sys.stderr,
    )
    processes.serve(settings, functools.partial(process_app, settings), reload=[source])
    return 0


def _check(args: argparse.Namespace) -> int:
    server = build_server(service=args.service, settings=args.settings)
    tools = [tool for tool in served_tools(server) if not getattr(tool, "runtime_owned", False)]
    print(f"ok: {len(tools)} tools of {server.name} keep the contract")
    return 0


def _schema(args: argparse.Namespace) -> int:
    server = build_server(service=args.service, settings=args.settings)
    tools = asyncio.run(server.list_tools())
    listing = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    print(json.dumps({"tools": listing}, indent=2, ensure_ascii=False))
    return 0


def _contract(args: argparse.Namespace) -> int:
    server = build_server(service=args.service, settings=args.settings)
    live = live_contract(server)
    path = Path.cwd() / SNAPSHOT
    write_command = f"uv run {args.service.name} contract --write"
    if args.write is not None:
        return _write(path, live, args.write)
    if not path.is_file():
        print(
            f"error: there is no contract snapshot at {SNAPSHOT.as_posix()}: run "
            f"`{write_command}` in the service's folder and commit it",
            file=sys.stderr,
        )
        return 1
    differences = compare(read_snapshot(path), live)
    print(report(differences, write_command))
    return 1 if any(difference.breaking for difference in differences) else 0


def _write(path: Path, live: dict[str, Any], tools: list[str]) -> int:
    """Record the live contract, or only that of ``tools``, in the snapshot at ``path``."""
    served = sorted(entry["name"] for entry in live["tools"])
    unknown = sorted(set(tools) - set(served))
    if unknown:
        print(
            f"error: the service serves no tool named {', '.join(unknown)}: "
            f"name one of {', '.join(served) or 'its tools (it has none)'}",
            file=sys.stderr,
        )
        return 2
    if tools:
        recorded = read_snapshot(path) if path.is_file() else {"tools": []}
        live = record(recorded, live, tools)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(live))
    named = f" ({', '.join(sorted(set(tools)))} recorded anew)" if tools else ""
    print(f"wrote {SNAPSHOT.as_posix()}: {len(live['tools'])} tools{named}")
    return 0


def _task_key(args: argparse.Namespace) -> int:
    print(new_key())
    return 0


def _dev_token(args: argparse.Namespace) -> int:
    """Print a token signed by the local key, then the settings that verify it."""
    settings: ServiceSettings = args.settings
    if args.scopes is None:
        server = build_server(service=args.service, settings=settings)
        needed = {scope for entry in live_contract(server)["tools"] for scope in entry["scopes"]}
        scopes = sorted(needed | set(settings.oauth_scopes))
    else:
        scopes = args.scopes
    audience = args.resource_url or f"http://localhost:{settings.port}{MCP_PATH}"
    folder = Path.cwd() / DEV_ISSUER_FOLDER
    try:
        made = dev_token(
            folder,
            subject=args.subject,
            audience=audience,
            scopes=scopes,
            expires_in=args.hours * 3600,
        )
    except (OSError, ValueError) as exc:
        raise SettingsError(
            f"cannot keep the development key in {folder}: {exc}. Run dev-token in a folder "
            f"you can write, or delete {DEV_ISSUER_FOLDER.as_posix()}/ to make a new key"
        ) from None
    print(made.token)
    for name, value in made.settings.items():
        print(f"{name}={value}")
    print(
        f"A development token for {args.subject} (scopes: {', '.join(scopes) or 'none'}), "
        f"valid {args.hours:g} hours for {audience}, signed by the key in "
        f"{DEV_ISSUER_FOLDER.as_posix()}/. Serve with the settings on the lines after the "
        "token, and have the client send the token as `Authorization: Bearer <token>`.",
        file=sys.stderr,
    )
    return 0
