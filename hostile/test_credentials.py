"""Forged, stolen and malformed credentials: refused with the same 401, never logged.

The suite's servers verify OAuth tokens from the suite's issuer. An attacker holds
the issuer's public key (it is public), can sign with keys of its own, and can send
anything in the ``Authorization`` header.
"""

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from harness import Server, client_call

pytestmark = pytest.mark.anyio

HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "hello", "arguments": {"name": "Ada"}},
}


def segment(value: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def claims(server: Server, **changes: object) -> dict[str, object]:
    now = int(time.time())
    return {
        "iss": server.issuer.issuer,
        "sub": "mallory",
        "aud": server.url,
        "iat": now,
        "exp": now + 300,
        **changes,
    }


def unsigned(server: Server) -> str:
    """``alg: none``: no signature at all."""
    header = {"alg": "none", "typ": "JWT", "kid": server.issuer.key_id}
    return f"{segment(header)}.{segment(claims(server))}."


def public_key_as_secret(server: Server) -> str:
    """HS256 keyed with the issuer's public key: the algorithm-confusion attack.

    PyJWT refuses to sign HMAC with a PEM key, so it is signed by hand, as an attacker would.
    """
    head = segment({"alg": "HS256", "typ": "JWT", "kid": server.issuer.key_id})
    body = segment(claims(server))
    secret = server.issuer.public_key_pem()
    mac = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


def attackers_key_with_the_issuers_kid(server: Server) -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return jwt.encode(claims(server), key, algorithm="RS256", headers={"kid": server.issuer.key_id})


def attackers_jwks_url(server: Server) -> str:
    """Signed by the attacker, pointing the service at the attacker's keys (``jku``)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    headers = {"kid": "attacker", "jku": "http://127.0.0.1:9/jwks.json"}
    return jwt.encode(claims(server), pem, algorithm="RS256", headers=headers)


def another_audience(server: Server) -> str:
    return server.issuer.token(audience="https://other.example.com/mcp")


def expired(server: Server) -> str:
    return server.issuer.token(audience=server.url, expires_in=-120)


def no_subject(server: Server) -> str:
    return server.issuer.token(audience=server.url, subject=None)


def path_in_kid(server: Server) -> str:
    return server.issuer.token(audience=server.url, key_id="../../../etc/passwd")


def garbage(server: Server) -> str:
    return "a.b.c"


def huge(server: Server) -> str:
    return secrets.token_urlsafe(6000)


FORGERIES: dict[str, Callable[[Server], str]] = {
    "unsigned": unsigned,
    "public-key-as-hmac-secret": public_key_as_secret,
    "attackers-key-with-the-issuers-kid": attackers_key_with_the_issuers_kid,
    "attackers-jku": attackers_jwks_url,
    "another-audience": another_audience,
    "expired": expired,
    "no-subject": no_subject,
    "path-in-kid": path_in_kid,
    "garbage": garbage,
    "huge": huge,
}


def refused(server: Server, authorization: str) -> httpx2.Response:
    headers = {**server.headers, "authorization": authorization}
    return httpx2.post(server.url, json=HELLO, headers=headers, timeout=10)


@pytest.mark.parametrize("forge", list(FORGERIES))
def test_a_forged_token_is_refused_401_and_never_logged(server: Server, forge: str) -> None:
    token = FORGERIES[forge](server)
    mark = server.mark()
    answer = refused(server, f"Bearer {token}")
    assert answer.status_code == 401, answer.text
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer "), challenge
    assert 'error="invalid_token"' in challenge
    assert "resource_metadata=" in challenge
    assert token not in answer.text
    server.assert_alive()
    assert token[-20:] not in server.log_since(mark)


@pytest.mark.parametrize(
    "authorization",
    ["", "Bearer", "Bearer  x", "Basic dXNlcjpwYXNz", "bearer-token", "Bearer a b", "Token x"],
)
def test_a_malformed_authorization_header_is_refused_401(
    server: Server, authorization: str
) -> None:
    answer = refused(server, authorization)
    assert answer.status_code == 401, answer.text
    server.assert_alive()


def test_an_oversized_authorization_header_is_refused_and_the_server_lives(server: Server) -> None:
    try:
        answer = refused(server, "Bearer " + "x" * 70_000)
        assert answer.status_code in (400, 401, 431), answer.text
    except httpx2.RemoteProtocolError:
        pass  # the server closed the connection on the oversized head: refused too
    server.assert_alive()


def test_a_flood_of_unknown_key_ids_does_not_flood_the_issuer(server: Server) -> None:
    before = server.issuer.fetches
    for _ in range(40):
        token = server.issuer.token(audience=server.url, key_id=secrets.token_hex(8))
        assert refused(server, f"Bearer {token}").status_code == 401
    assert server.issuer.fetches - before <= 1
    server.assert_alive()


def test_known_keys_keep_working_while_the_issuer_is_down(server: Server) -> None:
    server.assert_alive()  # the key is cached
    server.issuer.failing = True
    try:
        server.assert_alive()
        stranger = server.issuer.token(audience=server.url, key_id=secrets.token_hex(8))
        assert refused(server, f"Bearer {stranger}").status_code == 401
    finally:
        server.issuer.failing = False
    server.assert_alive()


async def test_whoami_reports_the_tokens_subject(server: Server) -> None:
    if "whoami" not in server.schemas:
        pytest.skip("this service was rendered without the credential demo")
    answer = await client_call(server, "whoami", {})
    assert answer["structuredContent"]["account"] == "hostile-suite", answer
    server.assert_alive()
