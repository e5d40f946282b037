"""What the front's parts learn of a POST, kept in its ASGI scope for the parts after them."""

from dataclasses import dataclass

from starlette.types import Scope

from mcp_runtime.sdk.bearer import AccessToken
from mcp_runtime.sdk.http import speaks_handshake_era

__all__ = ["Posted"]

SCOPE_KEY = "mcp_runtime.posted"


@dataclass
class Posted:
    """One POST as the front has read it so far.

    ``modern`` is whether it speaks a revision of 2026-07-28 or later, as the SDK routes
    it (:func:`~mcp_runtime.sdk.http.speaks_handshake_era`), read once; ``access`` is its
    verified bearer token (None when the service verifies none);
    ``body`` its whole body, and ``text`` that body decoded, once
    :class:`~mcp_runtime.serving.front.limits.BodyLimits` has read it; ``message`` the
    JSON it holds once :class:`~mcp_runtime.serving.front.json_rpc.JsonRpcChecks` has
    parsed it (None when it is not JSON).
    """

    modern: bool = False
    access: AccessToken | None = None
    body: bytes = b""
    text: str = ""
    message: object = None

    @classmethod
    def of(cls, scope: Scope) -> "Posted":
        """The request's record, made on first use."""
        posted = scope.get(SCOPE_KEY)
        if posted is None:
            posted = scope[SCOPE_KEY] = cls(modern=not speaks_handshake_era(scope))
        assert isinstance(posted, cls)
        return posted
