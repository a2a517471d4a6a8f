"""Termination: budgets, sensors, feedback providers, and the policy that decides when a run
stops."""

import typing

from harness.extend import lazy_exports as _lazy_exports

from ._budget import Budget
from ._policy import TerminationPolicy
from ._sensors import (
    Action,
    BindsPerSession,
    ConsecutiveToolErrorsSensor,
    ReadsVerdicts,
    ReadsWorkspace,
    RepeatedToolCallSensor,
    Sensor,
    StartsSession,
    WatchesWorkspace,
)

if typing.TYPE_CHECKING:
    from ._check_churn import CheckChurnSensor
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
    from ._feedback_providers import (
        BudgetFeedback,
        DeadlineFeedback,
        PlanProgressFeedback,
        ToolUsageFeedback,
    )
    from ._feedback_runner import FeedbackStatistics
    from ._monitor import MonitorStatistics, WorkspaceMonitor, open_workspace_monitor
    from ._no_progress import NoProgressSensor
    from ._oscillation import OscillationSensor
    from ._repeated_claim import RepeatedClaimSensor
    from ._sensor_config import (
        feedback_from_config,
        register_feedback,
        register_sensor,
        sensor_from_config,
    )
    from ._tampering import TamperingSensor

# Loaded on first use (PEP 562), so a run that needs none of these does not pay to import
# them: a fresh process that runs one turn is one of the bench's targets (bench/run.py, W3).
_FEEDBACK = [
    "Feedback",
    "FeedbackContext",
    "FeedbackProvider",
    "FeedbackProviderConfig",
    "FeedbackTrigger",
    "Observation",
    "ProviderBindsPerSession",
    "Severity",
]
_LAZY = {
    **dict.fromkeys(_FEEDBACK, "._feedback"),
    "FeedbackStatistics": "._feedback_runner",
    "CheckChurnSensor": "._check_churn",
    "feedback_from_config": "._sensor_config",
    "register_feedback": "._sensor_config",
    "register_sensor": "._sensor_config",
    "sensor_from_config": "._sensor_config",
    "ContextPressureSensor": "._context_pressure",
    "MonitorStatistics": "._monitor",
    "WorkspaceMonitor": "._monitor",
    "open_workspace_monitor": "._monitor",
    "NoProgressSensor": "._no_progress",
    "OscillationSensor": "._oscillation",
    "BudgetFeedback": "._feedback_providers",
    "DeadlineFeedback": "._feedback_providers",
    "PlanProgressFeedback": "._feedback_providers",
    "ToolUsageFeedback": "._feedback_providers",
    "RepeatedClaimSensor": "._repeated_claim",
    "TamperingSensor": "._tampering",
}


__getattr__, __dir__ = _lazy_exports(__name__, globals(), _LAZY)


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
    "MonitorStatistics",
    "NoProgressSensor",
    "Observation",
    "OscillationSensor",
    "PlanProgressFeedback",
    "ProviderBindsPerSession",
    "ReadsVerdicts",
    "ReadsWorkspace",
    "RepeatedClaimSensor",
    "RepeatedToolCallSensor",
    "Sensor",
    "Severity",
    "StartsSession",
    "TamperingSensor",
    "TerminationPolicy",
    "ToolUsageFeedback",
    "WatchesWorkspace",
    "WorkspaceMonitor",
    "feedback_from_config",
    "open_workspace_monitor",
    "register_feedback",
    "register_sensor",
    "sensor_from_config",
]
