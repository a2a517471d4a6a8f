"""Tools from plain functions: the JSON schema their signature implies, the validation of the
model's arguments against it (nested values too), the conversion into the values the function
takes, and the workspace tools that may not leave the workspace."""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest
from _tools_support import tool_results

from harness import (
    ConfigurationError,
    Harness,
    ScriptedModelClient,
    Tool,
    ToolArgumentError,
    ToolCall,
    ToolContext,
    tool,
    workspace_tools,
)
from harness.extend import SessionStore
from harness.testing import FakeClock
from termination import TerminationPolicy


def props(fn: Any) -> Mapping[str, Any]:
    return Tool.from_function(fn).parameters["properties"]  # type: ignore[no-any-return]


def test_container_and_union_types_map_to_json_schema() -> None:
    """Sequences are arrays of their item type, mappings are objects, unions are anyOf, Path is a
    string, and an unannotated (or Any) parameter accepts anything."""

    def f(
        a: Sequence[int],
        b: tuple[str, ...],
        c: dict[str, int],
        d: int | str,
        e: Path,
        f: Any,
        g: set[float],
    ) -> None:
        """F."""

    assert props(f) == {
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {"type": "array", "items": {"type": "string"}},
        "c": {"type": "object", "additionalProperties": {"type": "integer"}},
        "d": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "e": {"type": "string"},
        "f": {},
        "g": {"type": "array", "items": {"type": "number"}},
    }
    unannotated = Tool.from_function(lambda x, y=2: x, name="lam")
    assert unannotated.parameters["properties"] == {"x": {}, "y": {"default": 2}}
    assert unannotated.parameters["required"] == ["x"]


def test_names_descriptions_and_defaults() -> None:
    """A tool may be renamed and redescribed; defaults that are not JSON are left out."""

    @tool(name="renamed", description="Custom text.")
    def original(x: int = 3, y: object = object()) -> None:
        """Ignored summary."""

    assert original.name == "renamed"
    assert original.description == "Custom text."
    assert original.parameters["properties"] == {"x": {"type": "integer", "default": 3}, "y": {}}
    assert "required" not in original.parameters


def typed(n: int, ratio: float, flag: bool, items: list[str], maybe: str | None = None) -> str:
    """Typed."""
    return "ok"


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"n": 1, "ratio": 2, "flag": True, "items": []}, None),
        ({"n": 1, "ratio": 0.5, "flag": False, "items": ["a"], "maybe": None}, None),
        ({"ratio": 1.0, "flag": True, "items": []}, "missing required argument 'n'"),
        ({"n": True, "ratio": 1.0, "flag": True, "items": []}, "argument 'n' must be integer"),
        ({"n": 1.5, "ratio": 1.0, "flag": True, "items": []}, "argument 'n' must be integer"),
        ({"n": 1, "ratio": "1", "flag": True, "items": []}, "argument 'ratio' must be number"),
        ({"n": 1, "ratio": 1, "flag": 1, "items": []}, "argument 'flag' must be boolean"),
        ({"n": 1, "ratio": 1, "flag": True, "items": "a"}, "argument 'items' must be array"),
        (
            {"n": 1, "ratio": 1, "flag": True, "items": [], "maybe": 3},
            "argument 'maybe' must be ['string', 'null']",
        ),
        ({"n": 1, "ratio": 1, "flag": True, "items": [], "extra": 1}, "unknown argument 'extra'"),
    ],
)
def test_arguments_are_validated_against_the_schema(
    arguments: dict[str, Any], error: str | None
) -> None:
    """Missing, unknown and mistyped arguments are refused with the argument's name; a bool is
    never an integer or a number."""
    t = Tool.from_function(typed)
    if error is None:
        t.validate(arguments)
    else:
        with pytest.raises(ToolArgumentError, match=error.replace("[", r"\[").replace("]", r"\]")):
            t.validate(arguments)


