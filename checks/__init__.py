"""Completion checks: the gate an agent's claim of "done" must pass."""

from ._feature_list import Feature, FeatureListCheck, FeatureListError, load_features
from ._protocol import AlwaysComplete, CompletionCheck, PreparesForRun

__all__ = [
    "AlwaysComplete",
    "CompletionCheck",
    "Feature",
    "FeatureListCheck",
    "FeatureListError",
    "PreparesForRun",
    "load_features",
]
