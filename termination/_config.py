"""Sensors and feedback providers from config tables (a run spec's ``[[sensors]]`` and
``[[feedback]]``): the ``type`` key picks the class, every other key is a setting.

Unknown types and keys are errors naming the key and what was expected; a setting of the
wrong type is the class's own error, prefixed with where it came from.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from harness import ConfigurationError

from ._check_churn import CheckChurnSensor
from ._context_pressure import ContextPressureSensor
from ._feedback import FeedbackProvider, FeedbackProviderConfig, FeedbackTrigger
from ._no_progress import NoProgressSensor
from ._oscillation import OscillationSensor
from ._providers import BudgetFeedback, DeadlineFeedback, PlanProgressFeedback, ToolUsageFeedback
from ._repeated_claim import RepeatedClaimSensor
from ._sensors import ConsecutiveToolErrorsSensor, RepeatedToolCallSensor, Sensor

_SENSORS: dict[str, Callable[..., Sensor]] = {
    "repeated_tool_call": RepeatedToolCallSensor,
    "consecutive_tool_errors": ConsecutiveToolErrorsSensor,
    "no_progress": NoProgressSensor,
    "oscillation": OscillationSensor,
    "context_pressure": ContextPressureSensor,
    "check_churn": CheckChurnSensor,
    "repeated_claim": RepeatedClaimSensor,
}
_PROVIDERS: dict[str, Callable[..., FeedbackProvider]] = {
    "deadline": DeadlineFeedback,
    "budget": BudgetFeedback,
    "tool_usage": ToolUsageFeedback,
    "plan_progress": PlanProgressFeedback,
}


def register_sensor(kind: str, factory: Callable[..., Sensor]) -> None:
    """Make a sensor type available to config files under ``type = kind``."""
    _SENSORS[kind] = factory


def register_feedback(kind: str, factory: Callable[..., FeedbackProvider]) -> None:
    """Make a feedback provider type available to config files under ``type = kind``."""
    _PROVIDERS[kind] = factory


def sensor_from_config(table: Mapping[str, Any], *, where: str) -> Sensor:
    """Build a sensor from a config table with a ``type`` key."""
    args = dict(table)
    kind = args.pop("type", None)
    if kind not in _SENSORS:
        raise ConfigurationError(f"{where}.type must be one of {sorted(_SENSORS)} (got {kind!r})")
    sensor: Sensor = _build(_SENSORS[kind], args, where, f"sensor {kind!r}")
    return sensor


def feedback_from_config(table: Mapping[str, Any], *, where: str) -> FeedbackProviderConfig:
    """Build a provider and its trigger from a table with ``type`` and a ``trigger`` table.

    ``{type = "deadline", warning_threshold_seconds = 120, trigger = {every_n_seconds = 30}}``
    """
    args = dict(table)
    kind = args.pop("type", None)
    if kind not in _PROVIDERS:
        raise ConfigurationError(f"{where}.type must be one of {sorted(_PROVIDERS)} (got {kind!r})")
    if "trigger" not in args:
        raise ConfigurationError(
            f"{where}.trigger is required: a table with every_n_calls, every_n_seconds "
            "and/or file_appears"
        )
    spec = args.pop("trigger")
    if not isinstance(spec, Mapping):
        raise ConfigurationError(f"{where}.trigger must be a table (got {spec!r})")
    trigger: FeedbackTrigger = _build(FeedbackTrigger, dict(spec), f"{where}.trigger", "trigger")
    if trigger.never:
        raise ConfigurationError(
            f"{where}.trigger sets no condition, so the provider would never run "
            "(set every_n_calls, every_n_seconds or file_appears)"
        )
    provider: FeedbackProvider = _build(
        _PROVIDERS[kind], args, where, f"feedback provider {kind!r}"
    )
    try:
        return FeedbackProviderConfig(provider, trigger)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def _settings(factory: Callable[..., Any]) -> set[str] | None:
    """The keyword names `factory` accepts, or None when it takes any (``**kwargs``)."""
    if isinstance(factory, type) and attrs.has(factory):
        return {a.alias or a.name for a in attrs.fields(factory) if a.init}
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters if p.kind is not inspect.Parameter.POSITIONAL_ONLY}


def _build(factory: Callable[..., Any], args: dict[str, Any], where: str, what: str) -> Any:
    known = _settings(factory)
    if known is not None:
        unknown = sorted(set(args) - known)
        if unknown:
            raise ConfigurationError(
                f"{where}.{unknown[0]} is not a setting of {what} "
                f"(expected some of {sorted(known)})"
            )
    try:
        return factory(**args)
    except (ConfigurationError, TypeError) as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
