"""`harness run` and `harness check`: exit codes, progress, transcripts and spec errors."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

import strategies._cli._run as run_module
from strategies._cli import main

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "fixtures" / "demo"


def _events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_runs_to_a_verified_finish(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    """The demo claims done early, is told what is missing, finishes, and exits 0."""
    transcript = tmp_path / "demo.jsonl"
    before = (DEMO / "workspace" / "feature_list.json").read_text()
    code = main(
        ["run", str(DEMO / "ralph.toml"), "--transcript", str(transcript), "--backend", backend]
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert out.startswith("VERIFIED COMPLETE: completed")
    assert "check failed: 2 of 3 features in feature_list.json do not pass yet" in err
    names = [e["event"] for e in _events(transcript)]
    assert names.count("iteration.started") == 2
    assert names.index("check.failed") < names.index("check.passed")
    assert names[-1] == "run.halted"
    assert (DEMO / "workspace" / "feature_list.json").read_text() == before


def _spec(tmp_path: Path, body: str, fixture: str) -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "script.jsonl").write_text(fixture)
    spec = tmp_path / "spec.toml"
    spec.write_text(body)
    return spec


BASE = """
prompt = "make done.txt"
workspace = "ws"
[model]
type = "fixture"
path = "script.jsonl"
[strategy]
type = "ralph"
max_iterations = 1
[[checks]]
type = "files"
paths = ["done.txt"]
"""


def test_unverified_run_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that halts without the check passing exits 1 and says why."""
    spec = _spec(tmp_path, BASE, '{"text": "done"}\n')
    assert main(["run", str(spec), "-q"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("NOT VERIFIED: ralph ran 1 iterations")
    assert "done.txt" in out


def test_check_command_gates_on_every_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness check` prints each verdict and exits 0 only when all pass."""
    spec = _spec(tmp_path, BASE, "")
    assert main(["check", str(spec)]) == 1
    assert "FAIL" in capsys.readouterr().out
    (tmp_path / "ws" / "done.txt").write_text("yes")
    assert main(["check", str(spec)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("body", "fixture", "fragment"),
    [
        (BASE + "bogus = 1\n", "", "unknown key 'bogus'"),
        (
            BASE.replace('prompt = "make done.txt"', ""),
            "",
            "cannot run this spec: it has no 'prompt' (or 'prompt_file')",
        ),
        (
            BASE.replace('[model]\ntype = "fixture"\npath = "script.jsonl"\n', ""),
            "",
            "spec.toml: cannot run this spec: it has no [model] table (a spec with only "
            "[[checks]] serves `harness check` and `harness hook`",
        ),
        (
            BASE.replace('[model]\ntype = "fixture"\npath = "script.jsonl"\n', "model = 3\n"),
            "",
            "spec.toml.model must be a table (got 3)",
        ),
        (
            BASE.replace('workspace = "ws"', 'workspace = "nowhere"'),
            "",
            "is not an existing folder",
        ),
        (BASE + "[budget]\nmax_turns = 0\n", "", "max_turns"),
        (BASE, '{"text": 3}\n', "script.jsonl:1 field 'text'"),
        (BASE, "{not json\n", "script.jsonl:1: not valid JSON"),
        (BASE.replace('type = "ralph"', 'type = "sideways"'), "", "strategy.type"),
    ],
)
def test_spec_errors_name_the_file_and_key(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    body: str,
    fixture: str,
    fragment: str,
) -> None:
    """A bad spec or fixture exits 2 with a message naming where the problem is."""
    spec = _spec(tmp_path, body, fixture)
    assert main(["run", str(spec)]) == 2
    err = capsys.readouterr().err
    assert fragment in err


CHECKS_ONLY = """
workspace = "ws"
[[checks]]
type = "files"
paths = ["done.txt"]
"""


def test_a_spec_with_only_checks_is_checked_but_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness check` needs only [[checks]]; `harness run` names both things it lacks."""
    spec = _spec(tmp_path, CHECKS_ONLY, "")
    (tmp_path / "ws" / "done.txt").write_text("yes")
    assert main(["check", str(spec)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out
    assert main(["run", str(spec)]) == 2
    out, err = capsys.readouterr()
    assert err == (
        f"harness: {spec}: cannot run this spec: it has no [model] table and no 'prompt' (or "
        "'prompt_file') (a spec with only [[checks]] serves `harness check` and `harness "
        'hook`; to run it, add e.g. [model] type = "fixture", path = ...)\n'
    )
    assert out == ""


@pytest.mark.parametrize("command", ["run", "check"])
def test_files_that_are_not_utf8_are_named_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A spec, prompt file or fixture with a Latin-1 byte is a `harness:` error naming it."""
    spec = _spec(tmp_path, BASE, "")
    spec.write_bytes(BASE.encode() + b"# caf\xe9\n")
    assert main([command, str(spec)]) == 2
    assert f"harness: {spec}: not UTF-8 (byte 0xe9)" in capsys.readouterr().err
    (tmp_path / "prompt.txt").write_bytes(b"caf\xe9")
    spec.write_text(BASE.replace('prompt = "make done.txt"', 'prompt_file = "prompt.txt"'))
    assert main([command, str(spec)]) == 2
    assert "prompt.txt' is not UTF-8 (byte 0xe9)" in capsys.readouterr().err
    if command == "run":
        spec.write_text(BASE)
        (tmp_path / "script.jsonl").write_bytes(b'{"text": "caf\xe9"}\n')
        assert main([command, str(spec)]) == 2
        err = capsys.readouterr().err
        assert "script.jsonl:1: not UTF-8: byte 0xe9 at byte 14 of the line" in err


def test_missing_spec_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A spec path that does not exist is a clear error, not a traceback."""
    assert main(["run", str(tmp_path / "nope.toml")]) == 2
    assert "no such spec file" in capsys.readouterr().err


def test_leftover_fixture_lines_fail_after_keeping_the_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script with unused lines is an error naming the line, and the transcript is kept."""
    fixture = (DEMO / "ralph.jsonl").read_text() + '{"text": "one too many"}\n'
    spec = _spec(tmp_path, BASE, fixture)
    transcript = tmp_path / "t.jsonl"
    spec.write_text(
        BASE.replace('workspace = "ws"', f'workspace_template = "{DEMO / "workspace"}"')
        .replace('type = "files"\npaths = ["done.txt"]', 'type = "feature_list"')
        .replace("max_iterations = 1", "max_iterations = 3")
    )
    assert main(["run", str(spec), "--transcript", str(transcript), "-q"]) == 2
    err = capsys.readouterr().err
    assert "script.jsonl:9" in err
    assert "unused" in err
    assert _events(transcript)[-1]["event"] == "run.halted"


SELF_VERIFYING = """
prompt = "make done.txt"
workspace = "ws"
[model]
type = "fixture"
path = "{builder}"
[strategy]
type = "self_verifying"
max_rounds = 2
[strategy.evaluator]
type = "fixture"
path = "{evaluator}"
[[checks]]
type = "files"
paths = ["done.txt"]
"""


def test_record_captures_the_evaluator_beside_the_builder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--record writes the evaluator's calls to NAME.evaluator.jsonl; both replay the run."""
    (tmp_path / "ws").mkdir()
    write = {"name": "write_file", "arguments": {"path": "done.txt", "content": "x"}}
    builder = [{"tool_calls": [write]}, {"text": "done"}, {"text": "fixed it"}]
    look = {"tool_calls": [{"name": "read_file", "arguments": {"path": "done.txt"}}]}
    evaluator = [look, {"text": "too thin\nVERDICT: FAIL"}, look, {"text": "VERDICT: PASS"}]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in builder))
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evaluator))
    first = tmp_path / "first.toml"
    first.write_text(SELF_VERIFYING.format(builder="b.jsonl", evaluator="e.jsonl"))
    record = tmp_path / "rec.jsonl"
    t1, t2 = tmp_path / "t1.jsonl", tmp_path / "t2.jsonl"
    assert main(["run", str(first), "-q", "--record", str(record), "--transcript", str(t1)]) == 0
    assert len(record.read_text().splitlines()) == 3
    assert len((tmp_path / "rec.evaluator.jsonl").read_text().splitlines()) == 4
    replay = tmp_path / "replay.toml"
    replay.write_text(SELF_VERIFYING.format(builder="rec.jsonl", evaluator="rec.evaluator.jsonl"))
    (tmp_path / "ws" / "done.txt").unlink()
    assert main(["run", str(replay), "-q", "--transcript", str(t2)]) == 0

    def keys(path: Path) -> list[dict[str, object]]:
        rows = _events(path)
        for row in rows:
            row.pop("at", None)
            row.pop("run_id", None)
        return rows

    assert keys(t1) == keys(t2)