@pytest.mark.anyio
async def test_a_context_tool_sees_the_run_workspace_store_clock_and_call(tmp_path: Path) -> None:
    """A `ToolContext` parameter receives the run's workspace, store, clock, the call and the
    agent."""
    seen: list[ToolContext] = []

    def probe(ctx: ToolContext) -> str:
        """Probe."""
        seen.append(ctx)
        ctx.store.put(7)
        return "probed"

    clock = FakeClock()
    model = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"id": "p1", "name": "probe"}]}, {"text": "done"}]
    )
    harness = Harness(
        model=model, policy=TerminationPolicy(), tools=[probe], workspace=tmp_path, clock=clock
    )
    await harness.run("probe")
    (ctx,) = seen
    assert ctx.workspace == tmp_path.resolve()  # noqa: ASYNC240
    assert ctx.clock is clock
    assert ctx.call == ToolCall("p1", "probe", {})
    assert ctx.agent == "builder"
    assert isinstance(ctx.store, SessionStore)
    assert ctx.store.frozen()[int] == (7,)


@pytest.mark.anyio
async def test_workspace_tools_stay_inside_the_workspace(tmp_path: Path) -> None:
    """read_file, list_files and write_file work inside the workspace; a path that leaves it is
    an error result the model sees."""
    (tmp_path / "secret.txt").write_text("outside")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    escape = tmp_path / "escape.txt"
    calls = [
        ("write_file", {"path": "a/b.txt", "content": "hi"}),
        ("read_file", {"path": "a/b.txt"}),
        ("list_files", {}),
        ("read_file", {"path": "../secret.txt"}),
        ("write_file", {"path": str(escape), "content": ""}),
    ]
    results = await tool_results(calls, workspace_tools(), workspace)
    assert results[:3] == [("wrote 2 bytes to a/b.txt", False), ("hi", False), ("a/b.txt", False)]
    for content, is_error in results[3:]:
        assert is_error
        assert content.startswith("error: WorkspaceEscape: path ")
        assert "is outside the workspace" in content
    assert not escape.exists()
    assert [t.name for t in workspace_tools() if t.read_only] == [
        "read_file",
        "list_files",
        "search_files",
    ]


_SCHEMA_TYPES = ["integer", "number", "string", "boolean", "array", "object", "null"]


class _Level(enum.IntEnum):
    LOW = 1


class _Name(str):
    pass


def _json_kinds(value: object) -> set[str]:
    """The JSON types a Python value counts as (the oracle the validator is held to)."""
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"number"}
    if isinstance(value, str):
        return {"string"}
    if value is None:
        return {"null"}
    if isinstance(value, (list, tuple)):
        return {"array"}
    return {"object"} if isinstance(value, dict) else set()


_DECLARED: list[Any] = [*_SCHEMA_TYPES, ["string", "null"], ["integer", "boolean"], None]
_VALUES: list[Any] = [0, 7, True, 1.5, "x", None, [1], (1,), {"k": 1}, _Level.LOW, _Name("n")]


@pytest.mark.parametrize("declared", _DECLARED, ids=str)
@pytest.mark.parametrize("value", _VALUES, ids=repr)
def test_each_value_is_judged_by_its_declared_types(declared: Any, value: Any) -> None:
    """Every declared type against every kind of value: bools are never integers or
    numbers, subclasses count as their base, an untyped property takes anything."""
    schema = {"type": "object", "properties": {"a": {} if declared is None else {"type": declared}}}
    checked = Tool(name="t", description="", parameters=schema, fn=lambda **_: None)
    declared_set = {declared} if isinstance(declared, str) else set(declared or ())
    if declared is None or _json_kinds(value) & declared_set:
        checked.validate({"a": value})
    else:
        with pytest.raises(ToolArgumentError, match="argument 'a' must be"):
            checked.validate({"a": value})


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({}, "missing required argument 'a'"),
        ({"b": 1}, "missing required argument 'a'"),
        ({"a": 1, "c": 2}, "unknown argument 'c'"),
        ({"a": 1}, None),
        ({"a": 1, "b": 2}, None),
    ],
)
def test_names_are_checked_before_values(arguments: dict[str, Any], error: str | None) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a"],
    }
    checked = Tool(name="t", description="", parameters=schema, fn=lambda **_: None)
    if error is None:
        checked.validate(arguments)
    else:
        with pytest.raises(ToolArgumentError, match=error):
            checked.validate(arguments)


# --- nested types: schema, validation, conversion ------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Doc:
    """A metadata object carrying a description, as `typing_extensions.Doc` does."""

    def __init__(self, documentation: str) -> None:
        self.documentation = documentation


