"""Kept data sealed chunk by chunk, and where each chunk lies in its stored object.

A datum is stored as one object: its content cut in chunks of :data:`CHUNK_BYTES` (the
last may be shorter, and a datum of no bytes is one empty chunk), each sealed with
AES-256-GCM under a key derived from the service's first key (``MCP_TASK_KEYS``) and
laid end to end. A sealed chunk is :data:`OVERHEAD` bytes longer than its content, so
chunk ``n`` starts at ``n * SEALED_BYTES`` and a range of the content is read from the
chunks that hold it alone. Each chunk is bound to its label: the datum, the write that
stored it (its ``version``) and its place, the last one marked last, so that no chunk
opens in another's place and a cut object never reads as a whole shorter one. The name
and media type are sealed the same way, under the label ``meta``.
"""

import base64
import hashlib
import math
import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = [
    "CHUNK_BYTES",
    "OVERHEAD",
    "SEALED_BYTES",
    "ChunkSealer",
    "DataSeal",
    "SealError",
    "chunk_count",
    "chunk_label",
    "meta_label",
    "sealed_size",
]

CHUNK_BYTES = 1024 * 1024
"""The content of one sealed chunk (the last one may be shorter)."""
OVERHEAD = 1 + 4 + 12 + 16
"""What sealing adds to a chunk: a version byte, the key's id, the nonce and the tag."""
SEALED_BYTES = CHUNK_BYTES + OVERHEAD
"""The bytes of one whole sealed chunk in a stored object."""


class SealError(Exception):
    """Sealed data that none of the service's keys opens (its key was dropped, or it was
    sealed for another place)."""


def chunk_count(size: int) -> int:
    """The chunks of a datum of ``size`` bytes (one, empty, for no bytes)."""
    return max(1, math.ceil(size / CHUNK_BYTES))


def sealed_size(size: int) -> int:
    """The bytes of the stored object of a datum of ``size`` bytes."""
    return size + chunk_count(size) * OVERHEAD


def chunk_label(data_id: str, version: str, number: int, last: bool) -> bytes:
    """The label chunk ``number`` of a datum's write ``version`` is sealed under."""
    return f"{data_id}:{version}:{number}{':last' if last else ''}".encode()


def meta_label(data_id: str, version: str) -> bytes:
    """The label a datum's name and media type are sealed under."""
    return f"{data_id}:{version}:meta".encode()


class DataSeal:
    """Seals kept data with AES-256-GCM under a key derived from each of the service's
    keys (HKDF-SHA256): the first seals, any opens (``keys`` as ``MCP_TASK_KEYS`` holds
    them, checked by the settings)."""

    VERSION = b"\x01"

    def __init__(self, keys: Sequence[str]) -> None:
        self._keys: list[tuple[bytes, AESGCM]] = []
        for key in keys:
            derived = HKDF(
                algorithm=hashes.SHA256(), length=32, salt=None, info=b"mcp-runtime kept data"
            ).derive(base64.urlsafe_b64decode(key))
            self._keys.append((hashlib.sha256(derived).digest()[:4], AESGCM(derived)))

    def seal(self, data: bytes | bytearray | memoryview, label: bytes) -> bytes:
        """``data`` sealed, bound to ``label``."""
        key_id, aead = self._keys[0]
        nonce = os.urandom(12)
        return self.VERSION + key_id + nonce + aead.encrypt(nonce, data, label)

    def unseal(self, sealed: bytes | memoryview, label: bytes) -> bytes:
        """The data ``sealed`` holds; raises :class:`SealError` when no key opens it (or
        it was sealed for another ``label``)."""
        view = memoryview(sealed)
        key_id, nonce, body = bytes(view[1:5]), bytes(view[5:17]), view[17:]
        for known, aead in self._keys:
            if known == key_id and view[:1] == self.VERSION:
                try:
                    return aead.decrypt(nonce, body, label)
                except InvalidTag:
                    break
        raise SealError(
            "kept data opens with none of MCP_TASK_KEYS: the key that sealed it was "
            "dropped before the data expired"
        )


class ChunkSealer:
    """Cuts the content of one datum's write into sealed chunks as it comes: :meth:`feed`
    answers the sealed chunks each piece completes, :meth:`end` the last one. ``seal``
    None stores the content as it is (signed downloads: the store's own encryption)."""

    def __init__(self, seal: DataSeal | None, data_id: str, version: str) -> None:
        self.seal = seal
        self.data_id = data_id
        self.version = version
        self.size = 0  # the content's bytes so far
        self.chunks = 0  # the chunks sealed so far
        self._pending = bytearray()

    def feed(self, piece: bytes | bytearray | memoryview) -> list[bytes]:
        """The sealed chunks ``piece`` completes (none while a chunk is not full). A large
        piece is sealed from where it lies, a chunk at a time, never copied whole."""
        view = memoryview(piece).cast("B")
        length, offset = len(view), 0
        self.size += length
        sealed = []
        # A full chunk is sealed only once more content follows it: the last one is
        # sealed as the last, at :meth:`end`.
        if self._pending:
            offset = min(CHUNK_BYTES - len(self._pending), length)
            self._pending += view[:offset]
            if len(self._pending) == CHUNK_BYTES and offset < length:
                sealed.append(self._sealed(self._pending, last=False))
                self._pending = bytearray()
        while length - offset > CHUNK_BYTES:
            sealed.append(self._sealed(view[offset : offset + CHUNK_BYTES], last=False))
            offset += CHUNK_BYTES
        if offset < length:
            self._pending += view[offset:]
        return sealed

    def end(self) -> bytes:
        """The last chunk, sealed as the last (empty for a datum of no bytes)."""
        last = self._sealed(self._pending, last=True)
        self._pending = bytearray()
        return last

    def _sealed(self, chunk: bytes | bytearray | memoryview, *, last: bool) -> bytes:
        number = self.chunks
        self.chunks += 1
        if self.seal is None:
            return bytes(chunk)
        return self.seal.seal(chunk, chunk_label(self.data_id, self.version, number, last))
