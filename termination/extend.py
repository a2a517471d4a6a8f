"""What extenders of `termination` need: the descriptions of the config tables a spec's
``[budget]``, ``[policy]``, ``[[sensors]]`` and ``[[feedback]]`` accept, for loaders and the spec
reference, and the protocols a sensor or a feedback provider may implement.
"""

from ._feedback import FeedbackProvider, ProviderBindsPerSession
from ._keys import BUDGET, FEEDBACK, POLICY, SENSORS, TRIGGER
from ._sensors import BindsPerSession, ReadsVerdicts, Sensor, StartsSession

__all__ = [
    "BUDGET",
    "BindsPerSession",
    "FEEDBACK",
    "FeedbackProvider",
    "POLICY",
    "ProviderBindsPerSession",
    "ReadsVerdicts",
    "SENSORS",
    "Sensor",
    "StartsSession",
    "TRIGGER",
]
