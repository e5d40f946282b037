"""A local OAuth issuer for tests: it signs access tokens and serves its keys on loopback.

:class:`LocalIssuer` makes a fresh RSA key pair and serves its JWKS over HTTP on a
free 127.0.0.1 port, from a small server thread it starts and stops. Its tokens
verify against a service whose settings come from :meth:`LocalIssuer.environment`.
"""

import json
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from mcp_runtime.auth.local_keys import SigningKey

__all__ = ["LocalIssuer"]

JWKS_PATH = "/jwks.json"


class LocalIssuer:
    """An authorization server for tests: it signs tokens and publishes its key (a JWKS).

    Use it as a context manager (``with LocalIssuer() as issuer:``), or call
    :meth:`start` and :meth:`stop`. ``fetches`` counts the requests for its keys.
    """

    def __init__(self) -> None:
        self._key = SigningKey.generate()
        self.fetches = 0
        self.failing = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def issuer(self) -> str:
        """The issuer URL: the ``iss`` of its tokens, ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def jwks_url(self) -> str:
        """Where its public key is published, as a JWKS."""
        return self.issuer + JWKS_PATH

    @property
    def key_id(self) -> str:
        """The key id (``kid``) of its current signing key."""
        return self._key.key_id

    def start(self) -> "LocalIssuer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> "LocalIssuer":
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def rotate(self) -> None:
        """Sign with a new key from now on, and publish only that one."""
        self._key = SigningKey.generate()

    def jwks(self) -> dict[str, Any]:
        """The JWKS document it publishes: its current public key."""
        return self._key.jwks()

    def public_key_pem(self) -> bytes:
        """Its current public key, PEM-encoded."""
        return self._key.public_pem()

    def token(
        self,
        *,
        subject: str = "user-1",
        scopes: Iterable[str] = (),
        audience: str | list[str],
        expires_in: float = 300,
        key_id: str | None = None,
        **claims: Any,
    ) -> str:
        """A signed access token (RS256) for ``audience``: ``claims`` are added, or override.

        ``key_id`` sets the ``kid`` header (default: the current key's); a claim given
        as None is left out.
        """
        claims.setdefault("client_id", "test-client")
        return self._key.token(
            issuer=self.issuer,
            subject=subject,
            audience=audience,
            scopes=scopes,
            expires_in=expires_in,
            key_id=key_id,
            **claims,
        )

    def environment(self, resource_url: str, *, scopes: Iterable[str] = ()) -> dict[str, str]:
        """The ``MCP_*`` variables of a service that accepts its tokens for ``resource_url``."""
        return {
            "MCP_AUTH": "oauth",
            "MCP_OAUTH_ISSUER": self.issuer,
            "MCP_OAUTH_JWKS_URL": self.jwks_url,
            "MCP_RESOURCE_URL": resource_url,
            "MCP_OAUTH_SCOPES": ",".join(scopes),
        }


def _handler(issuer: LocalIssuer) -> type[BaseHTTPRequestHandler]:
    class JwksHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != JWKS_PATH:
                self.send_error(404)
                return
            issuer.fetches += 1
            if issuer.failing:
                self.send_error(503)
                return
            body = json.dumps(issuer.jwks()).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the service's log, not the issuer's."""

    return JwksHandler
