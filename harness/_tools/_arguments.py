"""The validator for tool arguments: a JSON schema compiled, once per tool, into a checker.

Each schema node becomes a closure that tests exactly what the node says, so a call pays only
for what its parameters declare: an integer argument costs two type tests, a list of objects
a loop over its items. It understands the subset of JSON Schema that `harness._tools._schema` writes
(``type``, ``enum``, ``const``, ``anyOf``, ``items``, ``prefixItems``, ``minItems``,
``maxItems``, ``properties``, ``required``, ``additionalProperties``); any other keyword in a
hand-written schema is shown to the model but not enforced.

An error names the argument and the path to the offending value:
``argument 'items'[2]['qty'] must be integer (got str 'x')``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Check = Callable[[Any], None]  # raises _Invalid when the value breaks its schema node
# A top-level argument's rule: the Python types its declared JSON type allows (None: any),
# whether a bool must be refused although it is an int, the declared type as the message
# shows it, and the check of everything else the node says (None: nothing more).
Rule = tuple[tuple[type, ...] | None, bool, Any, Check | None]


class ToolArgumentError(ValueError):
    """The model called a tool with arguments that do not fit its schema."""


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}

_UNKNOWN: Any = object()  # no rule for the argument
_NO_LIMIT = sys.maxsize
_SHOWN = 60  # characters of a value's repr an error message shows


class Invalid(Exception):
    """A value breaks its schema node; each container it passes through on the way out adds
    its index or key to `path` (innermost first)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str] = []

    def message(self, argument: str) -> str:
        return f"argument {argument!r}{''.join(reversed(self.path))} {self.problem}"


def _got(value: object) -> str:
    text = repr(value)
    if len(text) > _SHOWN:
        text = text[: _SHOWN - 3] + "..."
    return f"(got {type(value).__name__} {text})"


def _type_rule(schema: Mapping[str, Any]) -> tuple[tuple[type, ...] | None, bool, Any]:
    """The Python types `schema`'s ``type`` allows (None: any), and whether bools are out."""
    declared = schema.get("type")
    if declared is None:
        return None, False, None
    names = [declared] if isinstance(declared, str) else list(declared)
    allowed: list[type] = []
    for name in names:
        kinds = _JSON_TYPES.get(name)
        if kinds is None:  # a type this validator does not know: do not refuse on it
            return None, False, declared
        allowed.extend(kinds)
    no_bool = "boolean" not in names and ("integer" in names or "number" in names)
    return tuple(dict.fromkeys(allowed)), no_bool, declared


def _rule(schema: Mapping[str, Any]) -> Rule | None:
    """What the top-level loop tests for one argument; None when anything goes."""
    allowed, no_bool, declared = _type_rule(schema)
    deep = _deep_check(schema)
    if allowed is None and deep is None:
        return None
    return allowed, no_bool, declared, deep


def compile_schema(schema: Mapping[str, Any]) -> Check | None:
    """A checker for one schema node (None when the node accepts anything)."""
    allowed, no_bool, declared = _type_rule(schema)
    deep = _deep_check(schema)
    if allowed is None:
        return deep
    problem = f"must be {declared}"

    if deep is None:

        def check_type(value: Any) -> None:
            if not isinstance(value, allowed) or (no_bool and value.__class__ is bool):
                raise Invalid(f"{problem} {_got(value)}")

        return check_type

    def check(value: Any) -> None:
        if not isinstance(value, allowed) or (no_bool and value.__class__ is bool):
            raise Invalid(f"{problem} {_got(value)}")
        deep(value)

    return check


def _deep_check(schema: Mapping[str, Any]) -> Check | None:
    """Everything `schema` says besides its ``type``, as one checker (None: nothing)."""
    checks = [
        check
        for check in (
            _enum_check(schema),
            _array_check(schema),
            _object_check(schema),
            _any_of_check(schema),
        )
        if check is not None
    ]
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]

    def check_all(value: Any) -> None:
        for check in checks:
            check(value)

    return check_all


