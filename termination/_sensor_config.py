"""Sensors and feedback providers from config tables (a run spec's ``[[sensors]]`` and
``[[feedback]]``): the ``type`` key picks the class, every other key is a setting.

Tables are validated against the schemas in `_keys` (unknown types and keys, missing and
mistyped values are errors naming the key); a bad value is the class's own error, prefixed
with where it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import evolve

from harness import ConfigurationError
from harness.extend import Schema

from ._check_churn import CheckChurnSensor
from ._context_pressure import ContextPressureSensor
from ._feedback import FeedbackProvider, FeedbackProviderConfig, FeedbackTrigger
from ._feedback_providers import (
    BudgetFeedback,
    DeadlineFeedback,
    PlanProgressFeedback,
    ToolUsageFeedback,
)
from ._keys import FEEDBACK, SENSORS, TRIGGER, TRIGGER_KEY
from ._no_progress import NoProgressSensor
from ._oscillation import OscillationSensor
from ._repeated_claim import RepeatedClaimSensor
from ._sensors import ConsecutiveToolErrorsSensor, RepeatedToolCallSensor, Sensor
from ._tampering import TamperingSensor

_SENSORS: dict[str, Callable[..., Sensor]] = {
    "repeated_tool_call": RepeatedToolCallSensor,
    "consecutive_tool_errors": ConsecutiveToolErrorsSensor,
    "no_progress": NoProgressSensor,
    "oscillation": OscillationSensor,
    "context_pressure": ContextPressureSensor,
    "check_churn": CheckChurnSensor,
    "repeated_claim": RepeatedClaimSensor,
    "tampering": TamperingSensor,
}
_PROVIDERS: dict[str, Callable[..., FeedbackProvider]] = {
    "deadline": DeadlineFeedback,
    "budget": BudgetFeedback,
    "tool_usage": ToolUsageFeedback,
    "plan_progress": PlanProgressFeedback,
}


def register_sensor(
    kind: str, factory: Callable[..., Sensor], schema: Schema | None = None
) -> None:
    """Make a sensor type available to config files under ``type = kind``.

    `schema` describes its keys (for validation and the spec reference); without one, they are
    read off `factory`'s signature.
    """
    title = f"sensor {kind!r}"
    SENSORS.add(kind, schema or Schema.from_callable(factory, title))
    _SENSORS[kind] = factory


def register_feedback(
    kind: str, factory: Callable[..., FeedbackProvider], schema: Schema | None = None
) -> None:
    """Make a feedback provider type available to config files under ``type = kind``.

    `schema` describes its keys, as for `register_sensor`; the ``trigger`` key is added.
    """
    schema = schema or Schema.from_callable(factory, f"feedback provider {kind!r}")
    if "trigger" not in schema.names:
        schema = evolve(schema, keys=(*schema.keys, TRIGGER_KEY))
    FEEDBACK.add(kind, schema)
    _PROVIDERS[kind] = factory


def sensor_from_config(table: Mapping[str, Any], *, where: str) -> Sensor:
    """Build a sensor from a config table with a ``type`` key."""
    kind, args = SENSORS.validate(table, where)
    sensor: Sensor = _build(_SENSORS[kind], args, where)
    return sensor


def feedback_from_config(table: Mapping[str, Any], *, where: str) -> FeedbackProviderConfig:
    """Build a provider and its trigger from a table with ``type`` and a ``trigger`` table.

    ``{type = "deadline", warning_threshold_seconds = 120, trigger = {every_n_seconds = 30}}``
    """
    kind, args = FEEDBACK.validate(table, where)
    spec = args.pop("trigger")
    settings = TRIGGER.validate(spec, f"{where}.trigger")
    trigger: FeedbackTrigger = _build(FeedbackTrigger, settings, f"{where}.trigger")
    if trigger.never:
        raise ConfigurationError(
            f"{where}.trigger sets no condition, so the provider would never run "
            "(set every_n_calls, every_n_seconds or file_appears)"
        )
    provider: FeedbackProvider = _build(_PROVIDERS[kind], args, where)
    try:
        return FeedbackProviderConfig(provider, trigger)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def _build(factory: Callable[..., Any], args: dict[str, Any], where: str) -> Any:
    try:
        return factory(**args)
    except (ConfigurationError, TypeError) as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
