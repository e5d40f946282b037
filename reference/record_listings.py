"""Record how langchain-mcp-adapters' ``to_fastmcp`` lists the runtime's parity corpus.

langchain-mcp-adapters (discontinued, and capped below mcp 2) stays the reference for
what a converted tool looks like. This script runs in an environment of its own with
mcp 1.x and langchain-mcp-adapters 0.3.2 (``nox -s reference_listings`` makes it), where
the runtime cannot be imported: it loads the corpus from the runtime's parity test
with the runtime's result types, serves every tool through the upstream conversion in
FastMCP, and writes the ``tools/list`` entries clients see. The runtime's parity test
compares its own listing with that file.

    python reference/record_listings.py TEMPLATE_DIR OUTPUT.json
"""

import asyncio
import importlib.util
import json
import sys
import types
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain_mcp_adapters.tools import to_fastmcp
from mcp.server.fastmcp import FastMCP

RUNTIME_MODULES = ("mcp_runtime", "mcp_runtime.sdk", "mcp_runtime.serving.server")
RUNTIME_MODULES += ("mcp_runtime.testing", "mcp_runtime.contract.toolsets")


class Unavailable:
    """A runtime name the corpus's test module imports but the recording never uses."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: object, **kwargs: object) -> Any:
        raise RuntimeError(f"{self.name} is not available while recording the reference")


def load(path: Path, name: str) -> types.ModuleType:
    """The module at ``path``, imported as ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def stand_in_runtime(template: Path) -> None:
    """``mcp_runtime`` with its real result types, and every other name unavailable."""
    results = load(template / "src" / "mcp_runtime" / "contract" / "tool_result.py", "_tool_result")
    for name in RUNTIME_MODULES:
        module = types.ModuleType(name)
        module.__getattr__ = Unavailable  # type: ignore[assignment, method-assign]
        sys.modules[name] = module
    for name in results.__all__:
        setattr(sys.modules["mcp_runtime"], name, getattr(results, name))


async def listing(template: Path) -> list[dict[str, Any]]:
    """The upstream conversion's ``tools/list`` entries for the parity corpus."""
    stand_in_runtime(template)
    corpus = load(template / "tests" / "runtime" / "test_parity.py", "test_parity").SCHEMA_CORPUS
    server = FastMCP("parity", tools=[to_fastmcp(tool) for tool in corpus])
    tools = await server.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def main() -> None:
    template, output = Path(sys.argv[1]), Path(sys.argv[2])
    recorded = {
        "recorded_with": {
            package: version(package) for package in ("langchain-mcp-adapters", "mcp")
        },
        "tools": asyncio.run(listing(template)),
    }
    output.write_text(json.dumps(recorded, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {output}: {len(recorded['tools'])} tools")


if __name__ == "__main__":
    main()
