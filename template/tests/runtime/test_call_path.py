"""Every call gets exactly one answer: whatever the tool raises, however long it runs,
whatever its result holds; unexpected errors are masked; each call logs one line."""

import asyncio
import functools
import logging
import math
import operator
import re
import threading
from typing import Any, NotRequired

import anyio
import pytest
from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from typing_extensions import TypedDict

from mcp_runtime import ToolResult, tool_metadata
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.gate import to_mcp_tool
from mcp_runtime.contract.served_tool import CallPolicy, ContractTool, ToolCaller
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.execution.tool_threads import ToolBusyError, ToolThreads, never_started
from mcp_runtime.sdk import MCPServer
from mcp_runtime.sdk.tools import func_metadata, json_text_keys, pre_parse_json
from mcp_runtime.serving.server import build_server, state_of
from mcp_runtime.testing import connect

pytestmark = pytest.mark.anyio

MASKED = re.compile(
    r"Tool '(\w+)' failed with an unexpected error \(error id ([0-9a-f]{12})\)\. "
    r"The service's log has the details under that id\."
)


class Custom(BaseException):
    """A BaseException no library would expect."""


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise ValueError("no text")


def raising(exception: BaseException, *, is_async: bool) -> BaseTool:
    """A tool named ``boom`` that raises ``exception``."""

    async def boom_async() -> ToolResult:
        raise exception

    def boom_sync() -> ToolResult:
        raise exception

    if is_async:
        return StructuredTool.from_function(coroutine=boom_async, name="boom", description="Raise.")
    return StructuredTool.from_function(boom_sync, name="boom", description="Raise.")


@tool
def ping() -> ToolResult:
    """Answer at once."""
    return ToolResult(message="pong")


def text_of(result: CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


async def call(tool: BaseTool, arguments: dict[str, Any] | None = None, **policy: Any) -> Any:
    return await to_mcp_tool(tool, policy=CallPolicy(**policy)).run(arguments or {})


def server_of(*tools: BaseTool, **settings: Any) -> MCPServer:
    return build_server(
        [Toolset("calls", tools)], name="calls", settings=ServiceSettings(**settings)
    )


def outcomes(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """The (tool, outcome) of each call log line."""
    return [
        (record.tool, record.outcome)  # type: ignore[attr-defined]
        for record in caplog.records
        if record.name == "mcp_runtime.calls"
    ]


# --- whatever the tool raises ------------------------------------------------------


@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
@pytest.mark.parametrize(
    "exception",
    [
        SystemExit(2),
        KeyboardInterrupt(),
        GeneratorExit(),
        Custom("custom"),
        RuntimeError("db password=hunter2"),
        UnprintableError(),
    ],
    ids=lambda exception: type(exception).__name__,
)
async def test_whatever_a_tool_raises_it_answers_and_serving_goes_on(
    exception: BaseException, is_async: bool, caplog: pytest.LogCaptureFixture
) -> None:
    server = server_of(raising(exception, is_async=is_async), ping)
    async with connect(server) as session:
        failed = await session.call_tool("boom", {})
        after = await session.call_tool("ping", {})
    assert failed.is_error is True
    assert failed.structured_content is None
    masked = MASKED.fullmatch(text_of(failed))
    assert masked is not None, text_of(failed)
    assert masked.group(1) == "boom"
    assert after.structured_content == {"message": "pong"}
    [logged] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert logged.getMessage() == (
        f"tool boom raised {type(exception).__name__} (error id {masked.group(2)})"
    )
    assert logged.exc_info is not None


async def test_a_tool_raising_cancelled_error_itself_answers() -> None:
    server = server_of(raising(asyncio.CancelledError(), is_async=True), ping)
    async with connect(server) as session:
        with anyio.fail_after(10):
            failed = await session.call_tool("boom", {})
        after = await session.call_tool("ping", {})
    assert MASKED.fullmatch(text_of(failed))
    assert after.structured_content == {"message": "pong"}


async def test_masked_text_never_holds_the_exception_text() -> None:
    result = await call(raising(RuntimeError("db password=hunter2"), is_async=False))
    assert "hunter2" not in text_of(result)


async def test_unmasked_exception_sends_its_text() -> None:
    boom = raising(RuntimeError("the upstream service is down; retry in a minute"), is_async=True)
    result = await call(boom, mask_errors=False)
    assert result.is_error is True
    assert text_of(result) == "the upstream service is down; retry in a minute"


async def test_unmasked_exception_without_text_names_its_type() -> None:
    result = await call(raising(UnprintableError(), is_async=True), mask_errors=False)
    assert text_of(result) == "Tool 'boom' failed: UnprintableError"


@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
async def test_tool_exception_message_passes_through(is_async: bool) -> None:
    message = "The city 'Atlantis' was not found: check the spelling."
    result = await call(raising(ToolException(message), is_async=is_async))
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result) == message


# --- deadlines, threads, shutdown --------------------------------------------------


async def test_sync_tool_past_the_timeout_answers_at_the_deadline() -> None:
    release = threading.Event()

    @tool
    def stuck() -> ToolResult:
        """Wait until released."""
        release.wait(30)
        return ToolResult(message="released")

    try:
        with anyio.fail_after(10):
            result = await call(stuck, timeout=0.2)
    finally:
        release.set()
    assert result.is_error is True
    assert text_of(result) == (
        "Tool 'stuck' did not finish within 0.2 seconds: try again later, or ask for less at once."
    )


async def test_a_tool_that_catches_its_deadline_still_answers_timed_out() -> None:
    @tool
    async def stubborn() -> ToolResult:
        """Catch the cancellation and answer anyway."""
        try:
            await anyio.sleep(30)
        except asyncio.CancelledError:
            await anyio.sleep(0.05)
        return ToolResult(message="late")

    with anyio.fail_after(10):
        result = await call(stubborn, timeout=0.1)
    assert result.is_error is True
    assert text_of(result) == (
        "Tool 'stubborn' did not finish within 0.1 seconds: try again later, or ask for less "
        "at once."
    )


async def test_a_tools_shielded_cleanup_runs_to_its_end_past_the_deadline() -> None:
    cleaned: list[str] = []

    @tool
    async def careful() -> ToolResult:
        """Clean up, shielded, when cancelled."""
        try:
            await anyio.sleep(30)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.1)
                cleaned.append("done")
        return ToolResult(message="never")

    with anyio.fail_after(10):
        result = await call(careful, timeout=0.1)
    assert (result.is_error, cleaned) == (True, ["done"])
    assert "did not finish within 0.1 seconds" in text_of(result)


