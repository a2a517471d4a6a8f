"""`check_from_config`: any standard check from a TOML table, e.g. ``{type = "feature_list"}``.

Every table has a ``type`` and that type's keys; an unknown type or key, or a value of the
wrong kind, is a `ConfigurationError` naming `where` and the key. ``all_of``/``any_of`` take
``checks = [...]`` tables, built recursively. ``question_answered`` needs a ``judge`` model
table, which `model_factory(table, where)` turns into a `ModelClient`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness import ConfigurationError, ModelClient

from ._always import AlwaysComplete
from ._command import CommandCheck
from ._compose import AllOf, AnyOf
from ._feature_list import FeatureListCheck
from ._files import FilesCheck
from ._judge import QuestionAnsweredCheck
from ._plan_check import PlanCheck
from ._protocol import CompletionCheck
from ._sandbox import SandboxProvider, sandbox_by_name
from ._signal import SignalCheck
from ._sql import SqlResultCheck
from ._test_suite import TestSuiteCheck

ModelFactory = Callable[[Mapping[str, Any], str], ModelClient]

_NUMBER = (int, float)
# type -> {key: (accepted types, required)}
_KEYS: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "always_complete": {},
    "feature_list": {"path": ((str,), False), "max_runs": ((int,), False)},
    "test_suite": {
        "command": ((str, list), True),
        "working_dir": ((str,), False),
        "timeout": (_NUMBER, False),
        "sandbox": ((str, dict), False),
        "junit_xml": ((str,), False),
        "env": ((dict,), False),
    },
    "command": {
        "command": ((str, list), True),
        "working_dir": ((str,), False),
        "timeout": (_NUMBER, False),
        "sandbox": ((str, dict), False),
        "what": ((str,), False),
        "env": ((dict,), False),
    },
    "files": {"paths": ((list, str), True), "non_empty": ((bool,), False)},
    "signal": {"token": ((str,), False)},
    "plan": {},
    "sql_result": {"expected_columns": ((list,), False), "min_rows": ((int,), False)},
    "question_answered": {
        "question": ((str,), True),
        "rubric": ((str,), False),
        "judge": ((dict,), True),
    },
    "all_of": {"checks": ((list,), True)},
    "any_of": {"checks": ((list,), True)},
}
CHECK_TYPES = tuple(sorted(_KEYS))


def check_from_config(
    table: Mapping[str, Any],
    *,
    where: str,
    model_factory: ModelFactory | None = None,
) -> CompletionCheck:
    """Build the check `table` describes; errors name `where` and the key at fault."""
    if not isinstance(table, Mapping):
        raise ConfigurationError(f"{where}: a check must be a table (got {table!r})")
    kind = table.get("type")
    if kind not in _KEYS:
        raise ConfigurationError(
            f"{where}: 'type' must be one of {list(CHECK_TYPES)} (got {kind!r})"
        )
    options = _validated(table, kind, where)
    try:
        return _build(kind, options, where, model_factory)
    except ConfigurationError as exc:
        if str(exc).startswith(where):
            raise
        raise ConfigurationError(f"{where}: {exc}") from None


def _validated(table: Mapping[str, Any], kind: str, where: str) -> dict[str, Any]:
    allowed = _KEYS[kind]
    options = {k: v for k, v in table.items() if k != "type"}
    for key in options:
        if key not in allowed:
            expected = sorted(allowed) or "no other keys"
            raise ConfigurationError(
                f"{where}: unknown key {key!r} for a {kind} check (expected {expected})"
            )
    for key, (types, required) in allowed.items():
        if key not in options:
            if required:
                raise ConfigurationError(f"{where}: a {kind} check needs {key!r}")
            continue
        value = options[key]
        numeric_bool = isinstance(value, bool) and bool not in types
        if numeric_bool or not isinstance(value, types):
            names = " or ".join(t.__name__ for t in types)
            raise ConfigurationError(f"{where}: {key!r} must be {names} (got {value!r})")
    return options


def _sandbox(value: object, where: str) -> SandboxProvider:
    if isinstance(value, str):
        return sandbox_by_name(value)
    assert isinstance(value, dict)
    options = dict(value)
    name = options.pop("type", None)
    if not isinstance(name, str):
        raise ConfigurationError(f"{where}: a sandbox table needs a 'type' (got {value!r})")
    try:
        return sandbox_by_name(name, **options)
    except TypeError as exc:
        raise ConfigurationError(
            f"{where}: sandbox {name!r} does not take these options: {exc}"
        ) from None


def _build(
    kind: str, options: dict[str, Any], where: str, model_factory: ModelFactory | None
) -> CompletionCheck:
    if "sandbox" in options:
        options["sandbox"] = _sandbox(options["sandbox"], f"{where}.sandbox")
    if "command" in options and isinstance(options["command"], list):
        options["command"] = tuple(options["command"])
    simple: dict[str, Callable[..., CompletionCheck]] = {
        "always_complete": AlwaysComplete,
        "feature_list": FeatureListCheck,
        "test_suite": TestSuiteCheck,
        "command": CommandCheck,
        "files": FilesCheck,
        "signal": SignalCheck,
        "plan": PlanCheck,
        "sql_result": SqlResultCheck,
    }
    if kind in simple:
        return simple[kind](**options)
    if kind in ("all_of", "any_of"):
        children = [
            check_from_config(child, where=f"{where}.checks[{i}]", model_factory=model_factory)
            for i, child in enumerate(options["checks"])
        ]
        return AllOf(children) if kind == "all_of" else AnyOf(children)
    assert kind == "question_answered"
    if model_factory is None:
        raise ConfigurationError(
            f"{where}: a question_answered check needs a judge model, but no model factory "
            "was given to build one"
        )
    judge = model_factory(options["judge"], f"{where}.judge")
    return QuestionAnsweredCheck(judge, options["question"], options.get("rubric"))
