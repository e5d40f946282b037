"""A local OAuth issuer for tests: it signs access tokens and serves its keys on loopback.

:class:`LocalIssuer` makes a fresh RSA key pair and serves its JWKS over HTTP on a
free 127.0.0.1 port, from a small server thread it starts and stops. Its tokens
verify against a service whose settings come from :meth:`LocalIssuer.environment`.
"""

import json
import secrets
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = ["LocalIssuer"]

JWKS_PATH = "/jwks.json"


class LocalIssuer:
    """An authorization server for tests: it signs tokens and publishes its key (a JWKS).

    Use it as a context manager (``with LocalIssuer() as issuer:``), or call
    :meth:`start` and :meth:`stop`. ``fetches`` counts the requests for its keys.
    """

    def __init__(self) -> None:
        self._key = _new_key()
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
        return self._key[0]

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
        self._key = _new_key()

    def jwks(self) -> dict[str, Any]:
        """The JWKS document it publishes: its current public key."""
        key_id, private = self._key
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
        return {"keys": [{**public, "kid": key_id, "use": "sig", "alg": "RS256"}]}

    def public_key_pem(self) -> bytes:
        """Its current public key, PEM-encoded."""
        public = self._key[1].public_key()
        return public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

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
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "sub": subject,
            "aud": audience,
            "iat": now,
            "exp": now + int(expires_in),
            "scope": " ".join(scopes),
            "client_id": "test-client",
            **claims,
        }
        payload = {name: value for name, value in payload.items() if value is not None}
        current_id, private = self._key
        headers = {"kid": key_id or current_id}
        return jwt.encode(payload, private, algorithm="RS256", headers=headers)

    def environment(self, resource_url: str, *, scopes: Iterable[str] = ()) -> dict[str, str]:
        """The ``MCP_*`` variables of a service that accepts its tokens for ``resource_url``."""
        return {
            "MCP_AUTH": "oauth",
            "MCP_OAUTH_ISSUER": self.issuer,
            "MCP_OAUTH_JWKS_URL": self.jwks_url,
            "MCP_RESOURCE_URL": resource_url,
            "MCP_OAUTH_SCOPES": ",".join(scopes),
        }


def _new_key() -> tuple[str, rsa.RSAPrivateKey]:
    return secrets.token_hex(8), rsa.generate_private_key(public_exponent=65537, key_size=2048)


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
