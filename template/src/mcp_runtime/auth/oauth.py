"""OAuth 2.1 bearer tokens: verifying them, and the verified caller a tool is serving.

Under ``MCP_AUTH=oauth`` the service is an OAuth resource server. Each HTTP request
brings a JWT access token from the authorization server; :class:`JwtVerifier` checks
its signature against the issuer's published keys (:class:`JwksCache`), its issuer,
audience, lifetime and algorithm, and the SDK answers 401 to a request without a
valid token. A verified token is remembered (:class:`VerifiedTokens`) until it expires or
the issuer's keys are fetched again, so a client that sends the same token on each
request pays its signature check once. A tool reads who called it with
:func:`current_caller`. Tokens are never logged, nor put in any message, nor kept: the
memory of verified tokens is keyed by a digest of each.
"""

import functools
import hashlib
import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import anyio
import httpx2
import jwt

from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.sdk.context import AccessToken, request_token

__all__ = [
    "Caller",
    "JwksCache",
    "JwtVerifier",
    "VerifiedTokens",
    "caller_of",
    "current_caller",
    "owner_digest",
    "token_owner",
    "using_caller",
]

logger = logging.getLogger(__name__)

LEEWAY_SECONDS = 30
"""Clock difference tolerated between the issuer and the service, for exp, nbf and iat."""
FETCH_TIMEOUT_SECONDS = 10.0
TOKENS_REMEMBERED = 10_000
"""How many verified tokens a verifier remembers at most (:class:`VerifiedTokens`)."""


@dataclass(frozen=True)
class Caller:
    """The verified caller of an HTTP request: the token's subject, scopes and claims."""

    subject: str
    scopes: frozenset[str] = frozenset()
    client_id: str | None = None
    claims: Mapping[str, Any] = field(default_factory=dict, repr=False)


_override: ContextVar[Caller | None] = ContextVar("_caller_override", default=None)


def current_caller() -> Caller | None:
    """The verified caller of the request being served; None without one.

    None over stdio, in memory, and whenever the service does not verify tokens
    (``MCP_AUTH`` other than ``oauth``).
    """
    override = _override.get()
    if override is not None:
        return override
    return caller_of(request_token())


def caller_of(token: AccessToken | None) -> Caller | None:
    """The caller a verified ``token`` names (its subject may be empty, when the verifier
    allows it); None without a token."""
    if token is None:
        return None
    return Caller(
        subject=token.subject or "",
        scopes=frozenset(token.scopes),
        client_id=token.client_id or None,
        claims=dict(token.claims or {}),
    )


def owner_digest(caller: Caller | None) -> str:
    """Whose things a caller's are (its calls, tasks and kept data), as the stores keep it
    in its place: a digest of its subject and client, or ``anonymous`` without a verified
    caller. The one way a caller becomes an owner."""
    return "anonymous" if caller is None else _owner_digest(caller.subject, caller.client_id or "")


def token_owner(token: AccessToken | None) -> str:
    """:func:`owner_digest` of the caller ``token`` names, without making the caller (a
    call's owner, on every call)."""
    return (
        "anonymous" if token is None else _owner_digest(token.subject or "", token.client_id or "")
    )


@functools.lru_cache(maxsize=4096)
def _owner_digest(subject: str, client_id: str) -> str:
    return hashlib.sha256(f"{subject}\x00{client_id}".encode()).hexdigest()[:32]


@contextmanager
def using_caller(caller: Caller) -> Iterator[None]:
    """Serve ``caller`` to tools called inside the block (direct calls, tests, agents)."""
    reset = _override.set(caller)
    try:
        yield
    finally:
        _override.reset(reset)