def test_an_evaluator_pass_without_a_look_does_not_count_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """From the command line a PASS counts only after the evaluator used a tool: an evaluator
    that never opens the work cannot verify the run (exit 1), and the reason says why."""
    (tmp_path / "ws").mkdir()
    write = {"name": "write_file", "arguments": {"path": "done.txt", "content": "x"}}
    builder = [{"tool_calls": [write]}, {"text": "done"}, {"text": "it is saved"}]
    evaluator = [{"text": "VERDICT: PASS"}, {"text": "VERDICT: PASS"}]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in builder))
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evaluator))
    spec = tmp_path / "spec.toml"
    spec.write_text(SELF_VERIFYING.format(builder="b.jsonl", evaluator="e.jsonl"))
    assert main(["run", str(spec), "-q"]) == 1
    assert "without opening the work" in capsys.readouterr().out
    spec.write_text(
        SELF_VERIFYING.format(builder="b.jsonl", evaluator="e.jsonl").replace(
            "max_rounds = 2", "max_rounds = 2\nevaluator_must_use_tools = false"
        )
    )
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in builder[:2]))
    (tmp_path / "e.jsonl").write_text(json.dumps(evaluator[0]) + "\n")
    assert main(["run", str(spec), "-q"]) == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("max_rounds = 2", "max_rounds = 2\nevaluator_must_use_tools = 1"),
            "strategy.evaluator_must_use_tools must be a boolean (got 1)",
        ),
        (
            ('workspace = "ws"', 'workspace = "ws"\ntools = ["write_file"]'),
            "strategy.evaluator_must_use_tools is on (the default), but the evaluator would "
            "have no tools",
        ),
    ],
)
def test_evaluator_must_use_tools_spec_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], message: str
) -> None:
    """A non-boolean setting, or the default with no read-only tool to look with, is a spec
    error (exit 2) naming the key, before anything runs."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "b.jsonl").write_text('{"text": "done"}\n')
    (tmp_path / "e.jsonl").write_text('{"text": "VERDICT: PASS"}\n')
    spec = tmp_path / "spec.toml"
    body = SELF_VERIFYING.format(builder="b.jsonl", evaluator="e.jsonl")
    spec.write_text(body.replace(*change))
    assert main(["run", str(spec), "-q"]) == 2
    assert message in capsys.readouterr().err


def test_a_spec_can_watch_for_a_repeated_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`[[sensors]] type = "repeated_claim"` halts a run whose agent repeats its rejected claim,
    by name, before the policy's max_rejections."""
    body = (
        BASE.replace('type = "ralph"\nmax_iterations = 1', 'type = "loop"')
        + '[[sensors]]\ntype = "repeated_claim"\nlimit = 2\n[policy]\nmax_rejections = 5\n'
    )
    spec = _spec(tmp_path, body, '{"text": "done.txt is written"}\n' * 2)
    assert main(["run", str(spec), "-q"]) == 1
    out = capsys.readouterr().out
    assert "repeated_claim" in out
    assert "the same claim of done 2 times in a row" in out


