"""What a task keeps in its store, sealed with the service's key.

A task keeps what a later run of it needs (its caller, the request headers its tool
declares, its arguments, its last checkpoint) and, once it has ended, its result: each
sealed with Fernet (AES-128-CBC with an HMAC-SHA256, from ``cryptography``), so the
store holds none of it in clear. ``MCP_TASK_KEYS`` holds the service's keys,
comma-separated: the first seals, any of them opens, so that a key is replaced by
putting the new one first and dropping the old one once the tasks it sealed have
expired. ``<service> task-key`` prints a new key. The data tools keep for their callers
(``keep_data``) is sealed with the same keys (:mod:`mcp_runtime.data.sealing`).
"""

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

__all__ = ["Seal", "SealError", "new_key"]


IN_THREAD_BYTES = 64 * 1024
"""Sealed values larger than this are unsealed in a thread (:meth:`Seal.unseal_in_thread`)."""


class SealError(Exception):
    """A sealed value that none of the service's keys opens (its key was dropped)."""


def new_key() -> str:
    """A new key for ``MCP_TASK_KEYS``: 32 random bytes, URL-safe base64."""
    return Fernet.generate_key().decode()


class Seal:
    """Seals JSON values with the first of ``keys`` and unseals them with any of them
    (each key as ``MCP_TASK_KEYS`` holds it, checked by the settings)."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = tuple(keys)
        self._fernet = MultiFernet([Fernet(key) for key in keys])

    @classmethod
    def for_this_process(cls) -> "Seal":
        """A seal with a key of this process's own, for tasks kept in its memory."""
        return cls([new_key()])

    def seal(self, value: Any) -> str:
        """``value`` (JSON) sealed."""
        data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        return self._fernet.encrypt(data).decode("ascii")

    async def seal_in_thread(self, value: Any) -> str:
        """:meth:`seal`, in a thread (for a value that may be large, a task's result): the
        event loop goes on serving meanwhile, between the steps that hold the GIL."""
        return await asyncio.to_thread(self.seal, value)

    async def unseal_in_thread(self, sealed: str | bytes) -> Any:
        """:meth:`unseal`, in a thread of its own when ``sealed`` is large (over
        :data:`IN_THREAD_BYTES`)."""
        if len(sealed) <= IN_THREAD_BYTES:
            return self.unseal(sealed)
        return await asyncio.to_thread(self.unseal, sealed)

    def unseal(self, sealed: str | bytes) -> Any:
        """The JSON value ``sealed`` holds; raises :class:`SealError` when no key opens it."""
        try:
            return json.loads(self._fernet.decrypt(sealed))
        except InvalidToken:
            raise SealError(
                "a task's sealed record opens with none of MCP_TASK_KEYS: the key that "
                "sealed it was dropped before the task expired"
            ) from None