async def hang(threads: ToolThreads, name: str, release: threading.Event, calls: int = 1) -> None:
    """Make ``calls`` calls of ``name`` that outlive their deadline, holding a thread each."""
    for _ in range(calls):
        with pytest.raises(TimeoutError), anyio.fail_after(0.2):
            await threads.run(name, functools.partial(release.wait, 30))


async def wait_until_free(threads: ToolThreads) -> None:
    with anyio.fail_after(10):
        while threads.busy:
            await anyio.sleep(0.01)


async def test_a_hung_sync_tool_keeps_its_thread_until_it_returns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_runtime")
    threads = ToolThreads(size=2, share=2)
    release = threading.Event()
    await hang(threads, "hung", release, calls=2)
    assert (threads.busy, threads.running("hung"), threads.exhausted) == (2, 2, True)
    with pytest.raises(ToolBusyError) as refused:  # at once: both threads are hung
        await threads.run("quick", lambda: "done")
    assert str(refused.value) == (
        "Tool 'quick' is busy: all 2 tool threads of the service are held by earlier calls "
        "that have not returned. Try again later."
    )
    release.set()
    await wait_until_free(threads)
    assert await threads.run("quick", lambda: "done") == "done"
    assert threads.exhausted is False
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("tool hung ")]
    assert lines[:3] == [
        "tool hung is still running after its call ended: its thread stays taken until the "
        "function returns (1 of 2 threads busy)",
        "tool hung is still running after its call ended: its thread stays taken until the "
        "function returns (2 of 2 threads busy)",
        "tool hung holds all 2 of its threads with calls that have ended and not returned: "
        "its calls answer that it is busy until one returns",
    ]
    assert len(lines) == 5
    assert all(line.startswith("tool hung returned ") for line in lines[3:])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings[-1] == (
        "all 2 tool threads are taken by sync tools still running: readiness answers 503 "
        "until one returns"
    )


