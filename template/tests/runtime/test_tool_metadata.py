"""Tool metadata: what tools/list serves for each declaration, and every refusal of the gate."""

from typing import Any

import pytest
from langchain_core.tools import BaseTool, tool

from mcp_runtime import ToolResult, to_mcp_tool, tool_metadata
from mcp_runtime.contract.gate import tool_violations
from mcp_runtime.contract.tool_metadata import title_of
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.serving.server import build_server
from mcp_runtime.testing import connect

pytestmark = pytest.mark.anyio

SPEC_DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}


class CityResult(ToolResult):
    """A city, as the tool saw it."""


@tool_metadata(
    title="Get the forecast",
    read_only=True,
    destructive=False,
    idempotent=True,
    open_world=False,
    scopes=("forecasts:read", "forecasts:read", "cities"),
    meta={"com.example/team": "weather", "tags": ["a", 1, None, {"deep": 1.5}]},
)
@tool
def get_forecast(city: str) -> CityResult:
    """Forecast a city's weather."""
    return CityResult(message=city)


@tool
def delete_city(city: str) -> CityResult:
    """Delete a city."""
    return CityResult(message=city)


@tool_metadata(read_only=True)
@tool
def look_up_city(city: str) -> CityResult:
    """Look a city up."""
    return CityResult(message=city)


@tool
def by_hand(city: str) -> CityResult:
    """Declared without the decorator."""
    return CityResult(message=city)


by_hand.metadata = {
    "other": "kept",
    "mcp": {"title": "By hand", "idempotent": True, "scopes": ["cities"]},
}


async def listing(*tools: BaseTool) -> dict[str, dict[str, Any]]:
    """Each tool's tools/list entry, as a client reads it, without its schemas."""
    server = build_server([Toolset("metadata", tools)], name="metadata")
    async with connect(server) as session:
        listed = (await session.list_tools()).tools
    return {
        entry.name: entry.model_dump(
            mode="json",
            by_alias=True,
            exclude_none=True,
            exclude={"input_schema", "output_schema", "description"},
        )
        for entry in listed
    }


async def test_declared_metadata_is_listed_whole() -> None:
    assert (await listing(get_forecast))["get_forecast"] == {
        "name": "get_forecast",
        "title": "Get the forecast",
        "annotations": {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
        "_meta": {"com.example/team": "weather", "tags": ["a", 1, None, {"deep": 1.5}]},
    }


@pytest.mark.parametrize("support", ["optional", "required"])
async def test_a_task_tool_is_listed_with_its_task_support(support: str) -> None:
    @tool_metadata(task=support)  # type: ignore[arg-type]
    @tool
    def fetch_archive(city: str) -> CityResult:
        """Fetch a city's archive."""
        return CityResult(message=city)

    listed = await listing(fetch_archive, delete_city)
    assert listed["fetch_archive"]["execution"] == {"taskSupport": support}
    assert "execution" not in listed["delete_city"]


async def test_a_tool_that_declares_nothing_is_listed_with_the_mcp_defaults() -> None:
    assert (await listing(delete_city))["delete_city"] == {
        "name": "delete_city",
        "title": "Delete city",
        "annotations": SPEC_DEFAULTS,
    }


async def test_a_read_only_tool_defaults_to_not_destructive_and_idempotent() -> None:
    assert (await listing(look_up_city))["look_up_city"]["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    }


async def test_the_plain_dict_form_is_read_as_the_decorator_writes_it() -> None:
    assert (await listing(by_hand))["by_hand"] == {
        "name": "by_hand",
        "title": "By hand",
        "annotations": {**SPEC_DEFAULTS, "idempotentHint": True},
    }
    assert to_mcp_tool(by_hand).scopes == ("cities",)
    assert by_hand.metadata is not None
    assert by_hand.metadata["other"] == "kept"


def test_the_decorator_records_only_what_is_declared() -> None:
    assert look_up_city.metadata == {"mcp": {"read_only": True}}


def test_scopes_reach_the_served_tool_once_each() -> None:
    assert to_mcp_tool(get_forecast).scopes == ("forecasts:read", "cities")
    assert to_mcp_tool(delete_city).scopes == ()


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("get_forecast", "Get forecast"),
        ("hello", "Hello"),
        ("fetch-HTTP.status", "Fetch HTTP status"),
        ("_private_", "Private"),
        ("___", "___"),
    ],
)
def test_the_default_title_is_the_name_in_words(name: str, title: str) -> None:
    assert title_of(name) == title


