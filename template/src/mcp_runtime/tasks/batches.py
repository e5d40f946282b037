"""Group commit: what callers hand in while a batch is on its way to the store goes in the
next batch, so that a burst of N costs a few round trips instead of N, and a lone call
costs what it did alone."""

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["GroupCommit"]

Send = Callable[[Sequence[Any]], Awaitable[Sequence[Any]]]
"""Sends a batch of items; for each, its answer, or the exception it met."""


class GroupCommit:
    """Sends items in batches of at most ``limit`` through ``send``, which answers each item
    with its result or the exception it raises: one sender at a time, started by the first
    item, taking whatever has arrived each time it sends."""

    def __init__(self, send: Send, limit: int = 256) -> None:
        self._send = send
        self._limit = limit
        self._waiting: list[tuple[Any, asyncio.Future[Any]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def submit(self, item: object) -> Any:
        """``item``'s result, once the batch it joined is stored; its exception, raised.
        A caller that leaves meanwhile leaves its item in the batch."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        future.add_done_callback(_retrieved)
        self._waiting.append((item, future))
        if self._sender is None:
            self._sender = loop.create_task(self._send_all(), name="mcp-group-commit")
        return await asyncio.shield(future)

    async def _send_all(self) -> None:
        batch: list[tuple[Any, asyncio.Future[Any]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[: self._limit], self._waiting[self._limit :]
                try:
                    answers = await self._send([item for item, _ in batch])
                except Exception as exc:  # the store did not answer: each item says so
                    answers = [exc] * len(batch)
                for (_, future), answer in zip(batch, answers, strict=True):
                    if isinstance(answer, BaseException):
                        future.set_exception(answer)
                    else:
                        future.set_result(answer)
        finally:
            self._sender = None
            for _, future in [*batch, *self._waiting]:  # left unanswered when cancelled
                if not future.done():
                    future.cancel()
            self._waiting = []


def _retrieved(future: "asyncio.Future[Any]") -> None:
    """Mark an item's exception as seen, so that a caller that left logs no warning."""
    if not future.cancelled():
        future.exception()
