"""The task engine's share of the service's settings."""

from dataclasses import dataclass

__all__ = ["EngineSettings"]


@dataclass(frozen=True)
class EngineSettings:
    """Where tasks are kept and for how long (``docs/settings.md`` has each setting)."""

    url: str = "memory://"
    service: str = "service"
    ttl: float = 3600.0
    max_ttl: float = 86400.0
    timeout: float | None = 86400.0
    max_per_caller: int = 100
    poll_interval: float = 1.0
    lease: float = 30.0
    max_resumes: int = 5
    concurrency: int = 100

    @property
    def shared(self) -> bool:
        """Whether tasks are kept where other processes take them over (not ``memory://``)."""
        return self.url != "memory://"
