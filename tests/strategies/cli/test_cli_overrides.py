"""`harness run` overrides from the command line (--replay, --max-turns, --max-wall-time),
--version, the subcommand's usage for an unknown flag, the default cap of a run whose spec
sets no budget (never unbounded), and sensor warnings printed once."""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from strategies._cli import main
from termination import Budget, TerminationPolicy

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "fixtures" / "demo"

WRITE: dict[str, Any] = {
    "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]
}
LIST: dict[str, Any] = {"tool_calls": [{"name": "list_files", "arguments": {}}]}
DONE: dict[str, Any] = {"text": "done"}

SPEC = """
prompt = "write a.txt"
workspace = "ws"
{budget}
{model}
[[checks]]
type = "files"
paths = ["a.txt"]
"""


def _setup(
    tmp_path: Path,
    lines: list[dict[str, Any]],
    *,
    budget: str = "[budget]\nmax_turns = 10",
    model: bool = True,
    extra: str = "",
) -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    table = '[model]\ntype = "fixture"\npath = "run.jsonl"' if model else ""
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(budget=budget, model=table) + extra)
    return spec


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object], str]:
    code = main(["run", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_replay_runs_a_recording_with_the_spec_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--replay FIXTURE` replays a recording as the model: the spec needs no [model]."""
    spec = _setup(tmp_path, [], model=False)
    recording = tmp_path / "recorded.jsonl"
    recording.write_text(json.dumps(WRITE) + "\n" + json.dumps(DONE) + "\n")
    code, data, _ = _json(capsys, str(spec), "--replay", str(recording))
    assert code == 0
    assert data["verified"] is True
    assert data["turns"] == 2


def test_replay_of_a_spec_with_an_evaluator_needs_its_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SelfVerifying spec replays FIXTURE.evaluator.jsonl beside the builder's recording
    (the name --record writes); without it the command names the missing file."""
    evaluator = '\n[strategy]\ntype = "self_verifying"\n[strategy.evaluator]\ntype = "fixture"\n'
    evaluator += 'path = "nowhere.jsonl"\n'
    spec = _setup(tmp_path, [], model=False)
    spec.write_text(spec.read_text().replace("[[checks]]", evaluator + "[[checks]]"))
    recording = tmp_path / "recorded.jsonl"
    recording.write_text(json.dumps(WRITE) + "\n" + json.dumps(DONE) + "\n")
    code, data, err = _json(capsys, str(spec), "--replay", str(recording))
    assert code == 2
    assert "recorded.evaluator.jsonl" in str(data["error"])
    (tmp_path / "recorded.evaluator.jsonl").write_text(
        json.dumps({"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]})
        + "\n"
        + json.dumps({"text": "VERDICT: PASS"})
        + "\n"
    )
    code, data, err = _json(capsys, str(spec), "--replay", str(recording))
    assert code == 0, err
    assert data["verified"] is True


def test_replay_and_record_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _setup(tmp_path, [WRITE, DONE])
    code, data, _ = _json(
        capsys, str(spec), "--replay", str(tmp_path / "run.jsonl"), "--record", "x.jsonl"
    )
    assert code == 2
    assert "cannot be combined" in str(data["error"])


def test_max_turns_replaces_the_spec_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--max-turns 1` halts the run after one turn, whatever the spec's [budget] says."""
    spec = _setup(tmp_path, [WRITE])
    code, data, _ = _json(capsys, str(spec), "--max-turns", "1")
    assert code == 1
    assert data["halt"] == {
        "type": "BudgetExceeded",
        "limit": "max_turns",
        "used": 1,
        "limit_value": 1,
        "scope": "run",
        "description": "budget exceeded: max_turns used 1 of 1",
    }


def test_max_wall_time_halts_a_replay_at_its_recorded_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--max-wall-time 90` halts a replay whose recorded calls took a minute each in its
    second call, at 90 s of recorded time, without waiting for it."""
    spec = _setup(tmp_path, [{**WRITE, "delay": 60}, {**DONE, "delay": 60}])
    code, data, _ = _json(capsys, str(spec), "--max-wall-time", "90")
    assert code == 1
    halt = data["halt"]
    assert isinstance(halt, dict)
    assert halt["limit"] == "max_wall_time"
    assert data["elapsed"] == pytest.approx(90, abs=1)


@pytest.mark.parametrize(
    ("flag", "value"), [("--max-turns", "0"), ("--max-turns", "x"), ("--max-wall-time", "-1")]
)
def test_bad_override_values_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "spec.toml", flag, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: harness run ")
    assert f"argument {flag}: must be a positive" in err


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"harness {metadata.version('completion-harness')}\n"


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["run", "spec.toml", "--max-turnz", "3"], "usage: harness run "),
        (["check", "spec.toml", "--bogus"], "usage: harness check "),
        (["board", "status", "DIR", "--bogus"], "usage: harness board status "),
    ],
)
def test_an_unknown_flag_prints_the_subcommands_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str
) -> None:
    """A misspelt flag is explained with the usage of the command it was given to."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)
    assert f"error: unrecognized arguments: {argv[-2] if argv[0] == 'run' else argv[-1]}" in err


def test_an_unknown_hook_flag_is_a_non_blocking_error(capsys: pytest.CaptureFixture[str]) -> None:
    """For the stop hook an unknown flag is still exit 1 (2 would block the agent's stop)."""
    assert main(["hook", "claude-stop", "--spec", "x.toml", "--bogus"]) == 1
    assert capsys.readouterr().err.startswith("usage: harness hook claude-stop ")


def test_a_spec_without_a_budget_runs_under_the_default_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent that never stops, on a spec with no [budget], halts at the documented
    default cap (100 turns), and the outcome says where the limit came from."""
    spec = _setup(tmp_path, [LIST] * 100, budget="")
    code = main(["run", str(spec), "-q"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("NOT VERIFIED: budget exceeded: max_turns used 100 of 100")
    assert "the spec sets no [budget], so the default cap for unattended runs applied" in out


def test_a_budget_on_the_command_line_replaces_the_default_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _setup(tmp_path, [LIST] * 3, budget="")
    assert main(["run", str(spec), "-q", "--max-turns", "3"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("NOT VERIFIED: budget exceeded: max_turns used 3 of 3")
    assert "default cap" not in out


@pytest.mark.parametrize("quiet", [False, True])
def test_a_sensor_warning_is_printed_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet: bool
) -> None:
    """Each sensor warning reaches stderr once: as a progress line, or (with -q, no progress)
    as the log's warning; never both."""
    extra = '\n[[sensors]]\ntype = "repeated_tool_call"\nlimit = 10\nwarn_at = 2\n'
    spec = _setup(tmp_path, [LIST, LIST, LIST, WRITE, DONE], extra=extra)
    assert main(["run", str(spec), *(["-q"] if quiet else [])]) == 0
    err = capsys.readouterr().err
    warnings = re.findall(r"same arguments \d times in a row", err)
    assert warnings == ["same arguments 2 times in a row", "same arguments 3 times in a row"]


def test_budget_bounded_reads_every_dimension() -> None:
    """What decides the default cap: a budget with any limit at all is bounded."""
    assert not Budget().bounded
    assert not TerminationPolicy().bounded
    for name in (
        "max_turns",
        "max_tool_calls",
        "max_input_tokens",
        "max_output_tokens",
        "max_total_tokens",
        "max_cost_usd",
        "max_wall_time",
    ):
        assert Budget(**{name: 5}).bounded, name
        assert TerminationPolicy(budget=Budget(**{name: 5})).bounded, name
