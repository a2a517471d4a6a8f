"""`implements` answers exactly as ``isinstance`` does for every runtime-checkable protocol of
the four packages, on the objects a run is built from and on objects made to miss a member."""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import pytest

import checks
import harness
import harness.checkpoints
import harness.extend
import harness.testing
import strategies
import termination
import termination.extend
from checks import AlwaysComplete, FilesCheck
from harness import Harness, ScriptedModelClient
from harness.extend import SystemClock, implements
from harness.testing import FakeClock, FastForwardClock, ListSink
from strategies import Loop, Ralph, SelfVerifying
from termination import (
    Budget,
    ConsecutiveToolErrorsSensor,
    NoProgressSensor,
    RepeatedToolCallSensor,
    TerminationPolicy,
)

MODULES = (
    harness,
    harness.extend,
    harness.testing,
    harness.checkpoints,
    checks,
    termination,
    termination.extend,
    strategies,
)


def _protocols() -> list[type[Any]]:
    found: dict[str, type[Any]] = {}
    for module in MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and getattr(value, "_is_runtime_protocol", False):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[key] for key in sorted(found)]


class _Missing:
    """Has nothing a protocol asks for."""


class _NoneMethods:
    """Every attribute it is asked for exists, and is None (a method that is None does not
    implement a protocol's method; a property that is None does)."""

    def __getattr__(self, name: str) -> None:
        return None


def _objects() -> list[object]:
    model = ScriptedModelClient.from_responses([{"text": "done"}])
    policy = TerminationPolicy(
        budget=Budget(max_turns=3),
        sensors=[RepeatedToolCallSensor(), ConsecutiveToolErrorsSensor(), NoProgressSensor()],
        completion_check=FilesCheck(["answer.txt"]),
    )
    with_method = SimpleNamespace(complete=lambda request: None)
    return [
        model,
        policy,
        policy.start_session(clock=SystemClock()),
        Budget(max_turns=3),
        AlwaysComplete(),
        FilesCheck(["answer.txt"]),
        RepeatedToolCallSensor(),
        NoProgressSensor(),
        NoProgressSensor().bind(),
        SystemClock(),
        FakeClock(),
        FastForwardClock(),
        ListSink(),
        Loop(),
        Ralph(max_iterations=2),
        SelfVerifying(evaluator=model),
        Harness(model=model, policy=policy),
        with_method,
        SimpleNamespace(),
        _Missing(),
        _NoneMethods(),
        "a string",
        None,
    ]


PROTOCOLS = _protocols()


def test_the_protocols_are_found() -> None:
    """The comparison covers the packages' protocols (a few named ones at least)."""
    names = {p.__name__ for p in PROTOCOLS}
    assert {"ModelClient", "Policy", "Clock", "CompletionCheck", "Sensor"} <= names


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_implements_agrees_with_isinstance(protocol: type[Any]) -> None:
    """For each object, `implements(obj, protocol) == isinstance(obj, protocol)`."""
    for obj in _objects():
        assert implements(obj, protocol) == isinstance(obj, protocol), (obj, protocol)


def test_an_instance_attribute_counts() -> None:
    """A member set on the instance (not the class) implements the protocol, as for
    isinstance; setting it to None takes it away again."""
    obj = SimpleNamespace()
    assert not implements(obj, harness.extend.ReadsClock)
    obj.bind_clock = lambda clock: None
    assert implements(obj, harness.extend.ReadsClock)
    setattr(obj, "bind_clock", None)  # noqa: B010 (mypy narrowed obj to the protocol)
    assert not implements(obj, harness.extend.ReadsClock)


def test_a_plain_class_is_refused() -> None:
    """Only runtime-checkable protocols are accepted: a class is a mistake."""
    with pytest.raises(TypeError, match="not a runtime-checkable protocol"):
        implements(object(), int)
