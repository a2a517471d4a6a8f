"""What extenders of `termination` need: the descriptions of the config tables a spec's
``[budget]``, ``[policy]``, ``[[sensors]]`` and ``[[feedback]]`` accept, for loaders and the spec
reference, and the protocols a sensor or a feedback provider may implement (`ReadsWorkspace`
and `WatchesWorkspace` for one that reads the run's `WorkspaceMonitor`).
"""

from ._feedback import FeedbackProvider, ProviderBindsPerSession
from ._keys import BUDGET, FEEDBACK, POLICY, SENSORS, TRIGGER
from ._sensors import (
    BindsPerSession,
    ReadsVerdicts,
    ReadsWorkspace,
    Sensor,
    StartsSession,
    WatchesWorkspace,
)

__all__ = [
    "BUDGET",
    "BindsPerSession",
    "FEEDBACK",
    "FeedbackProvider",
    "POLICY",
    "ProviderBindsPerSession",
    "ReadsVerdicts",
    "ReadsWorkspace",
    "SENSORS",
    "Sensor",
    "StartsSession",
    "TRIGGER",
    "WatchesWorkspace",
]
