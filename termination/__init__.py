"""Termination: budgets, sensors, and the policy that decides when a run stops."""

from ._budget import Budget
from ._policy import TerminationPolicy
from ._sensors import (
    BindsPerSession,
    ConsecutiveToolErrorsSensor,
    RepeatedToolCallSensor,
    Sensor,
    register_sensor,
    sensor_from_config,
)

__all__ = [
    "BindsPerSession",
    "Budget",
    "ConsecutiveToolErrorsSensor",
    "RepeatedToolCallSensor",
    "Sensor",
    "TerminationPolicy",
    "register_sensor",
    "sensor_from_config",
]
