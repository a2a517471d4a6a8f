"""`Event`, the base of every event, and the one decoder that turns a transcript line back into
its event.

Each event class registers under its `name` when it is defined. The decoder reads a line's
fields by name, following the class's own annotations: a string, an integer, a number, a
flag, a value with a reader of its own (a response, a tool call, usage; a halt reason, read
where the events that carry one are defined), a tuple of those, each optional where the
annotation says ``| None``. A line whose event name no loaded kind has becomes an
`UnknownEvent` (a newer harness's transcript still reads).

Fields a person might leave out of a hand-written transcript have the defaults the events
themselves would write: a field's own default, or the one its metadata names for reading
(`omitted`); a tuple that is absent is empty. Anything else missing or of the wrong type is a
`FixtureError` naming the file, the line and the field (with the path of nested objects:
``response.usage.input_tokens``).

The kinds that only some runs emit (pauses, checkpoints, the verifier's records, compaction)
live in modules of their own, loaded with the feature; the decoder loads them all before it
reads a name it does not know (`_KIND_MODULES`), through `importlib`, since they import this
module.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from attrs import NOTHING, Factory, field, fields, frozen

from .._errors import FixtureError
from .._messages import ModelResponse, ToolCall
from .._usage import Usage

T = TypeVar("T")
_MISSING: Any = object()
_OMITTED = "harness.read_default"

# The modules that define the harness's event kinds, loaded before a name is found unknown.
_KIND_MODULES = (
    "harness._events._run",
    "harness._events._tool",
    "harness._events._pause",
    "harness._events._checkpoint",
    "harness._events._verifier",
    "harness._events._context",
    "harness._events._attempts",
    "harness._events._escalation",
)
_KINDS: dict[str, type[Event]] = {}
_all_kinds_loaded = False


def omitted(default: object) -> dict[str, object]:
    """Field metadata: the value a transcript line that leaves the field out is read as."""
    return {_OMITTED: default}


@frozen
class Event:
    """Base of every event. `name` is the dotted event name used in logs and transcripts."""

    name: ClassVar[str] = "event"
    level: ClassVar[str] = "info"
    at: float

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # attrs builds a slotted class anew from the one defined: the last one registered wins.
        if "name" in cls.__dict__:
            _KINDS[cls.name] = cls

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"event": self.name}
        for name in _field_names(type(self)):
            data[name] = _plain(getattr(self, name))
        return data

    @staticmethod
    def from_dict(
        data: Mapping[str, Any], *, path: str | Path | None = None, line: int | None = None
    ) -> Event:
        """The event a transcript line describes, as its class (`UnknownEvent` for a name this
        harness does not know); a missing or mistyped field is a `FixtureError` naming
        `path`, `line` and the field."""
        return event_from_dict(data, path=path, line=line)

    def replay_key(self) -> dict[str, Any]:
        """The event without its timing, for comparing a replay with the original run."""
        data = self.to_dict()
        data.pop("at", None)
        return data


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind))
    return names


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: object) -> object:
    if type(value) in _SCALARS:  # most fields: skip the attribute lookup below
        return value
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


@frozen
class UnknownEvent(Event):
    """An event this harness does not know (from a newer harness, or another tool): its name
    and its other fields, kept as they were."""

    name: ClassVar[str] = "unknown"
    event: str
    fields: Mapping[str, Any] = field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "at": self.at, **self.fields}


class Fields:
    """Typed getters over one JSON object; an error names the file, line and field (with the
    path of nested objects: ``response.usage.input_tokens``)."""

    __slots__ = ("data", "line", "path", "prefix")

    def __init__(
        self, data: Mapping[str, Any], path: str | None, line: int | None, prefix: str = ""
    ) -> None:
        self.data = data
        self.path = path
        self.line = line
        self.prefix = prefix

    def error(self, key: str, message: str) -> FixtureError:
        return FixtureError(message, path=self.path, line=self.line, field=self.prefix + key)

    def get(self, key: str, kind: type[T], expected: str, default: Any = _MISSING) -> T:
        value = self.data.get(key, _MISSING)
        if value is _MISSING or (value is None and default is not _MISSING):
            if default is _MISSING:
                raise self.error(key, "missing")
            return cast(T, default)
        if kind is float and type(value) is int:
            return cast(T, float(value))
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            shown = repr(value)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            raise self.error(key, f"expected {expected} (got {shown})")
        return value

    def text(self, key: str, default: Any = _MISSING) -> str:
        return self.get(key, str, "a string", default)

    def integer(self, key: str, default: Any = _MISSING) -> int:
        return self.get(key, int, "an integer", default)

    def number(self, key: str, default: Any = _MISSING) -> float:
        return self.get(key, float, "a number", default)

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        return self.get(key, bool, "true or false", default)

    def nested(self, key: str, default: Any = _MISSING) -> Fields | None:
        value: dict[str, Any] | None = self.get(key, dict, "an object", default)
        if value is None:
            return None
        return Fields(value, self.path, self.line, f"{self.prefix}{key}.")

    def texts(self, key: str) -> list[str]:
        """The strings in the list in `key` (absent: none)."""
        values = self.get(key, list, "a list", ())
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise self.error(f"{key}[{index}]", f"expected a string (got {value!r:.60})")
        return list(values)

    def objects(self, key: str) -> list[Fields]:
        """The objects in the list in `key` (absent: none)."""
        values = self.get(key, list, "a list", ())
        found = []
        for index, value in enumerate(values):
            where = f"{key}[{index}]"
            if not isinstance(value, dict):
                raise self.error(where, f"expected an object (got {value!r:.60})")
            found.append(Fields(value, self.path, self.line, f"{self.prefix}{where}."))
        return found


# How a value that is a JSON object of its own is read back, by its type; a kind's module adds
# the readers of the values only its events carry (`reads`).
_READERS: dict[type, Callable[[Fields], object]] = {}


def reads(kind: type[T]) -> Callable[[Callable[[Fields], T]], Callable[[Fields], T]]:
    """Register the decorated function as the reader of values of type `kind`."""

    def register(reader: Callable[[Fields], T]) -> Callable[[Fields], T]:
        _READERS[kind] = reader
        return reader

    return register


@reads(Usage)
def _usage(f: Fields) -> Usage:
    cost = f.number("cost_usd", None)
    return Usage(
        f.integer("input_tokens", 0),
        f.integer("output_tokens", 0),
        f.integer("cached_tokens", 0),
        cost,
    )


@reads(ToolCall)
def _call(f: Fields) -> ToolCall:
    arguments = f.nested("arguments", {})
    return ToolCall(f.text("id"), f.text("name"), arguments.data if arguments else {})


@reads(ModelResponse)
def _response(f: Fields) -> ModelResponse:
    usage = f.nested("usage", None)
    return ModelResponse(
        f.text("text", ""),
        tuple(_call(c) for c in f.objects("tool_calls")),
        _usage(usage) if usage is not None else Usage(),
        f.text("model", None),
        f.text("stop_reason", None),
    )


_GETTERS: dict[object, Callable[[Fields, str, Any], object]] = {
    str: Fields.text,
    int: Fields.integer,
    float: Fields.number,
    bool: Fields.flag,
}


@frozen
class _FieldPlan:
    """How one field of a kind is read: its name, its type without ``| None``, the value an
    absent field takes (`_MISSING`: none, it is required)."""

    name: str
    kind: Any
    default: Any


_PLANS: dict[type, tuple[_FieldPlan, ...]] = {}


def _plan(cls: type[Event]) -> tuple[_FieldPlan, ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = get_type_hints(cls)
        steps = []
        for attribute in fields(cls):
            if attribute.name == "at":
                continue
            kind, optional = _without_none(hints[attribute.name])
            if _OMITTED in attribute.metadata:
                default = attribute.metadata[_OMITTED]
            elif isinstance(attribute.default, Factory):  # type: ignore[arg-type]
                default = attribute.default.factory()
            elif attribute.default is not NOTHING:
                default = attribute.default
            else:
                default = None if optional else _MISSING
            steps.append(_FieldPlan(attribute.name, kind, default))
        plan = _PLANS[cls] = tuple(steps)
    return plan


def _without_none(hint: Any) -> tuple[Any, bool]:
    if get_origin(hint) in (Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(get_args(hint)) == 2:
            return args[0], True
    return hint, False


def _reader(kind: Any) -> Callable[[Fields], object]:
    for cls in getattr(kind, "__mro__", ()):
        reader = _READERS.get(cls)
        if reader is not None:
            return reader
    raise TypeError(f"no reader for a field of type {kind!r}")  # a kind declared wrongly


def _read(f: Fields, step: _FieldPlan) -> object:
    kind, default = step.kind, step.default
    getter = _GETTERS.get(kind)
    if getter is not None:
        return getter(f, step.name, default)
    if get_origin(kind) is tuple:
        item = get_args(kind)[0]
        if item is str:
            return tuple(f.texts(step.name))
        if get_origin(item) is Mapping or item is Mapping:
            return tuple(dict(o.data) for o in f.objects(step.name))
        read_item = _reader(item)
        return tuple(read_item(o) for o in f.objects(step.name))
    nested = f.nested(step.name, _MISSING if default is _MISSING else None)
    if nested is None:
        return default
    return _reader(kind)(nested)


def event_from_dict(
    data: object, *, path: str | Path | None = None, line: int | None = None
) -> Event:
    """The event a transcript line's object describes (see the module docstring); anything
    wrong is a `FixtureError` naming `path`, `line` and the field."""
    where = str(path) if path is not None else None
    if not isinstance(data, dict):
        raise FixtureError("not a transcript event (not an object)", path=where, line=line)
    f = Fields(data, where, line)
    name = f.text("event")
    at = f.number("at", 0.0)
    cls = kind_named(name)
    if cls is None:
        rest = {k: v for k, v in data.items() if k not in ("event", "at")}
        return UnknownEvent(at, name, rest)
    values = {step.name: _read(f, step) for step in _plan(cls)}
    return cls(at=at, **values)


def kind_named(name: str) -> type[Event] | None:
    """The event class registered as `name`, the harness's every kind loaded first if needed
    (None for a name no kind has)."""
    global _all_kinds_loaded
    cls = _KINDS.get(name)
    if cls is None and not _all_kinds_loaded:
        for module in _KIND_MODULES:
            importlib.import_module(module)
        _all_kinds_loaded = True
        cls = _KINDS.get(name)
    if cls is None or cls is UnknownEvent:
        return None
    return cls
