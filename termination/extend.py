"""What extenders of `termination` need: the descriptions of the config tables a spec's
``[budget]``, ``[policy]``, ``[[sensors]]`` and ``[[feedback]]`` accept, for loaders and the spec
reference, and the protocols a sensor or a feedback provider may implement (`ReadsWorkspace`
and `WatchesWorkspace` for one that reads the run's `WorkspaceMonitor`).
"""

import typing

from harness.extend import lazy_exports as _lazy_exports

from ._keys import BUDGET, FEEDBACK, POLICY, SENSORS, TRIGGER
from ._sensors import (
    BindsPerSession,
    ReadsVerdicts,
    ReadsWorkspace,
    Sensor,
    StartsSession,
    WatchesWorkspace,
)

if typing.TYPE_CHECKING:
    from ._feedback import FeedbackProvider, ProviderBindsPerSession

# The feedback protocols load on first use: a loader that reads a spec's tables (a stop hook,
# at every stop) does not create the feedback module's values.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    globals(),
    {
        "FeedbackProvider": "termination._feedback",
        "ProviderBindsPerSession": "termination._feedback",
    },
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
