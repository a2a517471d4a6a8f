"""The one check for settings that must be positive numbers, shared by every package."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._errors import ConfigurationError


def check_positive(
    name: str,
    value: object,
    *,
    integer: bool = False,
    allow_none: bool = False,
    owner: str | None = None,
) -> None:
    """Raise `ConfigurationError` unless `value` is a number above zero (an int if `integer`;
    None passes when `allow_none`). A bool is not a number here, and NaN is not above zero.

    The message names the setting, what was expected and what came:
    ``'max_turns' must be a positive int (got 0)``, prefixed with ``owner: `` when given.
    """
    if value is None and allow_none:
        return
    kind: type | tuple[type, ...] = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:  # type: ignore[operator]
        what = "a positive int" if integer else "a positive number"
        prefix = f"{owner}: " if owner else ""
        raise ConfigurationError(f"{prefix}{name!r} must be {what} (got {value!r})")


def positive(*, integer: bool = False, allow_none: bool = False) -> Callable[[Any, Any, Any], None]:
    """`check_positive` as an attrs validator, naming the attribute."""

    def validate(instance: Any, attribute: Any, value: Any) -> None:
        check_positive(attribute.name, value, integer=integer, allow_none=allow_none)

    return validate


def check_type(
    name: str,
    value: object,
    expected: type | tuple[type, ...],
    what: str,
    *,
    allow_none: bool = False,
    owner: str | None = None,
) -> None:
    """Raise `ConfigurationError` unless `value` is an instance of `expected` (None passes
    when `allow_none`; a bool is no int here). The message names the setting, says `what`
    was expected and shows what came: ``'workspace' must be a path (got int 3)``."""
    if value is None and allow_none:
        return
    kinds = expected if isinstance(expected, tuple) else (expected,)
    wrong_bool = isinstance(value, bool) and bool not in kinds
    if wrong_bool or not isinstance(value, kinds):
        prefix = f"{owner}: " if owner else ""
        raise ConfigurationError(f"{prefix}{name!r} must be {what} (got {got(value)})")


def of_type(
    expected: type | tuple[type, ...], what: str, *, allow_none: bool = False
) -> Callable[[Any, Any, Any], None]:
    """`check_type` as an attrs validator, naming the attribute."""

    def validate(instance: Any, attribute: Any, value: Any) -> None:
        check_type(attribute.name, value, expected, what, allow_none=allow_none)

    return validate


def got(value: object) -> str:
    """A value as an error message shows it: its type and a short repr."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


__all__ = ["check_positive", "check_type", "got", "of_type", "positive"]
