"""A newcomer's first hour: the traps that cost a run are refused, warned or explained."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from strategies._cli import main

PYTEST = json.dumps([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"])

FAILING_TASK = """\
def test_kept():
    assert True


def test_spaces():
    assert "a  b".split(" ") == ["a", "b"]
"""


def _write(tmp_path: Path, body: str, fixture: str = '{"text": "done"}\n' * 2) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "test_text.py").write_text(FAILING_TASK)
    (tmp_path / "script.jsonl").write_text(fixture)
    spec = tmp_path / "spec.toml"
    spec.write_text(body)
    return spec


BASELINE_SPEC = f"""
prompt = "make test_spaces pass"
workspace = "ws"
[model]
type = "fixture"
path = "script.jsonl"
[budget]
max_turns = 2
[[checks]]
type = "test_suite"
command = {PYTEST}
baseline = true
baseline_cache = false
"""


def test_a_baseline_that_excuses_the_task_is_warned_before_the_first_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`baseline = true` without `must_pass`: the run names the excused test and `must_pass`
    before the model's first turn, and the transcript has the warning."""
    spec = _write(tmp_path, BASELINE_SPEC)
    transcript = tmp_path / "run.jsonl"
    main(["run", str(spec), "--transcript", str(transcript)])
    err = capsys.readouterr().err
    warning = err.index("warning from baseline:")
    assert "test_text.py::test_spaces" in err[warning:]
    assert "must_pass" in err[warning:]
    assert warning < err.index("turn 1")
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    warned = [e for e in events if e["event"] == "run.warning"]
    assert warned
    assert warned[0]["source"] == "baseline"
    recorded = next(e for e in events if e["event"] == "baseline.recorded")
    assert recorded["baseline"]["excused"] == ["test_text.py::test_spaces"]


def test_a_baseline_with_must_pass_is_not_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Naming the task's test in `must_pass` is the fix: no warning, and the claim is refused."""
    spec = _write(tmp_path, BASELINE_SPEC + 'must_pass = ["test_spaces"]\n')
    assert main(["run", str(spec)]) == 1
    assert "warning from baseline" not in capsys.readouterr().err


def test_harness_check_warns_of_a_baseline_without_must_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness check` names the check (`checks[0]`) and `must_pass`; `must_pass = []` says the
    spec means it."""
    spec = _write(tmp_path, BASELINE_SPEC)
    main(["check", str(spec)])
    err = capsys.readouterr().err
    assert "warning: " in err
    assert "checks[0]: baseline = true and no must_pass" in err
    spec.write_text(BASELINE_SPEC + "must_pass = []\n")
    main(["check", str(spec)])
    assert "warning" not in capsys.readouterr().err


def test_best_of_refuses_a_baseline_that_excuses_the_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In best-of, the excused test would let the wrong attempt win: refused at load, exit 2
    naming the file and the check, unless `must_pass = []` says the spec means it."""
    body = BASELINE_SPEC.replace("[budget]", '[strategy]\ntype = "best_of"\nn = 2\n[budget]')
    spec = _write(tmp_path, body)
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"{spec}: checks[0]: a best_of run" in err
    assert "must_pass" in err
    spec.write_text(body + "must_pass = []\n")
    assert main(["check", str(spec)]) == 1


FILES_SPEC = """
prompt = "make done.txt"
[model]
type = "fixture"
path = "script.jsonl"
[budget]
max_turns = 2
[[checks]]
type = "files"
paths = ["done.txt"]
"""


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (FILES_SPEC, "read_file, list_files, write_file, checks[0]"),
        (FILES_SPEC.replace("[model]", "tools = []\n[model]"), "checks[0]"),
    ],
)
def test_a_spec_without_a_workspace_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, named: str
) -> None:
    """No `workspace` while the tools or checks work in one: exit 2 naming the file and what
    needs it, before the model is called (the fixture's line is never used)."""
    spec = _write(tmp_path, body)
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"harness: {spec}: no workspace, but {named} work in one" in err
    assert "turn 1" not in err


def test_a_workspace_on_the_command_line_is_enough(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--workspace` supplies what the spec leaves out."""
    spec = _write(tmp_path, FILES_SPEC)
    assert main(["run", str(spec), "--workspace", str(tmp_path / "ws"), "-q"]) == 1
    assert "no workspace" not in capsys.readouterr().err


def _module_spec(module: str, *, bare: bool = False) -> str:
    """A spec whose check runs `python -m module`: by this interpreter's path, or (`bare`) by
    its name, found on the check's PATH."""
    python = Path(sys.executable)
    program = python.name if bare else str(python)
    command = json.dumps([program, "-m", module, "-q"])
    env = f'env = {{ PATH = "{python.parent}" }}' if bare else ""
    return f"""
prompt = "p"
workspace = "ws"
[model]
type = "fixture"
path = "script.jsonl"
[budget]
max_turns = 2
[[checks]]
type = "test_suite"
command = {command}
{env}
"""


@pytest.mark.parametrize("bare", [False, True])
def test_python_dash_m_of_a_missing_module_is_refused_before_the_first_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bare: bool
) -> None:
    """`python -m MODULE` whose interpreter has no MODULE (named by its path, or by a name
    found on PATH): exit 2 before any model call, named `checks[0]` as the spec names it, not
    by the check's class."""
    spec = _write(tmp_path, _module_spec("no_such_runner_xyz", bare=bare))
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"harness: {spec}: checks[0]: the command" in err
    assert "finds no module 'no_such_runner_xyz'" in err
    assert "TestSuiteCheck" not in err
    assert "turn 1" not in err


