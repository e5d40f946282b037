"""The JSON-RPC message of a POST, checked for what the SDK would mishandle."""

import json
import re

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_runtime.serving.front.answers import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    error_answer,
    respond_raw,
)
from mcp_runtime.serving.front.posted import Posted

__all__ = ["JsonRpcChecks", "Refusal", "json_kind"]

SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
Answer = tuple[int, bytes]


class JsonRpcChecks:
    """Parses a POST's body once (into the request's :class:`Posted`) and refuses what the
    SDK would mishandle: nesting deeper than ``max_depth``; a string with a lone
    surrogate; a request whose id is neither a string nor an integer, whose ``jsonrpc``
    is not "2.0", whose method is not a string or whose params are not an object; a
    ``tools/call`` whose params are not shaped as the protocol says. Without these the
    SDK answers a request as a notification (202, no answer ever), with no id, or
    repeating the values. A body that is not JSON, a batch or a bare value passes on: the
    SDK refuses it itself. Each refusal is a :class:`Refusal`.
    """

    def __init__(self, app: ASGIApp, *, max_depth: int) -> None:
        self.app = app
        self.max_depth = max_depth
        self.too_deep = f"arrays and objects are nested too deeply; the limit is {max_depth} levels"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            posted = Posted.of(scope)
            problem = self._problem(posted, modern=posted.modern)
            if problem is not None:
                status, answer = problem
                await respond_raw(send, status, answer)
                return
        await self.app(scope, receive, send)

    def _problem(self, posted: Posted, modern: bool) -> Answer | None:
        """The status and error for the posted message; None if it is fine.

        The costlier scan for depth and surrogates runs only when the body has more
        brackets than the depth limit or something that looks like a surrogate escape.
        """
        try:
            message = posted.message = json.loads(posted.text)
        except RecursionError:
            return Refusal(None, modern).invalid_request(self.too_deep)
        except ValueError:
            return None  # not JSON at all: the SDK answers with its parse error
        if not isinstance(message, dict):
            return None  # a batch or a bare value: the SDK refuses it
        refusal = Refusal.of(message, modern)
        if "method" in message and "id" in message and refusal.id is None:
            kind = _id_kind(message["id"])
            return refusal.invalid_request(f"`id` must be a string or an integer, not {kind}")
        body = posted.body
        deep = body.count(b"[") + body.count(b"{") > self.max_depth
        if deep or SURROGATE_ESCAPE.search(body) is not None:
            depth, lone_surrogate = _scan(message)
            if depth > self.max_depth:
                return refusal.invalid_request(self.too_deep)
            if lone_surrogate:
                return refusal.lone_surrogate(*_surrogate_path(message))
        if "method" in message and refusal.id is not None:
            if message.get("jsonrpc") != "2.0":
                return refusal.invalid_request(
                    f'`jsonrpc` must be "2.0", not {json_kind(message.get("jsonrpc"))}'
                )
            if not isinstance(message["method"], str):
                return refusal.invalid_request(
                    f"`method` must be a string, not {json_kind(message['method'])}"
                )
            params = message.get("params")
            if (
                params is not None
                and not isinstance(params, dict)
                and message["method"] != "tools/call"
            ):
                return refusal.answer(
                    INVALID_PARAMS,
                    f"Invalid params: `params` must be an object, not {json_kind(params)}",
                )
        return _call_problem(message, refusal)


