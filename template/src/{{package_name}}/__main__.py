"""``python -m`` entry: the service's command line (serve, check, schema)."""

from mcp_runtime.serving.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
