"""How a contract difference is classified: one kind of difference, one test."""

from typing import Any

import pytest
from langchain_core.tools import tool

from mcp_runtime import ToolResult, tool_metadata
from mcp_runtime.contract.snapshot import Difference, compare, live_contract, render, report
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.serving.server import build_server

STRING = {"title": "Name", "type": "string"}
MESSAGE: dict[str, Any] = {"title": "Message", "type": "string"}
COUNT: dict[str, Any] = {"title": "Count", "type": "integer"}
RESULT: dict[str, Any] = {
    "title": "LookupResult",
    "type": "object",
    "properties": {"message": MESSAGE, "count": COUNT},
    "required": ["message"],
}
ERROR: dict[str, Any] = {
    "title": "ToolError",
    "type": "object",
    "properties": {"error": {"type": "string"}, "detail": {"type": "string"}},
    "required": ["error", "detail"],
}


def entry(
    name: str = "lookup",
    *,
    description: str = "Look a thing up.",
    arguments: dict[str, Any] | None = None,
    required: list[str] | None = None,
    result: dict[str, Any] | None = None,
    with_error: bool = True,
) -> dict[str, Any]:
    arguments = {"name": STRING} if arguments is None else arguments
    output = result or RESULT
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": arguments,
            "required": ["name"] if required is None else required,
        },
        "outputSchema": {"type": "object", "oneOf": [output, ERROR]} if with_error else output,
    }


def contract(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"tools": list(entries)}


def one(before: dict[str, Any], after: dict[str, Any]) -> tuple[bool, str]:
    [difference] = compare(contract(before), contract(after))
    return difference.breaking, str(difference)


def with_key(key: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {**RESULT, "properties": {"message": MESSAGE, "count": COUNT, key: schema}}


def test_same_contract_has_no_difference() -> None:
    assert compare(contract(entry()), contract(entry())) == []


def test_reordered_schema_is_no_difference() -> None:
    before = entry(
        arguments={"name": STRING, "limit": {"type": "integer"}}, required=["name", "limit"]
    )
    after = {
        "outputSchema": before["outputSchema"],
        "inputSchema": {
            "required": ["limit", "name"],
            "properties": {"limit": {"type": "integer"}, "name": dict(reversed(STRING.items()))},
            "type": "object",
        },
        "description": before["description"],
        "name": "lookup",
    }
    assert compare(contract(before), contract(after)) == []


def test_snapshot_text_is_stable_whatever_the_key_order() -> None:
    first = contract(entry())
    second = contract({key: entry()[key] for key in reversed(list(entry()))})
    assert render(first) == render(second)


def test_removed_tool_is_breaking() -> None:
    [difference] = compare(contract(entry(), entry("other")), contract(entry()))
    assert difference.breaking
    assert str(difference) == "other: tool removed (or renamed) (before: served; after: absent)"


def test_new_tool_is_compatible() -> None:
    [difference] = compare(contract(entry()), contract(entry(), entry("other")))
    assert not difference.breaking
    assert str(difference) == "other: new tool (before: absent; after: served)"


def test_argument_added_as_required_is_breaking() -> None:
    after = entry(
        arguments={"name": STRING, "limit": {"type": "integer"}}, required=["name", "limit"]
    )
    assert one(entry(), after) == (
        True,
        "lookup: argument limit: argument added as required (before: absent; after: integer)",
    )


def test_new_optional_argument_is_compatible() -> None:
    after = entry(arguments={"name": STRING, "limit": {"type": "integer"}})
    assert one(entry(), after) == (
        False,
        "lookup: argument limit: optional argument added (before: absent; after: integer)",
    )


def test_removed_argument_is_breaking() -> None:
    before = entry(arguments={"name": STRING, "limit": {"type": "integer"}})
    assert one(before, entry()) == (
        True,
        "lookup: argument limit: argument removed (before: integer; after: absent)",
    )


def test_argument_made_required_is_breaking() -> None:
    before = entry(arguments={"name": STRING, "limit": {"type": "integer"}})
    after = entry(
        arguments={"name": STRING, "limit": {"type": "integer"}}, required=["name", "limit"]
    )
    assert one(before, after) == (
        True,
        "lookup: argument limit: argument made required (before: optional; after: required)",
    )


@pytest.mark.parametrize(
    ("before", "after", "shown"),
    [
        ({"type": "number"}, {"type": "integer"}, "number; after: integer"),
        (
            {"anyOf": [{"type": "string"}, {"type": "null"}]},
            {"type": "string"},
            "string | null; after: string",
        ),
        ({"enum": ["a", "b"]}, {"enum": ["a"]}, 'one of "a", "b"; after: one of "a"'),
    ],
    ids=["number-to-integer", "drop-null", "fewer-values"],
)
def test_narrowed_argument_type_is_breaking(
    before: dict[str, Any], after: dict[str, Any], shown: str
) -> None:
    assert one(entry(arguments={"name": before}), entry(arguments={"name": after})) == (
        True,
        f"lookup: argument name: type narrowed (before: {shown})",
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"type": "integer"}, {"type": "number"}),
        ({"type": "string"}, {"anyOf": [{"type": "string"}, {"type": "null"}]}),
        ({"enum": ["a"]}, {"enum": ["a", "b"]}),
    ],
    ids=["integer-to-number", "add-null", "more-values"],
)
def test_widened_argument_type_is_compatible(before: dict[str, Any], after: dict[str, Any]) -> None:
    breaking, text = one(entry(arguments={"name": before}), entry(arguments={"name": after}))
    assert not breaking
    assert text.startswith("lookup: argument name: type widened (before: ")


