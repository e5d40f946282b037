"""Group commit (``mcp_runtime.tasks.batches``): what arrives while a batch is on its way
goes in the next, each item gets its own answer, and a caller that leaves changes nothing
for the others."""

from collections.abc import Sequence

import anyio
import pytest

from mcp_runtime.tasks.batches import GroupCommit

pytestmark = pytest.mark.anyio


class Store:
    """Answers each item with its double, or refuses odd ones; records each batch."""

    def __init__(self, *, down: bool = False) -> None:
        self.batches: list[list[int]] = []
        self.down = down
        self.release = anyio.Event()

    async def send(self, items: Sequence[int]) -> list[int | BaseException]:
        self.batches.append(list(items))
        await self.release.wait()
        if self.down:
            raise ConnectionError("the store did not answer")
        return [ValueError(f"odd {item}") if item % 2 else item * 2 for item in items]


async def test_a_lone_item_goes_at_once_and_a_burst_waits_for_the_next_batch() -> None:
    store = Store()
    commit = GroupCommit(store.send, limit=3)
    answers: dict[int, int | str] = {}

    async def submit(item: int) -> None:
        try:
            answers[item] = await commit.submit(item)
        except ValueError as exc:
            answers[item] = str(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(submit, 0)
        await anyio.sleep(0.01)  # the first batch is on its way, with only the first item
        for item in range(1, 6):
            group.start_soon(submit, item)
        await anyio.sleep(0.01)
        store.release.set()
    assert store.batches == [[0], [1, 2, 3], [4, 5]]
    assert answers == {0: 0, 1: "odd 1", 2: 4, 3: "odd 3", 4: 8, 5: "odd 5"}


async def test_a_store_that_does_not_answer_fails_each_item_of_the_batch() -> None:
    store = Store(down=True)
    store.release.set()
    commit = GroupCommit(store.send)
    failures: list[str] = []

    async def submit(item: int) -> None:
        with pytest.raises(ConnectionError) as raised:
            await commit.submit(item)
        failures.append(str(raised.value))

    async with anyio.create_task_group() as group:
        for item in range(4):
            group.start_soon(submit, item)
    assert failures == ["the store did not answer"] * 4
    assert store.batches == [[0, 1, 2, 3]]


async def test_a_caller_that_leaves_leaves_its_item_and_the_others_their_answers() -> None:
    store = Store()
    commit = GroupCommit(store.send)
    answers: list[int] = []

    async def submit(item: int) -> None:
        answers.append(await commit.submit(item))

    async with anyio.create_task_group() as group:
        with anyio.move_on_after(0.01):
            await commit.submit(8)  # leaves before the store answers
        group.start_soon(submit, 10)
        await anyio.sleep(0.01)
        store.release.set()
    assert store.batches == [[8], [10]]
    assert answers == [20]