async def test_a_tool_hung_at_its_share_leaves_the_other_threads_to_other_tools() -> None:
    threads = ToolThreads(size=4)  # a share of 2 threads a tool
    release = threading.Event()
    try:
        await hang(threads, "hung", release, calls=2)
        with pytest.raises(ToolBusyError) as refused:  # at once: this call has no deadline
            await threads.run("hung", lambda: "never")
        answers = await asyncio.gather(*(threads.run("other", lambda: "done") for _ in range(8)))
    finally:
        release.set()
    assert str(refused.value) == (
        "Tool 'hung' is busy: all 2 of the threads it may use are held by earlier calls that "
        "have not returned. Try again later."
    )
    assert answers == ["done"] * 8
    await wait_until_free(threads)
    assert await threads.run("hung", lambda: "back") == "back"


async def test_calls_past_a_tools_share_wait_for_its_threads_in_turn() -> None:
    threads = ToolThreads(size=4, share=1)
    running: list[int] = []
    release = threading.Event()

    def work(n: int) -> int:
        running.append(n)
        release.wait(10)
        return n

    waiting = [
        asyncio.ensure_future(threads.run("one", functools.partial(work, n))) for n in range(3)
    ]
    with anyio.fail_after(5):
        while not running:
            await anyio.sleep(0.01)
    await anyio.sleep(0.1)
    assert (running, threads.running("one")) == ([0], 1)  # one at a time: its share
    assert await threads.run("another", lambda: "free") == "free"  # other tools go on
    release.set()
    with anyio.fail_after(10):
        assert await asyncio.gather(*waiting) == [0, 1, 2]
    assert running == [0, 1, 2]


async def test_calls_waiting_for_a_tool_that_hangs_are_refused_when_it_does() -> None:
    threads = ToolThreads(size=4, share=1)
    release = threading.Event()
    with anyio.fail_after(10):
        first = asyncio.ensure_future(threads.run("one", functools.partial(release.wait, 30)))
        while not threads.running("one"):
            await anyio.sleep(0.01)
        second = asyncio.ensure_future(threads.run("one", lambda: "late"))
        await anyio.sleep(0.05)
        first.cancel()  # its call ends: the thread hangs, and the call waiting cannot go
        with pytest.raises(ToolBusyError):
            await second
    release.set()
    await wait_until_free(threads)


async def test_a_call_knows_it_never_got_a_thread() -> None:
    threads = ToolThreads(size=1)
    release = threading.Event()
    try:
        holding = asyncio.ensure_future(threads.run("a", functools.partial(release.wait, 30)))
        with anyio.fail_after(5):
            while not threads.busy:
                await anyio.sleep(0.01)
        with pytest.raises(TimeoutError), anyio.fail_after(0.1):
            await threads.run("b", lambda: "late")
        assert never_started() is True
        release.set()
        assert await holding is True
        assert await threads.run("b", lambda: "now") == "now"
        assert never_started() is False
    finally:
        release.set()


async def test_a_call_past_its_deadline_waiting_for_a_thread_says_so() -> None:
    release = threading.Event()

    state = ServiceState()

    def shared(timeout: float) -> ContractTool:
        """A tool named ``shared`` that may hold one thread, answered within ``timeout``."""

        def hold() -> ToolResult:
            release.wait(30)
            return ToolResult(message="held")

        held = StructuredTool.from_function(hold, name="shared", description="Hold a thread.")
        policy = CallPolicy(timeout=timeout)
        return to_mcp_tool(tool_metadata(max_threads=1)(held), policy=policy, state=state)

    patient, hasty = shared(30), shared(0.2)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(patient.run, {})
            with anyio.fail_after(5):
                while not state.threads.running("shared"):
                    await anyio.sleep(0.01)
            result = await hasty.run({})
            release.set()
    finally:
        release.set()
    assert result.is_error is True
    assert text_of(result) == (
        "Tool 'shared' did not start within 0.2 seconds: every thread it may use was busy "
        "with earlier calls. Try again later."
    )


async def test_tool_threads_carry_the_calls_context() -> None:
    threads = ToolThreads(size=1)
    double = functools.partial(operator.mul, 2)
    results = await asyncio.gather(
        *(threads.run("n", functools.partial(double, n)) for n in range(20))
    )
    assert results == [n * 2 for n in range(20)]


