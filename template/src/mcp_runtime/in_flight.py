"""The tool calls this process is serving: counted, cut short at shutdown, cancelled by clients.

Each call runs inside :meth:`InFlight.call`. On SIGTERM the server drains
(``draining``): it takes no new calls and waits for :attr:`InFlight.count` to reach
zero; when the grace period ends first, :meth:`InFlight.cut_short` stops the calls
still running, and each answers ``isError`` with the outcome ``shutdown``.

A client's ``notifications/cancelled`` that the MCP session cannot deliver (stateless
streamable HTTP: each POST has a session of its own) reaches the call through
:meth:`InFlight.cancel`, by the caller and the JSON-RPC id of the call's request; the
call answers ``isError`` with the outcome ``cancelled``.
"""

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import anyio
from mcp.types import RequestId

from mcp_runtime.sdk import AccessToken

__all__ = ["IN_FLIGHT", "InFlight", "Owner", "RunningCall", "owner_of"]

logger = logging.getLogger(__name__)

Owner = tuple[str, str | None] | None
"""Who made a call: the verified caller's subject and client id, or None without one."""


def owner_of(token: AccessToken | None) -> Owner:
    """The owner of the calls of a request whose verified token is ``token``."""
    return None if token is None else (token.subject or "", token.client_id or None)


class RunningCall:
    """One call in flight: its cancel scope, with the call's deadline, and who stopped it
    (``shutdown``, ``client``)."""

    __slots__ = ("owner", "request_id", "scope", "stopped_by", "tool")

    def __init__(
        self, tool: str, owner: Owner, request_id: RequestId | None, timeout: float | None = None
    ) -> None:
        self.tool = tool
        self.owner = owner
        self.request_id = request_id
        deadline = math.inf if timeout is None else anyio.current_time() + timeout
        self.scope = anyio.CancelScope(deadline=deadline)
        self.stopped_by: Literal["shutdown", "client"] | None = None

    def stop(self, by: Literal["shutdown", "client"]) -> None:
        """Cancel the call; the first to stop it is the one its answer names."""
        if self.stopped_by is None:
            self.stopped_by = by
        self.scope.cancel()

    def stopped(self, by: Literal["shutdown", "client"]) -> bool:
        """Whether ``by`` stopped the call before it had its value."""
        return self.scope.cancelled_caught and self.stopped_by == by

    def timed_out(self) -> bool:
        """Whether the call's deadline passed before it had its value (and nothing else
        stopped it first)."""
        return self.scope.cancelled_caught and self.stopped_by is None


class InFlight:
    """The calls in flight in this process, and where shutdown stands."""

    def __init__(self) -> None:
        self._calls: set[RunningCall] = set()
        self.draining = False
        self.stopping = False

    @property
    def count(self) -> int:
        """How many tool calls are running now."""
        return len(self._calls)

    @contextmanager
    def call(
        self,
        tool: str = "",
        owner: Owner = None,
        request_id: RequestId | None = None,
        timeout: float | None = None,
    ) -> Iterator[RunningCall]:
        """Run one call of ``tool``, made by ``owner`` in the request ``request_id``, cut
        short after ``timeout`` seconds (None: never)."""
        call = RunningCall(tool, owner, request_id, timeout)
        if self.stopping:
            call.stop("shutdown")
        self._calls.add(call)
        try:
            with call.scope:
                yield call
        finally:
            self._calls.discard(call)

    def begin_draining(self) -> None:
        """Take no new calls (readiness answers 503); the calls in flight go on."""
        self.draining = True

    def cut_short(self) -> None:
        """Stop every call still running; call from the event loop's thread."""
        self.stopping = True
        for call in list(self._calls):
            call.stop("shutdown")

    def cancel(self, owner: Owner, request_id: RequestId) -> bool:
        """Cancel the call ``owner`` made in the request ``request_id``; whether one was.

        Only a call that nothing else matches is cancelled: without a verified caller,
        two clients may both have a call with the same id, and then neither is.
        Call from the event loop's thread.
        """
        matching = [
            call
            for call in self._calls
            if call.request_id == request_id
            and call.owner == owner
            and type(call.request_id) is type(request_id)
        ]
        if len(matching) > 1:
            logger.info(
                "a client's cancel matches %d calls in flight (the same request id, and no "
                "verified caller to tell them apart): none of them is cancelled",
                len(matching),
            )
            return False
        if not matching:
            logger.debug("a client cancelled a request that no call in flight here serves")
            return False
        [call] = matching
        call.stop("client")
        return True


IN_FLIGHT = InFlight()
