"""A usage limit is a pause, not a failure: the run waits on its clock until the reset, then runs
the same turn again, charged to no budget; a recording of it replays identically.

Each test runs on asyncio and trio with a FakeClock, and on trio with the real clock under
trio's MockClock, so the pause is proven on the injected clock and on the event loop's own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from _clocks import CLOCK_BACKENDS, clock_backend, clock_for

from harness import (
    BudgetExceeded,
    Cancelled,
    CancelToken,
    Completed,
    ConfigurationError,
    Event,
    Harness,
    PauseSettings,
    RecordingModelClient,
    ScriptedModelClient,
    SessionStateSnapshot,
    UsageLimitReached,
    read_transcript,
)
from harness.events import RunPaused, RunResumed, RunTally, TranscriptReader
from harness.extend import Clock
from harness.testing import FakeClock, ListSink, fixture_from_transcript
from strategies import Ralph, SpecError, load_spec
from termination import Budget, TerminationPolicy

anyio_backend = pytest.fixture(params=CLOCK_BACKENDS)(clock_backend)
clock = pytest.fixture(clock_for)
pytestmark = pytest.mark.anyio

LIMIT = {
    "kind": "usage_limit",
    "source": "claude",
    "message": "Claude AI usage limit reached|1764165600",
    "retry_in": 3600,
}
SCRIPT: list[dict[str, Any]] = [
    {"text": "step one", "tool_calls": [{"name": "note", "arguments": {"text": "a"}}]},
    {"delay": 2, "error": LIMIT},
    {"text": "step two", "tool_calls": [{"name": "note", "arguments": {"text": "b"}}]},
    {"text": "done"},
]


async def note(text: str) -> str:
    """Keep a note."""
    return f"noted {text}"


class TwoNotes:
    """Complete once two notes were taken."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        notes = [o for o in state.tool_outcomes if o.call.name == "note"]
        return None if len(notes) >= 2 else f"{len(notes)} of 2 notes"

    def description(self) -> str:
        return "two notes"


def _harness(
    clock: Clock,
    script: list[dict[str, Any]] = SCRIPT,
    *,
    budget: Budget | None = None,
    pause: PauseSettings | None = None,
    transcript: Path | None = None,
    strategy: Any = None,
) -> Harness:
    policy = TerminationPolicy(budget=budget or Budget(max_turns=4), completion_check=TwoNotes())
    extra: dict[str, Any] = {} if strategy is None else {"strategy": strategy}
    return Harness(
        model=ScriptedModelClient.from_responses(script),
        policy=policy,
        tools=[note],
        clock=clock,
        pause=pause or PauseSettings(jitter=0),
        transcript=transcript,
        **extra,
    )


async def test_a_usage_limit_pauses_until_the_reset_and_runs_the_same_turn_again(
    clock: Clock,
) -> None:
    """The limit cuts turn 2 off after 2s; the run waits 3600s on its clock, runs turn 2 again
    and completes in 3 turns within max_turns=4 (a charged pause would make it 4, which halts
    before the check)."""
    sink = ListSink()
    result = await _harness(clock).run("take two notes", sinks=[sink])
    assert isinstance(result.halt_reason, Completed)
    assert result.turns == 3
    names = [n for n in sink.names() if n.startswith(("turn.", "run.p", "run.r"))]
    assert names == [
        "turn.started",
        "turn.finished",
        "turn.started",
        "run.paused",
        "run.resumed",
        "turn.started",
        "turn.finished",
        "turn.started",
        "turn.finished",
    ]
    paused = sink.of_type(RunPaused)[0]
    resumed = sink.of_type(RunResumed)[0]
    assert isinstance(paused, RunPaused)
    assert isinstance(resumed, RunResumed)
    assert (paused.turn, paused.source, paused.retry_in, paused.wait) == (2, "claude", 3600, 3600)
    assert (paused.at, resumed.at, resumed.paused_for, resumed.turn) == (2.0, 3602.0, 3600.0, 2)
    turns = [e.turn for e in sink.events if e.name == "turn.started"]  # type: ignore[attr-defined]
    assert turns == [1, 2, 2, 3]
    assert result.elapsed == 3602.0


