"""``python -m`` entry: the service's command line, as its console script runs it."""

from mcp_runtime.serving.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
