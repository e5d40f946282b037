"""Clear answers to requests whose params break the protocol's schema.

The SDK answers such a request ``-32602`` "Invalid request parameters", which names
nothing. :class:`ParamsErrors`, the server's outermost middleware, answers the same
code with what was wrong and where, such as ``Invalid params of tools/list: `cursor`
must be a string, not a number``. It names fields and JSON types, never a value.
"""

import re
from collections.abc import Mapping
from typing import Any

from mcp.types import INVALID_PARAMS
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from mcp_runtime.sdk.hooks import CallNext, MCPError, ServerRequestContext
from mcp_runtime.serving.front.json_rpc import json_kind

__all__ = ["ParamsErrors", "describe"]

EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "an array",
}
"""What a field must be, by the type of pydantic's error."""
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MOST = 3
"""The problems one answer names at most."""
LONGEST_KEY = 64
"""A longer key of the client's is shown as ``*``."""


class ParamsErrors:
    """The server middleware that answers a request's params that break the schema of
    its method (checked by the SDK, or by an extension's params model) with
    :func:`describe`'s account of them, as ``-32602``."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        try:
            return await call_next(ctx)
        except ValidationError as exc:
            if not exc.title.endswith(("Request", "Params")):
                raise  # not the request's params: the SDK's own answer stands
            message = f"Invalid params of {ctx.method}: {describe(exc, ctx.params)}"
            raise MCPError(code=INVALID_PARAMS, message=message) from None


def describe(exc: ValidationError, params: object) -> str:
    """What is wrong with ``params``, by field: what each must be and the JSON type it is.

    ``exc`` is the validation error of a whole request (its fields under ``params``) or
    of its params alone. A field that fails as each member of a union is named once,
    with what it may be.
    """
    whole = exc.title.endswith("Request")
    found: dict[tuple[str | int, ...], tuple[object, list[ErrorDetails]]] = {}
    for error in exc.errors(include_url=False, include_input=False):
        location = tuple(error["loc"])
        if whole and location[:1] == ("params",):
            location = location[1:]
        path, value = _reached(params, location, missing=error["type"] == "missing")
        found.setdefault(path, (value, []))[1].append(error)
    problems = [_problem(path, value, errors) for path, (value, errors) in found.items()]
    more = len(problems) - MOST
    shown = "; ".join(problems[:MOST])
    return f"{shown} (and {more} more)" if more > 0 else shown


class _Missing:
    """A field the request left out."""


MISSING = _Missing()


def _reached(
    params: object, location: tuple[Any, ...], missing: bool
) -> tuple[tuple[str | int, ...], object]:
    """How far ``location`` leads into ``params``, and the value there. It stops where the
    request has no such key or index (a union member's tag, say), unless the error is of
    a field left out, which it names."""
    path: list[str | int] = []
    value: object = params
    for index, part in enumerate(location):
        within_list = isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)
        if within_list or (isinstance(value, Mapping) and part in value):
            value = value[part]  # type: ignore[index]
        elif missing and index == len(location) - 1 and isinstance(value, Mapping):
            value = MISSING
        else:
            break
        path.append(part if isinstance(part, int) else _shown(str(part)))
    return tuple(path), value


def _shown(key: str) -> str:
    return "*" if len(key) > LONGEST_KEY else key


def _field(path: tuple[str | int, ...]) -> str:
    """``path`` as a field of the params: ``cursor``, ``_meta["io.x/y"].extensions``."""
    shown = ""
    for part in path:
        if isinstance(part, int):
            shown += f"[{part}]"
        elif IDENTIFIER.fullmatch(part):
            shown += f".{part}" if shown else part
        else:
            shown += f'["{part}"]'
    return f"`{shown or 'params'}`"


def _problem(path: tuple[str | int, ...], value: object, errors: list[ErrorDetails]) -> str:
    field = _field(path)
    if value is MISSING:
        return f"{field} is required"
    expected = list(dict.fromkeys(EXPECTED[e["type"]] for e in errors if e["type"] in EXPECTED))
    if expected:
        return f"{field} must be {' or '.join(expected)}, not {json_kind(value)}"
    first = errors[0]
    if first["type"] == "literal_error":
        allowed = first.get("ctx", {}).get("expected", "the values its schema allows")
        return f"{field} must be one of {allowed}"
    if first["type"] == "extra_forbidden":
        return f"{field} is not a field of this request"
    return f"{field}: {first['msg']}"