async def test_a_call_cut_short_by_shutdown_answers(caplog: pytest.LogCaptureFixture) -> None:
    started = anyio.Event()

    @tool
    async def slow() -> ToolResult:
        """Take a long time."""
        started.set()
        await anyio.sleep(30)
        return ToolResult(message="done")

    caplog.set_level(logging.INFO, logger="mcp_runtime.calls")
    converted = to_mcp_tool(slow)
    answers: list[CallToolResult] = []

    async def calling() -> None:
        answers.append(await converted.run({}))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(calling)
            await started.wait()
            converted.state.calls.cut_short()
    [answer] = answers
    assert answer.is_error is True
    assert text_of(answer) == (
        "Tool 'slow' was stopped because the service is shutting down: call it again."
    )
    assert converted.state.calls.count == 0
    assert outcomes(caplog) == [("slow", "shutdown")]


async def test_a_call_whose_client_left_logs_cancelled(caplog: pytest.LogCaptureFixture) -> None:
    started = anyio.Event()

    @tool
    async def slow() -> ToolResult:
        """Take a long time."""
        started.set()
        await anyio.sleep(30)
        return ToolResult(message="done")

    caplog.set_level(logging.INFO, logger="mcp_runtime.calls")
    converted = to_mcp_tool(slow)
    async with anyio.create_task_group() as group:
        group.start_soon(converted.run, {})
        await started.wait()
        group.cancel_scope.cancel()
    assert converted.state.calls.count == 0
    assert outcomes(caplog) == [("slow", "cancelled")]


# --- whatever the result holds -------------------------------------------------


class Node(TypedDict):
    children: NotRequired[list["Node"]]


class TreeResult(ToolResult):
    """A tree of any depth."""

    tree: NotRequired[Node]


def tree(levels: int) -> Node:
    node: Node = {}
    for _ in range(levels):
        node = {"children": [node]}
    return node


def returning(value: object, annotation: object) -> BaseTool:
    async def fixed() -> Any:
        return value

    fixed.__annotations__["return"] = annotation
    return StructuredTool.from_function(
        coroutine=fixed, name="fixed", description="Return a fixed value."
    )


async def test_a_result_nested_deeper_than_the_limit_is_a_violation() -> None:
    result = await call(returning({"message": "m", "tree": tree(126)}, TreeResult))
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result) == (
        "Tool 'fixed' returned a result that breaks its annotation `TreeResult`: "
        "the result is nested deeper than 64 levels of objects and arrays"
    )


async def test_a_result_at_the_limit_is_sent() -> None:
    # The payload object, then a list and an object a level: 1 + 1 + 2 * 31 = 64.
    result = await call(returning({"message": "m", "tree": tree(31)}, TreeResult))
    assert result.is_error is False
    assert result.structured_content == {"message": "m", "tree": tree(31)}


class NamedResult(ToolResult):
    """A name."""

    name: NotRequired[str]


@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\udc00\ud800"])
async def test_a_lone_surrogate_in_a_result_is_a_violation(text: str) -> None:
    result = await call(returning({"message": "m", "name": text}, NamedResult))
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result) == (
        "Tool 'fixed' returned a result that breaks its annotation `NamedResult`: "
        "name: a string is not valid Unicode (it holds a lone surrogate, such as '\\ud800')"
    )


async def test_a_surrogate_pair_is_sent() -> None:
    result = await call(returning({"message": "m", "name": "\U0001f600"}, NamedResult))
    assert result.structured_content == {"message": "m", "name": "\U0001f600"}


