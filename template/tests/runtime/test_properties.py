"""Property tests of the runtime: nothing that breaks the advertised schema is ever sent.

For generated result types (nested TypedDicts, lists, literals, optional keys,
numbers, unicode strings) and generated returned values (valid ones, extra keys,
missing ``message``, wrong types, ``None``, non-JSON values), the runtime either
sends a payload that a standard Draft 2020-12 validator accepts against the
advertised ``outputSchema`` and that carries no undeclared key, or sends an
``isError`` result without ``structuredContent``. A valid result is never refused.
"""

import math
import types
from typing import Any, Literal, NotRequired

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from langchain_core.tools import StructuredTool
from mcp.types import CallToolResult
from typing_extensions import TypedDict

from mcp_runtime import ToolError, ToolResult, to_mcp_tool

EXAMPLES = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# A type spec: ("str",), ("int",), ("float",), ("bool",), ("literal", values),
# ("list", spec), or ("dict", {key: (required, spec)}).
Spec = tuple[Any, ...]

KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
    lambda key: key.isidentifier() and key not in {"message", "error", "detail"}
)
TEXT = st.text(max_size=12)  # any unicode, control characters included


def specs() -> st.SearchStrategy[Spec]:
    leaves = st.one_of(
        st.sampled_from([("str",), ("int",), ("float",), ("bool",)]),
        st.lists(TEXT, min_size=1, max_size=3, unique=True).map(
            lambda values: ("literal", tuple(values))
        ),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            inner.map(lambda spec: ("list", spec)),
            st.dictionaries(KEYS, st.tuples(st.booleans(), inner), max_size=3).map(
                lambda fields: ("dict", fields)
            ),
        ),
        max_leaves=6,
    )


COUNTER = iter(range(10**9))


def python_type(spec: Spec) -> Any:
    """The annotation a spec stands for; dicts become TypedDicts with their own names."""
    kind = spec[0]
    if kind in {"str", "int", "float", "bool"}:
        return {"str": str, "int": int, "float": float, "bool": bool}[kind]
    if kind == "literal":
        return Literal[spec[1]]
    if kind == "list":
        return list[python_type(spec[1])]  # type: ignore[misc]
    annotations = {
        key: python_type(inner) if required else NotRequired[python_type(inner)]
        for key, (required, inner) in spec[1].items()
    }
    return TypedDict(f"Nested{next(COUNTER)}", annotations)  # type: ignore[operator]


def result_type(fields: dict[str, Spec]) -> type:
    """A ToolResult subclass whose data keys are ``fields``, each NotRequired."""
    annotations = {key: NotRequired[python_type(spec)] for key, spec in fields.items()}
    return types.new_class(
        f"Generated{next(COUNTER)}Result",
        (ToolResult,),
        {},
        lambda namespace: namespace.update({"__annotations__": annotations}),
    )


def values(spec: Spec) -> st.SearchStrategy[Any]:
    """Values that match ``spec`` exactly."""
    kind = spec[0]
    if kind == "str":
        return TEXT
    if kind == "int":
        return st.integers(min_value=-(2**53), max_value=2**53)
    if kind == "float":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "bool":
        return st.booleans()
    if kind == "literal":
        return st.sampled_from(spec[1])
    if kind == "list":
        return st.lists(values(spec[1]), max_size=3)
    required = {key: values(inner) for key, (req, inner) in spec[1].items() if req}
    optional = {key: values(inner) for key, (req, inner) in spec[1].items() if not req}
    return st.fixed_dictionaries(required, optional=optional)


NOT_JSON = st.sampled_from([object(), {1, 2}, b"bytes", float("nan"), float("inf"), 1j])
# Values a lax validator would coerce: each must be refused where it is the wrong type.
COERCIBLE = st.sampled_from(["1", "2.5", "true", 0, 1, 2.0, [], {}, math.nan, -math.inf])
WRONG = st.one_of(
    st.none(), st.integers(), TEXT, st.lists(st.integers(), max_size=2), NOT_JSON, COERCIBLE
)


def near_misses(spec: Spec) -> st.SearchStrategy[Any]:
    """Values that look like ``spec`` but break it: what a lax validator would let by."""
    misses: dict[str, list[Any]] = {
        "str": [1, b"text", ["text"]],
        "int": [1.0, True, "1", 2**80 * 1.0],
        "float": [math.nan, math.inf, -math.inf, True, "1.5"],
        "bool": [0, 1, "true", None],
        "literal": ["not one of them", 1],
        "list": [(), {}, "[]", {1}],
        "dict": [[], "{}", [("key", "value")]],
    }
    if spec[0] == "list":
        return st.one_of(
            st.sampled_from(misses["list"]), near_misses(spec[1]).map(lambda item: [item])
        )
    return st.sampled_from(misses[spec[0]])


