"""The service's command line: ``serve``, ``check`` and ``schema``.

Installed as the console script named after the service, and run by
``python -m <package>``. A problem is reported in one message (exit 1 for
contract violations, 2 for bad usage or setup), never as a traceback.
"""

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence

import uvicorn

from mcp_runtime.http_app import http_app
from mcp_runtime.server import UnknownToolsetError, build_server
from mcp_runtime.toolsets import ServiceNotFoundError, find_service
from mcp_runtime.violations import ContractError

__all__ = ["main"]

TRANSPORTS = ("streamable-http", "stdio")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    try:
        service = find_service()
    except ServiceNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = _parser(service.name).parse_args(argv)
    args.service = service
    # Quiet by default: warnings from libraries, and the runtime's own INFO lines.
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("mcp_runtime").setLevel(logging.INFO)
    try:
        return int(args.run(args))
    except ContractError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except UnknownToolsetError as exc:
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
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    serve.add_argument(
        "--port", type=_port, default=8000, help="port to bind (default: %(default)s)"
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
    return parser


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0 to 65535)")
    return port


def _serve(args: argparse.Namespace) -> int:
    server = build_server(service=args.service, host=args.host, port=args.port)
    if args.transport == "stdio":
        server.run("stdio")
        return 0
    print(
        f"Serving {server.name} on http://{args.host}:{args.port}"
        f"{server.settings.streamable_http_path}",
        file=sys.stderr,
    )
    uvicorn.run(
        http_app(server),
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=10,
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    server = build_server(service=args.service)
    tools = asyncio.run(server.list_tools())
    print(f"ok: {len(tools)} tools of {server.name} keep the contract")
    return 0


def _schema(args: argparse.Namespace) -> int:
    server = build_server(service=args.service)
    tools = asyncio.run(server.list_tools())
    listing = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    print(json.dumps({"tools": listing}, indent=2, ensure_ascii=False))
    return 0
