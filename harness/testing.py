"""What test writers need: scripted models and fixtures, the fake clock, an in-memory sink.

Users of the loop import `harness`; tests that script a model, replay a recording, collect
events in memory or drive time by hand import this module too::

    from harness.testing import FakeClock, ListSink, ScriptedModelClient, write_fixture

The pytest plugin (``pytest_completion_harness``) builds its fixtures from these names.
"""

from ._errors import FixtureAssertionError
from ._events._sinks import ListSink
from ._fixtures._fake_clock import FakeClock, FastForwardClock
from ._fixtures._scripted import ScriptedModelClient, fixture_from_transcript, write_fixture

__all__ = [
    "FakeClock",
    "FastForwardClock",
    "FixtureAssertionError",
    "ListSink",
    "ScriptedModelClient",
    "fixture_from_transcript",
    "write_fixture",
]
