"""OAuth bearer tokens: the service as a resource server, against a local issuer.

A real uvicorn server on a loopback port (and one real ``serve`` process) verifies
tokens that :class:`LocalIssuer` signs, its keys fetched over loopback HTTP; clients
are real MCP client sessions, or raw HTTP requests where the exact answer matters.
"""

import base64
import hashlib
import hmac
import json
import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NotRequired

import anyio
import httpx2
import pytest
import uvicorn
from langchain_core.tools import tool
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult

from mcp_runtime import Caller, ToolResult, current_caller, tool_metadata, using_caller
from mcp_runtime.auth.local_keys import DEV_ISSUER, SigningKey
from mcp_runtime.auth.oauth import (
    JwksCache,
    JwtVerifier,
    VerifiedTokens,
    caller_of,
    owner_digest,
    token_owner,
)
from mcp_runtime.config.settings import (
    ServiceSettings,
    SettingsError,
    load_settings,
    require_http_auth,
)
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.devtools.local_issuer import LocalIssuer
from mcp_runtime.sdk.context import request_token
from mcp_runtime.serving.cli import main
from mcp_runtime.serving.http_app import build_app
from mcp_runtime.serving.server import build_server
from mcp_runtime.tasks.protocol import owner_key
from mcp_runtime.testing import connect, connect_http, free_port, serve_http

pytestmark = pytest.mark.anyio

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
UNAUTHORIZED = {"error": "invalid_token", "error_description": "Authentication required"}
SCOPE_REFUSED = (
    "Tool 'greet' needs the OAuth scope(s) greetings, which the caller's token does not "
    "grant: ask the authorization server for a token with them."
)


class CallerResult(ToolResult):
    """The verified caller's subject and scopes."""

    subject: NotRequired[str]
    scopes: NotRequired[list[str]]


@tool
async def caller() -> CallerResult:
    """Say who the verified caller is."""
    found = current_caller()
    if found is None:
        return CallerResult(message="no caller")
    scopes = sorted(found.scopes)
    return CallerResult(message=f"caller {found.subject}", subject=found.subject, scopes=scopes)


@tool_metadata(scopes=("greetings",))
@tool
async def greet() -> ToolResult:
    """Greet the caller: needs the greetings scope."""
    return ToolResult(message="Hello!")


