"""One task as the service keeps it, in the words of both protocol revisions.

A task is a call of a task tool that outlives its request: it is ``working`` until it
ends ``completed`` (its tool answered, ``isError`` or not), ``failed`` (the call could not
be answered: a JSON-RPC error stands in for its result) or ``cancelled``.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from mcp.types import INTERNAL_ERROR

__all__ = ["TERMINAL", "Status", "TaskRecord", "wire_time"]

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


def _moment(stored: str) -> datetime:
    """A time the store keeps (seconds since the epoch)."""
    return datetime.fromtimestamp(float(stored), UTC)


def wire_time(moment: datetime) -> str:
    """``moment`` as the protocol writes a time: ISO 8601 in UTC, to the millisecond."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class TaskRecord:
    """A task's state: its id, tool, status and times; once ended, its result (the
    ``CallToolResult`` as JSON) or its error (a JSON-RPC error object)."""

    task_id: str
    tool: str
    status: Status
    created_at: datetime
    updated_at: datetime
    ttl_ms: int
    poll_interval_ms: int
    status_message: str | None = None
    result: dict[str, Any] | None = field(default=None, repr=False)
    error: dict[str, Any] | None = None

    @classmethod
    def from_store(
        cls,
        fields: dict[str, str],
        task_id: str,
        poll_interval_ms: int,
        *,
        result: dict[str, Any] | None = None,
        failure: str = "",
    ) -> "TaskRecord":
        """The task that ``fields``, its record in the store (:mod:`.store`), holds.
        Working (no ``status``): updated at its last run's start or status message, saying
        that message. Ended: ``result`` once completed; failed, a JSON-RPC error saying
        its message, or ``failure``."""
        created = _moment(fields["created"])
        status: Status = fields.get("status", "working")  # type: ignore[assignment]
        error = None
        if status == "working":
            moments = [
                _moment(fields[name]) for name in ("started", "progressed") if name in fields
            ]
            message = fields.get("progress")
        else:
            moments = [_moment(fields["ended"])]
            message = None if status == "completed" else fields.get("message") or None
            if status == "failed":
                error = {"code": INTERNAL_ERROR, "message": message or failure}
        return cls(
            task_id=task_id,
            tool=fields.get("tool", ""),
            status=status,
            created_at=created,
            updated_at=max([created, *moments]),
            ttl_ms=int(fields.get("ttl_ms", "0")),
            poll_interval_ms=poll_interval_ms,
            status_message=message,
            result=result,
            error=error,
        )

    @property
    def terminal(self) -> bool:
        """Whether the task has ended."""
        return self.status in TERMINAL

    def fields_2025(self) -> dict[str, Any]:
        """The ``Task`` of 2025-11-25 (its ``tasks/get`` and ``tasks/cancel`` answers)."""
        return self._fields(ttl="ttl", poll_interval="pollInterval")

    def fields_2026(self) -> dict[str, Any]:
        """The task's fields in the ``io.modelcontextprotocol/tasks`` extension (2026-07-28)."""
        return self._fields(ttl="ttlMs", poll_interval="pollIntervalMs")

    def _fields(self, *, ttl: str, poll_interval: str) -> dict[str, Any]:
        """The task's fields, its TTL and poll interval under the revision's names."""
        fields: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        if self.status_message is not None:
            fields["statusMessage"] = self.status_message
        fields |= {
            "createdAt": wire_time(self.created_at),
            "lastUpdatedAt": wire_time(self.updated_at),
            ttl: self.ttl_ms,
            poll_interval: self.poll_interval_ms,
        }
        return fields