def test_changed_argument_type_is_breaking() -> None:
    after = entry(arguments={"name": {"title": "Name", "type": "boolean"}})
    assert one(entry(), after) == (
        True,
        "lookup: argument name: type changed (before: string; after: boolean)",
    )


def test_removed_result_key_is_breaking() -> None:
    result = {**RESULT, "properties": {"message": MESSAGE}}
    assert one(entry(), entry(result=result)) == (
        True,
        "lookup: result key count: result key removed (before: integer; after: absent)",
    )


def test_changed_result_key_type_is_breaking() -> None:
    after = entry(result=with_key("count", {"title": "Count", "type": "string"}))
    assert one(entry(), after) == (
        True,
        "lookup: result key count: result key type changed (before: integer; after: string)",
    )


def test_new_result_key_is_compatible() -> None:
    after = entry(result=with_key("source", {"type": "string"}))
    assert one(entry(), after) == (
        False,
        "lookup: result key source: result key added (before: absent; after: string)",
    )


def test_removed_tool_error_arm_is_breaking() -> None:
    assert one(entry(), entry(with_error=False)) == (
        True,
        "lookup: result: ToolError arm removed (before: XResult | ToolError; after: XResult)",
    )


def test_added_tool_error_arm_is_compatible() -> None:
    breaking, text = one(entry(with_error=False), entry())
    assert not breaking
    assert text.startswith("lookup: result: ToolError arm added")


def test_description_change_is_compatible() -> None:
    assert one(entry(), entry(description="Find a thing.")) == (
        False,
        'lookup: description: description changed (before: "Look a thing up."; '
        'after: "Find a thing.")',
    )


def test_result_title_or_description_change_is_compatible_not_a_type_change() -> None:
    after = entry(
        result=with_key("count", {"title": "Total", "type": "integer", "description": "n"})
    )
    assert [str(d) for d in compare(contract(entry()), contract(after))] == [
        'lookup: result key count: result key description changed (before: absent; after: "n")',
        'lookup: result key count: result key title changed (before: "Count"; after: "Total")',
    ]
    assert not any(d.breaking for d in compare(contract(entry()), contract(after)))


def test_argument_description_title_or_default_change_is_compatible() -> None:
    described = {**STRING, "description": "The thing's name.", "default": "a"}
    after = entry(arguments={"name": {**described, "title": "Thing"}})
    assert [str(d) for d in compare(contract(entry()), contract(after))] == [
        'lookup: argument name: argument description changed (before: absent; after: "The '
        "thing's name.\")",
        'lookup: argument name: argument title changed (before: "Name"; after: "Thing")',
        'lookup: argument name: argument default changed (before: absent; after: "a")',
    ]
    assert not any(d.breaking for d in compare(contract(entry()), contract(after)))


def test_result_description_change_is_compatible() -> None:
    after = entry(result={**RESULT, "description": "What was found."})
    assert one(entry(), after) == (
        False,
        'lookup: result: result description changed (before: absent; after: "What was found.")',
    )


def test_any_other_change_is_named_never_a_match() -> None:
    """A difference no rule classifies is still reported, beside the tool's other changes:
    the contract matches the snapshot only when every recorded field does."""
    defined = {"$defs": {"Unit": {"type": "string"}}}
    after = entry(description="Find a thing.")
    after["inputSchema"] = {**after["inputSchema"], **defined}
    assert [str(d) for d in compare(contract(entry()), contract(after))] == [
        'lookup: description: description changed (before: "Look a thing up."; after: '
        '"Find a thing.")',
        "lookup: another detail of its schemas changed (such as a pattern, a format, a bound "
        "or a definition): check that its clients still fit it (before: as recorded; after: "
        "as served)",
    ]
    assert report(compare(contract(entry()), contract(after)), "W").startswith(
        "Compatible changes (2): existing clients keep working\n  - lookup: description"
    )