def test_the_decorator_below_tool_is_refused_at_import() -> None:
    def plain(city: str) -> CityResult:
        return CityResult(message=city)

    with pytest.raises(TypeError) as caught:
        tool_metadata(read_only=True)(plain)  # type: ignore[type-var]
    assert str(caught.value) == (
        "@tool_metadata(...) declares a LangChain tool's metadata: put it above @tool"
    )


def declared(declaration: object) -> BaseTool:
    """A valid tool whose ``metadata["mcp"]`` is ``declaration``."""

    @tool
    def lookup(city: str) -> CityResult:
        """Look a city up."""
        return CityResult(message=city)

    lookup.metadata = {"mcp": declaration}
    return lookup


SCOPES_FIX = 'declare scopes as a list of scope names, such as scopes=("forecasts:read",)'
META_FIX = "use JSON values: str, int, float, bool, None, lists, and dicts with str keys"
TITLE_FIX = 'give a short human-readable title, such as "Get forecast", or leave it out'
RESERVED_FIX = 'use a prefix of your own, such as "com.example/"'
TASK_FIX = (
    'declare task="optional" (a client may call the tool as a task) or task="required" '
    "(only as a task), or leave it out for a tool that never is one"
)
THREADS_FIX = (
    "declare max_threads=4, say, or leave it out for the service's MCP_TOOL_THREADS_PER_TOOL"
)


