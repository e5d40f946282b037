"""What a run of a task needs of the request that created it, kept sealed."""

from dataclasses import dataclass
from typing import Any

from mcp_runtime.auth.oauth import Caller
from mcp_runtime.tasks.sealing import Seal

__all__ = ["TaskRequest"]


@dataclass(frozen=True)
class TaskRequest:
    """What a run of a task needs of the request that created it: the caller the service
    verified (None without one), the headers its tool declares, its arguments and its
    protocol revision. Kept sealed, never a token."""

    caller: Caller | None
    headers: dict[str, str]
    arguments: dict[str, Any]
    version: str

    def sealed_by(self, seal: Seal) -> str:
        """This request, sealed."""
        caller = self.caller
        return seal.seal(
            {
                "caller": None
                if caller is None
                else {
                    "subject": caller.subject,
                    "client": caller.client_id,
                    "scopes": sorted(caller.scopes),
                    "claims": dict(caller.claims),
                },
                "headers": self.headers,
                "arguments": self.arguments,
                "version": self.version,
            }
        )

    @classmethod
    def unsealed_by(cls, seal: Seal, sealed: str) -> "TaskRequest":
        """The request ``sealed`` holds."""
        kept = seal.unseal(sealed)
        caller = kept["caller"]
        return cls(
            caller=None
            if caller is None
            else Caller(
                subject=caller["subject"],
                scopes=frozenset(caller["scopes"]),
                client_id=caller["client"],
                claims=caller["claims"],
            ),
            headers=kept["headers"],
            arguments=kept["arguments"],
            version=kept["version"],
        )
