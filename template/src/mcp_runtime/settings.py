"""The service's settings: environment variables (``MCP_`` prefix) and an optional ``.env``.

Every setting has a default that is safe on a developer's machine. A bad value
stops startup with a message that names the variable (:class:`SettingsError`).
Command-line options of ``serve`` override the matching settings.
"""

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["LOOPBACK_HOSTS", "ServiceSettings", "SettingsError", "load_settings"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

CommaList = Annotated[tuple[str, ...], NoDecode]


class SettingsError(Exception):
    """A setting has a bad value; the message names it and says what it accepts."""


class ServiceSettings(BaseSettings):
    """How the service runs. Each field is read from ``MCP_<NAME>`` (or ``.env``)."""

    model_config = SettingsConfigDict(
        env_prefix="MCP_", env_file=".env", extra="ignore", frozen=True
    )

    host: str = Field("127.0.0.1", description="address to bind")
    port: int = Field(8000, ge=0, le=65535, description="port to bind")
    workers: int = Field(1, ge=1, le=64, description="worker processes for streamable HTTP")
    toolsets: CommaList = Field(
        (), description="toolsets to serve, comma-separated (empty: all of them)"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="level of the service's own log lines (libraries log warnings)"
    )
    log_format: Literal["text", "json"] = Field(
        "text", description="text, or one JSON object a line"
    )
    allowed_hosts: CommaList = Field(
        (),
        description="Host headers accepted, comma-separated (host:port, or host:* for any port); "
        "required when binding to anything but localhost",
    )
    allowed_origins: CommaList = Field(
        (), description="Origin headers accepted, comma-separated (http://host:port, or :*)"
    )
    call_timeout: float = Field(
        60.0, gt=0, description="seconds a tool call may run before it answers isError"
    )
    max_request_bytes: int = Field(
        4 * 1024 * 1024, gt=0, description="largest request body accepted, in bytes"
    )
    mask_errors: bool = Field(
        True,
        description="answer an unexpected exception with a generic message and an error id "
        "(its text and traceback go to the log only); false sends the exception's text, for "
        "development",
    )
    tool_threads: int = Field(
        40, ge=1, le=1024, description="worker threads for sync tools (a hung tool keeps one)"
    )
    shutdown_grace: float = Field(
        30.0,
        ge=0,
        description="seconds the calls in flight may take to finish after SIGTERM; those "
        "still running then answer isError",
    )
    max_json_depth: int = Field(
        64, ge=2, le=512, description="deepest nesting of arrays and objects a request may have"
    )
    max_connections: int = Field(
        1000, ge=1, description="open connections served at once; more are answered 503"
    )
    idle_timeout: float = Field(
        65.0, gt=0, description="seconds an idle keep-alive connection stays open"
    )
    read_timeout: float = Field(
        10.0,
        gt=0,
        description="seconds a client may take to send a request's headers, and between the "
        "parts of its body",
    )
    stateless: bool = Field(
        True,
        description="stateless streamable HTTP: any replica answers any request (no session "
        "affinity); false keeps sessions in the process that opened them",
    )

    @field_validator("toolsets", "allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @property
    def loopback(self) -> bool:
        """Whether the service binds to the local machine only."""
        if self.host in LOOPBACK_HOSTS:
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def load_settings(**overrides: object) -> ServiceSettings:
    """Settings from the environment and ``.env``, with ``overrides`` (not None) on top."""
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        settings = ServiceSettings(**given)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False, include_input=False):
            name = "MCP_" + "_".join(str(part) for part in error["loc"][:1]).upper()
            problems.append(f"{name}: {error['msg']}")
        raise SettingsError("bad setting " + "; ".join(problems)) from None
    if not settings.loopback and not settings.allowed_hosts:
        raise SettingsError(
            f"bad setting MCP_ALLOWED_HOSTS: binding to {settings.host} needs the list of Host "
            "headers clients use, such as MCP_ALLOWED_HOSTS=mcp.example.com,mcp.example.com:*"
            " (DNS-rebinding protection)"
        )
    return settings
