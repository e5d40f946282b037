"""Large results through fastmcp's ``Client`` and the MCP Python SDK's 2.x client, each
on its default settings, against the long-calls toolset.

The toolset's ``big_result`` answers as many megabytes as asked, after a wait and
progress reports. In each era (``legacy``, and pinned to ``2026-07-28``), through each
client: 5 and 20 MB results arrive whole, at once and after 16 s (past the 15 s after
which a 2026-07-28 answer could turn into a stream); through the SDK's client, which
asks for progress only when given a callback, from a call that reports progress too.
fastmcp's client asks for progress on every call, so a call that reports progress
streams, and a server-sent event of more than 1 MiB is more than either client reads:
that call answers ``result_too_large``, typed, naming the setting. The toolset's
``big_file`` keeps as many megabytes as asked for its caller and links them: through
each client, from a call that reports progress, its answer says what the data is and how
to read it, and the data of 5 and 20 MB reads back whole with ``resources/read``. Every
call runs at once.

    python large_results.py URL

Runs in the environment of ``langchain[mcp]``, which brings fastmcp and the SDK. Exit
status 0 when every check passes; otherwise 1, each failure printed as a FAIL line.
"""

import asyncio
import base64
import sys
from typing import Any

from fastmcp import Client  # type: ignore[import-not-found]
from mcp.client import Client as SDKClient  # type: ignore[import-not-found]

MB = 1_000_000
MODES = ("legacy", "2026-07-28")
failures: list[str] = []


def report(
    client: str, mode: str, what: str, problem: str | None, tool: str = "big_result"
) -> None:
    label = f"{client} ({mode}): {tool}: {what}"
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


def pattern(megabytes: int) -> bytes:
    """What ``big_file`` keeps: each byte value in turn."""
    size = megabytes * MB
    return (bytes(range(256)) * (size // 256 + 1))[:size]


async def read_link(client: Any, megabytes: int) -> str | None:
    """``big_file`` through ``client`` (asking for progress), then its link read; None when
    the answer names the data and how to read it, and the data arrives whole."""
    reported: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reported.append(done)

    arguments = {"megabytes": megabytes, "steps": 2}
    result = await client.call_tool("big_file", arguments, progress_handler=progress)
    file = (result.structured_content or {}).get("file") or {}
    text = result.content[0].text if result.content else ""
    if result.is_error or not file:
        return f"answered {text[:300]}"
    if reported != [1, 2]:
        return f"progress {reported}"
    said = f"{megabytes}mb.bin is {megabytes}.0 MB ({megabytes * MB} bytes)"
    if said not in text or f"resources/read of {file['uri']}" not in text:
        return f"the text does not say what the data is and how to read it: {text[:300]}"
    links = [item for item in result.content if getattr(item, "type", "") == "resource_link"]
    if [link.uri for link in links] != [file["uri"]]:
        return f"the resource links are {links}"
    [contents] = await client.read_resource(file["uri"])
    if base64.b64decode(contents.blob) != pattern(megabytes):
        return "the data read back differs from the data kept"
    return None


async def links(url: str, mode: str) -> None:
    """``big_file`` of 5 and 20 MB through both clients, each asking for progress."""

    async def fastmcp(megabytes: int) -> str | None:
        async with Client(url, mode=mode, timeout=120) as client:
            return await read_link(client, megabytes)

    async def sdk(megabytes: int) -> str | None:
        async with SDKClient(url, mode=mode) as client:
            return await read_link(SDKReader(client), megabytes)

    clients = (("fastmcp client", fastmcp), ("sdk client", sdk))
    cases = [(name, run, size) for name, run in clients for size in (5, 20)]
    answers = await asyncio.gather(*(run(size) for _, run, size in cases), return_exceptions=True)
    for (name, _, size), answer in zip(cases, answers, strict=True):
        what = f"{size} MB kept as a link, reporting progress, read back whole"
        if isinstance(answer, BaseException):
            answer = f"{type(answer).__name__}: {answer}"
        report(name, mode, what, answer, tool="big_file")


class SDKReader:
    """The SDK's client as ``read_link`` calls it (fastmcp's names)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def call_tool(self, name: str, arguments: Any, progress_handler: Any) -> Any:
        return await self.client.call_tool(name, arguments, progress_callback=progress_handler)

    async def read_resource(self, uri: str) -> Any:
        return (await self.client.read_resource(uri)).contents


async def main(url: str) -> int:
    checks = [*(check(url, mode) for mode in MODES), *(links(url, mode) for mode in MODES)]
    await asyncio.gather(*checks)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
