"""The stores a service keeps state on (its tasks, the ledger of its kept data): how a
Redis URL is opened, and what says a store did not answer."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlsplit

from redis.exceptions import MaxConnectionsError, RedisError

__all__ = ["POOL_SIZE", "STORE_ERRORS", "StoreError", "pooled", "reaching"]

STORE_ERRORS = (RedisError, OSError)
"""What the store's client raises when the store does not answer (or, redis-py's
``MaxConnectionsError``, when its pool has no free connection)."""
POOL_SIZE = 512
"""The store client's connections (the URL's ``max_connections`` when it names none). A
process holds two of them for as long as it serves tasks: its worker's read of the
docket's stream, and its subscription to the tasks' notices."""


def pooled(url: str) -> str:
    """``url`` with a pool of :data:`POOL_SIZE` connections, unless it names its own."""
    if url == "memory://" or urlsplit(url).scheme == "redis+sentinel":
        return url
    if any(name == "max_connections" for name, _ in parse_qsl(urlsplit(url).query)):
        return url
    return f"{url}{'&' if urlsplit(url).query else '?'}max_connections={POOL_SIZE}"


class StoreError(Exception):
    """A store the service keeps state on did not answer, or, ``busy``, its client's
    connections were all in use. The log has a line saying why, under the error id this
    exception holds (:func:`mcp_runtime.observability.errors.logged_error`)."""

    def __init__(self, error_id: str, *, busy: bool = False) -> None:
        super().__init__(error_id)
        self.error_id = error_id
        self.busy = busy


@contextmanager
def reaching(
    failed: Callable[[BaseException, bool], Exception],
    errors: tuple[type[BaseException], ...] = STORE_ERRORS,
) -> Iterator[None]:
    """Within it, one of ``errors`` (a store that did not answer) raises what ``failed``
    makes of it, told whether the store was only busy (its pool had no free connection):
    each store says in its own words where it is and what to check."""
    try:
        yield
    except errors as exc:
        raise failed(exc, isinstance(exc, MaxConnectionsError)) from None