@pytest.mark.parametrize(
    ("declaration", "problem", "fix"),
    [
        (
            ["read_only"],
            'metadata["mcp"] is a list, not a dict',
            "declare it with @tool_metadata(...) above @tool, or as a dict such as "
            '{"title": "Get forecast", "read_only": True}',
        ),
        (
            {"readonly": True, "colour": "red"},
            "the declaration has unknown keys: colour, readonly",
            "use only title, read_only, destructive, idempotent, open_world, scopes, "
            "max_threads, task, task_headers and meta",
        ),
        ({"title": ""}, "`title` is empty", TITLE_FIX),
        ({"title": "  "}, "`title` is empty", TITLE_FIX),
        ({"title": 3}, "`title` is an int, not a str", TITLE_FIX),
        (
            {"read_only": "yes"},
            "`read_only` is a str, not True or False",
            "declare read_only=True or read_only=False, or leave it out for the default",
        ),
        (
            {"open_world": 1},
            "`open_world` is an int, not True or False",
            "declare open_world=True or open_world=False, or leave it out for the default",
        ),
        (
            {"read_only": True, "destructive": True},
            "the tool is declared read-only and destructive",
            "a read-only tool changes nothing: drop destructive=True, or declare read_only=False",
        ),
        (
            {"max_threads": 0},
            "`max_threads` is 0, not a whole number of threads of at least 1",
            THREADS_FIX,
        ),
        (
            {"max_threads": "4"},
            "`max_threads` is a str, not a whole number of threads of at least 1",
            THREADS_FIX,
        ),
        (
            {"max_threads": True},
            "`max_threads` is a bool, not a whole number of threads of at least 1",
            THREADS_FIX,
        ),
        ({"task": "sometimes"}, '`task` is \'sometimes\', not "optional" or "required"', TASK_FIX),
        ({"task": True}, '`task` is a bool, not "optional" or "required"', TASK_FIX),
        ({"scopes": "forecasts"}, "`scopes` is a str, not a list of scope names", SCOPES_FIX),
        ({"scopes": ["ok", 7]}, "`scopes` holds an int, not a scope name", SCOPES_FIX),
        (
            {"scopes": ["read write"]},
            "`scopes` holds 'read write', which is not an OAuth scope (RFC 6749: one or more "
            'printable ASCII characters, without spaces, `"` or `\\`)',
            'name each scope on its own, such as scopes=("read", "write")',
        ),
        (
            {"scopes": [""]},
            "`scopes` holds '', which is not an OAuth scope (RFC 6749: one or more "
            'printable ASCII characters, without spaces, `"` or `\\`)',
            'name each scope on its own, such as scopes=("read", "write")',
        ),
        ({"meta": ["a"]}, "`meta` is a list, not a dict", META_FIX),
        ({"meta": {"when": {1, 2}}}, "`meta['when'] (a set)` is not JSON", META_FIX),
        (
            {"meta": {"deep": {"list": [1, float("nan")]}}},
            "`meta['deep']['list'][1] (nan)` is not JSON",
            META_FIX,
        ),
        ({"meta": {"deep": {2: "x"}}}, "`meta['deep'] (the key 2)` is not JSON", META_FIX),
        ({"meta": {3: "x"}}, "`meta` has the key 3, which is not a str", META_FIX),
        (
            {"meta": {"io.modelcontextprotocol/ui": 1}},
            "`meta` has the key 'io.modelcontextprotocol/ui', whose prefix MCP reserves (its "
            "second or next-to-last label is `mcp` or `modelcontextprotocol`)",
            RESERVED_FIX,
        ),
        (
            {"meta": {"tools.mcp.com/x": 1}},
            "`meta` has the key 'tools.mcp.com/x', whose prefix MCP reserves (its "
            "second or next-to-last label is `mcp` or `modelcontextprotocol`)",
            RESERVED_FIX,
        ),
        (
            {"meta": {"has space": 1}},
            "`meta` has the key 'has space', which is not a valid MCP `_meta` key",
            "use an optional prefix of dot-separated labels and a slash, then a name of "
            'letters, digits, "-", "_" or ".", such as "com.example/team"',
        ),
    ],
    ids=lambda value: None if isinstance(value, str) else repr(value)[:40],
)
def test_the_gate_refuses_a_bad_declaration(declaration: object, problem: str, fix: str) -> None:
    violations = tool_violations(declared(declaration), toolset="samples")
    assert [(v.rule, v.problem, v.fix) for v in violations] == [("tool-metadata", problem, fix)]


def test_every_problem_of_a_declaration_is_reported_at_once() -> None:
    bad = declared({"title": "", "idempotent": "no", "scopes": "x", "meta": {"mcp.dev/k": 1}})
    assert [v.problem for v in tool_violations(bad)] == [
        "`title` is empty",
        "`idempotent` is a str, not True or False",
        "`scopes` is a str, not a list of scope names",
        "`meta` has the key 'mcp.dev/k', whose prefix MCP reserves (its second or "
        "next-to-last label is `mcp` or `modelcontextprotocol`)",
    ]


@pytest.mark.parametrize(
    "meta",
    [
        {"com.example/team": "core"},
        {"com.example.mcp/x": 1},
        {"mcp/x": 1},
        {"plain": 1},
        {"com.example/": 1},
    ],
    ids=repr,
)
def test_the_gate_accepts_keys_of_ones_own(meta: dict[str, Any]) -> None:
    assert tool_violations(declared({"meta": meta})) == []


@pytest.mark.parametrize(
    "scope", ["read", "forecasts:read", "https://api.example.com/read", "a!#[]~"]
)
def test_the_gate_accepts_every_rfc_6749_scope_token(scope: str) -> None:
    assert tool_violations(declared({"scopes": [scope]})) == []
