"""The published contract: a change that breaks clients fails CI until it is recorded.

`contract/tools.json` is the contract clients rely on. A breaking difference between
it and the live service fails this test; `uv run <service> contract --write`
records a change made on purpose (commit the file with it).
"""

from pathlib import Path

from mcp_runtime.contract.snapshot import SNAPSHOT, compare, live_contract, read_snapshot, report
from mcp_runtime.contract.toolsets import find_service
from mcp_runtime.sdk import MCPServer

ROOT = Path(__file__).resolve().parents[2]
WRITE = f"uv run {find_service().name} contract --write"


def test_no_unrecorded_breaking_change(server: MCPServer) -> None:
    path = ROOT / SNAPSHOT
    assert path.is_file(), f"There is no {SNAPSHOT.as_posix()}: run `{WRITE}` and commit it."
    live = live_contract(server)
    differences = compare(read_snapshot(path), live)
    breaking = [difference for difference in differences if difference.breaking]
    assert not breaking, "\n" + report(differences, WRITE)
