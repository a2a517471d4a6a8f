"""`fast_init`: frozen attrs classes built at plain-store speed, and nothing else changed."""

from __future__ import annotations

import copy
import pickle

import attrs
import pytest
from attrs import evolve, field, frozen

from harness import Message, ModelRequest, SessionStateSnapshot, ToolCall, TurnStarted, Usage
from harness._records import fast_init


@fast_init
@frozen
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = field(factory=tuple)
    label: str = field(default="", kw_only=True)
    _secret: int = 0


@frozen
class Reference:
    """The same fields, built by attrs' own ``__init__``."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = field(factory=tuple)
    label: str = field(default="", kw_only=True)
    _secret: int = 0


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((1,), {}),
        ((1, 2), {}),
        ((1, 2, ("a",)), {"label": "p", "secret": 7}),
        ((), {"x": 3, "y": 4, "tags": ("b", "c"), "label": "q"}),
    ],
)
def test_builds_what_attrs_builds(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    point = Point(*args, **kwargs)  # type: ignore[arg-type]
    reference = Reference(*args, **kwargs)  # type: ignore[arg-type]
    assert type(point) is Point
    assert attrs.asdict(point) == attrs.asdict(reference)
    assert repr(point) == repr(reference).replace("Reference", "Point")
    assert point == Point(*args, **kwargs)  # type: ignore[arg-type]
    assert hash(point) == hash(Point(*args, **kwargs))  # type: ignore[arg-type]


def test_a_factory_default_is_fresh_per_instance() -> None:
    @fast_init
    @frozen
    class Box:
        items: list[int] = field(factory=list)

    first, second = Box(), Box()
    assert first.items == []
    assert first.items is not second.items


def test_instances_stay_frozen() -> None:
    point = Point(1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        del point.x
    assert point.x == 1


def test_argument_errors_are_pythons() -> None:
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        Point(1, 2, (), 3, "label")  # type: ignore[call-arg]


def test_evolve_copy_and_pickle_round_trip() -> None:
    point = Point(1, 2, ("a",), label="p", secret=3)
    assert evolve(point, y=5) == Point(1, 5, ("a",), label="p", secret=3)
    assert copy.copy(point) == point
    assert copy.deepcopy(point) == point
    assert pickle.loads(pickle.dumps(point)) == point


def test_a_plain_subclass_is_built_by_attrs_and_keeps_its_class() -> None:
    class Named(Point):
        __slots__ = ()

    named = Named(1, 2, label="n")
    assert type(named) is Named
    assert (named.x, named.y, named.label) == (1, 2, "n")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        named.x = 3  # type: ignore[misc]


def test_refuses_what_it_would_skip() -> None:
    with pytest.raises(TypeError, match="validator"):

        @fast_init
        @frozen
        class Checked:
            x: int = field(validator=attrs.validators.instance_of(int))

    with pytest.raises(TypeError, match="__attrs_post_init__"):

        @fast_init
        @frozen
        class Hooked:
            x: int

            def __attrs_post_init__(self) -> None:
                pass

    with pytest.raises(TypeError, match="slotted attrs class"):

        @fast_init
        @frozen(slots=False)
        class Unslotted:
            x: int

    with pytest.raises(TypeError, match="takes self"):

        @fast_init
        @frozen
        class SelfFactory:
            x: int = field(default=attrs.Factory(lambda self: 1, takes_self=True))


def test_the_loops_values_use_it() -> None:
    """The values built every turn, compared field by field with attrs' own construction."""
    call = ToolCall("c1", "add", {"a": 1})
    values = [
        (Message.tool_result(call, "2"), Message("tool", "2", (), "c1", "add")),
        (Usage(1, 2) + Usage(3, 4), Usage(4, 6, 0, 0.0)),
        (
            TurnStarted(0.5, "builder", 1, 2),
            TurnStarted(at=0.5, agent="builder", iteration=1, turn=2),
        ),
        (ModelRequest((), turn=3), ModelRequest(messages=(), turn=3)),
        (ToolCall("c2", "add"), ToolCall(id="c2", name="add", arguments={})),
    ]
    for built, expected in values:
        assert built == expected
        assert type(built).__init__.__qualname__ == f"{type(built).__qualname__}.__init__"
    snapshot = SessionStateSnapshot.standalone(task="t", now=2.0)
    assert (snapshot.task, snapshot.now, snapshot.usage) == ("t", 2.0, Usage())
    assert not hasattr(snapshot, "__dict__")  # slotted: no per-snapshot dict
