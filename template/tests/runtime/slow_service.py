"""A service whose calls stay in flight until the test lets them go, for the shutdown,
cancellation and progress tests.

Run as a script, it serves through :func:`mcp_runtime.serving.processes.serve`, exactly as the
``serve`` command does (signals, draining, worker processes), with the app factory
:func:`app`. ``SLOW_SERVICE_DIR`` names a folder: each call writes ``started-NAME``
there when it starts, and answers once the file ``release`` exists; ``hold`` writes
``cancelled-NAME`` when its call is cancelled. ``count_up`` and ``count_up_thread``
report each of their steps as progress (toolset ``counting``, served when
``MCP_TOOLSETS`` names it). ``sized`` answers a result of a chosen size, after a chosen
wait and progress reports (toolset ``sizes``). ``answer`` answers as asked: a result, a
``ToolError``, a ``ToolException``, an unexpected exception, or a result that breaks
its annotation, or its caller's subject (toolset ``answers``). ``job`` (a task tool:
optional), ``job_thread`` (optional, sync) and ``only_as_task`` (required) run as tasks
(toolset ``tasks``): ``job`` reports ``steps`` steps, then holds until the test releases
it when ``hold`` is set, writing ``cancelled-NAME`` when it is cancelled, and answers as
``answer`` does. ``steps`` and ``steps_thread`` checkpoint each of their steps (toolset
``durable``), for the tests of tasks that outlive their process. ``kept`` (a task tool:
optional) and ``kept_thread`` keep data for their caller (``keep_data``) and link it
(toolset ``data``): :func:`kept_content` is what they keep.
"""

import os
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import NotRequired

import anyio
from langchain_core.tools import ToolException, tool

from mcp_runtime import (
    DataLink,
    ToolError,
    ToolResult,
    current_caller,
    is_resumed,
    keep_data,
    keep_data_async,
    last_checkpoint,
    report_progress,
    request_header,
    reserve_data,
    reserve_data_async,
    save_checkpoint,
    tool_metadata,
)
from mcp_runtime.config.settings import load_settings
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.observability.logs import configure_logging
from mcp_runtime.serving.http_app import ServiceApp, build_app
from mcp_runtime.serving.processes import serve
from mcp_runtime.serving.server import build_server

POLL_SECONDS = 0.02


def _folder() -> Path:
    return Path(os.environ["SLOW_SERVICE_DIR"])


@tool
async def hold(name: str) -> ToolResult:
    """Answer once the test releases the call."""
    (_folder() / f"started-{name}").touch()
    try:
        while not (_folder() / "release").exists():
            await anyio.sleep(POLL_SECONDS)
    except anyio.get_cancelled_exc_class():
        (_folder() / f"cancelled-{name}").touch()
        raise
    return ToolResult(message=f"released {name}")


@tool
def hold_thread(name: str) -> ToolResult:
    """Answer once the test releases the call, holding a tool thread until then."""
    (_folder() / f"started-{name}").touch()
    while not (_folder() / "release").exists():
        time.sleep(POLL_SECONDS)
    return ToolResult(message=f"released {name}")


@tool
async def count_up(steps: int) -> ToolResult:
    """Count to ``steps``, reporting each step as progress."""
    for step in range(1, steps + 1):
        await anyio.sleep(0)
        report_progress(step, steps, f"step {step} of {steps}")
    return ToolResult(message=f"counted to {steps}")


@tool
def count_up_thread(steps: int) -> ToolResult:
    """Count to ``steps`` in a tool thread, reporting each step as progress."""
    for step in range(1, steps + 1):
        report_progress(step, steps, f"step {step} of {steps}")
    return ToolResult(message=f"counted to {steps}")


class SizedResult(ToolResult):
    """A result carrying ``size`` characters of data."""

    data: NotRequired[str]
    numbers: NotRequired[list[float]]


@tool
async def sized(size: int, seconds: float = 0, steps: int = 0) -> SizedResult | ToolError:
    """Answer ``size`` characters of data after ``seconds``, reporting ``steps`` steps."""
    for step in range(1, steps + 1):
        report_progress(step, steps, f"step {step} of {steps}")
    await anyio.sleep(seconds)
    return SizedResult(message=f"{size} characters", data="x" * size)


@tool
async def answer(kind: str, text: str = "") -> SizedResult | ToolError:
    """Answer as ``kind`` says: ok, caller (its subject), numbers, tool_error,
    tool_exception, exception or broken."""
    return answered(kind, text)


