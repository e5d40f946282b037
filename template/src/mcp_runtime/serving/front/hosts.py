"""DNS-rebinding protection: the Host and Origin of a request to the MCP endpoint, refused
with the setting that admits them."""

import logging
import re

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_runtime.sdk.http import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_runtime.serving.front.answers import INVALID_REQUEST, error_answer, respond_raw

__all__ = ["HostCheck", "host_and_origin", "shown_host"]

logger = logging.getLogger(__name__)

# A Host (host[:port]) or Origin (scheme://host[:port]) that is safe to repeat in a log line.
HOST_LIKE = re.compile(r"(?:[a-z][a-z0-9+.-]*://)?[A-Za-z0-9._~\[\]:-]{1,120}")
ADMITTED_KEPT = 64  # the distinct Host and Origin pairs remembered as admitted


def shown_host(value: str | None) -> str:
    """``value`` quoted, when it has the form of a host or an origin; else what it is not."""
    if not value:
        return "(none)"
    return repr(value) if HOST_LIKE.fullmatch(value) else "(not a host name)"


def host_and_origin(scope: Scope) -> tuple[bytes | None, bytes | None]:
    """The request's first Host and first Origin header, as Starlette finds each (by the
    name as the server wrote it, lowercase as ASGI asks); None for one it lacks."""
    host = origin = None
    for name, value in scope["headers"]:
        if name == b"host":
            if host is None:
                host = bytes(value)
        elif name == b"origin" and origin is None:
            origin = bytes(value)
    return host, origin


class HostCheck:
    """Refuses a request to the MCP endpoint whose Host header the service does not answer
    to (421) or whose Origin it does not allow (403), by the SDK's own rules
    (``TransportSecurityMiddleware``, which the SDK applies again behind the front). The
    answer, a JSON-RPC error, and its WARNING line name the refused value (when it has the
    form of a host name: a client's value is repeated no other way) and the setting that
    admits it, ``MCP_ALLOWED_HOSTS`` or ``MCP_ALLOWED_ORIGINS``.

    The SDK's verdict depends on the request's first Host and Origin alone: a pair it
    admitted is remembered (at most :data:`ADMITTED_KEPT` of them) and admitted again
    without asking; a refused pair is asked every time, so that each refusal is logged."""

    def __init__(
        self, app: ASGIApp, *, security: TransportSecuritySettings, path: str | None
    ) -> None:
        self.app = app
        self.path = path  # None: every path
        self.security = TransportSecurityMiddleware(security)
        self.protected = security.enable_dns_rebinding_protection
        self.admitted: set[tuple[bytes | None, bytes | None]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.protected
            and scope["type"] == "http"
            and (self.path is None or scope["path"] == self.path)
        ):
            pair = host_and_origin(scope)
            if pair not in self.admitted:
                request = Request(scope)
                refused = await self.security.validate_request(request, is_post=False)
                if refused is not None:
                    await self._refuse(send, request, refused.status_code)
                    return
                if len(self.admitted) >= ADMITTED_KEPT:
                    self.admitted.clear()
                self.admitted.add(pair)
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send, request: Request, status: int) -> None:
        if status == 421:
            header, setting, form = "Host", "MCP_ALLOWED_HOSTS", "host:port, or host:* for any port"
        else:
            header, setting, form = "Origin", "MCP_ALLOWED_ORIGINS", "scheme://host:port"
        value = shown_host(request.headers.get(header.lower()))
        if value == "(none)":  # only a Host can be missing: an Origin may be absent
            logger.warning("Refused a request without a Host header")
            error = "Refused: the request has no Host header; send the service's host name"
            await respond_raw(send, status, error_answer(INVALID_REQUEST, error))
            return
        logger.warning(
            "Refused a request: its %s header %s is not in %s; add it there (%s) if "
            "clients reach the service by that name",
            header,
            value,
            setting,
            form,
        )
        error = (
            f"Refused: this service does not answer to the {header} header {value}. If "
            f"clients reach it by that name, add it to the service's setting {setting} "
            f"({form})."
        )
        await respond_raw(send, status, error_answer(INVALID_REQUEST, error))
