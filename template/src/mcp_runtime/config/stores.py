"""The stores a service keeps state on (its tasks, the ledger of its kept data): how a
Redis URL is opened, and what says a store did not answer."""

from urllib.parse import parse_qsl, urlsplit

from redis.exceptions import RedisError

__all__ = ["POOL_SIZE", "STORE_ERRORS", "pooled"]

STORE_ERRORS = (RedisError, OSError)
"""What the store's client raises when the store does not answer (or, redis-py's
``MaxConnectionsError``, when its pool has no free connection)."""
POOL_SIZE = 512
"""The store client's connections (the URL's ``max_connections`` when it names none)."""


def pooled(url: str) -> str:
    """``url`` with a pool of :data:`POOL_SIZE` connections, unless it names its own."""
    if url == "memory://" or urlsplit(url).scheme == "redis+sentinel":
        return url
    if any(name == "max_connections" for name, _ in parse_qsl(urlsplit(url).query)):
        return url
    return f"{url}{'&' if urlsplit(url).query else '?'}max_connections={POOL_SIZE}"
