"""The HTTP front, part by part: each answers its own concern and passes the rest on.

Each part is driven alone, over ASGI, in front of an app that records what reached it;
the whole stack, in front of the SDK's app, is what the HTTP tests serve
(test_http.py, test_bad_input.py, test_serving.py).
"""

import asyncio
import json
import logging
from typing import Any

import httpx2
import pytest
from langchain_core.tools import tool
from mcp.server.streamable_http import check_accept_headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_runtime import ToolResult
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.execution.in_flight import RunningCall
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.sdk.http import (
    ACCEPTS_KEPT,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
    accepts_json,
    accepts_sse,
)
from mcp_runtime.serving.front.answer_form import AnswerForm, SseDeferral, streams
from mcp_runtime.serving.front.authentication import Authentication
from mcp_runtime.serving.front.cancels import CancelMatching
from mcp_runtime.serving.front.direct_calls import DirectAnswers
from mcp_runtime.serving.front.drain import Drain
from mcp_runtime.serving.front.hosts import ADMITTED_KEPT, HostCheck
from mcp_runtime.serving.front.json_rpc import JsonRpcChecks
from mcp_runtime.serving.front.limits import BodyLimits
from mcp_runtime.serving.front.methods import MethodPolicy
from mcp_runtime.serving.front.posted import Posted
from mcp_runtime.serving.front.probes import Probes
from mcp_runtime.serving.front.scrapes import Scrapes
from mcp_runtime.serving.http_app import MCP_PATH, front
from mcp_runtime.serving.server import build_server
from mcp_runtime.testing import LocalIssuer

pytestmark = pytest.mark.anyio

MODERN = {"mcp-protocol-version": "2026-07-28"}


class Downstream:
    """The app behind a part: it answers 200 and records each request that reached it,
    with the body it received and what the front left in its :class:`Posted`."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.during: list[int] = []  # what a probe reads while a request is being served
        self.probe: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        messages: list[Message] = []
        if scope["method"] == "POST":
            messages.append(await receive())
        if self.probe is not None:
            self.during.append(self.probe())
        self.seen.append(
            {
                "method": scope["method"],
                "path": scope["path"],
                "messages": messages,
                "posted": scope.get("mcp_runtime.posted"),
            }
        )
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"downstream"})


async def request(
    app: ASGIApp,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> httpx2.Response:
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://service") as client:
        return await client.request(method, path, content=body, headers=headers)


async def raw_status(app: ASGIApp, scope: Scope) -> int:
    """The status ``app`` answers the request of ``scope`` (its headers as they are,
    repeated names and all) with."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = sent[0]["status"]
    assert isinstance(status, int)
    return status


# --- Probes -----------------------------------------------------------------------------


async def lifespan(app: ASGIApp, *incoming: str) -> list[str]:
    """Drive ``app``'s lifespan with ``incoming`` messages; the types it sent back."""
    pending: list[Message] = [{"type": kind} for kind in incoming]
    sent: list[str] = []

    async def receive() -> Message:
        return pending.pop(0)

    async def send(message: Message) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan"}, receive, send)
    return sent


