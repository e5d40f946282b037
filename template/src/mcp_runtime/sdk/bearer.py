"""The SDK's bearer-token check of an HTTP request, run by the front before the SDK's."""

import time

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.authentication import AuthCredentials
from starlette.types import Receive, Scope, Send

from mcp_runtime.sdk.seams import token_verifier

__all__ = [
    "AccessToken",
    "BearerCheck",
    "TokenVerifier",
    "bearer_check",
    "bearer_token",
    "set_request_user",
]


class BearerCheck:
    """The SDK's bearer-token check of a request, answering its own 401 when it fails.

    The front runs it before it reads a request's body, so a request without a valid
    token costs no body parse. A token is read from the first ``Authorization`` header
    and accepted as the SDK's ``BearerAuthBackend`` accepts it: the ``Bearer`` scheme
    (in any case), a token the verifier accepts, not past its ``expires_at``. The SDK's
    own check of a request the front passes on asks the same verifier, which
    remembers what it has verified.
    """

    def __init__(self, verifier: TokenVerifier, auth: AuthSettings) -> None:
        self.verifier = verifier
        url = auth.resource_server_url
        metadata_url = build_resource_metadata_url(url) if url is not None else None
        self.refusal = RequireAuthMiddleware(None, [], metadata_url)

    async def check(self, scope: Scope, receive: Receive, send: Send) -> AccessToken | None:
        """The request's verified bearer token; None once the SDK's 401 is sent."""
        token = bearer_token(scope)
        access = None if token is None else await self.verifier.verify_token(token)
        if access is not None and not (access.expires_at and access.expires_at < int(time.time())):
            return access
        await self.refusal({"type": "http"}, receive, send)
        return None


def bearer_token(scope: Scope) -> str | None:
    """The bearer token of a request's first ``Authorization`` header; None without one."""
    for name, value in scope["headers"]:
        if name == b"authorization":  # ASGI servers send header names in lowercase
            return value[7:].decode("latin-1") if value[:7].lower() == b"bearer " else None
    return None


def bearer_check(server: MCPServer) -> BearerCheck | None:
    """The bearer-token check of ``server``; None when it does not verify tokens."""
    verifier = token_verifier(server)
    auth = server.settings.auth
    return BearerCheck(verifier, auth) if verifier is not None and auth is not None else None


def set_request_user(scope: Scope, access: AccessToken) -> None:
    """Set the request's user to the caller of ``access``, as the SDK's authentication
    sets it, for the tool it calls to read its caller."""
    scope["user"] = AuthenticatedUser(access)
    scope["auth"] = AuthCredentials(access.scopes)
