"""The new sensors in isolation: what each one counts, its thresholds and actions, and the
workspace fingerprint that keeps the no-progress sensor cheap."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import (
    ConfigurationError,
    Message,
    Plan,
    PlanStep,
    SessionStateSnapshot,
    ToolCall,
    Usage,
)
from harness.extend import SensorReading, ToolOutcome
from termination import (
    CheckChurnSensor,
    ConsecutiveToolErrorsSensor,
    ContextPressureSensor,
    NoProgressSensor,
    OscillationSensor,
    RepeatedClaimSensor,
    RepeatedToolCallSensor,
    sensor_from_config,
)
from termination._fingerprint import WorkspaceScanner
from termination._oscillation import longest_cycle

NO_USAGE = Usage()


STOP: Any = "stop"
ONE: Any = 1


def snap(
    *,
    turns: int = 1,
    outcomes: Sequence[ToolOutcome] = (),
    reasons: Sequence[str] = (),
    messages: Sequence[Message] = (),
    workspace: Path | None = None,
    store: dict[type, tuple[Any, ...]] | None = None,
    usage: Usage = NO_USAGE,
    context_window: int | None = None,
) -> SessionStateSnapshot:
    return SessionStateSnapshot.standalone(
        workspace,
        run_id="r",
        task="t",
        iteration=1,
        messages=messages,
        tool_outcomes=outcomes,
        check_reasons=reasons,
        turns=turns,
        tool_calls=len(outcomes),
        usage=usage,
        run_turns=turns,
        run_tool_calls=len(outcomes),
        run_usage=usage,
        store=store or {},
        context_window=context_window,
    )


def calls(*names: str) -> list[ToolOutcome]:
    """One call a turn; a name like "read:a" is tool "read" with argument a."""
    result = []
    for turn, name in enumerate(names, 1):
        tool, _, arg = name.partition(":")
        call = ToolCall(f"c{turn}", tool, {"x": arg})
        result.append(ToolOutcome(0.0, "builder", turn, call, "ok", False))
    return result


def cycle(*names: str) -> tuple[int, int]:
    return longest_cycle([o.call for o in calls(*names)], 3)


def test_longest_cycle_finds_the_period_and_repeats() -> None:
    """A, B, A, B, A, B is period 2 three times; ties go to the shortest period."""
    assert cycle("a", "b", "a", "b", "a", "b") == (2, 3)
    assert cycle("a", "a", "a", "a") == (1, 4)
    assert cycle("c", "a", "b", "c", "a", "b", "c") == (3, 2)
    assert cycle("a", "b", "c", "d") == (1, 1)
    assert cycle() == (1, 0)


@given(
    base=st.lists(st.sampled_from("abcd"), min_size=1, max_size=3),
    repeats=st.integers(min_value=1, max_value=5),
    prefix=st.lists(st.sampled_from("abcdxy"), max_size=4),
)
def test_a_repeated_pattern_is_never_undercounted(
    base: list[str], repeats: int, prefix: list[str]
) -> None:
    """Any pattern of up to 3 calls repeated r times at the end is seen at least r times."""
    names = [*prefix, *(base * repeats)]
    period, found = cycle(*names)
    assert found >= repeats
    assert 1 <= period <= 3


def test_longest_cycle_compares_arguments_not_only_names() -> None:
    """read:a, read:b, read:a, read:b cycles with period 2, not 1."""
    assert cycle("read:a", "read:b", "read:a", "read:b") == (2, 2)


def test_oscillation_warns_at_warn_at_and_halts_at_limit() -> None:
    """Two cycles warn the agent; the third halts with a report naming the calls."""
    sensor = OscillationSensor(limit=3, warn_at=2)
    two = calls("x", "a", "b", "a", "b")
    three = calls("a", "b", "a", "b", "a", "b")
    warn = sensor.read(snap(turns=5, outcomes=two))
    assert warn.status == "warn"
    assert "going in circles" in warn.message
    assert sensor.read(snap(turns=6, outcomes=three)).status == "halt"


def test_oscillation_reads_only_after_a_turn_with_tool_calls() -> None:
    """A text-only turn after a cycle does not trip again."""
    sensor = OscillationSensor(limit=2)
    assert sensor.read(snap(turns=5, outcomes=calls("a", "b", "a", "b"))) == SensorReading.ok()


def test_action_warn_turns_the_limit_into_a_warning() -> None:
    """With action="warn" a sensor never halts; at the limit it speaks to the agent."""
    sensor = OscillationSensor(limit=2, action="warn")
    reading = sensor.read(snap(turns=4, outcomes=calls("a", "b", "a", "b")))
    assert reading.status == "warn"
    assert reading.message.startswith("You have repeated")
    repeated = RepeatedToolCallSensor(limit=2, action="warn")
    assert repeated.read(snap(turns=2, outcomes=calls("a", "a"))).status == "warn"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: OscillationSensor(limit=1), "OscillationSensor: 'limit' must be an int >= 2"),
        (lambda: OscillationSensor(max_period=0), "'max_period' must be an int from 1 to 10"),
        (lambda: NoProgressSensor(limit=0), "NoProgressSensor: 'limit' must be an int >= 1"),
        (lambda: NoProgressSensor(limit=3, warn_at=3), "'warn_at' must be an int from 1"),
        (lambda: NoProgressSensor(ignore="x"), "'ignore' must be a list"),
        (lambda: CheckChurnSensor(action=STOP), "'action' must be 'warn' or 'halt'"),
        (lambda: CheckChurnSensor(ignore_numbers=ONE), "'ignore_numbers' must be true or false"),
        (lambda: ContextPressureSensor(limit=1.5), "'limit' must be a fraction in (0, 1]"),
        (lambda: ContextPressureSensor(warn_at=0.9, limit=0.9), "'warn_at' must be below"),
        (lambda: ContextPressureSensor(context_window=0), "'context_window' must be a positive"),
        (lambda: ContextPressureSensor(chars_per_token=0), "'chars_per_token' must be"),
        (lambda: ConsecutiveToolErrorsSensor(name=""), "'name' must be a non-empty string"),
        (lambda: RepeatedClaimSensor(limit=1), "RepeatedClaimSensor: 'limit' must be an int >= 2"),
        (lambda: RepeatedClaimSensor(warn_at=3), "RepeatedClaimSensor: 'warn_at' must be an int"),
        (lambda: RepeatedClaimSensor(action=STOP), "'action' must be 'warn' or 'halt'"),
    ],
)
def test_bad_settings_name_the_field(build: Any, message: str) -> None:
    """Every threshold is validated, and the error names the sensor and the field."""
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build()


def test_stateful_sensors_must_be_bound() -> None:
    """Reading an unbound stateful sensor is a configuration error, never a silent ok."""
    for sensor in (
        NoProgressSensor(),
        ContextPressureSensor(),
        CheckChurnSensor(),
        RepeatedClaimSensor(),
    ):
        with pytest.raises(ConfigurationError, match="bind"):
            sensor.read(snap())


def test_no_progress_counts_turns_without_a_change(tmp_path: Path) -> None:
    """Unchanged turns count up; a new file or a changed plan resets the count."""
    sensor = NoProgressSensor(limit=3, warn_at=2).bind()
    sensor.start(snap(turns=0, workspace=tmp_path))
    assert sensor.read(snap(workspace=tmp_path)).status == "ok"
    assert sensor.read(snap(workspace=tmp_path)).status == "warn"
    (tmp_path / "new.txt").write_text("x")
    assert sensor.read(snap(workspace=tmp_path)).status == "ok"
    plan = Plan((PlanStep("write it"),))
    assert sensor.read(snap(workspace=tmp_path, store={Plan: (plan,)})).status == "ok"
    assert sensor.read(snap(workspace=tmp_path, store={Plan: (plan,)})).status == "ok"
    same = Plan((PlanStep("write it"),))
    assert sensor.read(snap(workspace=tmp_path, store={Plan: (plan, same)})).status == "warn"
    reading = sensor.read(snap(workspace=tmp_path, store={Plan: (plan, same)}))
    assert reading.status == "halt"
    assert "not changed for 3 turns" in reading.message


def test_no_progress_without_start_takes_its_baseline_on_the_first_read(tmp_path: Path) -> None:
    """Used outside a policy, the first read only records the baseline."""
    sensor = NoProgressSensor(limit=1).bind()
    assert sensor.read(snap(workspace=tmp_path)).status == "ok"
    assert sensor.read(snap(workspace=tmp_path)).status == "halt"


def test_scanner_sees_new_changed_and_deleted_files_but_not_same_bytes(tmp_path: Path) -> None:
    """Rewriting a file with its own bytes is not a change; new bytes, new or gone files are."""
    (tmp_path / "a.txt").write_text("one")
    scanner = WorkspaceScanner(tmp_path)
    assert scanner.scan() is False  # the baseline
    (tmp_path / "a.txt").write_text("one")
    os.utime(tmp_path / "a.txt", ns=(1, 1))
    assert scanner.scan() is False
    (tmp_path / "a.txt").write_text("two")
    assert scanner.scan() is True
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("b")
    assert scanner.scan() is True
    (tmp_path / "sub" / "b.txt").unlink()
    assert scanner.scan() is True
    assert scanner.scan() is False


def test_scanner_ignores_git_and_hashes_only_what_moved(tmp_path: Path) -> None:
    """.git is skipped; a scan with no stat change hashes nothing."""
    for i in range(20):
        (tmp_path / f"f{i}.txt").write_text(str(i))
    (tmp_path / ".git").mkdir()
    scanner = WorkspaceScanner(tmp_path)
    scanner.scan()
    assert scanner.files == 20
    assert scanner.hashed == 20
    (tmp_path / ".git" / "index").write_text("changed")
    assert scanner.scan() is False
    assert scanner.hashed == 20
    (tmp_path / "f3.txt").write_text("changed")
    assert scanner.scan() is True
    assert scanner.hashed == 21


def test_scanner_judges_large_files_by_their_stat(tmp_path: Path) -> None:
    """Files over max_hash_bytes are never read; a new mtime counts as a change."""
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 100)
    scanner = WorkspaceScanner(tmp_path, max_hash_bytes=10)
    scanner.scan()
    assert scanner.hashed == 0
    os.utime(big, ns=(5, 5))
    assert scanner.scan() is True


def test_context_pressure_uses_the_latest_calls_input_tokens() -> None:
    """The session's input-token total grows; the difference is the latest call's size."""
    sensor = ContextPressureSensor(warn_at=0.5, limit=0.8, context_window=1000).bind()
    assert sensor.read(snap(usage=Usage(input_tokens=400))).status == "ok"
    assert sensor.read(snap(usage=Usage(input_tokens=400 + 600))).status == "warn"
    halt = sensor.read(snap(usage=Usage(input_tokens=1000 + 850)))
    assert halt.status == "halt"
    assert "about 850 tokens, 85%" in halt.message


def test_context_pressure_estimates_from_characters_without_usage() -> None:
    """A model that reports no usage is measured by the transcript's characters."""
    sensor = ContextPressureSensor(limit=0.5, warn_at=None, chars_per_token=4).bind()
    messages = [Message.user("x" * 2400)]
    reading = sensor.read(snap(messages=messages, context_window=1000))
    assert reading.status == "halt"
    assert "about 600 tokens" in reading.message


