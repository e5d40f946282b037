"""The tool calls this process is serving: counted, and cut short when shutdown's grace ends.

Each call runs inside :meth:`InFlight.call`. On SIGTERM the server drains
(``draining``): it takes no new calls and waits for :attr:`InFlight.count` to reach
zero; when the grace period ends first, :meth:`InFlight.cut_short` stops the calls
still running, and each answers ``isError`` with the outcome ``shutdown``.
"""

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

__all__ = ["IN_FLIGHT", "InFlight"]


class InFlight:
    """The calls in flight in this process, and where shutdown stands."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self.draining = False
        self.stopping = False

    @property
    def count(self) -> int:
        """How many tool calls are running now."""
        return len(self._scopes)

    @contextmanager
    def call(self) -> Iterator[anyio.CancelScope]:
        """Run one call; the scope's ``cancelled_caught`` tells that shutdown cut it short."""
        scope = anyio.CancelScope()
        if self.stopping:
            scope.cancel()
        self._scopes.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._scopes.discard(scope)

    def begin_draining(self) -> None:
        """Take no new calls (readiness answers 503); the calls in flight go on."""
        self.draining = True

    def cut_short(self) -> None:
        """Stop every call still running; call from the event loop's thread."""
        self.stopping = True
        for scope in list(self._scopes):
            scope.cancel()


IN_FLIGHT = InFlight()