def answered(kind: str, text: str) -> SizedResult | ToolError:
    """What ``answer`` answers for ``kind``."""
    if kind == "caller":
        caller = current_caller()
        return SizedResult(message=f"caller {caller.subject if caller else None}")
    if kind == "numbers":  # numbers whose JSON forms differ between encoders
        return SizedResult(message="numbers", numbers=[0.1, 1e20, 1e-7, -0.0, 2.0**62, 3.0])
    if kind == "tool_error":
        return ToolError(error="not_found", detail=f"no {text}")
    if kind == "tool_exception":
        raise ToolException(f"refused {text}")
    if kind == "exception":
        raise RuntimeError(f"secret {text}")
    if kind == "broken":
        return {"message": 7}  # type: ignore[typeddict-item]
    return SizedResult(message=f"ok {text}", data=text)


@tool_metadata(task="optional", task_headers=["x-demo-token"])
@tool
async def job(
    name: str, kind: str = "ok", steps: int = 0, hold: bool = False, text: str = ""
) -> SizedResult | ToolError:
    """A long job: report ``steps`` steps, hold when ``hold`` is set until a file
    ``release-NAME`` appears (then report "NAME released"), then answer as ``answer``
    does for ``kind`` (and ``header``: whether the request carried the demo token)."""
    (_folder() / f"started-{name}").touch()
    for step in range(1, steps + 1):
        report_progress(step, steps, f"step {step} of {steps}")
        await anyio.sleep(0.01)
    try:
        while hold and not (_folder() / f"release-{name}").exists():
            await anyio.sleep(POLL_SECONDS)
    except anyio.get_cancelled_exc_class():
        (_folder() / f"cancelled-{name}").touch()
        raise
    if hold:
        report_progress(steps + 1, None, f"{name} released")
    if kind == "header":
        token = request_header("x-demo-token")
        return SizedResult(message=f"token of {len(token or '')} characters")
    if kind == "undeclared":
        request_header("x-other")
    return answered(kind, text)


@tool_metadata(task="optional")
@tool
async def steps(name: str, count: int, seconds: float = 0.0) -> ToolResult:
    """A job of ``count`` steps of ``seconds`` each, that checkpoints each step: it appends
    ``step N in PID`` to ``ran-NAME`` as each step runs, and goes on from the step after
    its last checkpoint when it runs again."""
    done = (last_checkpoint() or {}).get("done", 0)
    for step in range(done + 1, count + 1):
        with (_folder() / f"ran-{name}").open("a") as ran:
            ran.write(f"step {step} in {os.getpid()}\n")
        await anyio.sleep(seconds)
        save_checkpoint({"done": step})
        report_progress(step, count, f"step {step} of {count}")
    return ToolResult(message=f"{count} steps of {name}, resumed: {is_resumed()}")


@tool_metadata(task="optional")
@tool
def steps_thread(name: str, count: int) -> ToolResult:
    """``steps`` in a tool thread, without waits: what a sync tool's checkpoint keeps."""
    done = (last_checkpoint() or {}).get("done", 0)
    for step in range(done + 1, count + 1):
        save_checkpoint({"done": step})
    return ToolResult(message=f"{count} steps of {name}, last {last_checkpoint()}")


@tool_metadata(task="optional")
@tool
def job_thread(name: str) -> ToolResult:
    """A long job in a tool thread."""
    (_folder() / f"started-{name}").touch()
    report_progress(1, 1, "half way")
    return ToolResult(message=f"threaded {name}")


@tool_metadata(task="required")
@tool
async def only_as_task(name: str) -> ToolResult:
    """A job that runs only as a task."""
    return ToolResult(message=f"tasked {name}")


