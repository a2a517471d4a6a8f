"""`run_check`: the one fail-closed verdict. An exception, a timeout or an answer that is not
None or a reason is "not complete", and the policy, Ralph, `harness check` and the stop hook
all give the agent the same reason for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from checks import AllOf, AnyOf, CompletionCheck, run_check
from harness import CheckFailed, Harness, RejectionLimit, ScriptedModelClient, SessionStateSnapshot
from harness.testing import FakeClock, ListSink
from strategies import Ralph, RalphCompletionUnmet, Spec, load_spec
from strategies._cli._checking import run_checks
from strategies._cli._hooks._stop import claude_stop
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

SNAPSHOT = SessionStateSnapshot.standalone(final_text="done")


class Raises:
    """A check that crashes."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        raise RuntimeError("the test runner crashed")

    def description(self) -> str:
        return "A check that crashes."


class Answers:
    """A check that answers `answer`, whatever it is."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    async def check(self, state: SessionStateSnapshot) -> Any:
        return self.answer

    def description(self) -> str:
        return "A check with a fixed answer."


class Hangs:
    """A check that sleeps on `clock` far longer than any timeout."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    async def check(self, state: SessionStateSnapshot) -> str | None:
        await self.clock.sleep(10_000)
        return None

    def description(self) -> str:
        return "A check that hangs."


async def test_an_exception_is_not_complete_with_the_error_as_reason() -> None:
    """A check that raises gives a verdict naming the check and the error, never a pass."""
    check = Raises()
    verdict = await run_check(check, SNAPSHOT)
    assert verdict.reason == (
        "the completion check Raises failed with RuntimeError: the test runner crashed"
    )
    assert verdict.error is not None  # with where it raised, for the check's event
    assert verdict.error.summary == "RuntimeError: the test runner crashed"
    assert verdict.error.traceback is not None
    assert verdict.error.traceback.startswith("Traceback (most recent call last):")
    assert not verdict.passed
    assert verdict.description == "A check that crashes."


async def test_a_timeout_is_not_complete_at_exactly_the_deadline() -> None:
    """A check still running `timeout` seconds later is cancelled and is not complete."""
    clock = FakeClock()
    verdict = await run_check(Hangs(clock), SNAPSHOT, time_limit=5, clock=clock)
    assert verdict.reason == "the completion check Hangs did not finish within 5s"
    assert clock.now() == 5


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (None, None),
        ("tests fail", "tests fail"),
        (42, "the completion check Answers returned 42 instead of None or a reason"),
        (True, "the completion check Answers returned True instead of None or a reason"),
        ("", "the completion check Answers returned an empty reason"),
        (" \n", "the completion check Answers returned an empty reason"),
    ],
)
async def test_only_none_passes(answer: object, reason: str | None) -> None:
    """None passes, a reason is kept as it is, and anything else says what came back."""
    verdict = await run_check(Answers(answer), SNAPSHOT, time_limit=5, clock=FakeClock())
    assert (verdict.passed, verdict.reason) == (reason is None, reason)


async def test_cancellation_from_outside_is_not_a_verdict() -> None:
    """A caller's cancellation goes through the check untouched: no verdict is made of it."""
    clock = FakeClock()
    with anyio.CancelScope() as outside:
        outside.cancel()
        await run_check(Hangs(clock), SNAPSHOT, time_limit=5, clock=clock)
        pytest.fail("run_check swallowed the caller's cancellation")  # pragma: no cover
    assert outside.cancelled_caught


@pytest.mark.parametrize("check", [Raises(), Answers(42), Answers("")])
async def test_compositions_fail_closed_with_the_same_reason(check: CompletionCheck) -> None:
    """A broken check inside `AllOf` or `AnyOf` gives the reason it gives alone."""
    alone = (await run_check(check, SNAPSHOT)).reason
    assert await AllOf.of(check).check(SNAPSHOT) == alone
    assert await AnyOf.of(check).check(SNAPSHOT) == alone


def _spec(tmp_path: Path, check: CompletionCheck) -> Spec:
    (tmp_path / "spec.toml").write_text(
        'prompt = "Work."\n[model]\ntype = "fixture"\npath = "unused.jsonl"\n'
        '[[checks]]\ntype = "always_complete"\n'
    )
    return attrs.evolve(load_spec(tmp_path / "spec.toml"), checks=(check,))


@pytest.mark.parametrize("make_check", [Raises, lambda: Answers(42)])
async def test_every_path_gives_the_agent_the_same_reason(make_check: Any, tmp_path: Path) -> None:
    """The policy's loop, Ralph, `harness check` and the stop hook all reject with the reason
    `run_check` gives."""
    check = make_check()
    reason = (await run_check(check, SNAPSHOT)).reason
    assert reason is not None

    def harness(**options: Any) -> tuple[Harness, ListSink]:
        sink = ListSink()
        model = ScriptedModelClient.from_responses([{"text": "done"}])
        policy = TerminationPolicy(completion_check=check, max_rejections=1)
        return Harness(model=model, policy=policy, clock=FakeClock(), sinks=[sink], **options), sink

    loop, loop_events = harness()
    assert (await loop.run("work")).halt_reason == RejectionLimit(1, reason)
    ralph, ralph_events = harness(strategy=Ralph(max_iterations=1))
    assert (await ralph.run("work")).halt_reason == RalphCompletionUnmet(1, reason)
    for sink in (loop_events, ralph_events):
        assert [e.reason for e in sink.events if isinstance(e, CheckFailed)] == [reason]

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    spec = _spec(tmp_path, check)
    checked = await run_checks(spec, workspace, final_text="done")
    assert [v.reason for v in checked.verdicts] == [reason]

    payload = {"session_id": "s-1", "cwd": str(workspace), "last_assistant_message": "done"}
    decision = await claude_stop(payload, spec, state_dir=tmp_path / "state")
    assert decision.block
    assert decision.reason is not None
    assert f"  {reason}" in decision.reason.splitlines()