class LooseResult(ToolResult):
    """Values of any type, and bytes."""

    anything: NotRequired[Any]
    blob: NotRequired[bytes]
    rows: NotRequired[list[dict[str, Any]]]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"anything": math.nan}, "anything: NaN or infinity, which JSON cannot carry"),
        (
            {"anything": {"acct-4471": -math.inf}},
            "anything.*: NaN or infinity, which JSON cannot carry",
        ),
        ({"blob": b"\xff\xfe-4471"}, "blob: bytes that are not UTF-8 text"),
        ({"anything": [1, b"\xff-4471"]}, "anything.*: bytes that are not UTF-8 text"),
        (
            {"rows": [{"acct-4471": object()}]},
            "rows.*.*: a value of type object, which has no JSON form",
        ),
        (
            {"anything": {"acct-4471": "\ud800"}},
            "anything.*: a string is not valid Unicode (it holds a lone surrogate, such as "
            "'\\ud800')",
        ),
    ],
    ids=["nan", "infinity-in-a-dict", "bytes", "bytes-in-a-list", "object", "surrogate-in-a-dict"],
)
async def test_a_value_without_a_json_form_is_named_by_its_key(
    value: dict[str, Any], problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    result = await call(returning({"message": "m", **value}, LooseResult))
    assert result.structured_content is None
    assert text_of(result) == (
        f"Tool 'fixed' returned a result that breaks its annotation `LooseResult`: {problem}"
    )
    assert "4471" not in caplog.text


class ScoresResult(ToolResult):
    """Scores by account."""

    scores: NotRequired[dict[str, int]]


async def test_a_violation_never_names_a_dict_key(caplog: pytest.LogCaptureFixture) -> None:
    value = {"message": "m", "scores": {"acct-4471-secret": "high"}}
    result = await call(returning(value, ScoresResult))
    assert text_of(result) == (
        "Tool 'fixed' returned a result that breaks its annotation `ScoresResult`: "
        "scores.*: Input should be a valid integer"
    )
    assert "acct-4471" not in caplog.text


async def test_a_bad_argument_names_no_dict_key() -> None:
    @tool
    def weigh(weights: dict[str, int]) -> ToolResult:
        """Weigh things."""
        return ToolResult(message=str(sum(weights.values())))

    result = await call(weigh, {"weights": {"acct-4471-secret": "heavy"}})
    assert text_of(result) == (
        "Invalid arguments for tool 'weigh': weights.*: "
        "Input should be a valid integer, unable to parse string as an integer"
    )


# --- arguments, parsed as LangChain parses them ---------------------------------------


class AliasArguments(BaseModel):
    """An argument the client names by its alias, or by its name."""

    model_config = ConfigDict(populate_by_name=True)

    city_name: str = Field(alias="city")
    days: int = 3


class LooseArguments(BaseModel):
    """Arguments beyond the declared ones kept, one field never dumped, one shouted."""

    model_config = ConfigDict(extra="allow")

    name: str
    hidden: str = Field("secret", exclude=True)
    tags: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def shout(cls, value: str) -> str:
        return value.upper()


def plain(
    name: str, times: int = 2, separator: str | None = None, rows: list[int] | None = None
) -> ToolResult:
    """A plain function with defaults."""
    return ToolResult(message=name)


def by_alias(city_name: str, days: int = 3) -> ToolResult:
    """A function whose schema has an alias."""
    return ToolResult(message=city_name)


def loose(name: str, **extra: Any) -> ToolResult:
    """A function whose schema keeps undeclared arguments."""
    return ToolResult(message=name)


PARSED_TOOLS = {
    "plain": StructuredTool.from_function(plain),
    "alias": StructuredTool.from_function(by_alias, args_schema=AliasArguments),
    "loose": StructuredTool.from_function(loose, args_schema=LooseArguments),
}
PARSE_CASES = [
    ("plain", {"name": "Ada"}),
    ("plain", {"name": "Ada", "times": "3"}),
    ("plain", {"name": "Ada", "separator": None, "rows": [1, "2"]}),
    ("plain", {"name": "Ada", "unknown": 1}),
    ("plain", {"times": "many"}),
    ("plain", {}),
    ("alias", {"city": "Oslo"}),
    ("alias", {"city_name": "Oslo", "days": 5}),
    ("alias", {"days": 5}),
    ("loose", {"name": "ada"}),
    ("loose", {"name": "ada", "colour": "red", "hidden": "shown?", "tags": ["x"]}),
    ("loose", {"name": 7}),
]


@pytest.mark.parametrize(("tool_name", "arguments"), PARSE_CASES)
def test_arguments_are_parsed_as_langchain_parses_them(
    tool_name: str, arguments: dict[str, Any]
) -> None:
    langchain_tool = PARSED_TOOLS[tool_name]
    caller = ToolCaller(langchain_tool)
    assert caller.model is langchain_tool.args_schema  # the cheaper parse is the one tested
    try:
        expected: object = langchain_tool._to_args_and_kwargs(dict(arguments), None)
    except ValidationError as exc:
        expected = exc.errors(include_url=False)
    try:
        parsed: object = caller.parse(dict(arguments))
    except ValidationError as exc:
        parsed = exc.errors(include_url=False)
    assert parsed == expected


class CrossedAliases(BaseModel):
    """One field's alias is another field's name: the SDK maps the key to the later."""

    model_config = ConfigDict(populate_by_name=True)

    rows: list[int] = Field(alias="label")
    label: str = "none"
    extra: dict[str, int] | None = None
    counts: list[int] = Field(default_factory=list, alias="n")


JSON_TEXT_CASES = [
    {"name": "Ada"},
    {"name": "[1, 2]"},
    {"name": "Ada", "times": "3", "rows": "[1, 2]"},
    {"name": "Ada", "rows": "[1, 2", "separator": '"x"'},
    {"name": "Ada", "rows": '"[1]"', "times": "{}"},
    {"name": "Ada", "rows": [1, 2], "unknown": "[1]"},
    {"city": "[1]", "days": "[5]"},
    {"label": "[1, 2]", "rows": "[3]", "extra": '{"a": 1}'},
    {"label": "plain text", "extra": "1e999", "n": "[1, 2]"},
    {"counts": "[3]", "n": "[4]"},
    {},
]


@pytest.mark.parametrize("arguments", JSON_TEXT_CASES)
def test_json_text_in_arguments_is_decoded_as_the_sdk_decodes_it(arguments: dict[str, Any]) -> None:
    metadata = [tool.fn_metadata for tool in map(to_mcp_tool, PARSED_TOOLS.values())]
    metadata.append(func_metadata(CrossedAliases, {}))
    for tool_metadata_ in metadata:
        keys = json_text_keys(tool_metadata_.arg_model)
        decoded = pre_parse_json(tool_metadata_, dict(arguments), keys)
        assert decoded == tool_metadata_.pre_parse_json(dict(arguments))
    assert json_text_keys(CrossedAliases) == {
        "rows",
        "extra",
        "counts",
        "n",
    }  # "label" is the str field


def test_a_tool_with_its_own_run_machinery_is_parsed_by_langchain() -> None:
    traced = StructuredTool.from_function(plain, handle_tool_error=True)
    assert ToolCaller(traced).model is None


# --- one log line a call -------------------------------------------------------------


@tool
def count(times: int) -> ToolResult:
    """Count."""
    return ToolResult(message=str(times))


async def test_every_outcome_logs_exactly_one_line(caplog: pytest.LogCaptureFixture) -> None:
    server = server_of(raising(SystemExit(1), is_async=False), ping, count)
    with caplog.at_level(logging.INFO, logger="mcp_runtime.calls"):
        async with connect(server) as session:
            await session.call_tool("boom", {})
            await session.call_tool("ping", {})
            await session.call_tool("count", {"times": "many"})
    assert outcomes(caplog) == [
        ("boom", "exception"),
        ("ping", "ok"),
        ("count", "bad_arguments"),
    ]


@pytest.mark.parametrize(("per_tool", "share"), [(None, 3), (5, 5)])
def test_tool_threads_are_sized_by_the_settings(per_tool: int | None, share: int) -> None:
    threads = state_of(server_of(ping, tool_threads=7, tool_threads_per_tool=per_tool)).threads
    assert (threads.size, threads.share) == (7, share)


async def test_a_tool_declares_its_own_share_of_the_threads() -> None:
    release = threading.Event()

    @tool_metadata(max_threads=1)
    @tool
    def single(wait: bool) -> ToolResult:
        """Wait for the release when asked to."""
        if wait:
            release.wait(30)
        return ToolResult(message="done")

    converted = to_mcp_tool(single, policy=CallPolicy(timeout=0.2))
    try:
        hung = await converted.run({"wait": True})
        refused = await converted.run({"wait": False})
    finally:
        release.set()
    assert text_of(hung) == (
        "Tool 'single' did not finish within 0.2 seconds: try again later, or ask for less at once."
    )
    assert refused.is_error is True
    assert text_of(refused) == (
        "Tool 'single' is busy: the one thread it may use is held by an earlier call that "
        "has not returned. Try again later."
    )
