"""Declarative descriptions of config tables: what a run spec's tables accept.

Each package describes its own tables with `Key` and `Schema` (checks its checks, termination
its budget, sensors and feedback, harness its model tables, strategies its strategies and the
spec's top level). The loaders validate a table against its schema before they build anything,
and `strategies._cli._reference` renders every schema into docs/spec-reference.md, so the page
and the validation cannot drift apart. Adding a setting is one `Key(...)` line in its schema.

Validation covers what a table can say on its own: unknown keys (with a "did you mean" and the
valid keys), required keys, the kind of each value and its allowed values. Ranges and relations
between values stay with the classes that take them (their validators name the key too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import field, frozen

from ._errors import ConfigurationError

# TOML's names for what a key holds, and the Python types tomllib gives for each.
_KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "table": (dict,),
    "array": (list,),
    "array of strings": (list,),
    "array of tables": (list,),
    "any": (object,),
}
_ELEMENTS: dict[str, type] = {"array of strings": str, "array of tables": dict}


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
"""The default of a key that must be given."""


def _kinds(value: str | tuple[str, ...]) -> tuple[str, ...]:
    kinds = (value,) if isinstance(value, str) else tuple(value)
    unknown = [k for k in kinds if k not in _KINDS]
    if not kinds or unknown:
        raise ValueError(f"unknown kind(s) {unknown or kinds!r} (expected some of {list(_KINDS)})")
    return kinds


def _choices(values: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(values)


@frozen
class Key:
    """One key of a table: its name, kind(s), default, allowed values and a line of help.

    `default` is what the key means when it is left out (`REQUIRED` when it must be given,
    None when leaving it out means "not set"); `default_text` replaces it in the reference
    where the default is not a plain value. `see` names the schema a table value follows,
    or a function that returns it: a link in the reference must not import, at every load
    of a spec, the module that describes the linked table (`linked` resolves it).
    """

    name: str
    kind: tuple[str, ...] = field(converter=_kinds)
    help: str
    default: Any = None
    choices: tuple[Any, ...] = field(default=(), converter=_choices)
    default_text: str | None = None
    see: Schema | Variants | Callable[[], Schema | Variants] | None = None

    @property
    def linked(self) -> Schema | Variants | None:
        """The schema `see` names, called up if it is given as a function."""
        if self.see is None or isinstance(self.see, Schema | Variants):
            return self.see
        return self.see()

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def check(self, value: object, where: str) -> None:
        """Raise a `ConfigurationError` naming `where` when `value` is of the wrong kind or
        not one of the allowed values."""
        if not any(_is_kind(value, kind) for kind in self.kind):
            raise ConfigurationError(
                f"{where}.{self.name} must be {describe_kinds(self.kind)} (got {value!r})"
            )
        if self.choices and value not in self.choices:
            allowed = ", ".join(repr(c) for c in self.choices)
            raise ConfigurationError(
                f"{where}.{self.name} must be one of {allowed} (got {value!r})"
                + _suggestion(value, self.choices)
            )


def _is_kind(value: object, kind: str) -> bool:
    if kind == "any":
        return True
    types = _KINDS[kind]
    if isinstance(value, bool) and bool not in types:
        return False  # True is an int to Python, never a number to a spec
    if not isinstance(value, types):
        return False
    element = _ELEMENTS.get(kind)
    return element is None or all(isinstance(v, element) for v in value)  # type: ignore[attr-defined]


def describe_kinds(kinds: Iterable[str]) -> str:
    """``a string or an array``: the kinds as a phrase for messages."""
    words = [("an " if k[0] in "aeiou" else "a ") + k for k in kinds]
    return " or ".join(words)


def _key_tuple(keys: Iterable[Key]) -> tuple[Key, ...]:
    return tuple(keys)


@frozen
class Schema:
    """The keys one table accepts. `title` names the table in messages ("a signal check").

    `heading` is its section title in the reference and `help` the paragraph under it. An
    `open` schema also takes keys it does not describe (a factory that takes ``**kwargs``).
    """

    title: str
    keys: tuple[Key, ...] = field(converter=_key_tuple)
    help: str = ""
    heading: str = ""
    open: bool = False

    def __attrs_post_init__(self) -> None:
        names = [k.name for k in self.keys]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"{self.title}: keys described twice: {duplicated}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    def key(self, name: str) -> Key:
        for key in self.keys:
            if key.name == name:
                return key
        raise KeyError(name)

    def validate(
        self, table: Mapping[str, Any], where: str, *, ignore: Iterable[str] = ()
    ) -> dict[str, Any]:
        """The table's settings (without the `ignore`d keys, such as a ``type`` that picked
        this schema), after checking them: every key known, every required key present,
        every value of its kind. Errors name `where` and the key."""
        if not isinstance(table, Mapping):
            raise ConfigurationError(f"{where} must be a table (got {table!r})")
        skipped = set(ignore)
        known = {k.name: k for k in self.keys}
        for name in table:
            if name not in known and name not in skipped and not self.open:
                valid = sorted({*known, *skipped})
                listed = ", ".join(valid) if valid else "none"
                raise ConfigurationError(
                    f"{where}: unknown key {name!r} for {self.title}"
                    + _suggestion(name, valid, sep="; ")
                    + f" (valid keys: {listed})"
                )
        for key in self.keys:
            if key.name in table:
                key.check(table[key.name], where)
            elif key.required:
                raise ConfigurationError(f"{where}.{key.name} is required for {self.title}")
        return {k: v for k, v in table.items() if k not in skipped}

    @classmethod
    def from_callable(cls, factory: Callable[..., Any], title: str) -> Schema:
        """A schema read off a factory's signature (for types registered without one): every
        keyword it takes is a key of any kind; open when it takes ``**kwargs`` or has no
        signature to read."""
        import inspect

        try:
            parameters = list(inspect.signature(factory).parameters.values())
        except (TypeError, ValueError):
            return cls(title, [], open=True)
        keys = [
            Key(
                p.name,
                "any",
                "",
                default=REQUIRED if p.default is inspect.Parameter.empty else p.default,
            )
            for p in parameters
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ]
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
        return cls(title, keys, open=takes_any)


@frozen
class Variants:
    """A family of tables told apart by one key (``type``): each value has its own schema."""

    name: str
    schemas: dict[str, Schema]
    help: str = ""
    discriminator: str = "type"
    default: str | None = None

    def add(self, kind: str, schema: Schema) -> None:
        """Describe one more type (a type registered at run time)."""
        self.schemas[kind] = schema

    def select(self, table: Mapping[str, Any], where: str) -> tuple[str, Schema]:
        """The type `table` names and its schema; an error naming `where` otherwise."""
        if not isinstance(table, Mapping):
            raise ConfigurationError(f"{where} must be a table (got {table!r})")
        kind = table.get(self.discriminator, self.default)
        if not isinstance(kind, str) or kind not in self.schemas:
            allowed = ", ".join(repr(k) for k in self.schemas)
            raise ConfigurationError(
                f"{where}.{self.discriminator} must be one of {allowed} (got {kind!r})"
                + _suggestion(kind, self.schemas)
            )
        return kind, self.schemas[kind]

    def validate(self, table: Mapping[str, Any], where: str) -> tuple[str, dict[str, Any]]:
        """The type and the settings of `table`, checked against that type's schema."""
        kind, schema = self.select(table, where)
        return kind, schema.validate(table, where, ignore=(self.discriminator,))


def _suggestion(value: object, valid: Iterable[Any], *, sep: str = "; ") -> str:
    if not isinstance(value, str):
        return ""
    import difflib  # only a bad table reaches here

    names = [v for v in valid if isinstance(v, str)]
    close = difflib.get_close_matches(value, names, n=1, cutoff=0.6)
    return f"{sep}did you mean {close[0]!r}?" if close else ""