async def test_a_wait_beyond_max_pause_halts_with_a_typed_reason(clock: Clock) -> None:
    """A reset further away than max_pause is a halt, not a wait; the cut-off turn is not
    counted and nothing paused."""
    sink = ListSink()
    harness = _harness(clock, SCRIPT[:2], pause=PauseSettings(max_pause=1800, jitter=0))
    result = await harness.run("take two notes", sinks=[sink])
    halt = result.halt_reason
    assert isinstance(halt, UsageLimitReached)
    assert (halt.source, halt.retry_in, halt.wait, halt.max_pause) == ("claude", 3600, 3600, 1800)
    assert "longer than max_pause 1800s" in halt.describe()
    assert not result.verified
    assert result.turns == 1
    assert "run.paused" not in sink.names()


SHORT_LIMIT = {"kind": "usage_limit", "source": "gemini", "message": "retry in 12.5s"}


def _endless_limits(count: int, retry_in: float = 12.5) -> list[dict[str, Any]]:
    """An agent that reports a short limit at every turn (Gemini CLI's exhausted daily quota
    read as a window: "Please retry in 12.5s")."""
    return [{"delay": 1, "error": {**SHORT_LIMIT, "retry_in": retry_in}}] * count


async def test_the_number_of_pauses_is_bounded(clock: Clock) -> None:
    """Point 7: nothing bounded the count of short pauses; after `max_pauses` the run halts
    `UsageLimitReached` instead of pausing again."""
    sink = ListSink()
    pause = PauseSettings(max_pauses=3, jitter=0)
    result = await _harness(clock, _endless_limits(4), pause=pause).run("x", sinks=[sink])
    halt = result.halt_reason
    assert isinstance(halt, UsageLimitReached)
    assert (halt.cause, halt.max_pause) == ("max_pauses", 3)
    assert "already paused 3 times (max_pauses)" in halt.describe()
    assert sink.names().count("run.paused") == 3
    assert result.turns == 0


async def test_the_total_time_paused_is_bounded(clock: Clock) -> None:
    """Each wait is within max_pause, but the sum may not pass max_total_pause: the wait that
    would go past it halts the run before it starts, whether pauses count toward wall time
    or not."""
    sink = ListSink()
    pause = PauseSettings(max_total_pause=3000, jitter=0)
    start = clock.now()
    result = await _harness(clock, _endless_limits(4, 1000), pause=pause).run("x", sinks=[sink])
    halt = result.halt_reason
    assert isinstance(halt, UsageLimitReached)
    assert (halt.cause, halt.wait, halt.max_pause) == ("max_total_pause", 1000, 3000)
    assert sink.names().count("run.paused") == 3
    assert clock.now() - start == pytest.approx(3004, abs=1)


async def test_the_default_bounds_stop_an_endless_run_of_short_limits(clock: Clock) -> None:
    """With the documented defaults, a limit at every turn ends after 20 pauses."""
    result = await _harness(clock, _endless_limits(21)).run("x")
    halt = result.halt_reason
    assert isinstance(halt, UsageLimitReached)
    assert (halt.cause, halt.max_pause) == ("max_pauses", 20)


async def test_a_terminal_quota_halts_at_once(clock: Clock) -> None:
    """A quota that is gone (a daily quota exhausted) is not waited for, even when the message
    also says when to retry."""
    sink = ListSink()
    terminal = {**SHORT_LIMIT, "retry_in": 12.5, "terminal": True}
    start = clock.now()
    result = await _harness(clock, [{"error": terminal}]).run("x", sinks=[sink])
    halt = result.halt_reason
    assert isinstance(halt, UsageLimitReached)
    assert halt.cause == "terminal"
    assert "quota exhausted" in halt.describe()
    assert "run.paused" not in sink.names()
    assert clock.now() - start < 1


