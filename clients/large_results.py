"""Large results through fastmcp's ``Client`` and the MCP Python SDK's 2.x client, each
on its default settings, against the long-calls toolset.

The toolset's ``big_result`` answers as many megabytes as asked, after a wait and
progress reports. In each era (``legacy``, and pinned to ``2026-07-28``), through each
client: 5 and 20 MB results arrive whole, at once and after 16 s (past the 15 s after
which a 2026-07-28 answer could turn into a stream); through the SDK's client, which
asks for progress only when given a callback, from a call that reports progress too.
fastmcp's client asks for progress on every call, so a call that reports progress
streams, and a server-sent event of more than 1 MiB is more than either client reads:
that call answers ``result_too_large``, typed, naming the setting. Every call runs at
once.

    python large_results.py URL

Runs in the environment of ``langchain[mcp]``, which brings fastmcp and the SDK. Exit
status 0 when every check passes; otherwise 1, each failure printed as a FAIL line.
"""

import asyncio
import sys
from typing import Any

from fastmcp import Client  # type: ignore[import-not-found]
from mcp.client import Client as SDKClient  # type: ignore[import-not-found]

MB = 1_000_000
MODES = ("legacy", "2026-07-28")
failures: list[str] = []


def report(client: str, mode: str, what: str, problem: str | None) -> None:
    label = f"{client} ({mode}): big_result: {what}"
    if problem is None:
        print(f"ok   {label}")
    else:
        failures.append(f"{label}: {problem}")
        print(f"FAIL {label}: {problem}")


async def call(url: str, mode: str, megabytes: int, seconds: float, steps: int) -> Any:
    """Through fastmcp's client."""
    async with Client(url, mode=mode, timeout=120) as client:
        arguments = {"megabytes": megabytes, "seconds": seconds, "steps": steps}
        return await client.call_tool("big_result", arguments, raise_on_error=False)


async def sdk_call(url: str, mode: str, megabytes: int, seconds: float, steps: int) -> Any:
    """Through the SDK's client (its streamable HTTP transport on its defaults)."""
    async with SDKClient(url, mode=mode) as client:
        arguments = {"megabytes": megabytes, "seconds": seconds, "steps": steps}
        return await client.call_tool("big_result", arguments)


def arrived(result: Any, megabytes: int) -> str | None:
    """None when ``result`` holds the whole data; else what is wrong with it."""
    content = result.structured_content or {}
    if result.is_error:
        return f"isError: {str(content)[:300]}"
    if content.get("message") != f"{megabytes} MB":
        return f"the message is {content.get('message')!r}"
    if len(content.get("data", "")) != megabytes * MB:
        return f"{len(content.get('data', ''))} characters of data"
    return None


async def check(url: str, mode: str) -> None:
    """Every case of one era, through both clients, at once."""
    cases = [(megabytes, seconds) for megabytes in (5, 20) for seconds in (0, 16)]
    fastmcp, sdk, streamed = await asyncio.gather(
        asyncio.gather(
            *(call(url, mode, size, seconds, 0) for size, seconds in cases),
            return_exceptions=True,
        ),
        asyncio.gather(
            *(sdk_call(url, mode, size, seconds, 0) for size, seconds in cases),
            sdk_call(url, mode, 5, 0, 3),
            return_exceptions=True,
        ),
        asyncio.gather(call(url, mode, 5, 0, 2), return_exceptions=True),
    )
    labelled = [
        *(("fastmcp client", case, result) for case, result in zip(cases, fastmcp, strict=True)),
        *(("sdk client", case, result) for case, result in zip(cases, sdk, strict=False)),
        ("sdk client", (5, "0 (reporting progress)"), sdk[-1]),
    ]
    for client, (megabytes, seconds), result in labelled:
        what = f"{megabytes} MB after {seconds} s"
        if isinstance(result, BaseException):
            report(client, mode, what, f"{type(result).__name__}: {result}")
        else:
            report(client, mode, what, arrived(result, int(megabytes)))
    [refused] = streamed
    what = "5 MB reporting progress: result_too_large"
    if isinstance(refused, BaseException):
        report("fastmcp client", mode, what, f"{type(refused).__name__}: {refused}")
        return
    content = refused.structured_content or {}
    problem = None
    if not refused.is_error or content.get("error") != "result_too_large":
        problem = f"answered {str(content)[:300]}"
    elif "MCP_MAX_STREAMED_RESULT_BYTES" not in content.get("detail", ""):
        problem = f"the detail names no setting: {content.get('detail')}"
    report("fastmcp client", mode, what, problem)


async def main(url: str) -> int:
    await asyncio.gather(*(check(url, mode) for mode in MODES))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