def _enum_key(value: object) -> tuple[str, object]:
    """A key under which JSON-equal values meet: a bool never equals a number here."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    return ("json", json.dumps(value, sort_keys=True, default=repr))


def _enum_check(schema: Mapping[str, Any]) -> Check | None:
    if "enum" in schema:
        values = list(schema["enum"])
    elif "const" in schema:
        values = [schema["const"]]
    else:
        return None
    keys = frozenset(_enum_key(v) for v in values)
    problem = f"must be one of {values!r}" if len(values) != 1 else f"must be {values[0]!r}"

    def check_enum(value: Any) -> None:
        if _enum_key(value) not in keys:
            raise Invalid(f"{problem} {_got(value)}")

    return check_enum


def _array_check(schema: Mapping[str, Any]) -> Check | None:
    prefix = [compile_schema(s) for s in schema.get("prefixItems", ())]
    items = schema.get("items", True)
    rest = compile_schema(items) if isinstance(items, Mapping) else None
    low = int(schema.get("minItems", 0))
    high = int(schema.get("maxItems", _NO_LIMIT))
    if items is False:
        high = min(high, len(prefix))
    if not any(prefix) and rest is None and low == 0 and high == _NO_LIMIT:
        return None
    size = f"must have exactly {low} item{'s' * (low != 1)}" if low == high else ""
    start = len(prefix)
    prefix_checks = [(i, c) for i, c in enumerate(prefix) if c is not None]

    def check_array(value: Any) -> None:
        if not isinstance(value, (list, tuple)):
            return  # the keywords constrain arrays only; `type` judges the rest
        count = len(value)
        if count < low or count > high:
            if size:
                raise Invalid(f"{size} (got {count})")
            bound = low if count < low else high
            which = "at least" if count < low else "at most"
            raise Invalid(f"must have {which} {bound} item{'s' * (bound != 1)} (got {count})")
        index = 0
        try:
            for index, check in prefix_checks:
                if index < count:
                    check(value[index])
            if rest is not None:
                for index in range(start, count):
                    rest(value[index])
        except Invalid as exc:
            exc.path.append(f"[{index}]")
            raise

    return check_array


def _object_check(schema: Mapping[str, Any]) -> Check | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = tuple(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    checks = {key: compile_schema(s) for key, s in properties.items()}
    extra_check = compile_schema(extra) if isinstance(extra, Mapping) else None
    closed = extra is False
    if not required and not closed and extra_check is None and not any(checks.values()):
        return None
    known = sorted(properties)

    def check_object(value: Any) -> None:
        if not isinstance(value, dict):
            return  # the keywords constrain objects only; `type` judges the rest
        for key in required:
            if key not in value:
                raise Invalid(f"is missing required key {key!r}")
        for key, item in value.items():
            check = checks.get(key, _UNKNOWN)
            if check is _UNKNOWN:
                if closed:
                    raise Invalid(f"has unknown key {key!r} (expected one of {known})")
                check = extra_check
            if check is not None:
                try:
                    check(item)
                except Invalid as exc:
                    exc.path.append(f"[{key!r}]")
                    raise

    return check_object


def _any_of_check(schema: Mapping[str, Any]) -> Check | None:
    branches: Sequence[Mapping[str, Any]] = schema.get("anyOf", ())
    if not branches:
        return None
    compiled = [compile_schema(b) for b in branches]
    checks = [c for c in compiled if c is not None]
    if len(checks) < len(compiled):
        return None  # one branch accepts anything
    types_of = [_type_rule(b) for b in branches]
    problem = "must be " + " or ".join(_describe(b) for b in branches)

    def check_any_of(value: Any) -> None:
        errors: list[Invalid] = []
        for check in checks:
            try:
                check(value)
            except Invalid as exc:
                errors.append(exc)
            else:
                return
        # When the value has the type of exactly one branch, that branch's error says more.
        fitting = [
            error
            for error, (allowed, no_bool, _) in zip(errors, types_of, strict=True)
            if allowed is not None
            and isinstance(value, allowed)
            and not (no_bool and value.__class__ is bool)
        ]
        if len(fitting) == 1:
            raise fitting[0]
        raise Invalid(f"{problem} {_got(value)}")

    return check_any_of


def _describe(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return f"one of {list(schema['enum'])!r}"
    if "const" in schema:
        return repr(schema["const"])
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    if declared is not None:
        return " or ".join(declared)
    return "any value"


def compile_arguments(
    schema: Mapping[str, Any],
    convert: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """A checker for a tool's arguments: raises `ToolArgumentError` naming the argument (and
    the path inside it) when `arguments` break `schema` (names are checked before values);
    returns `arguments`, passed through `convert` when there is one. One closure does both, so
    the call the loop makes for every tool call is one call deep."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    rules = {key: _rule(prop) for key, prop in properties.items()}
    required = tuple(schema.get("required", ()))
    required_set = frozenset(required)
    known = sorted(rules)
    unknown = _UNKNOWN

    def check_arguments(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        if not arguments.keys() >= required_set:  # one set test for the usual call
            missing = next(name for name in required if name not in arguments)
            raise ToolArgumentError(f"missing required argument {missing!r}")
        for key, value in arguments.items():
            rule = rules.get(key, unknown)
            if rule is None:
                continue
            if rule is unknown:
                raise ToolArgumentError(f"unknown argument {key!r} (expected one of {known})")
            allowed, no_bool, declared, deep = rule
            if allowed is not None and (
                not isinstance(value, allowed) or (no_bool and value.__class__ is bool)
            ):
                raise ToolArgumentError(f"argument {key!r} must be {declared} {_got(value)}")
            if deep is not None:
                try:
                    deep(value)
                except Invalid as exc:
                    raise ToolArgumentError(exc.message(key)) from None
        return arguments if convert is None else convert(arguments)

    return check_arguments