def test_tighter_argument_bounds_break_and_looser_ones_do_not() -> None:
    bounded = entry(arguments={"name": {**STRING, "maxLength": 10}})
    assert one(entry(), bounded) == (
        True,
        "lookup: argument name: argument bounds narrowed or changed: a call within the old "
        "bounds may be refused (before: no bound; after: maxLength 10)",
    )
    assert one(bounded, entry(arguments={"name": {**STRING, "maxLength": 20}}))[0] is False
    patterned = entry(arguments={"name": {**STRING, "pattern": "^[a-z]+$"}})
    assert one(entry(), patterned)[0] is True
    assert one(patterned, entry()) == (
        False,
        'lookup: argument name: argument bounds widened (before: pattern "^[a-z]+$"; after: '
        "no bound)",
    )


def test_narrower_result_bounds_keep_clients_and_wider_ones_may_not() -> None:
    """A bound added to a result key (as `Field(max_length=...)` adds) is compatible."""
    lines = {"type": "array", "items": {"type": "string"}}
    bounded = {**lines, "maxItems": 20, "items": {"type": "string", "maxLength": 200}}
    before, after = entry(result=with_key("lines", lines)), entry(result=with_key("lines", bounded))
    assert one(before, after) == (
        False,
        "lookup: result key lines: result key bounds narrowed: its values stay within what "
        "clients got (before: no bound; after: items.maxLength 200, maxItems 20)",
    )
    assert one(after, before)[0] is True


def test_a_tuples_items_keep_their_order() -> None:
    pair = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}
    swapped = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}
    [changed] = compare(
        contract(entry(result=with_key("pair", pair))),
        contract(entry(result=with_key("pair", swapped))),
    )
    assert (changed.path, changed.change, changed.breaking) == (
        "result key pair",
        "result key type changed",
        True,
    )


def test_examples_and_defaults_are_wording_not_types() -> None:
    listed = {"type": "array", "items": {"type": "string"}}
    before = entry(arguments={"name": {**listed, "default": []}})
    after = entry(arguments={"name": {**listed, "default": ["a"], "examples": [["b"]]}})
    assert [(d.change, d.breaking) for d in compare(contract(before), contract(after))] == [
        ("argument examples changed", False),
        ("argument default changed", False),
    ]


def test_report_groups_breaking_first_and_says_how_to_record() -> None:
    before = contract(entry(), entry("gone"))
    after = contract(entry(description="New words."), entry("fresh"))
    text = report(compare(before, after), "uv run svc contract --write")
    assert text.splitlines() == [
        "Breaking changes (1): clients that call these tools break",
        "  - gone: tool removed (or renamed) (before: served; after: absent)",
        "Compatible changes (2): existing clients keep working",
        "  - fresh: new tool (before: absent; after: served)",
        '  - lookup: description: description changed (before: "Look a thing up."; '
        'after: "New words.")',
        "If these changes are intended, record them: `uv run svc contract --write`, and "
        "commit contract/tools.json with them.",
    ]


# --- tool metadata: title, annotations, scopes, _meta ------------------------

HINTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}


def declared(**fields: Any) -> dict[str, Any]:
    """An entry recorded with metadata: a title, every hint, no scope, and ``fields``."""
    return {**entry(), "title": "Look up", "annotations": HINTS, "scopes": [], **fields}


def hinted(**hints: bool) -> dict[str, Any]:
    return declared(annotations={**HINTS, **hints})


@pytest.mark.parametrize(
    ("before", "after", "text"),
    [
        (
            {"readOnlyHint": True, "destructiveHint": False},
            {"readOnlyHint": False, "destructiveHint": False},
            "annotation readOnlyHint: no longer read-only: it may change its environment "
            "(before: true; after: false)",
        ),
        (
            {"destructiveHint": False},
            {"destructiveHint": True},
            "annotation destructiveHint: now destructive: it may delete or overwrite data "
            "(before: false; after: true)",
        ),
        (
            {"idempotentHint": True},
            {"idempotentHint": False},
            "annotation idempotentHint: no longer idempotent: a repeated call may do more "
            "(before: true; after: false)",
        ),
        (
            {"openWorldHint": False},
            {"openWorldHint": True},
            "annotation openWorldHint: now open-world: it may reach external systems "
            "(before: false; after: true)",
        ),
    ],
    ids=["read-only-lost", "destructive", "idempotent-lost", "open-world"],
)
def test_a_hint_turning_riskier_is_breaking_and_back_is_compatible(
    before: dict[str, bool], after: dict[str, bool], text: str
) -> None:
    assert one(hinted(**before), hinted(**after)) == (True, f"lookup: {text}")
    breaking, back = one(hinted(**after), hinted(**before))
    assert not breaking
    hint = text.split(":")[0].removeprefix("annotation ")
    eased = {
        "readOnlyHint": "now read-only",
        "destructiveHint": "no longer destructive",
        "idempotentHint": "now idempotent",
        "openWorldHint": "no longer open-world",
    }[hint]
    assert back.startswith(f"lookup: annotation {hint}: {eased} (before: ")