class JwksCache:
    """The issuer's signing keys by key id, fetched from its JWKS URL and kept a while.

    The URL is the issuer's (``https``), or a ``file://`` URL of a JWKS file.

    The keys are fetched again once ``lifetime`` has passed, or for a key id they
    lack; never twice within ``min_interval`` seconds, so tokens with made-up key ids
    cannot make the service hammer the issuer. Concurrent misses share one fetch. A
    failed fetch keeps the keys already known, and is logged.

    Written here because PyJWT's ``PyJWKClient`` fetches with blocking ``urllib`` (on
    the event loop, in a server) and fetches again for every unknown key id, with no
    floor between fetches.
    """

    def __init__(self, url: str, *, lifetime: float, min_interval: float) -> None:
        self.url = url
        self.lifetime = lifetime
        self.min_interval = min_interval
        self._keys: dict[str | None, dict[str, Any]] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._generation = 0
        self._lock: anyio.Lock | None = None

    @property
    def fresh_generation(self) -> int | None:
        """Which fetch of the keys is in use (each fetch counts one more), while the keys
        are within their ``lifetime``; None once they are due to be fetched again."""
        if self._fetched_at is None or time.monotonic() - self._fetched_at > self.lifetime:
            return None
        return self._generation

    async def key(self, key_id: str | None) -> dict[str, Any] | None:
        """The key (a JWK) ``key_id`` names, or the only key for a token without a key id."""
        if self.fresh_generation is None or self._find(key_id) is None:
            await self._refresh(self._generation)
        return self._find(key_id)

    def _find(self, key_id: str | None) -> dict[str, Any] | None:
        if key_id is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(key_id)

    async def _refresh(self, seen: int) -> None:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._generation != seen:
                return  # fetched meanwhile, for another request
            now = time.monotonic()
            if self._attempted_at is not None and now - self._attempted_at < self.min_interval:
                return
            self._attempted_at = now
            try:
                keys = await self._fetch()
            except (httpx2.HTTPError, OSError, ValueError, jwt.PyJWTError) as exc:
                logger.warning(
                    "could not fetch the signing keys from %s (%s); keeping the %d known",
                    self.url,
                    type(exc).__name__,
                    len(self._keys),
                )
                return
            self._keys = keys
            self._fetched_at = now
            self._generation += 1

    async def _fetch(self) -> dict[str | None, dict[str, Any]]:
        if self.url.startswith("file:"):  # a JWKS file: a mounted secret, or a local dev key
            path = anyio.Path(url2pathname(urlsplit(self.url).path))
            document = json.loads(await path.read_text())
        else:
            async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS) as client:
                response = await client.get(self.url)
                response.raise_for_status()
                document = response.json()
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise ValueError("the JWKS document has no list of keys")
        keys: dict[str | None, dict[str, Any]] = {}
        for entry in document["keys"]:
            if isinstance(entry, dict) and entry.get("use", "sig") == "sig":
                keys[entry.get("kid")] = entry
        return keys