class Refusal:
    """The JSON-RPC error answering one request, and its HTTP status.

    The error carries the request's id when it has a usable one (a string or an
    integer), so the client can match it to its request: then it is answered 200 in
    the ``initialize`` era, and 400 from 2026-07-28 (that revision gives these errors
    an HTTP status of their own). Without a usable id, the error's id is null, with 400.
    """

    def __init__(self, request_id: str | int | None, modern: bool) -> None:
        self.id = request_id
        self.status = 200 if request_id is not None and not modern else 400

    @classmethod
    def of(cls, message: dict[str, object], modern: bool) -> "Refusal":
        """The refusal of ``message``: with its id if it is a request with a usable one."""
        request_id = message.get("id") if "method" in message else None
        if isinstance(request_id, str | int) and _usable_id(request_id):
            return cls(request_id, modern)
        return cls(None, modern)

    def answer(self, code: int, message: str) -> Answer:
        return self.status, error_answer(code, message, self.id)

    def invalid_request(self, problem: str) -> Answer:
        return self.answer(INVALID_REQUEST, f"Invalid request: {problem}")

    def lone_surrogate(self, path: tuple[str, ...], in_key: bool) -> Answer:
        """The error for a lone surrogate at ``path``: in a value there, or in a key of it."""
        problem = (
            "a lone UTF-16 surrogate escape (such as \\ud800 without its pair); send valid Unicode"
        )
        params = path[:1] == ("params",)
        shown = ".".join(path[1:] if params and len(path) > 1 else path)
        if in_key:
            place = f"a key in `{shown}` holds" if shown else "a key holds"
        else:
            place = f"`{shown}` holds"
        if params:
            return self.answer(INVALID_PARAMS, f"Invalid params: {place} {problem}")
        return self.invalid_request(f"{place} {problem}")


def json_kind(value: object) -> str:
    """The JSON type of ``value``, in words (``a string``), never the value."""
    if value is None:
        return "null (or missing)"
    kinds = {bool: "a boolean", str: "a string", list: "an array", dict: "an object"}
    return next((word for cls, word in kinds.items() if isinstance(value, cls)), "a number")


def _usable_id(value: object) -> bool:
    """Whether ``value`` is an id the protocol allows: a string or an integer (not null)."""
    if isinstance(value, str):
        return LONE_SURROGATE.search(value) is None
    return isinstance(value, int) and not isinstance(value, bool)


def _id_kind(value: object) -> str:
    if isinstance(value, float):
        return "a number with a fraction or an exponent"
    if isinstance(value, str):
        return "a string holding a lone UTF-16 surrogate escape"
    return "null" if value is None else json_kind(value)


def _call_problem(message: dict[str, object], refusal: Refusal) -> Answer | None:
    """A JSON-RPC error for a ``tools/call`` request whose params are malformed; else None.

    It names the field and the JSON type found, never a value.
    """
    if message.get("method") != "tools/call":
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        problem = f"`params` must be an object with `name` and `arguments`, not {json_kind(params)}"
    elif not isinstance(params.get("name"), str):
        problem = f"`name` must be the tool's name, a string, not {json_kind(params.get('name'))}"
    elif not isinstance(params.get("arguments", {}), dict):
        problem = (
            "`arguments` must be an object of the tool's arguments by name, not "
            f"{json_kind(params['arguments'])}"
        )
    else:
        return None
    return refusal.answer(INVALID_PARAMS, f"Invalid params of tools/call: {problem}")


def _scan(value: object) -> tuple[int, bool]:
    """How deeply ``value`` nests arrays and objects, and whether a string has a lone surrogate."""
    depth = 0
    lone = False
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            depth = max(depth, level)
            lone = lone or any(LONE_SURROGATE.search(key) for key in item)
            pending.extend((child, level + 1) for child in item.values())
        elif isinstance(item, list):
            depth = max(depth, level)
            pending.extend((child, level + 1) for child in item)
        elif isinstance(item, str):
            lone = lone or LONE_SURROGATE.search(item) is not None
    return depth, lone


def _surrogate_path(value: object) -> tuple[tuple[str, ...], bool]:
    """The path to the first lone surrogate in ``value``, and whether it is in a key of what
    that path leads to. Only called once :func:`_scan` has found one.

    A path names keys (``*`` for one longer than 64 characters or holding a lone
    surrogate itself) and list indices.
    """
    pending: list[tuple[object, tuple[str, ...]]] = [(value, ())]
    while pending:
        item, path = pending.pop()
        if isinstance(item, dict):
            if any(LONE_SURROGATE.search(key) for key in item):
                return path, True
            for key, child in reversed(item.items()):
                pending.append((child, (*path, key if len(key) <= 64 else "*")))
        elif isinstance(item, list):
            pending.extend((child, (*path, str(i))) for i, child in reversed(list(enumerate(item))))
        elif isinstance(item, str) and LONE_SURROGATE.search(item):
            return path, False
    return (), False
