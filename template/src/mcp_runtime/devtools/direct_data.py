"""The data tools keep (``keep_data``) when a test calls them directly, to read back."""

from collections.abc import Iterator
from contextlib import contextmanager

from mcp_runtime.data.keeping import CallData, DataLink, DirectCallDataScope

__all__ = ["KeptData", "kept_data"]


class KeptData:
    """The data the tools called in a :func:`kept_data` block kept, by the link each got."""

    def __init__(self, data: CallData) -> None:
        self._data = data

    @property
    def links(self) -> list[DataLink]:
        """The link of each datum kept, in the order kept."""
        return [datum.link for datum in self._data.kept]

    def content(self, link: DataLink) -> bytes:
        """The bytes kept under ``link``; ``KeyError`` when no tool in the block kept it."""
        for datum in self._data.kept:
            if datum.link["uri"] == link["uri"] and datum.content is not None:
                return datum.content
        raise KeyError(f"no tool called in the block kept {link['uri']}")

    def text(self, link: DataLink) -> str:
        """The text kept under ``link`` (UTF-8)."""
        return self.content(link).decode("utf-8")


@contextmanager
def kept_data() -> Iterator[KeptData]:
    """Call tools inside the block directly (``tool.ainvoke``), as a test does: the data
    they keep (of any source: bytes, a file, an iterator) stays in memory, for the test to
    read back by its link."""
    with DirectCallDataScope() as data:
        yield KeptData(data)