# --- the temporary workspace of a spec's workspace_template -------------------------------------


def _workspace_line(out: str) -> str:
    [line] = [line for line in out.splitlines() if line.startswith("  workspace: ")]
    return line.removeprefix("  workspace: ")


def test_a_temporary_workspace_is_removed_when_the_command_ends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The fresh copy of a spec's workspace_template is removed at the end, and the outcome
    says where it was and that --keep-workspace keeps it; the template is untouched."""
    before = sorted(p.name for p in (DEMO / "workspace").iterdir())
    assert main(["run", str(DEMO / "ralph.toml"), "-q"]) == 0
    shown = _workspace_line(capsys.readouterr().out)
    path, note = shown.split(" ", 1)
    assert Path(path).name.startswith("harness-ws-")
    assert note == "(a temporary copy, removed; --keep-workspace keeps it)"
    assert not Path(path).exists()
    assert sorted(p.name for p in (DEMO / "workspace").iterdir()) == before


def test_keep_workspace_keeps_the_temporary_copy_and_prints_where_it_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With --keep-workspace the copy stays, holding the agent's work, at the printed path."""
    assert main(["run", str(DEMO / "ralph.toml"), "-q", "--keep-workspace"]) == 0
    path = Path(_workspace_line(capsys.readouterr().out))
    try:
        assert path.name.startswith("harness-ws-")
        assert "def top_word" in (path / "stats.py").read_text()
    finally:
        shutil.rmtree(path)