async def test_an_unreadable_reset_waits_the_default(clock: Clock) -> None:
    """A limit with no reset time waits `default_wait`, never crashes."""
    script = [SCRIPT[0], {"error": {"kind": "usage_limit", "message": "quota"}}, *SCRIPT[2:]]
    sink = ListSink()
    harness = _harness(clock, script, pause=PauseSettings(default_wait=120, jitter=0))
    result = await harness.run("take two notes", sinks=[sink])
    assert isinstance(result.halt_reason, Completed)
    paused = sink.of_type(RunPaused)[0]
    assert isinstance(paused, RunPaused)
    assert (paused.retry_in, paused.wait, paused.source) == (None, 120, "fixture")


async def test_the_cancel_token_stops_a_pause(clock: Clock) -> None:
    """Cancelling during the pause ends the run `Cancelled` where it was, at once."""
    token = CancelToken()

    class CancelOnPause:
        def emit(self, event: Event) -> None:
            if isinstance(event, RunPaused):
                token.cancel("the operator")

    result = await _harness(clock).run("take two notes", sinks=[CancelOnPause()], cancel=token)
    assert result.halt_reason == Cancelled("the operator")
    assert result.elapsed == 2.0
    assert result.turns == 1


async def test_by_default_the_pause_does_not_use_up_wall_time(clock: Clock) -> None:
    """With max_wall_time=100 the run still completes after a 3600s pause: the deadlines move."""
    result = await _harness(clock, budget=Budget(max_wall_time=100)).run("take two notes")
    assert isinstance(result.halt_reason, Completed)
    assert result.elapsed == 3602.0


async def test_a_pause_that_counts_toward_wall_time_ends_at_the_deadline(clock: Clock) -> None:
    """With `counts_toward_wall_time` the wall-time deadline fires during the pause."""
    pause = PauseSettings(jitter=0, counts_toward_wall_time=True)
    harness = _harness(clock, SCRIPT[:2], budget=Budget(max_wall_time=100), pause=pause)
    result = await harness.run("take two notes")
    assert result.halt_reason == BudgetExceeded("max_wall_time", 100.0, 100.0)
    assert result.elapsed == 100.0


async def test_a_ralph_session_deadline_moves_with_the_pause(clock: Clock) -> None:
    """Ralph's per-iteration wall time is a session deadline: it moves back too, and the
    pause does not start a new iteration."""
    harness = _harness(
        clock, strategy=Ralph(max_iterations=2, iteration_budget=Budget(max_wall_time=50))
    )
    result = await harness.run("take two notes")
    assert isinstance(result.halt_reason, Completed), result.halt_reason
    assert result.iterations == 1


async def test_jitter_is_bounded_and_the_same_for_the_same_run(clock: Clock) -> None:
    """The jitter lies within its bound and is drawn from a seed of the run's own, so the same
    run waits the same."""
    waits = []
    for _ in range(2):
        sink = ListSink()
        harness = _harness(clock, pause=PauseSettings(jitter=30))
        await harness.run("take two notes", sinks=[sink])
        paused = sink.of_type(RunPaused)[0]
        assert isinstance(paused, RunPaused)
        waits.append(paused.wait)
    assert 3600 <= waits[0] <= 3630
    assert waits[0] == waits[1]


async def test_a_recorded_pause_replays_identically(clock: Clock, tmp_path: Path) -> None:
    """The transcript of a run with a pause becomes a fixture whose replay gives the same
    events at the same times, the pause and its jitter included."""
    recorded = tmp_path / "recorded.jsonl"
    pause = PauseSettings(jitter=30)
    await _harness(clock, pause=pause, transcript=recorded).run("take two notes")
    lines = fixture_from_transcript(recorded)
    assert lines[1]["error"]["kind"] == "usage_limit"
    replayed = tmp_path / "replayed.jsonl"
    again = FakeClock() if isinstance(clock, FakeClock) else clock
    await _harness(again, lines, pause=pause, transcript=replayed).run("take two notes")

    def keys(path: Path) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k != "run_id"} for row in read_transcript(path)]

    assert keys(replayed) == keys(recorded)


