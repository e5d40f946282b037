"""Notices: a task's end, and the stop of a cancelled run, told to every process at once.

The store's scripts publish on the notices channel (:class:`~mcp_runtime.tasks.keys.TaskKeys`)
when a task ends (``ended <id>``) or is cancelled (``cancelled <id>``), and a run stopped
by its cancel says so (``stopped <id>``). Each process holds one subscription (one
connection) and wakes what waits on each notice: a ``tasks/result`` waiting for its task's
end answers at once, a cancelled run stops where it runs, and a ``tasks/cancel`` answers
once its run has stopped. A notice may be lost (pub/sub keeps nothing); so a waiter reads
the task again after :data:`CHECK_SECONDS` at most, every waiter is woken when the
subscription is made again, and while there is none, waiters read every poll interval.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from mcp_runtime.config.stores import STORE_ERRORS

if TYPE_CHECKING:
    from docket import Docket

__all__ = ["CHECK_SECONDS", "READ_SECONDS", "TaskNotices"]

logger = logging.getLogger(__name__)

CHECK_SECONDS = 10.0
"""The longest a waiter goes without reading its task, while notices are heard."""
READ_SECONDS = 1.0
"""How long the subscription waits for a message before it looks again."""


class TaskNotices:
    """This process's subscription to the notices on ``channel``; ``on_cancelled`` is told
    the id of each cancelled task (to stop its run, if it runs here)."""

    def __init__(self, channel: str, on_cancelled: Callable[[str], None]) -> None:
        self.channel = channel
        self.on_cancelled = on_cancelled
        self.listening = False
        self._stopped = False
        self._waiters: dict[tuple[str, str], set[asyncio.Event]] = {}

    @contextlib.contextmanager
    def watching(self, kind: str, task_id: str) -> Iterator[asyncio.Event]:
        """An event set when a notice of ``kind`` (``ended``, which a cancel also is, or
        ``stopped``) about task ``task_id`` arrives, or when notices may have been lost.
        Watch before reading the task: a notice is never missed between the two."""
        event = asyncio.Event()
        waiters = self._waiters.setdefault((kind, task_id), set())
        waiters.add(event)
        try:
            yield event
        finally:
            waiters.discard(event)
            if not waiters:
                self._waiters.pop((kind, task_id), None)

    async def heard(self, event: asyncio.Event, poll_interval: float) -> None:
        """Wait for ``event`` (then clear it), or until it is time to read again."""
        timeout = CHECK_SECONDS if self.listening else poll_interval
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)
        event.clear()

    def stop(self) -> None:
        """Hear no more notices: :meth:`listen` returns within a second."""
        self._stopped = True

    async def listen(self, docket: "Docket", retry_seconds: float) -> None:
        """Hear the notices until stopped (or cancelled), subscribing again
        ``retry_seconds`` after the store stops answering. (The store's client may turn a
        cancellation into a connection error: a stopped listener never tries again.)"""
        while not self._stopped:
            try:
                async with docket.redis() as redis:
                    subscription = redis.pubsub()
                    try:
                        await subscription.subscribe(self.channel)
                        for _ in range(10):  # until the store confirms it
                            if await subscription.get_message(timeout=READ_SECONDS):
                                break
                        self.listening = True
                        self._wake_all()  # what was told before is read again
                        while not self._stopped:
                            message = await subscription.get_message(
                                ignore_subscribe_messages=True, timeout=READ_SECONDS
                            )
                            if message is not None:
                                self._tell(message["data"])
                    finally:
                        self.listening = False
                        with contextlib.suppress(Exception):
                            await subscription.aclose()
            except STORE_ERRORS as exc:
                self._wake_all()
                if self._stopped:
                    return
                logger.debug("task notices are not heard (%s): reading instead", exc)
                await asyncio.sleep(retry_seconds)

    def _tell(self, data: bytes | str) -> None:
        text = data.decode() if isinstance(data, bytes) else data
        kind, _, task_id = text.partition(" ")
        if kind == "cancelled":
            self.on_cancelled(task_id)
            kind = "ended"
        for event in self._waiters.get((kind, task_id), ()):
            event.set()

    def _wake_all(self) -> None:
        for waiters in self._waiters.values():
            for event in waiters:
                event.set()
