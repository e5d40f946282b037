"""The service's settings: environment variables (``MCP_`` prefix) and an optional ``.env``.

Every setting has a default that is safe on a developer's machine. A bad value
stops startup with a message that names the variable (:class:`SettingsError`).
Command-line options of ``serve`` override the matching settings.
"""

import functools
import ipaddress
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Literal
from urllib.parse import urlsplit

from cryptography.fernet import Fernet
from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from mcp_runtime.config.service_defaults import AUTH

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "LOOPBACK_HOSTS",
    "MAX_RESULT_BYTES",
    "MAX_STREAMED_RESULT_BYTES",
    "SERVING_SETTINGS",
    "ServiceSettings",
    "SettingsError",
    "current_settings",
    "load_settings",
    "require_http_auth",
    "retired_settings",
    "using_settings",
]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
RETIRED = {
    "MCP_TASK_HEARTBEAT": (
        "a task's process is no longer judged by a heartbeat: a running task holds a lease "
        "(MCP_TASK_LEASE), which another process takes over once it runs out"
    ),
}
"""Settings the service no longer reads, each with what took its place."""
ASYMMETRIC_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""The token signing algorithms a service may accept: public-key ones only."""

MAX_RESULT_BYTES = 64 * 1024 * 1024
"""The default largest result a call answers, in bytes of its JSON."""
MAX_STREAMED_RESULT_BYTES = 1024 * 1024 - 8 * 1024
"""The default largest result of a streamed answer: the 1 MiB of one server-sent event most
clients read by default, less room for the message and the event around it."""

CommaList = Annotated[tuple[str, ...], NoDecode]
AuthMode = Literal["oauth", "demo-header", "none"]


TASK_STORE_SCHEMES = ("redis", "rediss", "unix", "redis+sentinel")
DATA_STORE_SCHEMES = ("file", "memory", "s3", "s3a", "gs", "az", "abfs", "abfss", "azure")


class SettingsError(Exception):
    """A setting has a bad value; the message names it and says what it accepts."""


class ServiceSettings(BaseSettings):
    """How the service runs. Each field is read from ``MCP_<NAME>`` (or ``.env``).

    Built through :func:`load_settings` (the environment, ``.env`` and overrides) or
    :meth:`defaults`; either way every check runs, those across settings included.
    """

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
    max_result_bytes: int = Field(
        MAX_RESULT_BYTES,
        gt=0,
        description="largest result a call answers, in bytes of its JSON; a larger one answers "
        "isError (result_too_large) instead",
    )
    max_streamed_result_bytes: int = Field(
        MAX_STREAMED_RESULT_BYTES,
        gt=0,
        description="largest result of a call whose answer streams (it reported progress), in "
        "bytes of its JSON: most clients read a server-sent event only up to 1 MiB by default; "
        "a larger one answers isError (result_too_large) instead",
    )
    tasks_url: str = Field(
        "memory://",
        description="where tasks are kept: memory:// (in this process, no server to run) or "
        "redis://host:port/db (shared by every worker and replica)",
    )
    task_ttl: float = Field(
        3600.0, gt=0, description="seconds a finished task's result is kept for its client"
    )
    task_timeout: float = Field(
        86400.0,
        gt=0,
        description="seconds a task may run from its creation; past it, it answers isError",
    )
    max_tasks_per_caller: int = Field(
        100, ge=1, description="tasks one caller may have running at once"
    )
    task_poll_interval: float = Field(
        1.0, gt=0, description="seconds a client is asked to wait between two polls of a task"
    )
    task_max_ttl: float = Field(
        86400.0,
        gt=0,
        description="most seconds a finished task's result is kept, when its client asks "
        "for longer than MCP_TASK_TTL",
    )
    task_lease: float = Field(
        30.0,
        gt=0,
        description="seconds a task's process holds it without renewing: when that process "
        "stops without ending it (killed, its machine lost), another process takes the task "
        "over within about 1.3 leases",
    )
    task_max_resumes: int = Field(
        5,
        ge=0,
        description="times a task may be taken over after its process stopped without "
        "ending it; one more ends it failed",
    )
    task_keys: SecretStr | None = Field(
        None,
        description="keys that seal what a task keeps in its store, comma-separated: the "
        "first seals, any opens (`<service> task-key` prints one); required to keep tasks "
        "on Redis",
    )
    data_url: str = Field(
        "",
        description="where the data tools keep for their callers (keep_data) is stored: a "
        "directory (a path, or file:///path; shared by the worker processes of one machine, "
        "or by replicas that mount one volume), an object store (s3://bucket/prefix, "
        "gs://bucket/prefix, az://container/prefix; its credentials from the environment, "
        "as its own tools read them), or memory:// (this process, for tests); unset: "
        "~/.local/state/mcp-data",
    )
    data_ttl: float = Field(
        3600.0,
        gt=0,
        description="seconds the data a tool keeps for its caller (keep_data) stays readable; "
        "then it is removed",
    )
    max_data_bytes: int = Field(
        64 * 1024**3,
        gt=0,
        description="largest datum one keep_data keeps, in bytes (64 GiB: a retrieved product "
        "of tens of GB); a tool that keeps more answers isError (data_too_large)",
    )
    max_data_bytes_per_caller: int = Field(
        256 * 1024**3,
        gt=0,
        description="most bytes of data kept for one caller at once (256 GiB: four of the "
        "largest data); a call that would keep more answers isError (data_too_large) until "
        "some of it expires",
    )
    data_signed_urls: bool = Field(
        False,
        description="on an object store, store data as it is (protected by the store's own "
        "encryption and access rules, not sealed by the service) and answer a download "
        "with a redirect to a URL the store signs for five minutes",
    )
    data_tool: Literal["auto", "true", "false"] = Field(
        "auto",
        description="serve the tool read_data, which reads kept data in pages of text, for "
        "clients that have only tools: auto serves it when a tool's result declares a "
        "DataLink",
    )
    data_page_chars: int = Field(
        20000,
        ge=1000,
        le=1_000_000,
        description="characters of one page read_data answers",
    )
    direct_calls: bool = Field(
        True,
        description="answer a tools/call of the service's own tools (either era, stateless) "
        "without the SDK's request machinery (the same answer, for less); false hands every "
        "request to the SDK",
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
    tool_threads_per_tool: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="threads one sync tool may hold at once (default: half of MCP_TOOL_THREADS; "
        "a tool's own max_threads declaration overrides it); a tool whose threads are all held "
        "by calls that outlived their deadline answers busy at once",
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
    metrics: bool = Field(
        True,
        description="count and time the tool calls, and serve the figures at GET /metrics "
        "(Prometheus format); false records nothing and answers /metrics 404",
    )
    auth: AuthMode = Field(
        AUTH,  # type: ignore[arg-type]
        description="how HTTP callers are authenticated: oauth (bearer tokens), demo-header "
        "(the demo tool's x-demo-token header), or none",
    )
    oauth_issuer: str | None = Field(
        None, description="the authorization server's issuer URL (the tokens' `iss`)"
    )
    oauth_jwks_url: str | None = Field(
        None,
        description="the URL of the authorization server's signing keys (its JWKS), or the "
        "file:// URL of a JWKS file",
    )
    resource_url: str | None = Field(
        None,
        description="this service's public MCP endpoint URL, such as "
        "https://mcp.example.com/mcp (the tokens' `aud` must hold it)",
    )
    oauth_scopes: CommaList = Field(
        (), description="OAuth scopes every call needs, comma-separated (empty: none)"
    )
    oauth_algorithms: CommaList = Field(
        ("RS256", "ES256"),
        description="token signing algorithms accepted, comma-separated (public-key ones only)",
    )
    oauth_jwks_cache_seconds: float = Field(
        600.0, gt=0, description="seconds the signing keys are kept before they are fetched again"
    )
    oauth_jwks_refetch_seconds: float = Field(
        30.0,
        ge=0,
        description="fewest seconds between two fetches of the signing keys (an unknown key id "
        "fetches them again at most this often)",
    )

    @field_validator(
        "toolsets",
        "allowed_hosts",
        "allowed_origins",
        "oauth_scopes",
        "oauth_algorithms",
        mode="before",
    )
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("tasks_url")
    @classmethod
    def _tasks_url(cls, value: str) -> str:
        scheme = urlsplit(value).scheme
        if value != "memory://" and scheme not in TASK_STORE_SCHEMES:
            raise ValueError(
                "name memory:// (tasks kept in this process) or a Redis URL, such as "
                "redis://localhost:6379/0 (rediss:// for TLS, unix:// for a socket)"
            )
        return value

    @field_validator("data_url")
    @classmethod
    def _data_url(cls, value: str) -> str:
        value = value.strip()
        scheme = urlsplit(value).scheme
        if value == "memory://" or scheme in DATA_STORE_SCHEMES:
            if scheme != "file" and scheme != "memory" and not urlsplit(value).netloc:
                raise ValueError(
                    f"{value} names no bucket: name it and a prefix, such as s3://bucket/data"
                )
            if scheme == "file" and not urlsplit(value).path.startswith("/"):
                raise ValueError("a file URL names an absolute path, such as file:///var/lib/data")
            return value
        if scheme and len(scheme) > 1:  # not a Windows drive letter
            raise ValueError(
                "name a directory (a path, or file:///path), an object store "
                "(s3://bucket/prefix, gs://bucket/prefix, az://container/prefix) or memory://"
            )
        return value

    @field_validator("task_keys")
    @classmethod
    def _task_keys(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not _split_keys(value):
            return None
        for number, key in enumerate(_split_keys(value), start=1):
            try:
                Fernet(key)
            except (ValueError, TypeError):
                raise ValueError(
                    f"its key number {number} is not a key: each is 44 characters of URL-safe "
                    "base64, as `<service> task-key` prints one; separate keys with commas"
                ) from None
        return value

    @property
    def task_key_list(self) -> tuple[str, ...]:
        """The keys of ``MCP_TASK_KEYS``, the one that seals first."""
        return () if self.task_keys is None else _split_keys(self.task_keys)

    @property
    def tasks_in_memory(self) -> bool:
        """Whether tasks are kept in this process only (``MCP_TASKS_URL=memory://``)."""
        return self.tasks_url == "memory://"

    @field_validator("oauth_issuer", "oauth_jwks_url", "resource_url")
    @classmethod
    def _https_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or value == "":
            return None
        if info.field_name == "oauth_jwks_url" and value.startswith("file:"):
            if not urlsplit(value).path.startswith("/"):
                raise ValueError(
                    "a file URL must name an absolute path, such as file:///etc/mcp/jwks.json"
                )
            return value
        parts = urlsplit(value)
        local_http = parts.scheme == "http" and _is_loopback(parts.hostname or "")
        if not parts.hostname or not (parts.scheme == "https" or local_http):
            raise ValueError(
                "must be an absolute https URL, such as https://auth.example.com (http only "
                "for localhost or 127.0.0.1, in development)"
            )
        if parts.fragment:
            raise ValueError("must not have a #fragment")
        return value

    @field_validator("oauth_algorithms")
    @classmethod
    def _asymmetric(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        refused = [name for name in value if name not in ASYMMETRIC_ALGORITHMS]
        if refused:
            raise ValueError(
                f"{', '.join(refused)} not accepted: name public-key algorithms only, from "
                f"{', '.join(ASYMMETRIC_ALGORITHMS)}"
            )
        if not value:
            raise ValueError(f"name at least one of {', '.join(ASYMMETRIC_ALGORITHMS)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "ServiceSettings":
        """The checks across settings; each message names the settings and the fix."""
        per_tool = self.tool_threads_per_tool
        if per_tool is not None and per_tool > self.tool_threads:
            raise ValueError(
                f"MCP_TOOL_THREADS_PER_TOOL={per_tool}: a tool cannot hold more than the "
                f"MCP_TOOL_THREADS={self.tool_threads} threads there are; set it to at most "
                f"{self.tool_threads}, or raise MCP_TOOL_THREADS"
            )
        if self.task_max_ttl < self.task_ttl:
            raise ValueError(
                f"MCP_TASK_MAX_TTL={self.task_max_ttl:g}: a task's client may not be held to "
                f"less than the MCP_TASK_TTL={self.task_ttl:g} seconds a task is kept by "
                f"default; set it to at least {self.task_ttl:g}, or lower MCP_TASK_TTL"
            )
        if not self.loopback and not self.allowed_hosts:
            raise ValueError(
                f"MCP_ALLOWED_HOSTS: binding to {self.host} needs the list of Host headers "
                "clients use, such as MCP_ALLOWED_HOSTS=mcp.example.com,mcp.example.com:*"
                " (DNS-rebinding protection)"
            )
        return self

    @classmethod
    def defaults(cls) -> "ServiceSettings":
        """Every setting at its default, checked; the environment and ``.env`` are not read
        (each is given, and what is given comes before them). Built once: settings are
        frozen, so every caller may share them."""
        return _defaults()

    @property
    def loopback(self) -> bool:
        """Whether the service binds to the local machine only."""
        return _is_loopback(self.host)

    @property
    def oauth_ready(self) -> bool:
        """Whether HTTP callers must bring bearer tokens, and every setting for them is set."""
        return self.auth == "oauth" and not _missing_oauth_settings(self)


def _split_keys(keys: SecretStr) -> tuple[str, ...]:
    return tuple(key.strip() for key in keys.get_secret_value().split(",") if key.strip())


@functools.cache
def _defaults() -> ServiceSettings:
    given = {name: field.get_default() for name, field in ServiceSettings.model_fields.items()}
    return ServiceSettings(**given)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


OAUTH_SETTINGS = {
    "oauth_issuer": "MCP_OAUTH_ISSUER (the authorization server's issuer URL, its tokens' `iss`)",
    "oauth_jwks_url": "MCP_OAUTH_JWKS_URL (the URL of its signing keys, its JWKS)",
    "resource_url": "MCP_RESOURCE_URL (this service's public MCP endpoint URL, such as "
    "https://mcp.example.com/mcp)",
}


def _missing_oauth_settings(settings: ServiceSettings) -> list[str]:
    return [text for name, text in OAUTH_SETTINGS.items() if getattr(settings, name) is None]


def require_http_auth(settings: ServiceSettings, *, command: str | None = None) -> None:
    """Raise :class:`SettingsError` if ``MCP_AUTH=oauth`` lacks a setting HTTP serving needs;
    its message names the service's console ``command`` (for ``dev-token``) when given."""
    if settings.auth != "oauth":
        return
    missing = _missing_oauth_settings(settings)
    if missing:
        dev_token = f"`uv run {command} dev-token`" if command else "the `dev-token` command"
        raise SettingsError(
            "bad setting MCP_AUTH=oauth: serving over HTTP needs "
            + "; ".join(missing)
            + ". Set them to your authorization server's (docs/authentication.md). On your "
            f"own machine, {dev_token} prints a development token and the settings that "
            "verify it; or set MCP_AUTH=none to serve without authentication"
        )


def load_settings(**overrides: object) -> ServiceSettings:
    """Settings from the environment and ``.env``, with ``overrides`` (not None) on top.

    Raises :class:`SettingsError` naming each bad setting and what it accepts.
    """
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return ServiceSettings(**given)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False, include_input=False):
            if error["loc"]:
                problems.append(f"MCP_{str(error['loc'][0]).upper()}: {error['msg']}")
            else:  # a check across settings, whose message names them
                problems.append(str(error.get("ctx", {}).get("error", error["msg"])))
        raise SettingsError("bad setting " + "; ".join(problems)) from None


def retired_settings(environ: Mapping[str, str]) -> list[str]:
    """A warning for each setting in ``environ`` that the service no longer reads."""
    return [
        f"{name} is set, but the service no longer reads it ({instead}): remove it"
        for name, instead in RETIRED.items()
        if name in environ
    ]


SERVING_SETTINGS: ContextVar[ServiceSettings | None] = ContextVar(
    "mcp_runtime_serving_settings", default=None
)
"""The settings of the service serving the tool call in progress (the served tool sets it)."""


def current_settings() -> ServiceSettings:
    """The settings of the service serving the current tool call.

    Outside a served call (a direct call, a test, an agent in-process), or for a tool
    served without settings, those of the environment and ``.env`` (:func:`load_settings`).
    """
    settings = SERVING_SETTINGS.get()
    return settings if settings is not None else load_settings()


@contextmanager
def using_settings(settings: ServiceSettings) -> Iterator[None]:
    """Serve ``settings`` to tools called inside the block (direct calls, tests, agents)."""
    token = SERVING_SETTINGS.set(settings)
    try:
        yield
    finally:
        SERVING_SETTINGS.reset(token)