class LineItem(TypedDict):
    """One line of an order.

    Attributes:
        name: what is ordered
    """

    name: str
    qty: int
    note: NotRequired[Annotated[str, "free text"]]


@dataclasses.dataclass
class Options:
    depth: int
    color: Color = Color.RED
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Node:
    children: list[Node]


def order(
    items: list[LineItem],
    pair: tuple[int, str],
    where: Path,
    color: Color,
    options: Options,
    mode: Annotated[Literal["a", "b"], "how to order"] = "a",
    shade: Annotated[Color | None, Doc("an optional color")] = None,
    nothing: tuple[()] = (),
    tally: dict[str, Color] | None = None,
    either: int | Options = 1,
    unique: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """Order things.

    Args:
        where: where to deliver (the annotation's description wins over this one)
        items: the lines of the order
    """
    return dict(locals())


_COLOR = {"type": "string", "enum": ["red", "blue"]}
_OPTIONS = {
    "type": "object",
    "properties": {
        "depth": {"type": "integer"},
        "color": {**_COLOR, "default": "red"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["depth"],
    "additionalProperties": False,
}


def test_nested_types_map_to_json_schema() -> None:
    """Literal and Enum become enums of values, tuple[int, str] a fixed-length prefixItems array,
    Path a string, TypedDict and dataclass closed objects with their required keys, and an
    Annotated description (text or a documentation object) the property's description."""
    assert props(order) == {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "what is ordered"},
                    "qty": {"type": "integer"},
                    "note": {"type": "string", "description": "free text"},
                },
                "required": ["name", "qty"],
                "additionalProperties": False,
            },
            "description": "the lines of the order",
        },
        "pair": {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        },
        "where": {
            "type": "string",
            "description": "where to deliver (the annotation's description wins over this one)",
        },
        "color": _COLOR,
        "options": _OPTIONS,
        "mode": {
            "type": "string",
            "enum": ["a", "b"],
            "description": "how to order",
            "default": "a",
        },
        "shade": {
            "type": ["string", "null"],
            "enum": ["red", "blue", None],
            "description": "an optional color",
        },
        "nothing": {"type": "array", "minItems": 0, "maxItems": 0, "default": []},
        "tally": {"type": ["object", "null"], "additionalProperties": _COLOR},
        "either": {"anyOf": [{"type": "integer"}, _OPTIONS], "default": 1},
        "unique": {"type": "array", "items": {"type": "integer"}, "default": []},
    }


_ORDER = {
    "items": [{"name": "tea", "qty": 2}, {"name": "cup", "qty": 1, "note": "blue"}],
    "pair": [7, "seven"],
    "where": "shop/shelf",
    "color": "blue",
    "options": {"depth": 3, "color": "blue"},
}


