"""Alarms: each rings once, at or after its time and in the order of their times; a
cleared one never rings; the loop holds one timer for the earliest; ``TimeLimit`` acts as
``asyncio.timeout`` does."""

import asyncio
import contextvars
import functools
import gc
import weakref
from typing import Any

import pytest

from mcp_runtime.execution import alarms as alarms_module
from mcp_runtime.execution.alarms import COMPACT_AT, TimeLimit, alarm_after

pytestmark = pytest.mark.anyio


async def test_alarms_ring_once_in_the_order_of_their_times_and_not_before() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    rang: list[tuple[str, float]] = []

    def ring(name: str) -> None:
        rang.append((name, loop.time() - started))

    alarm_after(0.06, lambda: ring("late"))
    alarm_after(0.02, lambda: ring("early"))  # set after a later one: rings first
    alarm_after(0.04, lambda: ring("middle"))
    cleared = alarm_after(0.03, lambda: ring("cleared"))
    cleared.clear()
    cleared.clear()  # a second clear does nothing
    await asyncio.sleep(0.15)
    assert [name for name, _ in rang] == ["early", "middle", "late"]
    for (_, at), due in zip(rang, (0.02, 0.04, 0.06), strict=True):
        assert at >= due - 0.001  # the loop's clock resolution


async def test_alarms_of_equal_times_ring_in_the_order_they_were_set() -> None:
    rang: list[int] = []
    for number in range(5):
        alarm_after(0.01, functools.partial(rang.append, number))
    await asyncio.sleep(0.05)
    assert rang == [0, 1, 2, 3, 4]


async def test_an_alarm_set_after_the_earliest_one_rang_rings_too() -> None:
    rang: list[str] = []
    alarm_after(0.01, lambda: rang.append("first"))
    await asyncio.sleep(0.03)
    alarm_after(0.01, lambda: rang.append("second"))
    await asyncio.sleep(0.03)
    assert rang == ["first", "second"]


REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


async def test_an_alarm_rings_in_the_context_it_was_set_in() -> None:
    """As a loop timer's callback runs in the context of its ``call_at``."""
    seen: list[str] = []

    def set_for(name: str, delay: float) -> None:
        REQUEST.set(name)
        alarm_after(delay, lambda: seen.append(REQUEST.get()))

    contextvars.copy_context().run(set_for, "first", 0.01)
    contextvars.copy_context().run(set_for, "second", 0.02)  # rings from the first's timer
    await asyncio.sleep(0.05)
    assert seen == ["first", "second"]


async def test_a_timer_an_earlier_alarm_replaced_sets_no_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each alarm earlier than the timer set replaces it: once they have rung, one timer
    is set for the alarm left, however many were replaced."""
    loop = asyncio.get_running_loop()
    timers: list[float] = []
    setting = loop.call_at

    def counted(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        if getattr(callback, "__name__", None) == "ring":  # the alarms' own
            timers.append(when)
        return setting(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counted)
    left = alarm_after(0.5, lambda: None)
    for delay in (0.08, 0.06, 0.04, 0.02):
        alarm_after(delay, lambda: None)
    await asyncio.sleep(0.15)
    late = [when for when in timers if when > loop.time()]
    assert len(late) == 2  # the first, replaced, and the one set once the others rang
    left.clear()


async def test_a_callback_that_raises_is_reported_and_the_others_still_ring() -> None:
    loop = asyncio.get_running_loop()
    reported: list[BaseException | None] = []
    loop.set_exception_handler(lambda _, context: reported.append(context.get("exception")))
    rang: list[str] = []

    def broken() -> None:
        raise ValueError("broken")

    try:
        alarm_after(0.01, broken)
        alarm_after(0.01, lambda: rang.append("after"))
        await asyncio.sleep(0.04)
    finally:
        loop.set_exception_handler(None)
    assert [type(error) for error in reported] == [ValueError]
    assert rang == ["after"]


async def test_cleared_alarms_do_not_pile_up() -> None:
    """Calls that clear their alarms long before they are due leave a heap of at most
    about twice the alarms still set."""
    kept = [alarm_after(60, lambda: None) for _ in range(10)]
    for _ in range(10 * COMPACT_AT):
        alarm_after(60, lambda: None).clear()
    heap = alarms_module._of_loop[asyncio.get_running_loop()].heap
    assert len(heap) <= 2 * (COMPACT_AT + 1) + len(kept)
    for alarm in kept:
        alarm.clear()


def test_a_loop_that_is_gone_takes_its_alarms_with_it() -> None:
    loop = asyncio.new_event_loop()

    async def some() -> None:
        alarm_after(60, lambda: None).clear()
        alarm_after(0, lambda: None)
        await asyncio.sleep(0.01)

    loop.run_until_complete(some())
    loop.close()
    gone = weakref.ref(loop)
    del loop
    gc.collect()
    assert gone() is None


async def test_a_time_limit_raises_timeout_error_when_it_passes() -> None:
    with pytest.raises(TimeoutError), TimeLimit(0.01):
        await asyncio.sleep(1)
    await asyncio.sleep(0)  # the task is no longer cancelled
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0


async def test_a_time_limit_that_does_not_pass_changes_nothing() -> None:
    with TimeLimit(1):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.02)
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0


async def test_a_cancellation_from_elsewhere_goes_through_a_time_limit_as_it_came() -> None:
    async def limited() -> None:
        with TimeLimit(1):
            await asyncio.sleep(1)

    task = asyncio.get_running_loop().create_task(limited())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
