"""Local signing keys: access tokens for development, verified as an issuer's tokens are.

A :class:`SigningKey` is an RSA key pair that signs JWT access tokens (RS256) and
publishes its public key as a JWKS. :func:`dev_token` keeps one in a folder of the
service (``.dev-issuer/``: the private key, readable by its owner only, and
``jwks.json``) and signs a token with it. A service whose ``MCP_OAUTH_JWKS_URL`` is
that file's ``file://`` URL verifies the token through the very checks it applies to
an authorization server's: signature, issuer, audience, lifetime, scopes. Nothing is
bypassed, and no other service trusts the key.
"""

import base64
import hashlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = ["DEV_ISSUER", "DEV_ISSUER_FOLDER", "DevToken", "SigningKey", "dev_token"]

DEV_ISSUER = "http://localhost/dev-issuer"
"""The issuer (``iss``) of development tokens: no authorization server answers there."""
DEV_ISSUER_FOLDER = Path(".dev-issuer")
PRIVATE_KEY_FILE = "signing-key.pem"
JWKS_FILE = "jwks.json"


class SigningKey:
    """An RSA key pair that signs access tokens (RS256); its key id is its RFC 7638 thumbprint."""

    def __init__(self, private: rsa.RSAPrivateKey) -> None:
        self.private = private
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
        self.public_jwk: dict[str, Any] = public
        members = json.dumps(
            {name: public[name] for name in ("e", "kty", "n")}, separators=(",", ":")
        )
        digest = hashlib.sha256(members.encode()).digest()
        self.key_id = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    @classmethod
    def generate(cls) -> "SigningKey":
        """A new key pair (2048-bit RSA)."""
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048))

    @classmethod
    def from_pem(cls, pem: bytes) -> "SigningKey":
        """The key pair whose private key ``pem`` holds (PKCS #8, unencrypted)."""
        private = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(private, rsa.RSAPrivateKey):
            raise ValueError("the key is not an RSA private key")
        return cls(private)

    def private_pem(self) -> bytes:
        """The private key, PEM-encoded (PKCS #8, unencrypted)."""
        return self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def public_pem(self) -> bytes:
        """The public key, PEM-encoded."""
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def jwks(self) -> dict[str, Any]:
        """The JWKS document that publishes the public key."""
        return {"keys": [{**self.public_jwk, "kid": self.key_id, "use": "sig", "alg": "RS256"}]}

    def token(
        self,
        *,
        issuer: str,
        subject: str,
        audience: str | list[str],
        scopes: Iterable[str] = (),
        expires_in: float = 300,
        key_id: str | None = None,
        **claims: Any,
    ) -> str:
        """A signed access token: ``claims`` are added, or override; one given as None is
        left out. ``key_id`` sets the ``kid`` header (default: this key's)."""
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": issuer,
            "sub": subject,
            "aud": audience,
            "iat": now,
            "exp": now + int(expires_in),
            "scope": " ".join(scopes),
            **claims,
        }
        payload = {name: value for name, value in payload.items() if value is not None}
        headers = {"kid": key_id or self.key_id}
        return jwt.encode(payload, self.private, algorithm="RS256", headers=headers)


@dataclass(frozen=True)
class DevToken:
    """A development token, and the settings of a service that verifies it."""

    token: str
    settings: dict[str, str]


def dev_token(
    folder: Path,
    *,
    subject: str,
    audience: str,
    scopes: Iterable[str] = (),
    expires_in: float,
) -> DevToken:
    """A token for ``subject`` and ``audience``, signed by the key kept in ``folder``.

    The key is made and written on first use, then reused, so earlier tokens stay valid
    and the settings stay the same. The settings name the key's JWKS file by its
    absolute ``file://`` URL. Raises ``OSError`` if the folder cannot hold the key, and
    ``ValueError`` if the file there is not a key.
    """
    key = _kept_key(folder.resolve())
    token = key.token(
        issuer=DEV_ISSUER,
        subject=subject,
        audience=audience,
        scopes=scopes,
        expires_in=expires_in,
        client_id="dev-token",
    )
    settings = {
        "MCP_AUTH": "oauth",
        "MCP_OAUTH_ISSUER": DEV_ISSUER,
        "MCP_OAUTH_JWKS_URL": (folder.resolve() / JWKS_FILE).as_uri(),
        "MCP_RESOURCE_URL": audience,
    }
    return DevToken(token, settings)


def _kept_key(folder: Path) -> SigningKey:
    """The key kept in ``folder``, made (and its JWKS written) when there is none."""
    private_file = folder / PRIVATE_KEY_FILE
    if private_file.is_file():
        key = SigningKey.from_pem(private_file.read_bytes())
    else:
        key = SigningKey.generate()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(private_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as written:
            written.write(key.private_pem())
    (folder / JWKS_FILE).write_text(json.dumps(key.jwks(), indent=2) + "\n")
    return key