async def test_a_recording_of_a_pause_replays_identically(clock: Clock, tmp_path: Path) -> None:
    """`RecordingModelClient` keeps the limit's reset in its error line, so the replayed run
    waits the same and its events match."""
    recording = tmp_path / "calls.jsonl"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    pause = PauseSettings(jitter=30)
    inner = ScriptedModelClient.from_responses(SCRIPT)
    recorder = RecordingModelClient(inner, recording)
    policy = TerminationPolicy(budget=Budget(max_turns=4), completion_check=TwoNotes())
    harness = Harness(
        model=recorder,
        policy=policy,
        tools=[note],
        clock=clock,
        pause=pause,
        transcript=first,
    )
    await harness.run("take two notes")
    error = json.loads(recording.read_text().splitlines()[1])["error"]
    assert (error["kind"], error["retry_in"], error["source"]) == ("usage_limit", 3600, "claude")
    again = FakeClock() if isinstance(clock, FakeClock) else clock
    replay = ScriptedModelClient.from_jsonl(recording)
    replayed = Harness(
        model=replay, policy=policy, tools=[note], clock=again, pause=pause, transcript=second
    )
    await replayed.run("take two notes")

    def keys(path: Path) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k != "run_id"} for row in read_transcript(path)]

    assert keys(second) == keys(first)