class Served:
    """A real uvicorn server on a loopback port, serving ``caller`` and ``greet`` under oauth."""

    def __init__(self, issuer: LocalIssuer, **settings: Any) -> None:
        self.port = free_port()
        self.settings = ServiceSettings(
            auth="oauth",
            oauth_issuer=issuer.issuer,
            oauth_jwks_url=issuer.jwks_url,
            resource_url=self.url,
            **settings,
        )
        server = build_server(
            [Toolset("auth", (caller, greet))], name="auth", settings=self.settings
        )
        config = uvicorn.Config(
            build_app(server, self.settings), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.uvicorn = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.uvicorn.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def metadata_url(self) -> str:
        return f"{self.base_url}/.well-known/oauth-protected-resource/mcp"

    def challenge(self, error: str, description: str) -> str:
        """The WWW-Authenticate header the SDK answers with."""
        return (
            f'Bearer error="{error}", error_description="{description}", '
            f'resource_metadata="{self.metadata_url}"'
        )

    def post(
        self, body: object = LIST, token: str | None = None, **headers: str
    ) -> httpx2.Response:
        sent = {**HEADERS, **headers}
        if token is not None:
            sent["authorization"] = f"Bearer {token}"
        return httpx2.post(self.url, headers=sent, content=json.dumps(body), timeout=30)

    def __enter__(self) -> "Served":
        self.thread.start()
        while not self.uvicorn.started:
            if not self.thread.is_alive():
                pytest.fail("the test server did not start")
            threading.Event().wait(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def served(oauth_issuer: LocalIssuer) -> Iterator[Served]:
    with Served(oauth_issuer) as running:
        yield running


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def assert_unauthorized(served: Served, answer: httpx2.Response) -> None:
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == served.challenge(
        "invalid_token", "Authentication required"
    )
    assert answer.json() == UNAUTHORIZED


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned_token(claims: dict[str, Any], header: dict[str, Any]) -> str:
    """A JWT with ``header`` and ``claims`` and an empty signature."""
    parts = (json.dumps(header).encode(), json.dumps(claims).encode())
    return ".".join(b64(part) for part in parts) + "."


# --- a valid token ------------------------------------------------------------------


async def test_a_valid_token_serves_its_caller_to_the_tool(
    served: Served, oauth_issuer: LocalIssuer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = oauth_issuer.token(
        subject="alice", scopes=["greetings", "profile"], audience=served.url
    )
    async with connect_http(served.url, headers=bearer(token)) as session:
        result = await session.call_tool("caller", {})
        greeting = await session.call_tool("greet", {})
    assert result.is_error is False
    assert result.structured_content == {
        "message": "caller alice",
        "subject": "alice",
        "scopes": ["greetings", "profile"],
    }
    assert greeting.structured_content == {"message": "Hello!"}
    assert token not in caplog.text
    assert token.split(".")[2] not in caplog.text


async def test_the_audience_may_be_a_list_holding_the_resource(
    served: Served, oauth_issuer: LocalIssuer
) -> None:
    token = oauth_issuer.token(audience=["https://other.example.com", served.url])
    async with connect_http(served.url, headers=bearer(token)) as session:
        result = await session.call_tool("caller", {})
    assert result.structured_content == {
        "message": "caller user-1",
        "subject": "user-1",
        "scopes": [],
    }


async def test_scp_claims_grant_scopes(served: Served, oauth_issuer: LocalIssuer) -> None:
    token = oauth_issuer.token(audience=served.url, scope=None, scp=["greetings"])
    async with connect_http(served.url, headers=bearer(token)) as session:
        result = await session.call_tool("caller", {})
    assert result.structured_content is not None
    assert result.structured_content["scopes"] == ["greetings"]


# --- refused tokens -----------------------------------------------------------------


def forged(issuer: LocalIssuer, audience: str) -> dict[str, str]:
    """Tokens that must each be refused, by what is wrong with them."""
    claims = {"iss": issuer.issuer, "sub": "mallory", "aud": audience, "exp": 4102444800}
    public_pem = issuer.public_key_pem()
    hs_header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": issuer.key_id}).encode())
    hs_input = f"{hs_header}.{b64(json.dumps(claims).encode())}"
    hs_signature = hmac.new(public_pem, hs_input.encode(), hashlib.sha256).digest()
    return {
        "expired": issuer.token(audience=audience, expires_in=-120),
        "wrong audience": issuer.token(audience="https://other.example.com/mcp"),
        "wrong issuer": issuer.token(audience=audience, iss="https://evil.example.com"),
        "unknown key id": issuer.token(audience=audience, key_id="no-such-key"),
        "no subject": issuer.token(audience=audience, sub=None),
        "no expiry": issuer.token(audience=audience, exp=None),
        "not yet valid": issuer.token(audience=audience, nbf=4102444800),
        "alg none": unsigned_token(claims, {"alg": "none", "typ": "JWT"}),
        "HS256 with the public key": f"{hs_input}.{b64(hs_signature)}",
        "bad signature": issuer.token(audience=audience)[:-8] + "AAAAAAAA",
        "not a JWT": "not-a-jwt",
    }


def test_every_bad_token_is_refused_with_the_sdks_401(
    served: Served, oauth_issuer: LocalIssuer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tokens = forged(oauth_issuer, served.url)
    for kind, token in tokens.items():
        answer = served.post(token=token)
        assert answer.status_code == 401, kind
        assert_unauthorized(served, answer)
    for token in tokens.values():
        assert token not in caplog.text
    assert "refused a bearer token: it has expired" in caplog.text


@pytest.mark.parametrize(
    "authorization",
    [None, "Basic dXNlcjpwYXNz", "Bearer", "Token abc", "bearer"],
)
def test_a_missing_or_malformed_authorization_header_is_refused(
    served: Served, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"authorization": authorization}
    assert_unauthorized(served, served.post(**headers))


@pytest.mark.parametrize(
    "headers",
    [
        [(b"authorization", b"Bearer abc")],
        [(b"authorization", b"bearer abc")],
        [(b"authorization", b"BEARER  abc")],
        [(b"authorization", b"Bearer ")],
        [(b"authorization", b"Bearer")],
        [(b"authorization", b"Basic abc")],
        [(b"authorization", b"Bearer \xe9t\xe9")],
        [(b"authorization", b"Bearer first"), (b"authorization", b"Bearer second")],
        [(b"authorization", b"Basic abc"), (b"authorization", b"Bearer second")],
        [(b"Authorization", b"Bearer abc")],
        [(b"x-other", b"Bearer abc")],
        [],
    ],
)
async def test_the_front_reads_a_bearer_token_as_the_sdks_check_does(
    headers: list[tuple[bytes, bytes]],
) -> None:
    """The front's check reads the token the SDK's ``BearerAuthBackend`` would verify."""
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
    from starlette.requests import HTTPConnection

    from mcp_runtime.sdk.bearer import bearer_token

    verified: list[str] = []

    class Recording:
        async def verify_token(self, token: str) -> None:
            verified.append(token)

    scope = {"type": "http", "headers": headers}
    await BearerAuthBackend(Recording()).authenticate(HTTPConnection(scope))
    assert bearer_token(scope) == (verified[0] if verified else None)


def test_an_unauthenticated_request_is_refused_before_its_body_is_read(served: Served) -> None:
    """A body the front would refuse (too deep, too large) gets the 401 instead: unread."""
    nested: object = []
    for _ in range(200):
        nested = [nested]
    too_deep = {"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"value": nested}}
    assert_unauthorized(served, served.post(too_deep))
    big = {"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"text": "x" * 5_000_000}}
    assert_unauthorized(served, served.post(big))


def counting_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tokens whose signature and claims are checked from now on, one entry a check."""
    checked: list[str] = []
    claims_of = JwtVerifier._claims

    async def counting(self: JwtVerifier, token: str) -> dict[str, Any]:
        checked.append(token)
        return await claims_of(self, token)

    monkeypatch.setattr(JwtVerifier, "_claims", counting)
    return checked


def test_a_token_is_checked_once_for_all_the_requests_that_send_it(
    served: Served, oauth_issuer: LocalIssuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The front's check and the SDK's check of one request, and the requests after it
    with the same token, share one verification; another token is checked on its own."""
    checked = counting_checks(monkeypatch)
    token = oauth_issuer.token(audience=served.url)
    assert served.post(token=token).status_code == 200
    assert checked == [token]
    assert served.post(token=token).status_code == 200
    assert checked == [token]
    other = oauth_issuer.token(audience=served.url, subject="user-2")
    assert served.post(token=other).status_code == 200
    assert checked == [token, other]


# --- what stays open ----------------------------------------------------------------


def test_the_protected_resource_metadata_is_served_without_a_token(
    served: Served, oauth_issuer: LocalIssuer
) -> None:
    answer = httpx2.get(served.metadata_url)
    assert answer.status_code == 200
    assert answer.json() == {
        "resource": served.url,
        "authorization_servers": [oauth_issuer.issuer],  # as configured: the issuer's id
        "bearer_methods_supported": ["header"],
    }


def test_health_and_readiness_need_no_token(served: Served) -> None:
    assert httpx2.get(f"{served.base_url}/healthz").status_code == 200
    assert httpx2.get(f"{served.base_url}/readyz").status_code == 200


# --- scopes -------------------------------------------------------------------------


def test_scopes_every_call_needs_are_refused_403_and_advertised(oauth_issuer: LocalIssuer) -> None:
    with Served(oauth_issuer, oauth_scopes=("mcp.access",)) as served:
        without = served.post(token=oauth_issuer.token(audience=served.url, scopes=["other"]))
        granted = oauth_issuer.token(audience=served.url, scopes=["mcp.access"])
        with_scope = served.post(token=granted)
        metadata = httpx2.get(served.metadata_url).json()
    assert without.status_code == 403
    assert without.headers["www-authenticate"] == served.challenge(
        "insufficient_scope", "Required scope: mcp.access"
    )
    assert without.json() == {
        "error": "insufficient_scope",
        "error_description": "Required scope: mcp.access",
    }
    assert with_scope.status_code == 200
    assert metadata["scopes_supported"] == ["mcp.access"]


async def test_a_tool_refuses_a_caller_without_its_scopes(
    served: Served, oauth_issuer: LocalIssuer
) -> None:
    token = oauth_issuer.token(audience=served.url, scopes=["profile"])
    async with connect_http(served.url, headers=bearer(token)) as session:
        refused = await session.call_tool("greet", {})
        other = await session.call_tool("caller", {})
    assert refused.is_error is True
    assert refused.structured_content is None
    assert [block.model_dump()["text"] for block in refused.content] == [SCOPE_REFUSED]
    assert other.is_error is False


async def test_local_calls_are_not_checked() -> None:
    server = build_server([Toolset("auth", (caller, greet))], name="auth")
    async with connect(server) as session:
        local = await session.call_tool("greet", {})
        nobody = await session.call_tool("caller", {})
    assert local.structured_content == {"message": "Hello!"}
    assert nobody.structured_content == {"message": "no caller"}


async def test_using_caller_serves_direct_calls_and_their_scopes_are_checked() -> None:
    server = build_server([Toolset("auth", (caller, greet))], name="auth")
    bob = Caller(subject="bob", scopes=frozenset({"profile"}))
    with using_caller(bob):
        refused = await server.call_tool("greet", {})
        direct = await caller.ainvoke({})
    assert isinstance(refused, CallToolResult)
    assert refused.is_error is True
    assert [block.model_dump()["text"] for block in refused.content] == [SCOPE_REFUSED]
    assert direct == {"message": "caller bob", "subject": "bob", "scopes": ["profile"]}
    assert current_caller() is None


# --- signing keys -------------------------------------------------------------------


async def test_a_rotated_key_verifies_after_one_fetch_and_the_old_one_fails(
    oauth_issuer: LocalIssuer,
) -> None:
    with Served(oauth_issuer, oauth_jwks_refetch_seconds=0) as served:
        old = oauth_issuer.token(audience=served.url)
        assert served.post(token=old).status_code == 200
        assert oauth_issuer.fetches == 1
        oauth_issuer.rotate()
        new = oauth_issuer.token(audience=served.url)
        assert served.post(token=new).status_code == 200
        assert oauth_issuer.fetches == 2
        assert_unauthorized(served, served.post(token=old))


def verifier(issuer: LocalIssuer, *, lifetime: float = 600, min_interval: float = 0) -> JwtVerifier:
    keys = JwksCache(issuer.jwks_url, lifetime=lifetime, min_interval=min_interval)
    resource = "https://mcp.example.com/mcp"
    return JwtVerifier(issuer=issuer.issuer, resource_url=resource, keys=keys, algorithms=["RS256"])


async def test_a_remembered_token_answers_with_its_own_access_and_is_kept_as_a_digest(
    oauth_issuer: LocalIssuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    checking = verifier(oauth_issuer)
    checked = counting_checks(monkeypatch)
    token = oauth_issuer.token(audience=checking.resource_url, scopes=["read"], subject="ada")
    first = await checking.verify_token(token)
    again = await checking.verify_token(token)
    assert first is not None
    assert checked == [token]
    assert again == first  # the same access, with the token the request presented
    assert (again.token, again.subject, again.scopes) == (token, "ada", ["read"])
    kept = repr(checking.verified._entries)
    assert token not in kept
    assert token.split(".")[2] not in kept  # nor its signature
    assert [len(key) for key in checking.verified._entries] == [32]


async def test_a_remembered_token_is_checked_again_once_it_expires(
    oauth_issuer: LocalIssuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token is remembered until its ``exp`` plus the leeway the check allows, and no
    longer: then its check runs, and refuses it."""
    checking = verifier(oauth_issuer)
    checked = counting_checks(monkeypatch)
    # Expired 27 s ago: still within the 30 s of leeway, for two to three seconds more
    # (``exp`` is in whole seconds), time enough for two checks on a busy machine.
    token = oauth_issuer.token(audience=checking.resource_url, expires_in=-27)
    assert await checking.verify_token(token) is not None
    assert await checking.verify_token(token) is not None
    assert checked == [token]
    await anyio.sleep(3.1)
    assert await checking.verify_token(token) is None
    assert checked == [token, token]


async def test_a_remembered_token_is_checked_again_once_the_keys_are_due_a_fetch(
    oauth_issuer: LocalIssuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys past their lifetime are fetched again, and each token checked with them: a key
    the issuer has withdrawn stops verifying its tokens."""
    checking = verifier(oauth_issuer)
    checked = counting_checks(monkeypatch)
    token = oauth_issuer.token(audience=checking.resource_url)
    assert await checking.verify_token(token) is not None
    assert await checking.verify_token(token) is not None
    assert (len(checked), oauth_issuer.fetches) == (1, 1)
    oauth_issuer.rotate()
    checking.keys.lifetime = 0  # the keys fetched are past their lifetime from now on
    await anyio.sleep(0.01)
    assert await checking.verify_token(token) is None
    assert (len(checked), oauth_issuer.fetches) == (2, 2)


async def test_the_remembered_tokens_are_bounded_the_first_remembered_forgotten_first(
    oauth_issuer: LocalIssuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    checking = verifier(oauth_issuer)
    checking.verified = VerifiedTokens(size=2)
    checked = counting_checks(monkeypatch)
    first, second, third = (
        oauth_issuer.token(audience=checking.resource_url, subject=name) for name in "abc"
    )
    for token in (first, second, third, third, second):
        assert await checking.verify_token(token) is not None
    assert checked == [first, second, third]
    assert len(checking.verified) == 2
    assert await checking.verify_token(first) is not None
    assert checked == [first, second, third, first]
    refused = oauth_issuer.token(audience="https://elsewhere.example.com/mcp")
    assert await checking.verify_token(refused) is None
    assert await checking.verify_token(refused) is None
    assert checked[-2:] == [refused, refused]  # a refused token is never remembered


async def test_unknown_key_ids_fetch_the_keys_at_most_once_a_while(
    oauth_issuer: LocalIssuer,
) -> None:
    checking = verifier(oauth_issuer, min_interval=3600)
    audience = checking.resource_url
    assert await checking.verify_token(oauth_issuer.token(audience=audience)) is not None
    for number in range(20):
        token = oauth_issuer.token(audience=audience, key_id=f"made-up-{number}")
        assert await checking.verify_token(token) is None
    assert oauth_issuer.fetches == 1


async def test_concurrent_misses_share_one_fetch(oauth_issuer: LocalIssuer) -> None:
    checking = verifier(oauth_issuer)
    token = oauth_issuer.token(audience=checking.resource_url)
    results: list[object] = []

    async def verify() -> None:
        results.append(await checking.verify_token(token))

    async with anyio.create_task_group() as group:
        for _ in range(10):
            group.start_soon(verify)
    assert all(result is not None for result in results)
    assert oauth_issuer.fetches == 1


async def test_a_failed_fetch_keeps_the_known_keys_and_is_logged(
    oauth_issuer: LocalIssuer, caplog: pytest.LogCaptureFixture
) -> None:
    checking = verifier(oauth_issuer, lifetime=0.001)
    token = oauth_issuer.token(subject="carol", audience=checking.resource_url)
    assert await checking.verify_token(token) is not None
    oauth_issuer.failing = True
    await anyio.sleep(0.01)
    verified = await checking.verify_token(token)
    assert verified is not None
    assert verified.subject == "carol"
    assert oauth_issuer.fetches == 2
    [line] = [record.getMessage() for record in caplog.records if "signing keys" in record.msg]
    assert line == (
        f"could not fetch the signing keys from {oauth_issuer.jwks_url} (HTTPStatusError); "
        "keeping the 1 known"
    )
    assert token not in caplog.text


# --- the served command -------------------------------------------------------------


async def test_serve_verifies_tokens_and_never_logs_them(oauth_issuer: LocalIssuer) -> None:
    resource = "https://mcp.example.com/mcp"
    token = oauth_issuer.token(subject="dave", audience=resource)
    stale = oauth_issuer.token(subject="dave", audience=resource, expires_in=-120)
    env = {**oauth_issuer.environment(resource), "MCP_LOG_LEVEL": "DEBUG"}
    with serve_http(env=env) as url:
        async with connect_http(url, headers=bearer(token)) as session:
            listing = await session.list_tools()
        refused = httpx2.post(url, headers={**HEADERS, **bearer(stale)}, json=LIST)
        missing = httpx2.post(url, headers=HEADERS, json=LIST)
    assert listing.tools
    assert (refused.status_code, missing.status_code) == (401, 401)
    metadata_url = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    assert missing.headers["www-authenticate"] == (
        'Bearer error="invalid_token", error_description="Authentication required", '
        f'resource_metadata="{metadata_url}"'
    )


# --- dev-token: a local key, verified as an issuer's -----------------------------------


def dev_token_lines(
    capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[str, dict[str, str], str]:
    """Run ``dev-token`` with ``args``: the token, the settings it printed, its stderr."""
    assert main(["dev-token", *args]) == 0
    output = capsys.readouterr()
    token, *lines = output.out.splitlines()
    return token, dict(line.split("=", 1) for line in lines), output.err


def settings_of(printed: dict[str, str]) -> ServiceSettings:
    return ServiceSettings.model_validate(
        {name.removeprefix("MCP_").lower(): value for name, value in printed.items()}
    )


async def test_dev_token_prints_a_token_and_the_settings_that_verify_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    token, printed, explained = dev_token_lines(
        capsys, "--subject", "ada", "--scopes", "forecasts:read, profile"
    )
    assert printed == {
        "MCP_AUTH": "oauth",
        "MCP_OAUTH_ISSUER": "http://localhost/dev-issuer",
        "MCP_OAUTH_JWKS_URL": (tmp_path / ".dev-issuer" / "jwks.json").as_uri(),
        "MCP_RESOURCE_URL": "http://localhost:8000/mcp",
    }
    assert explained.startswith(
        "A development token for ada (scopes: forecasts:read, profile), valid 24 hours for "
        "http://localhost:8000/mcp, signed by the key in .dev-issuer/."
    )
    assert token not in explained
    assert (tmp_path / ".dev-issuer" / "signing-key.pem").stat().st_mode & 0o777 == 0o600
    verifier = JwtVerifier.from_settings(settings_of(printed))
    access = await verifier.verify_token(token)
    assert access is not None
    assert (access.subject, access.scopes) == ("ada", ["forecasts:read", "profile"])

    # The key is kept: a second token has the same settings, and the first stays valid.
    again, reprinted, _ = dev_token_lines(
        capsys, "--scopes", "", "--resource-url", "https://mcp.example.com/mcp"
    )
    assert reprinted == {**printed, "MCP_RESOURCE_URL": "https://mcp.example.com/mcp"}
    assert await JwtVerifier.from_settings(settings_of(printed)).verify_token(token) is not None
    moved = JwtVerifier.from_settings(settings_of(reprinted))
    assert await moved.verify_token(again) is not None
    assert await moved.verify_token(token) is None  # issued for another audience


async def test_a_token_not_signed_by_the_kept_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    token, printed, _ = dev_token_lines(capsys, "--scopes", "")
    kept = SigningKey.from_pem((tmp_path / ".dev-issuer" / "signing-key.pem").read_bytes())
    impostor = SigningKey.generate().token(
        issuer=DEV_ISSUER,
        subject="developer",
        audience=printed["MCP_RESOURCE_URL"],
        key_id=kept.key_id,
    )
    header, claims, _ = token.split(".")
    swapped = ".".join([header, claims, impostor.split(".")[2]])
    verifier = JwtVerifier.from_settings(settings_of(printed))
    assert await verifier.verify_token(impostor) is None
    assert await verifier.verify_token(swapped) is None
    assert await verifier.verify_token(token) is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scopes", "read write"], "'read write' is not an OAuth scope: separate scopes"),
        (["--hours", "0"], "0 is not a number of hours (above 0, to 8784)"),
        (["--hours", "soon"], "'soon' is not a number of hours"),
    ],
)
def test_dev_token_refuses_bad_options(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["dev-token", *args])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert message in error
    assert "Traceback" not in error


def test_dev_token_says_when_the_kept_key_is_not_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".dev-issuer").mkdir()
    (tmp_path / ".dev-issuer" / "signing-key.pem").write_text("not a key\n")
    assert main(["dev-token"]) == 2
    output = capsys.readouterr()
    assert output.out == ""
    assert output.err.startswith(f"error: cannot keep the development key in {tmp_path}")
    assert output.err.endswith("or delete .dev-issuer/ to make a new key\n")
    assert "Traceback" not in output.err


def test_a_jwks_file_url_must_name_an_absolute_path() -> None:
    assert ServiceSettings(oauth_jwks_url="file:///run/keys/jwks.json").oauth_jwks_url == (
        "file:///run/keys/jwks.json"
    )
    with pytest.raises(SettingsError) as caught:
        load_settings(oauth_jwks_url="file:jwks.json")
    assert str(caught.value) == (
        "bad setting MCP_OAUTH_JWKS_URL: Value error, a file URL must name an absolute "
        "path, such as file:///etc/mcp/jwks.json"
    )
    with pytest.raises(SettingsError):
        load_settings(oauth_issuer="file:///run/keys/jwks.json")


async def test_an_unreadable_jwks_file_keeps_the_known_keys_and_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = JwksCache((tmp_path / "missing.json").as_uri(), lifetime=600, min_interval=0)
    assert await keys.key("any") is None
    assert "could not fetch the signing keys from file://" in caplog.text
    assert "(FileNotFoundError); keeping the 0 known" in caplog.text


# --- settings -----------------------------------------------------------------------

MISSING_ALL = (
    "bad setting MCP_AUTH=oauth: serving over HTTP needs MCP_OAUTH_ISSUER (the "
    "authorization server's issuer URL, its tokens' `iss`); MCP_OAUTH_JWKS_URL (the URL of "
    "its signing keys, its JWKS); MCP_RESOURCE_URL (this service's public MCP endpoint URL, "
    "such as https://mcp.example.com/mcp). Set them to your authorization server's "
    "(docs/authentication.md). On your own machine, {dev_token} prints a development token "
    "and the settings that verify it; or set MCP_AUTH=none to serve without authentication"
)


def test_incomplete_oauth_settings_are_refused_with_what_is_missing() -> None:
    with pytest.raises(SettingsError) as caught:
        require_http_auth(ServiceSettings(auth="oauth"))
    assert str(caught.value) == MISSING_ALL.format(dev_token="the `dev-token` command")
    with pytest.raises(SettingsError) as caught:
        require_http_auth(
            ServiceSettings(
                auth="oauth",
                oauth_issuer="https://auth.example.com",
                oauth_jwks_url="https://auth.example.com/jwks",
            )
        )
    assert str(caught.value).startswith(
        "bad setting MCP_AUTH=oauth: serving over HTTP needs MCP_RESOURCE_URL (this"
    )
    require_http_auth(ServiceSettings(auth="none"))


def test_serve_refuses_incomplete_oauth_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_AUTH", "oauth")
    for name in ("MCP_OAUTH_ISSUER", "MCP_OAUTH_JWKS_URL", "MCP_RESOURCE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["serve"]) == 2
    refused = capsys.readouterr().err
    dev_token = re.search(r"`uv run [a-z0-9-]+ dev-token`", refused)  # the service's command
    assert dev_token is not None, refused
    assert refused == f"error: {MISSING_ALL.format(dev_token=dev_token[0])}\n"


URL_PROBLEM = (
    "Value error, must be an absolute https URL, such as https://auth.example.com (http only "
    "for localhost or 127.0.0.1, in development)"
)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("oauth_issuer", "http://auth.example.com"),
        ("oauth_jwks_url", "auth.example.com/jwks"),
        ("resource_url", "/mcp"),
        ("resource_url", "ftp://mcp.example.com/mcp"),
    ],
)
def test_urls_must_be_absolute_https(name: str, value: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(**{name: value})
    assert str(caught.value) == f"bad setting MCP_{name.upper()}: {URL_PROBLEM}"


def test_http_urls_are_accepted_on_loopback_only() -> None:
    settings = load_settings(
        oauth_issuer="http://127.0.0.1:9000", resource_url="http://localhost/mcp"
    )
    assert settings.oauth_issuer == "http://127.0.0.1:9000"


@pytest.mark.parametrize("algorithms", ["HS256", "none", "RS256,HS512"])
def test_only_public_key_algorithms_are_accepted(algorithms: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(oauth_algorithms=algorithms)
    refused = ", ".join(name for name in algorithms.split(",") if name != "RS256")
    assert str(caught.value) == (
        f"bad setting MCP_OAUTH_ALGORITHMS: Value error, {refused} not accepted: name "
        "public-key algorithms only, from RS256, RS384, RS512, PS256, PS384, PS512, ES256, "
        "ES384, ES512, EdDSA"
    )


def test_the_answer_sets_the_default_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_runtime.config.service_defaults import AUTH

    monkeypatch.delenv("MCP_AUTH")
    assert ServiceSettings().auth == AUTH


def test_a_token_without_a_subject_is_one_owner_for_calls_tasks_and_data() -> None:
    """Calls, tasks and kept data name their owner by one digest: a verified token whose
    subject is empty (a verifier may allow it) owns by its client, never as ``anonymous``."""
    token = AccessToken(token="opaque", client_id="app", scopes=[], subject="")
    context = SimpleNamespace(request=SimpleNamespace(scope={"user": AuthenticatedUser(token)}))
    caller = caller_of(request_token(context))  # type: ignore[arg-type]
    assert caller == Caller(subject="", client_id="app")
    owner = owner_key(context)  # type: ignore[arg-type]  # a task's owner
    assert owner == owner_digest(caller) == token_owner(token)  # a call's owner (its cancels)
    with using_caller(caller):  # as a task's run restores its caller
        assert owner_digest(current_caller()) == owner  # kept data's owner
    assert owner not in {"anonymous", owner_digest(Caller(subject="", client_id="other"))}
    assert owner != owner_digest(Caller(subject="app"))
