"""Property tests of tool argument validation: for any type built from the supported pieces,
every JSON value of that type is accepted and arrives converted, and every value broken at
some depth is refused with an error naming the path to the broken part."""

from __future__ import annotations

import dataclasses
import enum
import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Optional, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Tool, ToolArgumentError

Bad = tuple[Any, str]  # a value the type refuses, and the path suffix its error names
# The generic forms, typed loosely: the types they build are drawn at run time.
_LIST: Any = list
_TUPLE: Any = tuple
_DICT: Any = dict
_OPTIONAL: Any = Optional
_TYPED_DICT: Any = TypedDict


@dataclasses.dataclass(frozen=True)
class Shape:
    """A type, the JSON values it accepts, values it refuses, and what a valid value becomes."""

    tp: Any
    good: st.SearchStrategy[Any]
    bad: st.SearchStrategy[Bad]
    expect: Callable[[Any], Any] = lambda value: value


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


_TEXT = st.text(max_size=5)
_NOT_NUMBER = st.one_of(_TEXT, st.booleans(), st.none(), st.just([1]), st.just({"k": 1}))


def _top(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Bad]:
    return values.map(lambda v: (v, ""))


_LEAVES: list[Shape] = [
    Shape(int, st.integers(), _top(st.one_of(_NOT_NUMBER, st.just(1.5)))),
    Shape(
        float, st.floats(allow_nan=False, allow_infinity=False) | st.integers(), _top(_NOT_NUMBER)
    ),
    Shape(str, _TEXT, _top(st.one_of(st.integers(), st.booleans(), st.none(), st.just(["x"])))),
    Shape(bool, st.booleans(), _top(st.one_of(st.integers(), _TEXT, st.none()))),
    Shape(type(None), st.none(), _top(st.one_of(st.integers(), _TEXT, st.booleans()))),
    Shape(Any, st.one_of(st.integers(), _TEXT, st.none()), st.nothing()),
    Shape(
        Literal["a", "b"],
        st.sampled_from(["a", "b"]),
        _top(st.one_of(_TEXT.filter(lambda s: s not in ("a", "b")), st.integers(), st.none())),
    ),
    Shape(
        Literal[1, 2],
        st.sampled_from([1, 2]),
        _top(st.one_of(st.integers().filter(lambda i: i not in (1, 2)), st.just(True), _TEXT)),
    ),
    Shape(
        Color,
        st.sampled_from(["red", "blue"]),
        _top(st.one_of(_TEXT.filter(lambda s: s not in ("red", "blue")), st.integers())),
        Color,
    ),
    Shape(
        Level,
        st.sampled_from([1, 2]),
        _top(st.one_of(st.integers().filter(lambda i: i not in (1, 2)), st.just(True), _TEXT)),
        Level,
    ),
    Shape(Path, _TEXT, _top(st.one_of(st.integers(), st.none(), st.just(["p"]))), Path),
    Shape(
        int | str,
        st.one_of(st.integers(), _TEXT),
        _top(st.one_of(st.booleans(), st.none(), st.just(1.5), st.just([1]))),
    ),
]


def _list_of(inner: Shape) -> Shape:
    def broken_item(data: tuple[list[Any], int, Bad]) -> Bad:
        items, at, (value, path) = data
        at %= len(items) + 1
        return [*items[:at], value, *items[at:]], f"[{at}]{path}"

    bad = st.one_of(
        _top(st.one_of(_TEXT, st.integers(), st.just({"k": 1}))),
        st.tuples(st.lists(inner.good, max_size=3), st.integers(0, 3), inner.bad).map(broken_item),
    )
    return Shape(
        _LIST[inner.tp],
        st.lists(inner.good, max_size=3),
        bad,
        lambda v: [inner.expect(x) for x in v],
    )


def _pair_of(first: Shape, second: Shape) -> Shape:
    good = st.tuples(first.good, second.good).map(list)
    bad = st.one_of(
        good.map(lambda v: ([*v, 0], "")),  # one item too many
        good.map(lambda v: (v[:1], "")),  # one too few
        st.tuples(first.bad, second.good).map(lambda t: ([t[0][0], t[1]], f"[0]{t[0][1]}")),
        st.tuples(first.good, second.bad).map(lambda t: ([t[0], t[1][0]], f"[1]{t[1][1]}")),
    )
    return Shape(
        _TUPLE[first.tp, second.tp],
        good,
        bad,
        lambda v: (first.expect(v[0]), second.expect(v[1])),
    )