def test_context_pressure_without_a_window_is_a_configuration_error() -> None:
    """With no window anywhere the sensor cannot judge, and says how to fix it."""
    sensor = ContextPressureSensor().bind()
    with pytest.raises(ConfigurationError, match=r"Harness\(context_window=...\)"):
        sensor.read(snap())


def test_check_churn_judges_each_rejection_once() -> None:
    """Reading the same reasons twice does not count them twice."""
    sensor = CheckChurnSensor(limit=3, warn_at=2).bind()
    assert sensor.read(snap(reasons=["gap"])).status == "ok"
    assert sensor.read(snap(reasons=["gap", "gap"])).status == "warn"
    assert sensor.read(snap(reasons=["gap", "gap"])).status == "ok"
    assert sensor.read_verdict(snap(reasons=["gap", "gap"]), "gap").status == "halt"
    assert sensor.read(snap(reasons=["gap", "gap", "gap"])).status == "ok"


def test_check_churn_reads_the_rejection_it_is_given() -> None:
    """read_verdict judges the given reason after the snapshot's, and only the newest count."""
    sensor = CheckChurnSensor(limit=3).bind()
    many = ["old"] * 50 + ["gap", "gap"]
    halted = sensor.read_verdict(snap(reasons=many), "gap")
    assert halted.status == "halt"
    assert halted.message.endswith("for the same reason: gap")
    assert sensor.read_verdict(snap(reasons=[*many, "gap"]), "other").status == "ok"
    assert repr(sensor) == "CheckChurnSensor(bound, judged=54, limit=3)"