def kept_content(size: int, text: bool) -> bytes:
    """What ``kept`` keeps: ``size`` rows of text (a two-byte character in each), or
    ``size`` bytes that run through every byte value."""
    if text:
        return "".join(f"{row},\u00e9\n" for row in range(size)).encode()
    return (bytes(range(256)) * (size // 256 + 1))[:size]


class KeptResult(ToolResult):
    """Data kept for the caller, linked."""

    file: NotRequired[DataLink]
    other: NotRequired[DataLink]


PIECE = 64 * 1024
PIECES_READ: list[int] = []
"""How many pieces each streamed keep of this process read from its source."""


async def _stream(
    size: int, text: bool, pause: float, name: str, broken: bool = False
) -> AsyncIterator[bytes]:
    """:func:`kept_content` in pieces of :data:`PIECE` bytes, counted in :data:`PIECES_READ`;
    ``pause`` seconds after each, the first marked by the file ``streaming-NAME``, which
    holds the process's id; ``broken``: it fails after 200 pieces."""
    content = kept_content(size, text)
    PIECES_READ.append(0)
    for start in range(0, max(1, len(content)), PIECE):
        if broken and PIECES_READ[-1] == 200:
            raise ConnectionError("the data store's connection was lost")
        PIECES_READ[-1] += 1
        yield content[start : start + PIECE]
        if pause and start == 0 and "SLOW_SERVICE_DIR" in os.environ:
            (_folder() / f"streaming-{name}").write_text(str(os.getpid()))
        await anyio.sleep(pause)


@tool_metadata(task="optional")
@tool
async def kept(
    size: int,
    text: bool = False,
    name: str = "data.bin",
    steps: int = 0,
    then: str = "answer",
    source: str = "bytes",
    reserve: int | None = None,
    pause: float = 0.0,
    broken: bool = False,
) -> KeptResult | ToolError:
    """Keep :func:`kept_content` as ``name`` after ``steps`` progress reports, and answer
    as ``then`` says: ``answer`` links it; ``twice`` keeps it twice and links both;
    ``unlinked`` keeps it and links none; ``refuse`` answers a ToolError; ``raise`` raises;
    ``oversize`` answers a result of two megabytes beside it. ``source`` says how it is
    kept: ``bytes`` (``keep_data``), ``stream`` (an async iterator), ``file`` (a file the
    tool writes); ``reserve`` bytes are reserved first; ``pause``: seconds between pieces;
    ``broken``: the stream fails on its way."""
    if reserve is not None:
        await reserve_data_async(reserve)
    for step in range(1, steps + 1):
        report_progress(step, steps, f"step {step} of {steps}")
        await anyio.sleep(0.01)
    media_type = "text/csv" if text else None
    if source == "stream":
        pieces = _stream(size, text, pause, name, broken)
        file = await keep_data_async(pieces, name=name, media_type=media_type)
    elif source == "file":
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, name)
            path.write_bytes(kept_content(size, text))
            file = await keep_data_async(path, name=name, media_type=media_type)
    else:
        file = keep_data(kept_content(size, text), name=name, media_type=media_type)
    if then == "twice":
        other = keep_data(kept_content(size, text), name=f"other-{name}", media_type=media_type)
        return KeptResult(message=f"kept {name} twice", file=file, other=other)
    if then == "unlinked":
        return KeptResult(message=f"kept {name}, linked nowhere")
    if then == "refuse":
        return ToolError(error="refused", detail=f"kept {name}, then refused")
    if then == "raise":
        raise RuntimeError(f"kept {name}, then failed")
    if then == "oversize":
        return KeptResult(message="x" * 2_000_000, file=file)
    return KeptResult(message=f"kept {name}", file=file)


@tool
def kept_thread(size: int, source: str = "bytes", reserve: int | None = None) -> KeptResult:
    """``kept`` in a tool thread: binary data of ``size`` bytes, kept from ``bytes``, a
    ``file`` or an ``iter`` of pieces, after reserving ``reserve`` bytes."""
    if reserve is not None:
        reserve_data(reserve)
    content = kept_content(size, False)
    if source == "file":
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, "thread.bin")
            path.write_bytes(content)
            file = keep_data(path, name="thread.bin")
    elif source == "iter":
        pieces = (content[start : start + PIECE] for start in range(0, size, PIECE))
        file = keep_data(pieces, name="thread.bin")
    else:
        file = keep_data(content, name="thread.bin")
    return KeptResult(message="kept in a thread", file=file)


TOOLSETS = (
    Toolset("slow", (hold, hold_thread)),
    Toolset("counting", (count_up, count_up_thread)),
    Toolset("sizes", (sized,)),
    Toolset("answers", (answer,)),
    Toolset("tasks", (job, job_thread, only_as_task)),
    Toolset("durable", (steps, steps_thread)),
    Toolset("data", (kept, kept_thread)),
)


def app() -> ServiceApp:
    """The app factory: the toolsets ``MCP_TOOLSETS`` names (``slow`` when it is unset)."""
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    chosen = settings.toolsets or ("slow",)
    toolsets = [toolset for toolset in TOOLSETS if toolset.name in chosen]
    name = os.environ.get("SLOW_SERVICE_NAME", "slow-service")
    return build_app(build_server(toolsets, name=name, settings=settings), settings)


if __name__ == "__main__":
    serve(load_settings(), "slow_service:app")
