"""Replays are fast by default: the recorded delays of a fixture take no time, in the pytest
plugin and in `harness run`, unless asked for (`realtime=True`, `--realtime`); wall-time
budgets still count them, so a replay halts where the recorded run halted."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import BudgetExceeded, Completed, Harness, workspace_tools
from harness.extend import SystemClock
from harness.testing import FastForwardClock
from pytest_completion_harness import assert_halted
from termination import Budget, TerminationPolicy

ROOT = Path(__file__).resolve().parents[2]
HOUR = 3600.0

# A real wait that would take an hour per call: a test that slept it would hit `fail_after`.
SLOW: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]},
    {"text": "done"},
]


def _fixture(path: Path, lines: list[dict[str, Any]], delay: float) -> Path:
    path.write_text("".join(json.dumps({**line, "delay": delay}) + "\n" for line in lines))
    return path


@pytest.mark.anyio
async def test_a_fast_forward_sleep_takes_no_time_and_moves_the_clock() -> None:
    """A sleep returns at once and the clock reads the time it skipped."""
    clock = FastForwardClock()
    start = clock.now()
    with anyio.fail_after(30):
        await clock.sleep(HOUR)
    assert clock.now() - start >= HOUR
    assert clock.skipped == pytest.approx(HOUR, abs=1)


@pytest.mark.anyio
async def test_a_sleep_past_a_deadline_stops_at_it_and_cancels_its_scope() -> None:
    """The clock stops at the deadline a sleep would pass, and that scope is cancelled there."""
    clock = FastForwardClock()
    start = clock.now()
    with anyio.fail_after(30), clock.deadline_scope(start + 100) as scope:
        await clock.sleep(HOUR)
    assert scope.cancelled_caught
    assert clock.now() - start == pytest.approx(100, abs=1)


@pytest.mark.anyio
async def test_real_work_keeps_its_real_deadline() -> None:
    """A real wait (a hung tool) is still cancelled at its deadline, on real time."""
    clock = FastForwardClock()
    await clock.sleep(HOUR)  # skipped time before the deadline is set does not shorten it
    with anyio.fail_after(30), clock.deadline_scope(clock.now() + 0.05) as scope:
        await anyio.sleep(20)
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_the_plugin_replays_hour_long_delays_at_once(
    harness_fixture: Callable[..., Harness], tmp_path: Path
) -> None:
    """`harness_fixture` runs on a fast-forward clock: two hour-long recorded calls replay
    at once, and the run's elapsed time is the recorded one."""
    fixture = _fixture(tmp_path / "slow.jsonl", SLOW, HOUR)
    harness = harness_fixture(fixture, tools=workspace_tools(), workspace=tmp_path)
    assert isinstance(harness.clock, FastForwardClock)
    with anyio.fail_after(30):
        result = await harness.run("write a.txt")
    assert_halted(result, Completed)
    assert result.elapsed >= 2 * HOUR


@pytest.mark.anyio
async def test_a_replay_halts_at_the_recorded_wall_time(
    harness_fixture: Callable[..., Harness], tmp_path: Path
) -> None:
    """A wall-time budget counts the recorded delays: the run halts at its limit, exactly,
    as the recorded run did, without waiting for it."""
    fixture = _fixture(tmp_path / "slow.jsonl", SLOW[:1], HOUR)
    harness = harness_fixture(
        fixture,
        tools=workspace_tools(),
        workspace=tmp_path,
        policy=TerminationPolicy(budget=Budget(max_wall_time=600)),
    )
    with anyio.fail_after(30):
        result = await harness.run("write a.txt")
    assert_halted(result, BudgetExceeded, limit="max_wall_time")
    assert result.elapsed == pytest.approx(600, abs=1)
    harness.model.verify_consumed()  # type: ignore[attr-defined]


def test_realtime_replays_on_the_system_clock(
    harness_fixture: Callable[..., Harness], tmp_path: Path
) -> None:
    """`realtime=True` asks for the recorded pace: the harness keeps the system clock."""
    fixture = _fixture(tmp_path / "quick.jsonl", [{"text": "done"}], 0.0)
    assert isinstance(harness_fixture(fixture, realtime=True).clock, SystemClock)


SPEC = """
prompt = "write a.txt"
workspace = "ws"
[budget]
max_turns = 10
[model]
type = "fixture"
path = "slow.jsonl"
[[checks]]
type = "files"
paths = ["a.txt"]
"""


def test_harness_run_replays_hour_long_delays_at_once(tmp_path: Path) -> None:
    """`harness run` on a recorded fixture skips its delays (the subprocess would otherwise
    run for two hours) and reports the recorded time."""
    (tmp_path / "ws").mkdir()
    _fixture(tmp_path / "slow.jsonl", SLOW, HOUR)
    (tmp_path / "spec.toml").write_text(SPEC)
    done = subprocess.run(
        [sys.executable, "-m", "strategies", "run", str(tmp_path / "spec.toml"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["verified"] is True
    assert outcome["elapsed"] >= 2 * HOUR


@pytest.mark.anyio
async def test_a_harness_from_a_spec_replays_fast_too(
    harness_fixture: Callable[..., Harness], tmp_path: Path
) -> None:
    """`harness_fixture(path, spec=...)` builds the spec's harness on the same fast clock."""
    fixture = _fixture(tmp_path / "slow.jsonl", SLOW, HOUR)
    (tmp_path / "ws").mkdir()
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'workspace = "ws"\n[budget]\nmax_turns = 5\n[[checks]]\ntype = "always_complete"\n'
    )
    harness = harness_fixture(fixture, spec=spec)
    assert isinstance(harness.clock, FastForwardClock)
    with anyio.fail_after(30):
        result = await harness.run("write a.txt")
    assert_halted(result, Completed)
    assert result.elapsed >= 2 * HOUR


def test_a_python_api_replay_fast_forwards_by_default(tmp_path: Path) -> None:
    """`Harness(model=ScriptedModelClient.from_jsonl(...))` replays an hour's recorded
    delay at once, as `harness run` and the plugin do (the clock skips it); a clock given is
    kept."""
    from harness import Harness, ScriptedModelClient
    from harness.extend import SystemClock
    from harness.testing import FastForwardClock
    from termination import Budget, TerminationPolicy

    fixture = tmp_path / "slow.jsonl"
    fixture.write_text('{"text": "done", "delay": 3600}\n')
    harness = Harness(
        model=ScriptedModelClient.from_jsonl(fixture),
        policy=TerminationPolicy(budget=Budget(max_wall_time=7200)),
    )
    clock = harness.clock
    assert isinstance(clock, FastForwardClock)
    result = anyio.run(harness.run, "work")
    assert result.verified
    assert clock.skipped > 3599  # the hour was skipped, not waited
    given = SystemClock()
    kept = Harness(
        model=ScriptedModelClient.from_jsonl(fixture), policy=harness.policy, clock=given
    )
    assert kept.clock is given
