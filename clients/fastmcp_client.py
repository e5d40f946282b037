"""fastmcp's ``Client``, on its default settings, against the long-calls toolset.

The toolset's ``big_result`` answers as many megabytes as asked, after a wait and
progress reports. In each era (``legacy``, and pinned to ``2026-07-28``): 5 and 20 MB
results arrive whole, at once and after 16 s (past the 15 s after which a 2026-07-28
answer could turn into a stream). fastmcp's client asks for progress on every call, so
a call that reports progress streams, and a server-sent event of more than 1 MiB is
more than this client reads: that call answers ``result_too_large``, typed, naming
the setting.

    python fastmcp_client.py URL

Runs in the environment of ``langchain[mcp]``, which brings fastmcp. Exit status 0
when every check passes; otherwise 1, each failure printed as a FAIL line.
"""

import asyncio
import sys
from typing import Any

from fastmcp import Client  # type: ignore[import-not-found]

MB = 1_000_000
MODES = ("legacy", "2026-07-28")
failures: list[str] = []


def report(mode: str, what: str, problem: str | None) -> None:
    label = f"fastmcp client ({mode}): big_result: {what}"
    if problem is None:
        print(f"ok   {label}")
    else:
        failures.append(f"{label}: {problem}")
        print(f"FAIL {label}: {problem}")


async def call(url: str, mode: str, megabytes: int, seconds: float, steps: int) -> Any:
    async with Client(url, mode=mode, timeout=120) as client:
        arguments = {"megabytes": megabytes, "seconds": seconds, "steps": steps}
        return await client.call_tool("big_result", arguments, raise_on_error=False)


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
    cases = [(megabytes, seconds) for megabytes in (5, 20) for seconds in (0, 16)]
    results = await asyncio.gather(
        *(call(url, mode, megabytes, seconds, 0) for megabytes, seconds in cases),
        call(url, mode, 5, 0, 2),
        return_exceptions=True,
    )
    *sized, streamed = results
    for (megabytes, seconds), result in zip(cases, sized, strict=True):
        what = f"{megabytes} MB after {seconds} s"
        if isinstance(result, BaseException):
            report(mode, what, f"{type(result).__name__}: {result}")
        else:
            report(mode, what, arrived(result, megabytes))
    what = "5 MB reporting progress: result_too_large"
    if isinstance(streamed, BaseException):
        report(mode, what, f"{type(streamed).__name__}: {streamed}")
        return
    content = streamed.structured_content or {}
    problem = None
    if not streamed.is_error or content.get("error") != "result_too_large":
        problem = f"answered {str(content)[:300]}"
    elif "MCP_MAX_STREAMED_RESULT_BYTES" not in content.get("detail", ""):
        problem = f"the detail names no setting: {content.get('detail')}"
    report(mode, what, problem)


async def main(url: str) -> int:
    await asyncio.gather(*(check(url, mode) for mode in MODES))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
