"""Termination: budgets, sensors, feedback providers, and the policy that decides when a run
stops."""

from ._budget import Budget
from ._check_churn import CheckChurnSensor
from ._config import feedback_from_config, register_feedback, register_sensor, sensor_from_config
from ._context_pressure import ContextPressureSensor
from ._feedback import (
    Feedback,
    FeedbackContext,
    FeedbackProvider,
    FeedbackProviderConfig,
    FeedbackTrigger,
    Observation,
    ProviderBindsPerSession,
    Severity,
)
from ._feedback_runner import FeedbackStatistics
from ._no_progress import NoProgressSensor
from ._oscillation import OscillationSensor
from ._policy import TerminationPolicy
from ._providers import BudgetFeedback, DeadlineFeedback, PlanProgressFeedback, ToolUsageFeedback
from ._sensors import (
    Action,
    BindsPerSession,
    ConsecutiveToolErrorsSensor,
    ReadsVerdicts,
    RepeatedToolCallSensor,
    Sensor,
    StartsSession,
)

__all__ = [
    "Action",
    "BindsPerSession",
    "Budget",
    "BudgetFeedback",
    "CheckChurnSensor",
    "ConsecutiveToolErrorsSensor",
    "ContextPressureSensor",
    "DeadlineFeedback",
    "Feedback",
    "FeedbackContext",
    "FeedbackProvider",
    "FeedbackProviderConfig",
    "FeedbackStatistics",
    "FeedbackTrigger",
    "NoProgressSensor",
    "Observation",
    "OscillationSensor",
    "PlanProgressFeedback",
    "ProviderBindsPerSession",
    "ReadsVerdicts",
    "RepeatedToolCallSensor",
    "Sensor",
    "Severity",
    "StartsSession",
    "TerminationPolicy",
    "ToolUsageFeedback",
    "feedback_from_config",
    "register_feedback",
    "register_sensor",
    "sensor_from_config",
]