async def test_a_pause_reads_back_and_the_tally_does_not_count_the_cut_off_turn(
    clock: Clock, tmp_path: Path
) -> None:
    """`run.paused` and `run.resumed` read back as their classes, equal to what the run
    emitted; folded, the events count the turns the run counted (the cut-off call is not one)."""
    recorded = tmp_path / "recorded.jsonl"
    sink = ListSink()
    result = await _harness(clock, transcript=recorded).run("take two notes", sinks=[sink])
    read = [event for _, event in TranscriptReader(recorded)]
    assert read == sink.events
    assert {RunPaused, RunResumed} <= {type(e) for e in read}
    tally = RunTally()
    for event in read[:-1]:  # before run.halted, whose totals would say it anyway
        tally = tally.add(event)
    assert tally.turns == tally.turns_finished == result.turns == 3


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_pause": -1}, "'max_pause' must be a number >= 0 (got -1)"),
        ({"default_wait": 0}, "'default_wait' must be a positive number (got 0)"),
        ({"jitter": "5"}, "'jitter' must be a number >= 0 (got '5')"),
        ({"counts_toward_wall_time": 1}, "'counts_toward_wall_time' must be true or false"),
        ({"max_total_pause": -1}, "'max_total_pause' must be a number >= 0 (got -1)"),
        ({"max_pauses": 1.5}, "'max_pauses' must be a whole number >= 0 (got 1.5)"),
        ({"max_pauses": True}, "'max_pauses' must be a whole number >= 0 (got True)"),
    ],
)
def test_bad_pause_settings_are_refused_by_name(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        PauseSettings(**settings)


def test_a_specs_pause_table_is_read_and_checked(tmp_path: Path) -> None:
    """``[pause]`` reaches the harness the spec builds; a bad key names the file and key."""
    spec = tmp_path / "spec.toml"
    checks = '[[checks]]\ntype = "files"\npaths = ["a"]\n'
    spec.write_text(f"[pause]\nmax_pause = 60\njitter = 0\n{checks}")
    loaded = load_spec(spec, purpose="checks")
    assert loaded.pause == PauseSettings(max_pause=60, jitter=0)
    assert loaded.harness(model=ScriptedModelClient.from_responses([])).pause == loaded.pause
    spec.write_text(f"[pause]\nmax_pause_count = 60\n{checks}")
    with pytest.raises(SpecError, match=rf"{re.escape(str(spec))}: pause.*max_pause_count"):
        load_spec(spec, purpose="checks")
    spec.write_text(f"[pause]\nmax_total_pause = 7200\nmax_pauses = 3\n{checks}")
    assert load_spec(spec, purpose="checks").pause == PauseSettings(
        max_total_pause=7200, max_pauses=3
    )
    spec.write_text(f"[pause]\nmax_pauses = 2.5\n{checks}")
    with pytest.raises(SpecError, match=rf"{re.escape(str(spec))}: pause.*max_pauses"):
        load_spec(spec, purpose="checks")
    spec.write_text(f"[pause]\nmax_total_pause = -1\n{checks}")
    with pytest.raises(SpecError, match=r"pause: 'max_total_pause' must be a number >= 0"):
        load_spec(spec, purpose="checks")
    spec.write_text(f"[pause]\ndefault_wait = -5\n{checks}")
    with pytest.raises(SpecError, match=r"pause: 'default_wait' must be a positive number"):
        load_spec(spec, purpose="checks")


async def test_a_limit_met_again_on_waking_waits_a_short_step_that_grows(clock: Clock) -> None:
    """Issue 37 point 5: a reset printed to the minute wakes the run a little early, and the
    same turn meets the limit again with a reset that is due now. It waits a short step (a
    minute, doubled at each rejection in a row), never 0 (a spin through `max_pauses`) and
    never a day; an answer ends the streak."""
    due = {"kind": "usage_limit", "source": "claude", "message": "resets 8:51pm", "retry_in": 0}
    script = [SCRIPT[0], *[{"error": due}] * 3, SCRIPT[2], {"error": due}, SCRIPT[3]]
    sink = ListSink()
    result = await _harness(clock, script).run("take two notes", sinks=[sink])
    assert isinstance(result.halt_reason, Completed), result.halt_reason
    waits = [e.wait for e in sink.of_type(RunPaused)]  # type: ignore[attr-defined]
    assert waits == [0.0, 60.0, 120.0, 0.0]


@pytest.mark.parametrize("reading", [float("nan"), float("inf"), float("-inf")])
async def test_a_non_finite_reset_is_no_reading_and_waits_the_default(
    clock: Clock, reading: float
) -> None:
    """Issue 41 item 9: a `UsageLimit` whose ``retry_in`` was NaN raised ValueError on the real
    clock and never ended on a FakeClock. A figure that is not finite is no reading: the run
    waits `default_wait`, then the turn runs again."""
    from harness.extend import ModelRequest, ModelResponse, UsageLimit, UsageLimitError

    script = ScriptedModelClient.from_responses([SCRIPT[0], SCRIPT[2], SCRIPT[3]])
    calls = 0

    class LimitOnce:
        async def complete(self, request: ModelRequest) -> ModelResponse:
            nonlocal calls
            calls += 1
            if calls == 2:
                raise UsageLimitError(UsageLimit("provider", "quota", reading, reading))
            return await script.complete(request)

    sink = ListSink()
    harness = Harness(
        model=LimitOnce(),
        policy=TerminationPolicy(budget=Budget(max_turns=4), completion_check=TwoNotes()),
        tools=[note],
        clock=clock,
        pause=PauseSettings(default_wait=120, jitter=0),
    )
    start = clock.now()
    with anyio.fail_after(5 if isinstance(clock, FakeClock) else 600):
        result = await harness.run("take two notes", sinks=[sink])
    assert isinstance(result.halt_reason, Completed), result.halt_reason
    (paused,) = sink.of_type(RunPaused)
    assert isinstance(paused, RunPaused)
    assert (paused.retry_in, paused.resets_at, paused.wait) == (None, None, 120)
    assert clock.now() - start == pytest.approx(120, abs=1)
