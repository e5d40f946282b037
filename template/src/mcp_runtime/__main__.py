"""``python -m mcp_runtime``: the service's command line."""

from mcp_runtime.serving.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
