"""Where a service's tasks are kept: every key and channel of the task store, in one place.

Everything lives under the docket's name, ``mcp-tasks:<service>``:

- ``<name>:record:<task id>``: the task's record, a hash (:mod:`.store` lists its
  fields), kept while the task may run, then for its ttl once it has ended;
- ``<name>:owner:<owner>``: the owner's tasks still kept, a sorted set by creation time
  (``tasks/list``);
- ``<name>:open:<owner>``: the owner's tasks that have not ended, a set (the per-caller
  cap);
- ``<name>:notices``: the channel on which a task's end, and the stop of a cancelled
  run, are told to every process (:mod:`.notices`);
- ``<name>:...`` otherwise: Docket's own keys (its stream, queue, workers and the state
  of each execution), keyed by the task's id.

An owner is the digest of a verified caller (:func:`mcp_runtime.auth.oauth.owner_digest`),
never the caller itself.
"""

import secrets
from dataclasses import dataclass

__all__ = ["TaskKeys"]


@dataclass(frozen=True)
class TaskKeys:
    """The keys of the tasks of ``service`` (see the module's docstring)."""

    service: str

    @property
    def docket(self) -> str:
        """The docket's name, which prefixes every key."""
        return f"mcp-tasks:{self.service}"

    @property
    def notices(self) -> str:
        return f"{self.docket}:notices"

    def record(self, task_id: str) -> str:
        return f"{self.docket}:record:{task_id}"

    def owner(self, owner: str) -> str:
        return f"{self.docket}:owner:{owner}"

    def open(self, owner: str) -> str:
        return f"{self.docket}:open:{owner}"

    def new_worker(self) -> str:
        """A name for this process's workers, unique among the service's processes."""
        return f"{self.docket}:{secrets.token_hex(4)}"