def test_a_workspace_the_user_named_is_never_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--workspace (or the spec's `workspace`) is the user's folder: it is neither copied
    nor removed, even for a spec that has a template."""
    mine = tmp_path / "mine"
    shutil.copytree(DEMO / "workspace", mine)
    assert main(["run", str(DEMO / "ralph.toml"), "-q", "--workspace", str(mine)]) == 0
    assert _workspace_line(capsys.readouterr().out) == str(mine)
    assert "def top_word" in (mine / "stats.py").read_text()


def test_a_temporary_workspace_is_removed_when_the_run_cannot_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error after the copy was made (here a missing fixture) still removes it."""
    spec = tmp_path / "spec.toml"
    spec.write_text(
        BASE.replace('workspace = "ws"', f'workspace_template = "{DEMO / "workspace"}"')
    )
    created = set(Path(tempfile.gettempdir()).glob("harness-ws-*"))
    assert main(["run", str(spec), "-q"]) == 2
    assert "script.jsonl" in capsys.readouterr().err
    assert set(Path(tempfile.gettempdir()).glob("harness-ws-*")) <= created


def test_ctrl_c_before_the_run_is_a_one_line_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A KeyboardInterrupt outside a run (here while the spec loads) ends the command with
    exit 130 and one line, not a traceback."""

    def interrupted(path: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "load_spec", interrupted)
    assert main(["run", "spec.toml"]) == 130
    assert capsys.readouterr().err == "harness: interrupted\n"


@pytest.mark.parametrize(
    ("strategy", "fragment"),
    [
        (
            '[strategy]\ntype = "ralph"\n[strategy.iteration_budget]\nmax_turnz = 3\n',
            "strategy.iteration_budget: unknown key 'max_turnz'",
        ),
        (
            '[strategy]\ntype = "ralph"\n[strategy.iteration_budget]\nmax_turns = 0\n',
            "max_turns",
        ),
        (
            '[strategy]\ntype = "self_verifying"\n[strategy.evaluator]\ntype = "fixture"\n'
            'pth = "script.jsonl"\n',
            "strategy.evaluator: unknown key 'pth'",
        ),
        (
            '[strategy]\ntype = "self_verifying"\n[strategy.evaluator]\ntype = "fixture"\n'
            'path = "script.jsonl"\n[strategy.evaluator_budget]\nmax_tool_calls = -1\n',
            "max_tool_calls",
        ),
        (
            '[strategy]\ntype = "self_verifying"\nmax_rounds = 0\n[strategy.evaluator]\n'
            'type = "fixture"\npath = "script.jsonl"\n',
            "max_rounds",
        ),
    ],
)
def test_check_refuses_nested_strategy_tables_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str, fragment: str
) -> None:
    """`harness check` validates [strategy.iteration_budget] and [strategy.evaluator] exactly
    as `harness run` does: the same exit code and the same message naming the key."""
    body = BASE[: BASE.index("[strategy]")] + strategy + BASE[BASE.index("[[checks]]") :]
    spec = _spec(tmp_path, body, "")
    (tmp_path / "ws" / "done.txt").write_text("yes")
    assert main(["run", str(spec)]) == 2
    run_err = capsys.readouterr().err
    assert main(["check", str(spec)]) == 2
    check_err = capsys.readouterr().err
    assert fragment in run_err
    assert check_err == run_err