def _mapping_of(inner: Shape) -> Shape:
    good = st.dictionaries(st.sampled_from(["k", "m"]), inner.good, max_size=2)
    bad = st.one_of(
        _top(st.one_of(st.just(["k"]), _TEXT, st.integers())),
        st.tuples(good, inner.bad).map(lambda t: ({**t[0], "k": t[1][0]}, f"['k']{t[1][1]}")),
    )
    return Shape(
        _DICT[str, inner.tp], good, bad, lambda v: {k: inner.expect(x) for k, x in v.items()}
    )


def _optional(inner: Shape) -> Shape:
    if inner.tp is type(None) or inner.tp is Any:
        return inner
    bad = inner.bad.filter(lambda b: not (b[0] is None and b[1] == ""))
    return Shape(
        _OPTIONAL[inner.tp],
        st.none() | inner.good,
        bad,
        lambda v: None if v is None else inner.expect(v),
    )


_classes = iter(range(10**9))


def _record(first: Shape, second: Shape, kind: str) -> Shape:
    """A TypedDict (arrives as a dict) or a dataclass (arrives as an instance) of two fields."""
    name = f"Record{next(_classes)}"
    fields = {"a": first, "b": second}
    if kind == "typeddict":
        cls: Any = _TYPED_DICT(name, {k: s.tp for k, s in fields.items()})
    else:
        cls = dataclasses.make_dataclass(name, [(k, s.tp) for k, s in fields.items()])
    good = st.fixed_dictionaries({k: s.good for k, s in fields.items()})

    def broken_field(key: str) -> st.SearchStrategy[Bad]:
        return st.tuples(good, fields[key].bad).map(
            lambda t: ({**t[0], key: t[1][0]}, f"[{key!r}]{t[1][1]}")
        )

    bad = st.one_of(
        _top(st.one_of(st.just([1]), _TEXT, st.integers())),
        good.map(lambda v: ({"b": v["b"]}, "")),  # a required key missing
        good.map(lambda v: ({**v, "zz": 1}, "")),  # an unknown key
        broken_field("a"),
        broken_field("b"),
    )

    def expect(value: Any) -> Any:
        converted = {k: fields[k].expect(v) for k, v in value.items()}
        return converted if kind == "typeddict" else cls(**converted)

    return Shape(cls, good, bad, expect)


def _extend(inner: st.SearchStrategy[Shape]) -> st.SearchStrategy[Shape]:
    return st.one_of(
        inner.map(_list_of),
        inner.map(_mapping_of),
        inner.map(_optional),
        st.tuples(inner, inner).map(lambda t: _pair_of(*t)),
        st.tuples(inner, inner, st.sampled_from(["typeddict", "dataclass"])).map(
            lambda t: _record(*t)
        ),
    )


shapes = st.recursive(st.sampled_from(_LEAVES), _extend, max_leaves=6)


def _tool(tp: Any) -> Tool:
    def fn(x: Any) -> Any:
        return x

    fn.__annotations__ = {"x": tp, "return": Any}
    return Tool.from_function(fn, name="probe")


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_values_of_the_type_are_accepted_and_arrive_converted(data: st.DataObject) -> None:
    """A JSON value of the type passes validation, and the function receives it as the type
    says: Enum members, Paths, tuples, dataclass instances, dicts for TypedDicts."""
    shape = data.draw(shapes)
    tool = _tool(shape.tp)
    value = json.loads(json.dumps(data.draw(shape.good)))  # what a model's JSON would give
    received = tool.fn(**tool.parse_arguments({"x": value}))
    expected = shape.expect(value)
    assert received == expected
    assert _types(received) == _types(expected)


def _types(value: Any) -> Any:
    """The value's type and its children's, so a list is never mistaken for a tuple."""
    if isinstance(value, (list, tuple)):
        return type(value), [_types(v) for v in value]
    if isinstance(value, dict):
        return type(value), {k: _types(v) for k, v in value.items()}
    return type(value)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_values_broken_at_any_depth_are_refused_naming_the_path(data: st.DataObject) -> None:
    """A value with one part of the wrong type, outside an enum, of the wrong length, missing a
    key or with an unknown key is refused, and the error names the path to that part."""
    shape = data.draw(shapes)
    tool = _tool(shape.tp)
    value, path = data.draw(shape.bad)
    with pytest.raises(ToolArgumentError) as caught:
        tool.validate({"x": value})
    assert str(caught.value).startswith(f"argument 'x'{path} ")


def test_the_shapes_cover_every_kind_of_type() -> None:
    """The generator reaches each kind of annotation it is meant to exercise."""
    kinds = {typing.get_origin(s.tp) or s.tp for s in _LEAVES}
    assert {int, float, str, bool, Literal, Color, Level, Path} <= kinds
