"""The hostile toolset: tools that misbehave in every way a served tool can.

Copied into a rendered service's toolsets package as ``hostile.py``, so the service
serves it as the toolset ``hostile``, beside ``hello``. Every tool keeps the startup
gate's rules: what they break happens only when they are called.
"""

import asyncio
import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import ToolException, tool
from mcp_runtime import ToolError, ToolResult
from pydantic import AwareDatetime, BaseModel, Field, field_validator
from typing_extensions import TypedDict

Kind = Literal[
    "system_exit",
    "keyboard_interrupt",
    "base_exception",
    "generator_exit",
    "unprintable",
    "cancelled",
    "runtime_secret",
    "tool_exception",
]
SECRET = "hunter2"
REFUSAL = "The archive is closed on Sundays: ask again on Monday."


class Rogue(BaseException):
    """An exception outside ``Exception``, as some libraries raise."""


class Unprintable(Exception):  # noqa: N818 (named for what it does)
    """An exception whose text cannot be read."""

    def __str__(self) -> str:
        raise RuntimeError("this exception has no text")


def trouble(kind: Kind) -> BaseException:
    """The exception a tool raises for ``kind``."""
    made: dict[str, BaseException] = {
        "system_exit": SystemExit(3),
        "keyboard_interrupt": KeyboardInterrupt(),
        "base_exception": Rogue("rogue"),
        "generator_exit": GeneratorExit(),
        "unprintable": Unprintable(),
        "cancelled": asyncio.CancelledError(),
        "runtime_secret": RuntimeError(f"db password={SECRET}"),
        "tool_exception": ToolException(REFUSAL),
    }
    return made[kind]


@tool
def raise_sync(kind: Kind) -> ToolResult:
    """Raise the exception named by ``kind`` from a sync tool."""
    raise trouble(kind)


@tool
async def raise_async(kind: Kind) -> ToolResult:
    """Raise the exception named by ``kind`` from an async tool."""
    raise trouble(kind)


@tool
def sleep_sync(seconds: float) -> ToolResult:
    """Block the calling thread for ``seconds``, then answer."""
    time.sleep(seconds)
    return ToolResult(message=f"slept {seconds:g} s")


@tool
def nap_sync(seconds: float) -> ToolResult:
    """Another sync tool: block the calling thread for ``seconds``, then answer."""
    time.sleep(seconds)
    return ToolResult(message=f"napped {seconds:g} s")


@tool
async def sleep_async(seconds: float) -> ToolResult:
    """Sleep for ``seconds`` without blocking, then answer."""
    await asyncio.sleep(seconds)
    return ToolResult(message=f"slept {seconds:g} s")


class TextResult(ToolResult):
    """A piece of text."""

    text: NotRequired[str]


@tool
def lone_surrogate() -> TextResult:
    """Return a string that holds a lone surrogate, which no UTF-8 encoder accepts."""
    return TextResult(message="here it is", text="broken \ud800 text")


class LooseResult(ToolResult):
    """A value of any type, and bytes."""

    anything: NotRequired[Any]
    blob: NotRequired[bytes]


@tool
def unserializable(kind: Literal["nan", "bytes"]) -> LooseResult:
    """Return what JSON cannot carry: NaN deep under an ``Any`` key, or bytes not UTF-8."""
    return loose(kind)


def loose(kind: Literal["nan", "bytes"]) -> LooseResult:
    """What ``unserializable`` returns for ``kind``."""
    if kind == "nan":
        return LooseResult(message="m", anything={"acct-4471-secret": [1.0, float("nan")]})
    return LooseResult(message="m", blob=b"\xff\xfe acct-4471-secret")


class Node(TypedDict):
    """A node of a chain, holding the next one."""

    child: NotRequired["Node"]


class ChainResult(ToolResult):
    """A chain of nodes."""

    chain: NotRequired[Node]


@tool
def chain(levels: Annotated[int, Field(ge=1, le=1000)]) -> ChainResult:
    """Return a chain of ``levels`` nested nodes."""
    node: Node = {}
    for _ in range(levels - 1):
        node = {"child": node}
    return ChainResult(message=f"{levels} levels", chain=node)


class MomentResult(ToolResult):
    """A moment in time, with its UTC offset."""

    at: NotRequired[AwareDatetime]


@tool
def moment(aware: bool) -> MomentResult:
    """Return a moment in time: with its UTC offset when ``aware``, else without one."""
    at = datetime(2024, 5, 17, 12, 30, tzinfo=UTC if aware else None)
    return MomentResult(message="a moment", at=at)


class ScoresResult(ToolResult):
    """Scores by account."""

    scores: NotRequired[dict[str, int]]


@tool
def scores() -> ScoresResult:
    """Return a score that is not a number, under an account id that must stay private."""
    return {"message": "scores", "scores": {"acct-4471-secret": "x"}}  # type: ignore[dict-item]


class NameResult(ToolResult):
    """A name as the tool received it."""

    name: NotRequired[str]


class ShoutArguments(BaseModel):
    """The arguments of ``shout``."""

    name: str = Field(description="A name; the tool receives it upper-cased.")

    @field_validator("name")
    @classmethod
    def upper(cls, value: str) -> str:
        """Names are shouted."""
        return value.upper()


@tool(args_schema=ShoutArguments)
def shout(name: str) -> NameResult:
    """Return the name as the tool received it, after its validator upper-cased it."""
    return NameResult(message=f"Hey, {name}!", name=name)


class CountResult(ToolResult):
    """A count."""

    count: NotRequired[int]


@tool
def bounded(count: Annotated[int, Field(le=10, description="At most 10.")]) -> CountResult:
    """Return ``count``, which may be at most 10."""
    return CountResult(message=f"count {count}", count=count)


@tool
def configured(name: str, config: RunnableConfig) -> NameResult:
    """Return ``name``; the tool also receives LangChain's run configuration."""
    tags = config.get("tags") or []
    return NameResult(message=f"{name} with {len(tags)} tags", name=name)


class RepeatResult(ToolResult):
    """A text repeated."""

    text: NotRequired[str]
    times: NotRequired[int]


@tool
def repeat(text: str = "ab", times: int = 2, separator: str | None = None) -> RepeatResult:
    """Repeat ``text`` ``times`` times, joined by ``separator`` (nothing by default)."""
    return RepeatResult(
        message="repeated", text=(separator or "").join([text] * times), times=times
    )


@tool
async def echo(text: str) -> TextResult | ToolError:
    """Echo ``text`` from an async tool; a blank text is a ToolError."""
    if not text.strip():
        return ToolError(error="invalid_argument", detail="The text is blank: pass some text.")
    return TextResult(message="echo", text=text)


@tool
def refuse() -> ToolResult:
    """Refuse by raising ToolException with a message written for the caller."""
    raise ToolException(REFUSAL)


TOOLS = [
    raise_sync,
    raise_async,
    sleep_sync,
    nap_sync,
    sleep_async,
    lone_surrogate,
    unserializable,
    chain,
    moment,
    scores,
    shout,
    bounded,
    configured,
    repeat,
    echo,
    refuse,
]