class LifespanApp:
    """An app whose lifespan completes startup and shutdown, as the SDK's does."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            await send({"type": f"{message['type']}.complete"})
            if message["type"] == "lifespan.shutdown":
                return


async def test_probes_are_ready_once_the_app_has_started_and_not_once_it_stops() -> None:
    probes = Probes(LifespanApp(), state=ServiceState(), tools=3)
    assert (await request(probes, "GET", "/healthz")).json() == {"status": "ok"}
    not_ready = await request(probes, "GET", "/readyz")
    assert (not_ready.status_code, not_ready.json()) == (503, {"status": "not ready"})
    await lifespan(probes, "lifespan.startup", "lifespan.shutdown")
    assert probes.ready is False
    probes.ready = True  # as between startup and shutdown
    ready = await request(probes, "GET", "/readyz")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready", "tools": 3})


async def test_probes_say_draining_and_pass_every_other_request_on() -> None:
    state, downstream = ServiceState(), Downstream()
    probes = Probes(downstream, state=state, tools=1)
    probes.ready = True
    state.calls.begin_draining()
    draining = await request(probes, "GET", "/readyz")
    assert (draining.status_code, draining.json()) == (503, {"status": "draining"})
    assert (await request(probes, "POST", "/readyz", b"{}")).text == "downstream"
    assert [(seen["method"], seen["path"]) for seen in downstream.seen] == [("POST", "/readyz")]


# --- Scrapes ----------------------------------------------------------------------------


async def test_scrapes_answer_404_when_metrics_are_off() -> None:
    off = await request(Scrapes(Downstream(), metrics=None), "GET", "/metrics")
    assert (off.status_code, off.json()) == (
        404,
        {"error": "not_found", "detail": "metrics are off in this service (MCP_METRICS=false)"},
    )
    metrics = Downstream()
    on = Scrapes(Downstream(), metrics=metrics)
    assert (await request(on, "GET", "/metrics")).text == "downstream"
    assert [seen["path"] for seen in metrics.seen] == ["/metrics"]


# --- Drain ------------------------------------------------------------------------------


async def test_drain_counts_the_requests_it_passes_on_but_gets() -> None:
    state, downstream = ServiceState(), Downstream()
    downstream.probe = lambda: state.requests.count
    drain = Drain(downstream, state=state, path=MCP_PATH)
    await request(drain, "POST", MCP_PATH, b"{}")
    await request(drain, "DELETE", MCP_PATH)
    await request(drain, "GET", "/elsewhere")
    assert downstream.during == [1, 1, 0]
    assert state.requests.count == 0


async def test_drain_refuses_the_mcp_endpoint_once_draining() -> None:
    state, downstream = ServiceState(), Downstream()
    drain = Drain(downstream, state=state, path=MCP_PATH)
    state.calls.begin_draining()
    refused = await request(drain, "POST", MCP_PATH, b"{}")
    assert (refused.status_code, refused.headers["connection"], refused.json()) == (
        503,
        "close",
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32000,
                "message": "Service unavailable: the server is shutting down; send the "
                "request again",
            },
        },
    )
    await request(drain, "GET", "/.well-known/oauth-protected-resource/mcp")
    assert [seen["path"] for seen in downstream.seen] == [
        "/.well-known/oauth-protected-resource/mcp"
    ]


# --- MethodPolicy -----------------------------------------------------------------------


@pytest.mark.parametrize(("stateless", "passed"), [(True, ["POST", "DELETE"]), (False, None)])
async def test_method_policy_takes_post_and_delete_on_a_stateless_endpoint(
    stateless: bool, passed: list[str] | None
) -> None:
    downstream = Downstream()
    policy = MethodPolicy(downstream, path=MCP_PATH, stateless=stateless)
    answers = {
        method: await request(policy, method, MCP_PATH)
        for method in ("GET", "POST", "DELETE", "PUT")
    }
    expected = passed if passed is not None else ["GET", "POST", "DELETE", "PUT"]
    assert [seen["method"] for seen in downstream.seen] == expected
    if stateless:
        get = answers["GET"]
        assert (get.status_code, get.headers["allow"]) == (405, "POST")
        assert get.json()["error"] == {
            "code": -32600,
            "message": "Method not allowed: GET; this stateless MCP endpoint takes POST (it "
            "has no GET stream)",
        }


# --- Authentication ---------------------------------------------------------------------


@tool
def ping() -> ToolResult:
    """Answer at once."""
    return ToolResult(message="pong")


async def test_authentication_refuses_a_post_without_a_token_and_keeps_a_verified_one(
    oauth_issuer: LocalIssuer,
) -> None:
    from mcp_runtime.sdk.bearer import bearer_check

    resource = "https://mcp.example.com/mcp"
    settings = ServiceSettings.model_validate(
        {
            name.removeprefix("MCP_").lower(): value
            for name, value in oauth_issuer.environment(resource).items()
        }
    )
    server = build_server([Toolset("auth", (ping,))], name="auth", settings=settings)
    downstream = Downstream()
    part = Authentication(downstream, bearer=bearer_check(server), path=MCP_PATH)
    refused = await request(part, "POST", MCP_PATH, b"{}")
    assert refused.status_code == 401
    assert downstream.seen == []
    token = oauth_issuer.token(subject="ada", audience=resource)
    await request(part, "POST", MCP_PATH, b"{}", {"authorization": f"Bearer {token}"})
    [seen] = downstream.seen
    assert seen["posted"].access.subject == "ada"
    assert seen["messages"][0]["body"] == b"{}"  # the body, unread by the check


async def test_without_a_check_authentication_passes_every_request_on() -> None:
    downstream = Downstream()
    part = Authentication(downstream, bearer=None, path=MCP_PATH)
    await request(part, "POST", MCP_PATH, b"{}")
    assert [seen["posted"] for seen in downstream.seen] == [None]


# --- BodyLimits -------------------------------------------------------------------------


async def test_body_limits_pass_the_whole_body_on_once_read() -> None:
    downstream = Downstream()
    limits = BodyLimits(downstream, max_body=12, read_timeout=5)
    await request(limits, "POST", "/anywhere", b'{"a": "\xc3\xa9"}')
    [seen] = downstream.seen
    assert seen["messages"] == [
        {"type": "http.request", "body": b'{"a": "\xc3\xa9"}', "more_body": False}
    ]
    assert (seen["posted"].body, seen["posted"].text) == (b'{"a": "\xc3\xa9"}', '{"a": "é"}')


async def test_body_limits_refuse_one_byte_over_and_what_is_not_utf8() -> None:
    downstream = Downstream()
    limits = BodyLimits(downstream, max_body=10, read_timeout=5)
    at_limit = await request(limits, "POST", MCP_PATH, b"0123456789")
    over = await request(limits, "POST", MCP_PATH, b"0123456789!")
    latin = await request(limits, "POST", MCP_PATH, b'"\xe9"')
    assert at_limit.text == "downstream"
    assert (over.status_code, over.json()["error"]) == (
        413,
        {"code": -32600, "message": "Request body too large: the limit is 10 bytes"},
    )
    assert (latin.status_code, latin.json()["error"]) == (
        400,
        {"code": -32700, "message": "Parse error: the request body is not UTF-8 JSON"},
    )
    assert len(downstream.seen) == 1


# --- JsonRpcChecks ----------------------------------------------------------------------


async def checked(
    body: bytes, headers: dict[str, str] | None = None
) -> tuple[httpx2.Response, list[dict[str, Any]]]:
    """``body`` through BodyLimits then JsonRpcChecks, as the front stacks them: the answer,
    and what reached the app behind them."""
    downstream = Downstream()
    checks = BodyLimits(JsonRpcChecks(downstream, max_depth=4), max_body=1000, read_timeout=5)
    return await request(checks, "POST", MCP_PATH, body, headers), downstream.seen


async def test_json_rpc_checks_parse_once_and_leave_the_message_for_the_parts_after() -> None:
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    answer, [seen] = await checked(json.dumps(message).encode())
    assert answer.text == "downstream"
    assert seen["posted"].message == message


@pytest.mark.parametrize(
    ("headers", "status"), [(None, 200), (MODERN, 400)], ids=["initialize era", "2026-07-28"]
)
async def test_json_rpc_checks_refuse_with_the_requests_id_and_its_eras_status(
    headers: dict[str, str] | None, status: int
) -> None:
    body = b'{"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": 3}}'
    refused, seen = await checked(body, headers)
    assert (refused.status_code, refused.json()) == (
        status,
        {
            "jsonrpc": "2.0",
            "id": "a",
            "error": {
                "code": -32602,
                "message": "Invalid params of tools/call: `name` must be the tool's name, a "
                "string, not a number",
            },
        },
    )
    assert seen == []


async def test_json_rpc_checks_refuse_nesting_past_the_limit_and_pass_what_is_not_json() -> None:
    deep, _ = await checked(b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": [[[1]]]}}')
    assert deep.json()["error"]["message"] == (
        "Invalid request: arrays and objects are nested too deeply; the limit is 4 levels"
    )
    not_json, [seen] = await checked(b"not json")
    assert not_json.text == "downstream"
    assert seen["posted"].message is None


# --- CancelMatching ---------------------------------------------------------------------


def cancel_of(request_id: object) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    ).encode()


async def cancels_the_call(body: bytes, headers: dict[str, str], stateless: bool) -> bool:
    """Whether CancelMatching stops a running call of the request id 5 for ``body``. It reads
    the message from the request's :class:`Posted`, as JsonRpcChecks left it: it parses
    nothing itself (the text it would parse is empty here)."""
    state = ServiceState()

    async def running() -> RunningCall:
        with state.calls.call("slow", "anonymous", 5, None) as call:
            await asyncio.sleep(30)
        return call

    task = asyncio.ensure_future(running())
    await asyncio.sleep(0)
    part = CancelMatching(Downstream(), calls=state.calls, stateless=stateless)
    scope: Scope = {
        "type": "http",
        "method": "POST",
        "path": MCP_PATH,
        "headers": [(name.encode(), value.encode()) for name, value in headers.items()],
    }
    posted = Posted.of(scope)
    posted.body, posted.message = body, json.loads(body)

    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        pass

    await part(scope, receive, send)
    await asyncio.sleep(0.01)
    if task.done():
        return task.result().stopped("client")
    task.cancel()
    return False


@pytest.mark.parametrize(
    ("body", "headers", "stateless", "expected"),
    [
        (cancel_of(5), {}, True, True),
        (cancel_of(6), {}, True, False),
        (cancel_of(5), MODERN, True, False),
        (cancel_of(5), {}, False, False),
    ],
    ids=["its id", "another id", "2026-07-28", "stateful"],
)
async def test_cancel_matching_cancels_the_call_a_2025_cancel_names(
    body: bytes, headers: dict[str, str], stateless: bool, expected: bool
) -> None:
    assert await cancels_the_call(body, headers, stateless) is expected


# --- the stack --------------------------------------------------------------------------


# --- AnswerForm -------------------------------------------------------------------------

CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ping"}}
WITH_PROGRESS = {**CALL, "params": {"name": "ping", "_meta": {"progressToken": "p"}}}
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"x-kept", b"yes")]
ANSWER = b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}'
PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'


@pytest.mark.parametrize(
    ("message", "streamed"),
    [
        (CALL, False),
        (WITH_PROGRESS, True),
        ({**WITH_PROGRESS, "params": {"_meta": {"progressToken": None}}}, False),
        ({k: v for k, v in WITH_PROGRESS.items() if k != "id"}, False),  # a notification
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []}, False),
        ([WITH_PROGRESS], False),
        (None, False),
    ],
)
def test_only_a_request_that_asks_for_progress_may_stream(message: object, streamed: bool) -> None:
    assert streams(message) is streamed


class Answering:
    """An app behind AnswerForm: counts the requests handed to it, then answers a stream."""

    def __init__(self) -> None:
        self.served = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.served += 1
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await send({"type": "http.response.body", "body": b"data: " + ANSWER + b"\r\n\r\n"})


@pytest.mark.parametrize(
    ("message", "headers", "stateless", "json_answer", "content_type"),
    [
        (CALL, {}, True, True, "text/event-stream"),  # the SDK answers JSON itself
        (CALL, MODERN, True, True, "text/event-stream"),
        (WITH_PROGRESS, {}, True, False, "application/json"),  # held back, then JSON
        (WITH_PROGRESS, MODERN, True, False, "application/json"),
        (WITH_PROGRESS, {"accept": "application/json"}, True, True, "text/event-stream"),
        (CALL, {}, False, False, "application/json"),  # a stateful session's
        (CALL, MODERN, False, True, "text/event-stream"),
    ],
)
async def test_answer_form_chooses_json_unless_the_answer_may_stream(
    message: dict[str, Any],
    headers: dict[str, str],
    stateless: bool,
    json_answer: bool,
    content_type: str,
) -> None:
    async def parsed(scope: Scope, receive: Receive, send: Send) -> None:
        Posted.of(scope).message = message
        form = AnswerForm(whole, streaming=streaming, path=MCP_PATH, stateless=stateless)
        await form(scope, receive, send)

    whole, streaming = Answering(), Answering()
    headers = {"accept": "application/json, text/event-stream"} | headers
    answer = await request(parsed, "POST", MCP_PATH, json.dumps(message).encode(), headers)
    assert (whole.served, streaming.served) == ((1, 0) if json_answer else (0, 1))
    assert answer.headers["content-type"] == content_type
    assert answer.content.strip() == (
        ANSWER if content_type == "application/json" else b"data: " + ANSWER
    )


async def deferred(*messages: Message) -> list[Message]:
    """What an SseDeferral sends on, given ``messages``."""
    sent: list[Message] = []

    async def record(message: Message) -> None:
        sent.append(message)

    deferral = SseDeferral(record)
    for message in messages:
        await deferral(message)
    return sent


def start(headers: list[tuple[bytes, bytes]] = SSE_HEADERS) -> Message:
    return {"type": "http.response.start", "status": 200, "headers": headers}


def body(data: bytes, more: bool = True) -> Message:
    return {"type": "http.response.body", "body": data, "more_body": more}


async def test_a_result_sent_first_is_answered_json_with_the_streams_other_headers() -> None:
    sent = await deferred(
        start(),
        body(b": ping\r\n\r\n"),
        body(b"event: message\r\ndata: " + ANSWER[:20]),
        body(ANSWER[20:] + b"\r\n\r\n"),
        body(b"", more=False),
    )
    assert sent == [
        start(
            [
                (b"x-kept", b"yes"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(ANSWER)).encode()),
            ]
        ),
        body(ANSWER, more=False),
    ]


async def test_a_message_before_the_result_opens_the_stream_with_all_held_back() -> None:
    events = b": ping\n\nevent: message\ndata: " + PROGRESS + b"\n\n"
    later = b"event: message\ndata: " + ANSWER + b"\n\n"
    sent = await deferred(start(), body(events), body(later), body(b"", more=False))
    assert sent == [start(), body(events), body(later), body(b"", more=False)]


async def test_answers_that_are_not_streams_pass_as_they_are() -> None:
    plain = start([(b"content-type", b"application/json")])
    assert await deferred(plain, body(ANSWER, more=False)) == [plain, body(ANSWER, more=False)]
    ended = await deferred(start(), body(b": ping\n\n", more=False))
    assert ended == [start(), body(b": ping\n\n", more=False)]


async def test_a_json_answer_is_cancelled_when_its_client_leaves() -> None:
    cancelled = asyncio.Event()

    async def slow(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    messages = [{"type": "http.request", "body": b"{}", "more_body": False}]

    async def receive() -> Message:
        if messages:
            return messages.pop()
        await asyncio.sleep(0.05)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        raise AssertionError("nothing is sent to a client that left")

    scope = {"type": "http", "method": "POST", "path": MCP_PATH, "headers": []}
    Posted.of(scope).message = CALL
    answer_form = AnswerForm(slow, streaming=Answering(), path=MCP_PATH, stateless=True)
    await asyncio.wait_for(answer_form(scope, receive, send), 5)
    assert cancelled.is_set()


def test_the_front_lists_its_parts_in_the_order_a_request_meets_them() -> None:
    settings = ServiceSettings(auth="none")
    server = build_server([Toolset("front", (ping,))], name="front", settings=settings)
    state = ServiceState(settings)
    parts: list[object] = [
        part.cls for part in front(server, settings, state, streaming=Answering())
    ]
    assert parts == [
        Probes,
        Scrapes,
        HostCheck,
        Drain,
        MethodPolicy,
        Authentication,
        BodyLimits,
        JsonRpcChecks,
        CancelMatching,
        AnswerForm,
        DirectAnswers,
    ]


ACCEPTS = [
    None,
    "application/json, text/event-stream",
    "application/json",
    "text/event-stream",
    "*/*",
    "application/*;q=0.5, text/*",
    " Application/JSON ; q=1",
    "text/html",
    "",
]


def test_the_accept_header_is_read_as_the_sdk_reads_it_however_often() -> None:
    """Each Accept header is read as the SDK's own check reads it, on its first and its
    later requests, past the number of readings kept, and only its first header counts."""
    values = ACCEPTS + [f"application/x-{number}" for number in range(2 * ACCEPTS_KEPT)]
    for _ in range(2):
        for value in values:
            headers = [] if value is None else [(b"accept", value.encode())]
            scope = {"type": "http", "headers": [*headers, (b"accept", b"*/*")]}
            expected = check_accept_headers(Request(scope))
            assert (accepts_json(scope), accepts_sse(scope)) == expected, value


async def test_the_host_check_admits_and_refuses_as_the_sdk_does_however_often(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each Host and Origin pair is admitted or refused as the SDK's own check would, on
    its first and later requests and past the pairs kept, by the first header of each
    name; a refused pair is logged each time it comes."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "mcp.example.com"],
        allowed_origins=["https://app.example.com", "http://127.0.0.1:*"],
    )
    sdk = TransportSecurityMiddleware(security)
    pairs: list[list[tuple[bytes, bytes]]] = [
        [(b"host", b"mcp.example.com")],
        [(b"host", b"mcp.example.com"), (b"origin", b"https://app.example.com")],
        [(b"host", b"mcp.example.com"), (b"origin", b"https://evil.example.com")],
        [(b"host", b"evil.example.com")],
        [(b"host", b"evil.example.com"), (b"host", b"mcp.example.com")],
        [(b"host", b"mcp.example.com"), (b"host", b"evil.example.com")],
        [(b"origin", b"https://app.example.com")],
        [(b"host", b"127.0.0.1:1"), (b"origin", b"http://127.0.0.1:2")],
        *([(b"host", f"127.0.0.1:{port}".encode())] for port in range(2 * ADMITTED_KEPT)),
    ]
    check = HostCheck(Downstream(), security=security, path=MCP_PATH)
    for _ in range(2):
        for headers in pairs:
            scope = {"type": "http", "method": "GET", "path": MCP_PATH, "headers": headers}
            refused = await sdk.validate_request(Request(scope), is_post=False)
            expected = 200 if refused is None else refused.status_code
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="mcp_runtime"):
                status = await raw_status(check, scope)
            assert status == expected, headers
            refusals = [r for r in caplog.records if r.getMessage().startswith("Refused")]
            assert len(refusals) == (0 if refused is None else 1), headers
    assert len(check.admitted) <= ADMITTED_KEPT