def test_the_function_receives_python_values() -> None:
    """After validation the function gets an Enum member, a Path, a tuple, a dataclass instance
    (its own defaults filled in), a dict for a TypedDict, a frozenset, converted at any depth."""
    t = Tool.from_function(order)
    more = {"shade": "red", "tally": {"x": "blue"}, "either": {"depth": 1}, "unique": [1, 1, 2]}
    got = t.fn(**t.parse_arguments({**_ORDER, **more}))
    assert got == {
        "items": [{"name": "tea", "qty": 2}, {"name": "cup", "qty": 1, "note": "blue"}],
        "pair": (7, "seven"),
        "where": Path("shop/shelf"),
        "color": Color.BLUE,
        "options": Options(depth=3, color=Color.BLUE, tags=[]),
        "mode": "a",
        "shade": Color.RED,
        "nothing": (),
        "tally": {"x": Color.BLUE},
        "either": Options(depth=1),
        "unique": frozenset({1, 2}),
    }
    assert t.parse_arguments({**_ORDER, "shade": None, "either": 5})["either"] == 5
    plain = Tool.from_function(typed)
    arguments = {"n": 1, "ratio": 2.0, "flag": True, "items": ["a"]}
    assert plain.parse_arguments(arguments) is arguments  # nothing to convert: no copy


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            {"items": [{"name": "tea", "qty": 2}, {"name": "cup", "qty": "x"}]},
            "argument 'items'[1]['qty'] must be integer (got str 'x')",
        ),
        ({"items": [{"name": "tea"}]}, "argument 'items'[0] is missing required key 'qty'"),
        (
            {"items": [{"name": "tea", "qty": 1, "size": 3}]},
            "argument 'items'[0] has unknown key 'size' (expected one of ['name', 'note', 'qty'])",
        ),
        ({"items": "tea"}, "argument 'items' must be array (got str 'tea')"),
        ({"pair": [7, 7]}, "argument 'pair'[1] must be string (got int 7)"),
        ({"pair": [7]}, "argument 'pair' must have exactly 2 items (got 1)"),
        ({"pair": [7, "a", None]}, "argument 'pair' must have exactly 2 items (got 3)"),
        ({"where": 3}, "argument 'where' must be string (got int 3)"),
        ({"color": "green"}, "argument 'color' must be one of ['red', 'blue'] (got str 'green')"),
        ({"mode": "c"}, "argument 'mode' must be one of ['a', 'b'] (got str 'c')"),
        (
            {"options": {"depth": 1, "color": "RED"}},
            "argument 'options'['color'] must be one of ['red', 'blue'] (got str 'RED')",
        ),
        (
            {"options": {"depth": True}},
            "argument 'options'['depth'] must be integer (got bool True)",
        ),
        ({"nothing": [1]}, "argument 'nothing' must have exactly 0 items (got 1)"),
        (
            {"tally": {"x": "red", "y": 1}},
            "argument 'tally'['y'] must be string (got int 1)",
        ),
        (
            {"either": {"depth": "deep"}},
            "argument 'either'['depth'] must be integer (got str 'deep')",
        ),
        ({"either": "x"}, "argument 'either' must be integer or object (got str 'x')"),
        ({"unique": [1, 2.5]}, "argument 'unique'[1] must be integer (got float 2.5)"),
        (
            {"items": [{"name": "x" * 100, "qty": None}]},
            "argument 'items'[0]['qty'] must be integer (got NoneType None)",
        ),
        (
            {"pair": ["y" * 100, "s"]},
            f"argument 'pair'[0] must be integer (got str '{'y' * 56}...)",
        ),
    ],
)
def test_nested_values_are_validated_and_errors_name_the_path(
    change: dict[str, Any], error: str
) -> None:
    """A wrong item, key, length or enum value anywhere inside an argument is refused with the
    path to it (and a long value is shown cut)."""
    t = Tool.from_function(order)
    t.validate(_ORDER)
    with pytest.raises(ToolArgumentError) as caught:
        t.validate({**_ORDER, **change})
    assert str(caught.value) == error


def _keyed(mapping: dict[int, str]) -> None:
    """K."""


def _recursive(node: Node) -> None:
    """R."""


def _odd_literal(x: Literal[b"raw"]) -> None:
    """L."""


class _Opaque(enum.Enum):
    THING = object()


def _odd_enum(x: _Opaque) -> None:
    """E."""