def test_check_churn_compares_normalised_reasons() -> None:
    """Whitespace never matters; numbers only matter without ignore_numbers."""
    strict = CheckChurnSensor(limit=2)
    loose = CheckChurnSensor(limit=2, ignore_numbers=True)
    reasons = ["1 failed  in 0.42s", "1 failed in 0.40s"]
    assert strict.same_in_a_row(reasons) == 1
    assert loose.same_in_a_row(reasons) == 2
    assert strict.same_in_a_row(["a\n b", "a b"]) == 2
    assert strict.same_in_a_row(["other", "gap", "gap"]) == 2


def claim(text: str | None) -> SessionStateSnapshot:
    """A snapshot right after the check rejected a claim of done whose text is `text`."""
    return SessionStateSnapshot.standalone(final_text=text, check_reasons=("gap",))


def test_repeated_claim_counts_identical_rejected_claims() -> None:
    """Each rejection is judged once; whitespace never matters; a different claim starts over."""
    sensor = RepeatedClaimSensor(limit=3, warn_at=2).bind()
    assert sensor.read(claim("done")).status == "ok"  # only a rejection is judged
    assert sensor.read_verdict(claim("All done."), "gap").status == "ok"
    assert sensor.read(claim("All done.")).status == "ok"
    warned = sensor.read_verdict(claim("All\n  done. "), "gap")
    assert warned.status == "warn"
    assert "word for word, 2 times in a row" in warned.message
    assert sensor.read_verdict(claim("Now it is done."), "gap").status == "ok"
    assert sensor.read_verdict(claim("Now it is done."), "gap").status == "warn"
    halted = sensor.read_verdict(claim("Now it is done."), "gap")
    assert halted.status == "halt"
    assert halted.message.endswith("rejected it each time: 'Now it is done.'")
    assert repr(sensor) == "RepeatedClaimSensor(bound, remembered=3, limit=3)"