def test_a_newly_required_scope_is_breaking() -> None:
    assert one(declared(scopes=["read"]), declared(scopes=["read", "write"])) == (
        True,
        "lookup: scope write: scope now required: a caller's token without it is refused "
        "(before: not required; after: required)",
    )


def test_a_scope_no_longer_required_is_compatible() -> None:
    assert one(declared(scopes=["read", "write"]), declared(scopes=["write"])) == (
        False,
        "lookup: scope read: scope no longer required (before: required; after: not required)",
    )


def tasked(support: str | None) -> dict[str, Any]:
    return declared() if support is None else declared(execution={"taskSupport": support})


@pytest.mark.parametrize(
    ("before", "after", "breaks", "change"),
    [
        (None, "optional", False, "may now run as a task"),
        (
            None,
            "required",
            True,
            "now runs only as a task: a client that does not call it as one is refused",
        ),
        (
            "optional",
            "required",
            True,
            "now runs only as a task: a client that does not call it as one is refused",
        ),
        ("required", "optional", False, "may now also be called without a task"),
        (
            "optional",
            None,
            True,
            "no longer runs as a task: a client that calls it as one is refused",
        ),
        (
            "required",
            None,
            True,
            "no longer runs as a task: a client that calls it as one is refused",
        ),
    ],
)
def test_a_change_of_task_support_breaks_only_a_client_it_refuses(
    before: str | None, after: str | None, breaks: bool, change: str
) -> None:
    assert one(tasked(before), tasked(after)) == (
        breaks,
        f"lookup: execution taskSupport: {change} (before: {before or 'forbidden'}; "
        f"after: {after or 'forbidden'})",
    )


def test_a_title_change_is_compatible() -> None:
    assert one(declared(), declared(title="Find")) == (
        False,
        'lookup: title: title changed (before: "Look up"; after: "Find")',
    )


def test_a_meta_change_is_compatible() -> None:
    after = declared(_meta={"com.example/team": "core"})
    assert one(declared(), after) == (
        False,
        'lookup: _meta: _meta changed (before: {}; after: {"com.example/team": "core"})',
    )


def test_a_snapshot_from_before_metadata_reads_as_what_clients_saw() -> None:
    """A recorded entry without metadata: no title, the MCP defaults, no scope, no _meta."""
    assert compare(contract(entry()), contract(declared())) == [
        Difference("lookup", "title", "title changed", "not recorded", '"Look up"', breaking=False)
    ]
    live = declared(
        annotations={**HINTS, "readOnlyHint": True, "destructiveHint": False},
        _meta={"com.example/team": "core"},
    )
    assert [str(d) for d in compare(contract(entry()), contract(live)) if not d.breaking] == [
        'lookup: title: title changed (before: not recorded; after: "Look up")',
        "lookup: annotation readOnlyHint: now read-only (before: not recorded, read as false; "
        "after: true)",
        "lookup: annotation destructiveHint: no longer destructive (before: not recorded, "
        "read as true; after: false)",
        'lookup: _meta: _meta changed (before: {}; after: {"com.example/team": "core"})',
    ]
    [scope] = compare(contract(entry()), contract(declared(title=None, scopes=["admin"])))
    assert (scope.breaking, scope.path) == (True, "scope admin")


def test_the_recorded_contract_holds_each_tools_metadata() -> None:
    @tool_metadata(
        read_only=True, scopes=("cities", "admin"), task="optional", meta={"com.example/x": 1}
    )
    @tool
    def find_city(city: str) -> ToolResult:
        """Find a city."""
        return ToolResult(message=city)

    @tool
    def plain_city(city: str) -> ToolResult:
        """Name a city."""
        return ToolResult(message=city)

    server = build_server([Toolset("cities", (plain_city, find_city))], name="recorded")
    recorded = live_contract(server)["tools"]
    assert [{k: v for k, v in e.items() if "Schema" not in k} for e in recorded] == [
        {
            "name": "find_city",
            "title": "Find city",
            "description": "Find a city.",
            "annotations": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": True,
            },
            "scopes": ["admin", "cities"],
            "execution": {"taskSupport": "optional"},
            "_meta": {"com.example/x": 1},
        },
        {
            "name": "plain_city",
            "title": "Plain city",
            "description": "Name a city.",
            "annotations": HINTS,
            "scopes": [],
        },
    ]
    assert compare({"tools": recorded}, live_contract(server)) == []