def _unreadable(x: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821
    """U."""


def _bytes(x: bytes) -> None:
    """B."""


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (_keyed, "parameter 'mapping' has a mapping with <class 'int'> keys, but JSON object"),
        (_recursive, "parameter 'node' has a recursive type (Node)"),
        (_odd_literal, "parameter 'x' has a Literal value JSON cannot carry (b'raw')"),
        (_odd_enum, "parameter 'x' has a enum _Opaque value JSON cannot carry"),
        (_bytes, "parameter 'x' has a type the schema cannot express (<class 'bytes'>)"),
        (_unreadable, "cannot read the type hints of tool '_unreadable'"),
    ],
)
def test_types_json_cannot_carry_are_refused_when_the_tool_is_made(
    fn: Callable[..., Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        Tool.from_function(fn)


@pytest.mark.anyio
async def test_a_nested_error_is_a_result_the_model_sees_and_the_tool_is_not_called() -> None:
    """Through the loop, a bad nested value becomes an error result naming its path, and the
    function never runs; a good call runs with converted values."""
    seen: list[Any] = []

    def ship(items: list[LineItem], color: Color) -> str:
        """Ship."""
        seen.append((items, color))
        return "shipped"

    bad = {"items": [{"name": "a", "qty": 1}, {"name": "b", "qty": "2"}], "color": "red"}
    good = {"items": [{"name": "a", "qty": 1}], "color": "red"}
    results = await tool_results([("ship", bad), ("ship", good)], [ship])
    assert results == [
        (
            "error: ToolArgumentError: argument 'items'[1]['qty'] must be integer (got str '2')",
            True,
        ),
        ("shipped", False),
    ]
    assert seen == [([{"name": "a", "qty": 1}], Color.RED)]


def _hand_written(prop: dict[str, Any]) -> Tool:
    schema = {"type": "object", "properties": {"a": prop}}
    return Tool(name="t", description="", parameters=schema, fn=lambda **_: None)


@pytest.mark.parametrize(
    ("prop", "good", "bad", "error"),
    [
        ({"const": 3}, 3, True, "must be 3 (got bool True)"),
        ({"enum": [[1, 2], {"k": 1}, None]}, {"k": 1}, [2, 1], "must be one of [[1, 2], {'k': 1}"),
        ({"enum": [1, "x"]}, 1.0, "1", "must be one of [1, 'x'] (got str '1')"),
        (
            {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
            ["s"],
            ["s", 1],
            "must have at most 1 item (got 2)",
        ),
        (
            {"type": "array", "minItems": 1, "maxItems": 3},
            [1],
            [],
            "must have at least 1 item (got 0)",
        ),
        ({"type": "array", "maxItems": 2}, [], [1, 2, 3], "must have at most 2 items (got 3)"),
        ({"type": "decimal"}, "anything", None, None),  # a type it does not know: not enforced
        ({"type": "string", "pattern": "^a"}, "b", None, None),  # a keyword it does not enforce
        ({"anyOf": [{"type": "integer"}, {}]}, "x", None, None),  # a branch that takes anything
        (
            {"anyOf": [{"enum": ["a"]}, {"type": ["integer", "null"]}, {"const": 2}]},
            None,
            "b",
            "must be one of ['a'] or integer or null or 2 (got str 'b')",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}, "required": ["k"]},
            {"k": 1, "j": 2},
            {"k": 1, "j": "2"},
            "argument 'a'['j'] must be integer",
        ),
        (
            {"type": "array", "items": {"enum": ["x"]}, "minItems": 1},
            ["x"],
            ["y"],
            "argument 'a'[0] must be 'x' (got str 'y')",
        ),
    ],
)
def test_a_hand_written_schema_is_enforced_by_the_same_validator(
    prop: dict[str, Any], good: Any, bad: Any, error: str | None
) -> None:
    """The keywords the validator knows are enforced in any combination; a keyword or a type
    name it does not know never refuses a value."""
    checked = _hand_written(prop)
    checked.validate({"a": good})
    if error is not None:
        with pytest.raises(ToolArgumentError, match=re.escape(error)):
            checked.validate({"a": bad})


class Mood(enum.IntEnum):
    LOW = 0
    HIGH = 1


def odd_corners(
    flag: Literal[True, 2, None, "x"],
    maybe: Annotated[int | str, "either"] | None = None,
    picked: Mood | Path | None = None,
    home: Path = Path("/home"),
) -> Any:
    """Odd corners."""
    return (flag, maybe, picked, home)


def test_odd_corners_of_the_derivation() -> None:
    """A mixed Literal is an untyped enum; an optional union gains a null branch; a union of
    converting types converts by the branch that fits (falsy members too); a Path default is
    shown as text."""
    t = Tool.from_function(odd_corners)
    assert t.parameters["properties"] == {
        "flag": {"enum": [True, 2, None, "x"]},
        "maybe": {
            "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}],
            "description": "either",
        },
        "picked": {
            "anyOf": [{"type": "integer", "enum": [0, 1]}, {"type": "string"}, {"type": "null"}]
        },
        "home": {"type": "string", "default": "/home"},
    }
    assert t.fn(**t.parse_arguments({"flag": None, "picked": 0})) == (
        None,
        None,
        Mood.LOW,
        Path("/home"),
    )
    assert t.parse_arguments({"flag": 2, "picked": "p"})["picked"] == Path("p")
    assert t.parse_arguments({"flag": "x", "picked": None})["picked"] is None
    with pytest.raises(
        ToolArgumentError, match=re.escape("must be one of [True, 2, None, 'x'] (got int 1)")
    ):
        t.validate({"flag": 1})