class VerifiedTokens:
    """The tokens a verifier has accepted, each until it expires (its ``exp``, with the
    leeway the check allows) or the keys it was checked with are fetched again.

    Keyed by a SHA-256 digest of the token; the access each grants is kept without the
    token, which a hit takes from the request that presents it. At most ``size`` are
    kept: past that, the one remembered first is forgotten. Refused tokens are not kept.
    """

    def __init__(self, size: int = TOKENS_REMEMBERED) -> None:
        self.size = size
        self._entries: dict[bytes, tuple[AccessToken, float, int]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, token: str, generation: int | None) -> AccessToken | None:
        """The access ``token`` was granted while the keys were fetch ``generation``."""
        key = _digest(token)
        entry = self._entries.get(key)
        if entry is None:
            return None
        granted, until, checked_with = entry
        if checked_with != generation or time.time() >= until:
            del self._entries[key]
            return None
        return granted.model_copy(update={"token": token})

    def remember(self, token: str, access: AccessToken, generation: int | None) -> None:
        """Remember that ``token`` grants ``access``, checked with keys of ``generation``."""
        if generation is None or access.expires_at is None:
            return
        while len(self._entries) >= self.size:
            del self._entries[next(iter(self._entries))]
        granted = access.model_copy(update={"token": ""})  # kept without the token
        self._entries[_digest(token)] = (granted, access.expires_at + LEEWAY_SECONDS, generation)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class JwtVerifier:
    """Verifies JWT access tokens (the SDK's ``TokenVerifier``).

    A token is accepted when it is signed with one of ``algorithms`` (public-key ones;
    ``none`` and HMAC never) by a key of the issuer's JWKS, its ``iss`` is the issuer,
    its ``aud`` holds the resource URL, it has not expired (``exp`` required), ``nbf``
    and ``iat`` (if present) are not in the future, and it names its ``sub``. An accepted
    token is remembered (:attr:`verified`), and answers again without a second check.
    """

    def __init__(
        self,
        *,
        issuer: str,
        resource_url: str,
        keys: JwksCache,
        algorithms: Sequence[str],
    ) -> None:
        self.issuer = issuer
        self.resource_url = resource_url
        self.keys = keys
        self.algorithms = tuple(algorithms)
        self.verified = VerifiedTokens()
        # Each JWK's key object, built once (building one costs more than a verification).
        self._built: dict[tuple[str | None, str], tuple[dict[str, Any], jwt.PyJWK]] = {}

    @classmethod
    def from_settings(cls, settings: ServiceSettings) -> "JwtVerifier":
        """The verifier ``settings`` describe (``oauth_ready`` must be true)."""
        assert settings.oauth_issuer
        assert settings.oauth_jwks_url
        assert settings.resource_url
        keys = JwksCache(
            settings.oauth_jwks_url,
            lifetime=settings.oauth_jwks_cache_seconds,
            min_interval=settings.oauth_jwks_refetch_seconds,
        )
        return cls(
            issuer=settings.oauth_issuer,
            resource_url=settings.resource_url,
            keys=keys,
            algorithms=settings.oauth_algorithms,
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access information if it is valid; None (logged, without it) if not.

        A token accepted before, whose keys are still the ones it was checked with, is
        answered from :attr:`verified`: the front's check and the SDK's of one request,
        and every later request with the same token, cost one signature check.
        """
        generation = self.keys.fresh_generation
        remembered = self.verified.get(token, generation)
        if remembered is not None:
            return remembered
        try:
            claims = await self._claims(token)
        except (jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
            logger.info("refused a bearer token: %s", _reason(exc))
            return None
        scopes = _scopes(claims)
        client_id = claims.get("client_id", claims.get("azp"))
        access = AccessToken(
            token=token,
            client_id=client_id if isinstance(client_id, str) else "",
            scopes=sorted(scopes),
            expires_at=int(claims["exp"]),
            resource=self.resource_url,
            subject=claims["sub"],
            claims=claims,
        )
        self.verified.remember(token, access, self.keys.fresh_generation)
        return access

    async def _claims(self, token: str) -> dict[str, Any]:
        header = jwt.get_unverified_header(token)
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise ValueError(f"its algorithm is not one of {', '.join(self.algorithms)}")
        key_id = header.get("kid")
        entry = await self.keys.key(key_id if isinstance(key_id, str) else None)
        if entry is None:
            raise ValueError("no signing key of the issuer has its key id")
        if entry.get("alg", algorithm) != algorithm:
            raise ValueError("its algorithm is not the one its key is for")
        claims: dict[str, Any] = jwt.decode(
            token,
            key=self._signing_key(key_id if isinstance(key_id, str) else None, entry, algorithm),
            algorithms=[algorithm],
            audience=self.resource_url,
            issuer=self.issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise ValueError("its `sub` is not a non-empty string")
        return claims

    def _signing_key(self, key_id: str | None, entry: dict[str, Any], algorithm: str) -> jwt.PyJWK:
        """The key object of JWK ``entry`` for ``algorithm``, built once per fetched JWK."""
        built = self._built.get((key_id, algorithm))
        if built is not None and built[0] is entry:
            return built[1]
        if len(self._built) > 64:
            self._built.clear()  # keys rotated away: forget them
        signing_key = jwt.PyJWK(entry, algorithm)
        self._built[(key_id, algorithm)] = (entry, signing_key)
        return signing_key


def _scopes(claims: Mapping[str, Any]) -> set[str]:
    """The scopes a token grants: ``scope`` (space-separated) or ``scp`` (a list or a string)."""
    granted = claims.get("scope", claims.get("scp", ""))
    if isinstance(granted, str):
        return set(granted.split())
    if isinstance(granted, list):
        return {item for item in granted if isinstance(item, str)}
    return set()


def _reason(exc: Exception) -> str:
    """Why a token was refused, in words that never repeat any part of it."""
    reasons: dict[type[Exception], str] = {
        jwt.ExpiredSignatureError: "it has expired",
        jwt.InvalidAudienceError: "its audience is not this service",
        jwt.InvalidIssuerError: "its issuer is not the configured one",
        jwt.ImmatureSignatureError: "it is not valid yet",
        jwt.MissingRequiredClaimError: "it lacks a required claim",
        jwt.InvalidSignatureError: "its signature does not verify",
        jwt.InvalidAlgorithmError: "its algorithm does not match the key",
        jwt.DecodeError: "it is not a well-formed JWT",
    }
    if type(exc) is ValueError:
        return str(exc)
    return next(
        (text for kind, text in reasons.items() if isinstance(exc, kind)), type(exc).__name__
    )