def test_python_dash_m_of_an_installed_module_passes_the_preflight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """This interpreter has pytest: the run goes ahead and the check judges the work."""
    spec = _write(tmp_path, _module_spec("pytest"))
    assert main(["run", str(spec), "-q"]) == 1
    assert "finds no module" not in capsys.readouterr().err


def test_harness_check_names_a_missing_program_by_its_place_in_the_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness check`: the preflight's error names `checks[0]`, not `TestSuiteCheck`."""
    spec = _write(tmp_path, _module_spec("pytest").replace(sys.executable, "no-such-prog-xyz"))
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"{spec}: checks[0]: the command" in err
    assert "TestSuiteCheck" not in err


def test_the_halt_line_of_a_multi_line_reason_has_no_literal_newline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A check that cannot start halts `CheckBroken` with its output in the reason: the
    progress line shows the first line, the outcome every line, and no `\\n` is printed."""
    command = json.dumps(["sh", "-c", "echo first; echo second; exit 127"])
    body = f"""
prompt = "p"
workspace = "ws"
[model]
type = "fixture"
path = "script.jsonl"
[[checks]]
type = "command"
command = {command}
"""
    spec = _write(tmp_path, body, '{"text": "done"}\n' * 3)
    assert main(["run", str(spec)]) == 1
    captured = capsys.readouterr()
    halted = [line for line in captured.err.splitlines() if "halted:" in line]
    assert halted
    assert "could not run" in halted[0]
    assert "\\n" not in captured.err + captured.out
    assert "second" in captured.out


def test_every_run_records_a_transcript_beside_the_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no --transcript and none in the spec, the run records into runs/ beside the spec
    and the outcome names the file; `--no-transcript` and `transcript = false` record none."""
    spec = _write(tmp_path, FILES_SPEC.replace("[model]", 'workspace = "ws"\n[model]'))
    assert main(["run", str(spec), "-q"]) == 1
    out = capsys.readouterr().out
    (recorded,) = (tmp_path / "runs").iterdir()
    assert recorded.name.startswith("spec-")
    assert recorded.suffix == ".jsonl"
    assert f"transcript: {recorded}" in out
    events = [json.loads(line)["event"] for line in recorded.read_text().splitlines()]
    assert events[0] == "run.started"
    assert events[-1] == "run.halted"
    assert main(["run", str(spec), "-q", "--no-transcript"]) == 1
    assert "transcript:" not in capsys.readouterr().out
    spec.write_text("transcript = false\n" + spec.read_text())
    assert main(["run", str(spec), "-q"]) == 1
    assert len(list((tmp_path / "runs").iterdir())) == 1


RAISING = """
async def check(state):
    return {"a": 1}["b"]
"""


@pytest.mark.parametrize("verbose", [False, True])
def test_a_check_that_raises_points_to_its_traceback_and_prints_it_once(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    verbose: bool,
) -> None:
    """The failed check is named `checks[0]` and says `(-v for the traceback)`; with -v the
    traceback is printed once, on its lines."""
    (tmp_path / "raising_check_fh.py").write_text(RAISING)
    monkeypatch.syspath_prepend(str(tmp_path))
    body = FILES_SPEC.replace("[model]", 'workspace = "ws"\n[model]').replace(
        'type = "files"\npaths = ["done.txt"]',
        'type = "python"\nfunction = "raising_check_fh:check"',
    )
    spec = _write(tmp_path, body)
    main(["run", str(spec), "--no-transcript", *(["-v"] if verbose else [])])
    err = capsys.readouterr().err
    # Named as the spec names it, not by its class (FunctionCheck).
    assert (
        "the completion check checks[0] (raising_check_fh:check) failed with KeyError: 'b' "
        "(-v for the traceback)"
    ) in err
    tracebacks = err.count("Traceback (most recent call last)")
    assert tracebacks == (1 if verbose else 0)  # one claim (the budget ends turn 2), once
    if verbose:
        assert "Traceback (most recent call last):\\n" not in err


def test_task_is_refused_with_a_hint_toward_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`task = "..."`, a natural guess, is refused naming `prompt` and `harness init`."""
    spec = _write(tmp_path, FILES_SPEC.replace("prompt =", "task ="))
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"{spec}: unknown key 'task': the task goes in prompt = " in err
    assert "harness init" in err


def test_init_writes_a_commented_starter_that_runs_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness init` writes harness.toml (commented), a workspace and a scripted model; the
    spec runs to a verified finish as written; a second init overwrites nothing."""
    assert main(["init", str(tmp_path)]) == 0
    assert "run it: harness run" in capsys.readouterr().out
    spec = tmp_path / "harness.toml"
    text = spec.read_text()
    assert text.count("\n#") > 10
    assert main(["run", str(spec), "-q"]) == 0
    assert capsys.readouterr().out.startswith("VERIFIED COMPLETE")
    assert (tmp_path / "workspace" / "hello.txt").read_text() == "hello\n"
    assert main(["init", str(tmp_path)]) == 2
    assert "exists" in capsys.readouterr().err


def test_the_docs_say_what_a_second_signal_does_as_the_code_does() -> None:
    """A second SIGTERM or SIGINT kills the command by that signal (`SignalCancel`):
    docs/cli.md and docs/board.md both say so, and neither says it is ignored."""
    root = Path(__file__).resolve().parents[3]
    for page in ("cli.md", "board.md"):
        text = " ".join((root / "docs" / page).read_text(encoding="utf-8").split())
        assert re.search(r"second signal[^.]*kills the command at once", text.lower()), page
        assert "further signals are ignored" not in text.lower(), page