def test_repeated_claim_names_an_empty_claim_and_can_only_warn() -> None:
    """Empty claims repeat too; with action="warn" reaching the limit warns instead of halting."""
    sensor = RepeatedClaimSensor(limit=2).bind()
    sensor.read_verdict(claim(None), "gap")
    halted = sensor.read_verdict(claim(""), "gap")
    assert halted.status == "halt"
    assert halted.message.endswith("each time: an empty message")
    advisory = RepeatedClaimSensor(limit=2, action="warn").bind()
    advisory.read_verdict(claim("done"), "gap")
    assert advisory.read_verdict(claim("done"), "gap").status == "warn"


def test_new_sensors_build_from_config_tables() -> None:
    """Every new sensor has a config type; settings are passed through and validated."""
    assert sensor_from_config({"type": "oscillation", "limit": 5}, where="s") == OscillationSensor(
        limit=5
    )
    built = sensor_from_config({"type": "no_progress", "ignore": [".git", "build"]}, where="s")
    assert built == NoProgressSensor(ignore=(".git", "build"))
    assert isinstance(sensor_from_config({"type": "check_churn"}, where="s"), CheckChurnSensor)
    assert sensor_from_config(
        {"type": "repeated_claim", "limit": 4, "warn_at": 2}, where="s"
    ) == RepeatedClaimSensor(limit=4, warn_at=2)
    assert isinstance(
        sensor_from_config({"type": "context_pressure", "limit": 0.8}, where="s"),
        ContextPressureSensor,
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"type": "nope"}, "spec: sensors[0].type must be one of"),
        (
            {"type": "oscillation", "limt": 3},
            "spec: sensors[0]: unknown key 'limt' for sensor 'oscillation'; did you mean 'limit'?",
        ),
        ({"type": "no_progress", "limit": "3"}, "spec: sensors[0].limit must be an integer"),
        ({"type": "no_progress", "limit": 0}, "spec: sensors[0]: NoProgressSensor: 'limit'"),
        ({"type": "context_pressure", "action": "x"}, "sensors[0].action must be one of 'halt'"),
    ],
)
def test_config_errors_name_the_key(table: dict[str, Any], message: str) -> None:
    """A wrong type, an unknown key and a bad value all name where they are."""
    with pytest.raises(ConfigurationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        sensor_from_config(table, where="spec: sensors[0]")
