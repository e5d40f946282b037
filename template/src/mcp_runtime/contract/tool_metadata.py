"""What a tool declares about itself besides its schemas: a title, behaviour hints, scopes.

A declaration lives in the LangChain tool's own ``metadata`` dict, under the key
``"mcp"``; :func:`tool_metadata` writes it, and a team may write the same dict by
hand (``my_tool.metadata = {"mcp": {"read_only": True}}``). Every key is optional:

- ``title``: a short human-readable name; by default the tool's name in words
  (``get_forecast``: "Get forecast");
- ``read_only``, ``destructive``, ``idempotent``, ``open_world``: the MCP behaviour
  hints, served explicitly with the MCP defaults (not read-only, destructive, not
  idempotent, open world), except that a read-only tool is by default not
  destructive and idempotent;
- ``scopes``: the OAuth scopes a caller's token must hold to call the tool;
- ``max_threads``: the tool threads a sync tool may hold at once, instead of the
  service's ``MCP_TOOL_THREADS_PER_TOOL`` (at most ``MCP_TOOL_THREADS``);
- ``task``: ``"optional"`` when a client may call the tool as an MCP task (a long job
  it polls), ``"required"`` when only as one; by default it is never one;
- ``task_headers``: the request headers a task tool reads in its tasks (with
  ``request_header``): they are kept with each task, sealed, for a run that takes the
  task over; a bearer token never is (the caller is kept, see ``current_caller``);
- ``meta``: JSON served as the tool's ``_meta``.

:func:`read_declaration` reads a declaration into :class:`ToolMetadata`, with every
problem it finds; the gate refuses a tool with any.
"""

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from langchain_core.tools import BaseTool
from mcp.types import ToolAnnotations

__all__ = [
    "METADATA_KEY",
    "TASK_SUPPORT",
    "TaskSupport",
    "ToolMetadata",
    "read_declaration",
    "title_of",
    "tool_metadata",
]

METADATA_KEY = "mcp"
HINTS = ("read_only", "destructive", "idempotent", "open_world")
KEYS = ("title", *HINTS, "scopes", "max_threads", "task", "task_headers", "meta")
TASK_SUPPORT = ("optional", "required")
# RFC 6749, section 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
# RFC 9110, section 5.1: field-name = token
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
# The MCP specification's `_meta` key: an optional prefix of dot-separated labels and a
# slash, then a name that is empty or starts and ends with a letter or digit.
LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
META_KEY = re.compile(
    rf"(?:(?P<prefix>{LABEL}(?:\.{LABEL})*)/)?(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?"
)
RESERVED_LABELS = frozenset({"modelcontextprotocol", "mcp"})

ToolT = TypeVar("ToolT", bound=BaseTool)
TaskSupport = Literal["optional", "required"]


@dataclass(frozen=True)
class ToolMetadata:
    """A tool's declaration, with the defaults filled in."""

    title: str
    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True
    scopes: tuple[str, ...] = ()
    max_threads: int | None = None
    task: TaskSupport | None = None
    task_headers: tuple[str, ...] = ()
    meta: dict[str, Any] | None = None

    def annotations(self) -> ToolAnnotations:
        """The four hints as MCP serves them, each explicit."""
        return ToolAnnotations(
            readOnlyHint=self.read_only,
            destructiveHint=self.destructive,
            idempotentHint=self.idempotent,
            openWorldHint=self.open_world,
        )


