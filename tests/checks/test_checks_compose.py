"""`AllOf` / `AnyOf`: values that flatten, stop early, fail closed and forward `prepare`."""

from __future__ import annotations

import itertools

import anyio
import pytest
from _checks_support import snapshot
from attrs import frozen
from hypothesis import given, settings
from hypothesis import strategies as st

from checks import (
    AllOf,
    AlwaysComplete,
    AnyOf,
    CompletionCheck,
    FeatureListCheck,
    SignalCheck,
)
from harness import ConfigurationError, SessionStateSnapshot


@frozen
class Fixed:
    """A check with a fixed verdict that records every call in `log`."""

    name: str
    reason: str | None
    log: list[str]

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.log.append(self.name)
        return self.reason

    def description(self) -> str:
        return f"{self.name} holds."


class Broken:
    """A check that raises."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        raise RuntimeError("disk on fire")

    def description(self) -> str:
        return "Never works."


class Preparing:
    """A check that records the runs it was prepared for."""

    def __init__(self) -> None:
        self.prepared: list[str] = []

    async def prepare(self, state: SessionStateSnapshot) -> None:
        self.prepared.append(state.run_id)

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return None

    def description(self) -> str:
        return "Prepared."


@pytest.mark.anyio
async def test_all_of_stops_at_the_first_reason() -> None:
    """AllOf asks in order and returns the first reason without asking the rest."""
    log: list[str] = []
    check = AllOf.of(Fixed("a", None, log), Fixed("b", "b is missing", log), Fixed("c", "c", log))
    assert await check.check(snapshot()) == "b is missing"
    assert log == ["a", "b"]


@pytest.mark.anyio
async def test_any_of_stops_at_the_first_pass_and_otherwise_joins_reasons() -> None:
    """AnyOf returns None at the first pass; when none passes every reason is listed."""
    log: list[str] = []
    passing = AnyOf.of(Fixed("a", "no a", log), Fixed("b", None, log), Fixed("c", "no c", log))
    assert await passing.check(snapshot()) is None
    assert log == ["a", "b"]
    failing = AnyOf.of(Fixed("a", "no a", log), Fixed("c", "no c\nsecond line", log))
    assert await failing.check(snapshot()) == (
        "none of the 2 alternatives holds:\n1. no a\n2. no c\n   second line"
    )


@pytest.mark.anyio
async def test_a_raising_child_is_a_reason_not_a_pass() -> None:
    """A child that raises is "not complete" in AllOf, and AnyOf moves on to the next one."""
    log: list[str] = []
    all_of = AllOf.of(Broken(), Fixed("a", None, log))
    assert await all_of.check(snapshot()) == (
        "the completion check Broken failed with RuntimeError: disk on fire"
    )
    assert log == []
    assert await AnyOf.of(Broken(), Fixed("a", None, log)).check(snapshot()) is None


@pytest.mark.anyio
async def test_a_child_returning_a_non_string_or_blank_reason_fails_closed() -> None:
    """A reason that is not a str, or is blank, still means "not complete" (in the words
    `run_check` uses for a top-level check)."""
    log: list[str] = []
    odd = AllOf.of(Fixed("a", 0, log))  # type: ignore[arg-type]
    assert await odd.check(snapshot()) == (
        "the completion check Fixed returned 0 instead of None or a reason"
    )
    blank = AllOf.of(Fixed("a", "  ", log))
    assert await blank.check(snapshot()) == "the completion check Fixed returned an empty reason"


def test_operators_build_flat_values() -> None:
    """`&` and `|` build AllOf/AnyOf, nested ones of the same kind flatten, and mixed nest."""
    a, b, c = SignalCheck("A"), SignalCheck("B"), SignalCheck("C")
    assert (a & b) & c == AllOf.of(a, b, c) == a & (b & c)
    assert (a | b) | c == AnyOf.of(a, b, c)
    assert a & (b | c) == AllOf.of(a, AnyOf.of(b, c))
    assert repr(a & b) == (
        "AllOf(checks=(SignalCheck(token='A'), SignalCheck(token='B')), progress=False, "
        "parallel=False)"
    )
    assert hash(a & b) == hash(AllOf.of(a, b))


def test_plain_protocol_objects_combine_on_either_side() -> None:
    """An object that only satisfies the protocol combines with a standard check both ways."""
    plain = Preparing()
    done = AlwaysComplete()
    assert plain & done == AllOf.of(plain, done)
    assert done | plain == AnyOf.of(done, plain)
    with pytest.raises(ConfigurationError, match="needs async check"):
        done & "not a check"


def test_empty_or_invalid_combinations_are_refused() -> None:
    """An empty AllOf would pass vacuously, so it is a configuration error, as is a non-check."""
    with pytest.raises(ConfigurationError, match="AllOf needs at least one check"):
        AllOf(())
    with pytest.raises(ConfigurationError, match="AnyOf takes a sequence"):
        AnyOf("abc")
    with pytest.raises(ConfigurationError, match="needs async check"):
        AllOf((object(),))


def test_descriptions_combine_and_indent() -> None:
    """Descriptions list each child; a nested combination is indented under its bullet."""
    log: list[str] = []
    check = AllOf.of(Fixed("a", None, log), AnyOf.of(Fixed("b", None, log), Fixed("c", None, log)))
    assert check.description() == (
        "All of these must hold:\n"
        "- a holds.\n"
        "- At least one of these must hold:\n"
        "  - b holds.\n"
        "  - c holds."
    )
    assert AllOf.of(Fixed("a", None, log)).description() == "a holds."


@pytest.mark.anyio
async def test_prepare_reaches_every_nested_child() -> None:
    """Composites forward `prepare` to every child that has one, however deep."""
    first, second = Preparing(), Preparing()
    check = AllOf.of(AlwaysComplete(), AnyOf.of(first, AllOf.of(second, AlwaysComplete())))
    await check.prepare(snapshot(run_id="r7"))
    assert first.prepared == ["r7"]
    assert second.prepared == ["r7"]


def test_standard_checks_satisfy_the_protocol() -> None:
    """The composites are completion checks themselves."""
    assert isinstance(AllOf.of(AlwaysComplete()), CompletionCheck)
    assert isinstance(FeatureListCheck() | AlwaysComplete(), CompletionCheck)


verdicts = st.lists(st.booleans(), min_size=1, max_size=6)


def _checks(passes: list[bool]) -> list[CompletionCheck]:
    return [Fixed(f"c{i}", None if ok else f"c{i} fails", []) for i, ok in enumerate(passes)]


@settings(deadline=None)  # a property, not a timing: a busy machine must not fail it
@given(verdicts, st.randoms(use_true_random=False))
def test_any_of_verdict_is_order_independent(passes: list[bool], random: object) -> None:
    """AnyOf passes exactly when some child passes, whatever the order of its children."""
    checks = _checks(passes)
    order = list(checks)
    random.shuffle(order)  # type: ignore[attr-defined]

    async def verdicts_of() -> tuple[bool, bool]:
        a = await AnyOf(checks).check(snapshot())
        b = await AnyOf(order).check(snapshot())
        return a is None, b is None

    assert anyio.run(verdicts_of) == (any(passes), any(passes))


@settings(deadline=None)  # a property, not a timing: a busy machine must not fail it
@given(verdicts)
def test_all_of_passes_exactly_when_every_child_does(passes: list[bool]) -> None:
    """AllOf's verdict is the conjunction; its reason is the first failing child's."""
    checks = _checks(passes)
    reason = anyio.run(AllOf(checks).check, snapshot())
    if all(passes):
        assert reason is None
    else:
        assert reason == f"c{passes.index(False)} fails"


@settings(deadline=None)  # a property, not a timing: a busy machine must not fail it
@given(st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=3), min_size=1, max_size=4))
def test_nesting_flattens_to_the_same_value(groups: list[list[int]]) -> None:
    """However AllOf values are nested, the result equals the flat AllOf of the leaves."""
    leaves = [SignalCheck(f"T{n}") for n in range(4)]
    nested = AllOf([AllOf([leaves[i] for i in group]) for group in groups])
    flat = AllOf([leaves[i] for group in groups for i in group])
    assert nested == flat
    assert nested.checks == tuple(
        itertools.chain.from_iterable([leaves[i] for i in group] for group in groups)
    )