@st.composite
def cases(draw: st.DrawFn) -> tuple[type, Any, Any]:
    """A result type, a returned value, and the payload it must give (None: refused)."""
    fields = draw(st.dictionaries(KEYS, specs(), max_size=4))
    returned: dict[str, Any] = {"message": draw(TEXT)}
    for key, spec in fields.items():
        if draw(st.booleans()):
            returned[key] = draw(values(spec))
    breakage = draw(st.sampled_from(["none", "extra", "drop_message", "replace"]))
    if breakage == "extra":
        returned[draw(KEYS.filter(lambda key: key not in fields))] = draw(WRONG)
    elif breakage == "drop_message":
        del returned["message"]
    elif breakage == "replace":
        key = draw(st.sampled_from(["message", *sorted(fields)]))
        returned[key] = draw(st.one_of(WRONG, near_misses(fields.get(key, ("str",)))))
    declared_keys = {"message": (True, ("str",))} | {k: (False, s) for k, s in fields.items()}
    whole: Spec = ("dict", declared_keys)
    expected = declared(whole, returned) if conforms(whole, returned) else None
    return result_type(fields), returned, expected


def conforms(spec: Spec, value: Any) -> bool:
    """Whether ``value`` keeps ``spec`` exactly (the oracle, written apart from the runtime)."""
    kind = spec[0]
    if kind == "str":
        return type(value) is str
    if kind == "int":
        return type(value) is int
    if kind == "float":
        return type(value) in (int, float) and value - value == 0  # finite
    if kind == "bool":
        return type(value) is bool
    if kind == "literal":
        return type(value) is str and value in spec[1]
    if kind == "list":
        return type(value) is list and all(conforms(spec[1], item) for item in value)
    fields = spec[1]
    return (
        type(value) is dict
        and all(key in value for key, (required, _) in fields.items() if required)
        and all(conforms(fields[key][1], item) for key, item in value.items() if key in fields)
    )


def declared(spec: Spec, value: Any) -> Any:
    """``value`` without the keys ``spec`` does not declare, at every depth."""
    if spec[0] == "list":
        return [declared(spec[1], item) for item in value]
    if spec[0] == "dict":
        fields = spec[1]
        return {key: declared(fields[key][1], item) for key, item in value.items() if key in fields}
    return value


def closed(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` wherever it lists properties."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: closed(value) for key, value in schema.items()}
    if "properties" in copy:
        copy["additionalProperties"] = False
    return copy


def check(result: CallToolResult, schema: dict[str, Any]) -> None:
    if result.structured_content is None:
        assert result.is_error is True
        return
    Draft202012Validator(schema).validate(result.structured_content)
    Draft202012Validator(closed(schema)).validate(result.structured_content)


def tool_returning(value: Any, annotation: Any) -> StructuredTool:
    async def fixed() -> Any:
        return value

    fixed.__annotations__["return"] = annotation
    return StructuredTool.from_function(coroutine=fixed, name="fixed", description="Fixed.")


@EXAMPLES
@given(cases(), st.booleans())
def test_every_answer_keeps_the_advertised_schema(
    case: tuple[type, Any, Any], with_error_arm: bool
) -> None:
    result_class, returned, expected = case
    annotation = result_class | ToolError if with_error_arm else result_class
    converted = to_mcp_tool(tool_returning(returned, annotation))
    schema = converted.output_schema
    assert schema is not None
    Draft202012Validator.check_schema(schema)
    result = converted.contract.to_call_result(returned)
    check(result, schema)
    if expected is None:  # it breaks the annotation: refused, and nothing of it is sent
        assert result.is_error is True
        assert result.structured_content is None
    else:  # a valid result (undeclared keys aside) is sent, never refused
        assert result.is_error is False, result.content
        assert result.structured_content == expected
        # The depth the gate works out bounds every payload, so skipping the walk is safe.
        bound = converted.contract.depth
        assert bound is not None
        assert nesting(result.structured_content) <= bound


def nesting(value: Any) -> int:
    """Levels of objects and arrays in ``value`` (the oracle, apart from the runtime)."""
    if isinstance(value, dict):
        return 1 + max(map(nesting, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(nesting, value), default=0)
    return 0


@EXAMPLES
@given(st.one_of(TEXT, st.integers(), st.none(), NOT_JSON, st.lists(TEXT, max_size=2)))
def test_a_tool_error_is_sent_only_when_it_is_one(detail: Any) -> None:
    converted = to_mcp_tool(tool_returning(None, ToolResult | ToolError))
    schema = converted.output_schema
    assert schema is not None
    result = converted.contract.to_call_result({"error": "not_found", "detail": detail})
    check(result, schema)
    if isinstance(detail, str):
        assert result.structured_content == {"error": "not_found", "detail": detail}
        assert result.is_error is True