def tool_metadata(
    *,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    scopes: Sequence[str] | None = None,
    max_threads: int | None = None,
    task: TaskSupport | None = None,
    task_headers: Sequence[str] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Callable[[ToolT], ToolT]:
    """Declare a tool's title, hints, scopes, thread limit, task support, the headers its
    tasks read and ``_meta``; use it above ``@tool``.

    Records the arguments given in the tool's ``metadata["mcp"]``; the gate checks them.
    """
    given = {
        "title": title,
        "read_only": read_only,
        "destructive": destructive,
        "idempotent": idempotent,
        "open_world": open_world,
        "scopes": scopes,
        "max_threads": max_threads,
        "task": task,
        "task_headers": task_headers,
        "meta": meta,
    }
    declaration = {key: value for key, value in given.items() if value is not None}

    def declare(tool: ToolT) -> ToolT:
        if not isinstance(tool, BaseTool):
            raise TypeError(
                "@tool_metadata(...) declares a LangChain tool's metadata: put it above @tool"
            )
        tool.metadata = {**(tool.metadata or {}), METADATA_KEY: declaration}
        return tool

    return declare


def title_of(name: str) -> str:
    """A tool's default title: its name in words, capitalized (``get_forecast``: "Get forecast")."""
    words = " ".join(re.split(r"[_.\-]+", name)).strip()
    return words[:1].upper() + words[1:] if words else name


def read_declaration(tool: BaseTool) -> tuple[ToolMetadata, list[tuple[str, str]]]:
    """``tool``'s metadata, and each problem of its declaration as (problem, fix)."""
    declared = (tool.metadata or {}).get(METADATA_KEY, {})
    if not isinstance(declared, Mapping):
        problem = f'metadata["{METADATA_KEY}"] is {_type_in_words(declared)}, not a dict'
        return ToolMetadata(title_of(tool.name)), [(problem, DECLARE_FIX)]
    problems: list[tuple[str, str]] = []
    unknown = sorted(str(key) for key in declared if key not in KEYS)
    if unknown:
        problems.append(
            (
                f"the declaration has unknown keys: {', '.join(unknown)}",
                f"use only {', '.join(KEYS[:-1])} and {KEYS[-1]}",
            )
        )
    title = declared.get("title", title_of(tool.name))
    if "title" in declared and not (isinstance(title, str) and title.strip()):
        kind = "empty" if isinstance(title, str) else f"{_type_in_words(title)}, not a str"
        problems.append((f"`title` is {kind}", TITLE_FIX))
        title = title_of(tool.name)
    hints: dict[str, bool | None] = {}
    for hint in HINTS:
        value = declared.get(hint)
        hints[hint] = value if isinstance(value, bool) else None
        if value is not None and not isinstance(value, bool):
            problems.append(
                (
                    f"`{hint}` is {_type_in_words(value)}, not True or False",
                    f"declare {hint}=True or {hint}=False, or leave it out for the default",
                )
            )
    read_only = bool(hints.get("read_only"))
    if read_only and hints.get("destructive"):
        problems.append(
            (
                "the tool is declared read-only and destructive",
                "a read-only tool changes nothing: drop destructive=True, or declare "
                "read_only=False",
            )
        )
    scopes, found = _scopes(declared.get("scopes", ()))
    problems += found
    max_threads = declared.get("max_threads")
    whole = isinstance(max_threads, int) and not isinstance(max_threads, bool)
    if max_threads is not None and not (whole and max_threads >= 1):
        kind = f"{max_threads}" if whole else _type_in_words(max_threads)
        problems.append(
            (
                f"`max_threads` is {kind}, not a whole number of threads of at least 1",
                "declare max_threads=4, say, or leave it out for the service's "
                "MCP_TOOL_THREADS_PER_TOOL",
            )
        )
        max_threads = None
    task = declared.get("task")
    if task is not None and task not in TASK_SUPPORT:
        kind = repr(task) if isinstance(task, str) else _type_in_words(task)
        problems.append(
            (
                f'`task` is {kind}, not "optional" or "required"',
                'declare task="optional" (a client may call the tool as a task) or '
                'task="required" (only as a task), or leave it out for a tool that never is one',
            )
        )
        task = None
    task_headers, found = _task_headers(declared.get("task_headers", ()), task)
    problems += found
    meta, found = _meta(declared.get("meta"))
    problems += found
    metadata = ToolMetadata(
        title=title,
        read_only=read_only,
        destructive=_default(hints["destructive"], not read_only),
        idempotent=_default(hints["idempotent"], read_only),
        open_world=_default(hints["open_world"], True),
        scopes=scopes,
        max_threads=max_threads,
        task=task,
        task_headers=task_headers,
        meta=meta,
    )
    return metadata, problems


DECLARE_FIX = "declare it with @tool_metadata(...) above @tool, or as a dict such as " + (
    '{"title": "Get forecast", "read_only": True}'
)
TITLE_FIX = 'give a short human-readable title, such as "Get forecast", or leave it out'
SCOPES_FIX = 'declare scopes as a list of scope names, such as scopes=("forecasts:read",)'
META_FIX = "use JSON values: str, int, float, bool, None, lists, and dicts with str keys"


def _default(value: bool | None, default: bool) -> bool:
    return default if value is None else value


def _scopes(value: object) -> tuple[tuple[str, ...], list[tuple[str, str]]]:
    if not isinstance(value, list | tuple):
        return (), [(f"`scopes` is {_type_in_words(value)}, not a list of scope names", SCOPES_FIX)]
    problems = []
    for scope in value:
        if not isinstance(scope, str):
            problems.append(
                (f"`scopes` holds {_type_in_words(scope)}, not a scope name", SCOPES_FIX)
            )
        elif not SCOPE_TOKEN.fullmatch(scope):
            problems.append(
                (
                    f"`scopes` holds {scope!r}, which is not an OAuth scope (RFC 6749: one or "
                    'more printable ASCII characters, without spaces, `"` or `\\`)',
                    'name each scope on its own, such as scopes=("read", "write")',
                )
            )
    if problems:
        return (), problems
    return tuple(dict.fromkeys(value)), []


TASK_HEADERS_FIX = 'declare the headers as a list of names, such as task_headers=["x-api-key"]'


def _task_headers(
    value: object, task: TaskSupport | None
) -> tuple[tuple[str, ...], list[tuple[str, str]]]:
    if not isinstance(value, list | tuple):
        kind = _type_in_words(value)
        return (), [(f"`task_headers` is {kind}, not a list of header names", TASK_HEADERS_FIX)]
    problems = []
    for name in value:
        if not isinstance(name, str) or not HEADER_NAME.fullmatch(name):
            shown = repr(name) if isinstance(name, str) else _type_in_words(name)
            problems.append((f"`task_headers` holds {shown}, not a header name", TASK_HEADERS_FIX))
        elif name.lower() in CREDENTIAL_HEADERS:
            problems.append(
                (
                    f"`task_headers` holds {name!r}: a task never keeps the caller's token or "
                    "cookies",
                    "read who called with current_caller() (a task keeps its verified caller), "
                    "and drop the header from task_headers",
                )
            )
    if value and task is None and not problems:
        problems.append(
            (
                "`task_headers` is declared, but the tool never runs as a task",
                'declare task="optional" or task="required", or drop task_headers',
            )
        )
    if problems:
        return (), problems
    return tuple(dict.fromkeys(name.lower() for name in value)), []


def _meta(value: object) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
    if value is None:
        return None, []
    if not isinstance(value, Mapping):
        return None, [(f"`meta` is {_type_in_words(value)}, not a dict", META_FIX)]
    problems = []
    for key in value:
        if not isinstance(key, str):
            problems.append((f"`meta` has the key {key!r}, which is not a str", META_FIX))
            continue
        match = META_KEY.fullmatch(key)
        if match is None:
            problems.append(
                (
                    f"`meta` has the key {key!r}, which is not a valid MCP `_meta` key",
                    "use an optional prefix of dot-separated labels and a slash, then a name "
                    'of letters, digits, "-", "_" or ".", such as "com.example/team"',
                )
            )
        elif _reserved(match["prefix"]):
            problems.append(
                (
                    f"`meta` has the key {key!r}, whose prefix MCP reserves (its second or "
                    "next-to-last label is `mcp` or `modelcontextprotocol`)",
                    'use a prefix of your own, such as "com.example/"',
                )
            )
        where = _not_json(value[key], f"meta[{key!r}]")
        if where:
            problems.append((f"`{where}` is not JSON", META_FIX))
    return (None if problems else dict(value) or None), problems


def _reserved(prefix: str | None) -> bool:
    """Whether MCP reserves ``prefix``: the second label (the 2025-11-25 specification) or
    the next-to-last one (2025-06-18) is ``mcp`` or ``modelcontextprotocol``."""
    labels = prefix.split(".") if prefix else []
    return len(labels) > 1 and bool(RESERVED_LABELS & {labels[1], labels[-2]})


def _not_json(value: object, where: str) -> str | None:
    """Where in ``value`` a value is not JSON (``where`` names ``value``); None if all is."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} ({value})"
    if isinstance(value, list):
        return next(
            (found for i, item in enumerate(value) if (found := _not_json(item, f"{where}[{i}]"))),
            None,
        )
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} (the key {key!r})"
            found = _not_json(item, f"{where}[{key!r}]")
            if found:
                return found
        return None
    return f"{where} ({_type_in_words(value)})"


def _type_in_words(value: object) -> str:
    """A value's kind in a message: its type, never the value (``a str``, ``an int``)."""
    name = type(value).__name__
    return f"an {name}" if name[:1] in "aeiou" else f"a {name}"
