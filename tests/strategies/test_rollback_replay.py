"""Ralph with ``rollback="on_regression"``, end to end: a scripted agent breaks tests that
passed, the real pytest suite measures it, the workspace (a real git repository, or a plain
folder with snapshots) is rolled back, the next iteration is told, and the replay of the
transcript reproduces every checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from _git_support import git, init_repo

from checks import Assessment, TestSuiteCheck, WorkProgress
from harness import (
    Completed,
    ConfigurationError,
    FixtureError,
    Harness,
    RunResult,
    RunWarning,
    ScriptedModelClient,
    SessionStateSnapshot,
    workspace_tools,
)
from harness.checkpoints import REF_PREFIX, Checkpointing, open_checkpoints
from harness.events import CheckpointFailed, CheckpointRestored, CheckpointSaved, TranscriptReader
from harness.testing import FakeClock, ListSink, fixture_from_transcript
from strategies import Ralph, SelfVerifying
from strategies._rollback import UNMEASURED_START
from strategies._spec import spec_from_table
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "rollback"
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
BROKEN_AT_START = "return a + b  # the bug to fix"


def suite_harness(
    model: ScriptedModelClient, workspace: Path, sink: ListSink, **kw: Any
) -> Harness:
    return Harness(
        model=model,
        policy=TerminationPolicy(completion_check=TestSuiteCheck(PYTEST, timeout=300)),
        strategy=Ralph(max_iterations=3, rollback="on_regression"),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink],
        **kw,
    )


def checkpoints_of(sink: ListSink) -> list[tuple[str, tuple[int, int] | None]]:
    saved = [e for e in sink.events if isinstance(e, CheckpointSaved)]
    return [
        (e.label, None if e.progress is None else (e.progress.done, e.progress.total))
        for e in saved
    ]


def demo_workspace(folder: Path, *, repo: bool) -> Path:
    if repo:
        files = {p.name: p.read_text() for p in (DEMO / "workspace").iterdir()}
        init_repo(folder, {**files, ".gitignore": "__pycache__/\n"})
        return folder
    shutil.copytree(DEMO / "workspace", folder)
    return folder


def user_state(repo: Path) -> tuple[str, ...]:
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "HEAD"),
        git(repo, "stash", "list", "--format=%H"),
        (repo / ".git" / "index").read_bytes().hex(),
        git(repo, "for-each-ref", "refs/heads", "refs/tags", "refs/stash"),
    )


def assert_rolled_back_and_finished(result: RunResult, sink: ListSink, workspace: Path) -> None:
    assert result.halt_reason == Completed()
    assert result.verified
    assert result.iterations == 2
    assert checkpoints_of(sink) == [
        ("run started", (2, 3)),
        ("iteration 1 ended", (1, 3)),
        ("iteration 2 ended", (3, 3)),
    ]
    first = next(e for e in sink.events if isinstance(e, CheckpointSaved))
    restored = [e for e in sink.events if isinstance(e, CheckpointRestored)]
    assert [(r.checkpoint, r.label, r.modified, r.added, r.deleted) for r in restored] == [
        (first.checkpoint, "run started", 1, 0, 0)
    ]
    assert "1 of 3 tests after 2 of 3 tests" in restored[0].reason
    assert (workspace / "calc.py").read_text().count("a - b") == 1  # only sub subtracts
    assert not [e for e in sink.events if isinstance(e, CheckpointFailed)]


async def test_a_regressing_iteration_in_a_git_repository_is_rolled_back(tmp_path: Path) -> None:
    """Iteration 1 breaks test_add and test_mul: the repository's files go back to the
    checkpoint before it, iteration 2 is told what broke (tagged ``rollback``), reads the
    original file and fixes only the bug; HEAD, the branch, the index and the stash are as
    the user left them, and the checkpoints are commits on the run's private ref."""
    repo = demo_workspace(tmp_path / "repo", repo=True)
    (repo / "notes.txt").write_text("stashed work\n")
    git(repo, "add", "notes.txt")
    git(repo, "stash", "-q")
    before = user_state(repo)
    sink = ListSink()
    model = ScriptedModelClient.from_jsonl(DEMO / "agent.jsonl")
    transcript = tmp_path / "run.jsonl"
    result = await suite_harness(model, repo, sink, checkpoints=True, transcript=transcript).run(
        "Fix the bug in calc.py so that the test suite passes."
    )
    assert_rolled_back_and_finished(result, sink, repo)
    assert user_state(repo) == before
    ref = REF_PREFIX + result.run_id
    assert git(repo, "rev-list", "--count", ref).strip() == "3"
    first = next(e for e in sink.events if isinstance(e, CheckpointSaved))
    assert BROKEN_AT_START in git(repo, "show", f"{first.checkpoint}:calc.py")
    rollback_feedback = [m for m in result.sessions[1].messages if m.feedback_source == "rollback"]
    assert len(rollback_feedback) == 1
    assert "It broke: test_calc.py::test_add, test_calc.py::test_mul" in (
        rollback_feedback[0].content
    )

    # The replay of the transcript, in a fresh copy of the repository, makes the same
    # checkpoints: the same commits, trees and progress, and the same rollback.
    again = demo_workspace(tmp_path / "again", repo=True)
    replayed = ListSink()
    lines = fixture_from_transcript(transcript)
    await suite_harness(
        ScriptedModelClient.from_responses(lines), again, replayed, checkpoints=True
    ).run("Fix the bug in calc.py so that the test suite passes.")
    kinds = (CheckpointSaved, CheckpointRestored)
    read_back = [e for _, e in TranscriptReader(transcript) if isinstance(e, kinds)]
    assert read_back == [e for e in sink.events if isinstance(e, kinds)]
    original = [e.replay_key() for e in sink.events if isinstance(e, kinds)]
    assert [e.replay_key() for e in replayed.events if isinstance(e, kinds)] == original


async def test_a_regressing_iteration_in_a_plain_folder_is_rolled_back(tmp_path: Path) -> None:
    """Outside git the same happens with content-addressed snapshots (a spec's
    ``checkpoint_dir``), and a file the agent created is removed by the rollback."""
    ws = demo_workspace(tmp_path / "ws", repo=False)
    sink = ListSink()
    spec = spec_from_table(
        {
            "prompt": "Fix the bug.",
            "model": {"type": "fixture", "path": str(DEMO / "agent.jsonl")},
            "checkpoints": True,
            "checkpoint_dir": "state",
            "strategy": {"type": "ralph", "max_iterations": 3, "rollback": "on_regression"},
            "checks": [{"type": "test_suite", "command": list(PYTEST)}],
        },
        tmp_path / "spec.toml",
    )
    assert spec.checkpoints is not None
    assert spec.checkpoints.state_dir == (tmp_path / "state").resolve()
    result = await spec.harness(workspace=ws, sinks=[sink]).run(
        "Fix the bug in calc.py so that the test suite passes."
    )
    assert_rolled_back_and_finished(result, sink, ws)
    store = await open_checkpoints(ws, series="x", state_dir=tmp_path / "state")
    assert [c.label for c in await store.checkpoints(result.run_id)] == [
        "run started",
        "iteration 1 ended",
        "iteration 2 ended",
    ]


async def test_a_wreck_is_rolled_back_with_the_suites_defaults(tmp_path: Path) -> None:
    """With fast rejection on (the default), a baseline and a must_pass test that fails at the
    start, the checkpoints rollback compares are still measured by the whole suite: iteration
    1 turns calc.py into a syntax error (no test collected, after 2 of 3 passing at the start)
    and is rolled back; the replay makes the same checkpoints."""
    repo = demo_workspace(tmp_path / "repo", repo=True)
    check = TestSuiteCheck((*PYTEST, "-rA"), timeout=300, baseline=True, must_pass=("test_sub",))
    assert check.fast_reject

    def wreck_harness(model: ScriptedModelClient, workspace: Path, sink: ListSink) -> Harness:
        return Harness(
            model=model,
            policy=TerminationPolicy(completion_check=check),
            strategy=Ralph(max_iterations=3, rollback="on_regression"),
            tools=workspace_tools(),
            workspace=workspace,
            clock=FakeClock(),
            sinks=[sink],
            transcript=tmp_path / f"{workspace.name}.jsonl",
        )

    sink = ListSink()
    model = ScriptedModelClient.from_jsonl(DEMO / "wreck.jsonl")
    result = await wreck_harness(model, repo, sink).run("Fix the bug in calc.py.")
    assert result.verified, result.halt_reason
    saved = checkpoints_of(sink)
    assert saved == [
        ("run started", (2, 3)),
        ("iteration 1 ended", (0, 1)),  # pytest's "1 error": the module cannot be collected
        ("iteration 2 ended", (3, 3)),
    ]
    restored = [e for e in sink.events if isinstance(e, CheckpointRestored)]
    assert [r.label for r in restored] == ["run started"]
    assert (repo / "calc.py").read_text().count("a - b") == 1

    again = demo_workspace(tmp_path / "again", repo=True)
    replayed = ListSink()
    lines = fixture_from_transcript(tmp_path / "repo.jsonl")
    await wreck_harness(ScriptedModelClient.from_responses(lines), again, replayed).run(
        "Fix the bug in calc.py."
    )
    kinds = (CheckpointSaved, CheckpointRestored)
    original = [e.replay_key() for e in sink.events if isinstance(e, kinds)]
    assert [e.replay_key() for e in replayed.events if isinstance(e, kinds)] == original


# -- the rules, with a check whose progress is scripted -----------------------------------


class Scripted:
    """A check that measures what `steps` say, one step per call (a reason when done < total,
    no progress for None)."""

    def __init__(self, steps: list[tuple[int, int] | None]) -> None:
        self.steps = steps
        self.calls = 0

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return (await self.measure(state)).reason

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        step = self.steps[self.calls]
        self.calls += 1
        if step is None:
            return Assessment("the suite could not be read")
        done, total = step
        progress = WorkProgress(done, total, "tests", tuple(f"t{i}" for i in range(done, total)))
        return Assessment(None if done == total else f"{done} of {total}", progress)

    def description(self) -> str:
        return "scripted"


def claims(n: int) -> ScriptedModelClient:
    """An agent that writes iteration-numbered work and claims done, `n` times."""
    lines: list[dict[str, Any]] = []
    for i in range(1, n + 1):
        write = {"name": "write_file", "arguments": {"path": "work.txt", "content": f"v{i}"}}
        lines += [{"tool_calls": [write]}, {"text": "done"}]
    return ScriptedModelClient.from_responses(lines)


async def scripted_run(
    tmp_path: Path, steps: list[tuple[int, int] | None], iterations: int, **ralph: Any
) -> tuple[RunResult, ListSink]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "work.txt").write_text("v0")
    sink = ListSink()
    harness = Harness(
        model=claims(iterations),
        policy=TerminationPolicy(completion_check=Scripted(steps)),
        strategy=Ralph(max_iterations=iterations, **ralph),
        tools=workspace_tools(),
        workspace=ws,
        clock=FakeClock(),
        sinks=[sink],
        checkpoints=Checkpointing(state_dir=tmp_path / "state"),
    )
    return await harness.run("work"), sink


async def test_ties_and_gains_move_the_best_forward_and_only_a_loss_rolls_back(
    tmp_path: Path,
) -> None:
    """1/4 at the start, 2/4, 2/4 (a tie: the newer is the best), 1/4 (rolled back to the
    second 2/4), then 4/4."""
    result, sink = await scripted_run(
        tmp_path, [(1, 4), (2, 4), (2, 4), (1, 4), (4, 4)], 4, rollback="on_regression"
    )
    assert result.halt_reason == Completed()
    restored = [e for e in sink.events if isinstance(e, CheckpointRestored)]
    saved = {e.label: e.checkpoint for e in sink.events if isinstance(e, CheckpointSaved)}
    assert [r.checkpoint for r in restored] == [saved["iteration 2 ended"]]
    assert (tmp_path / "ws" / "work.txt").read_text() == "v4"
    told = [m.content for m in result.sessions[3].messages if m.feedback_source == "rollback"]
    assert len(told) == 1
    assert "It broke: t1." in told[0]
    carried = [
        m.content for m in result.sessions[3].messages if m.feedback_source == "previous_iteration"
    ]
    assert "The workspace was then rolled back" in carried[0]


async def test_a_check_that_cannot_measure_after_one_that_could_is_a_regression(
    tmp_path: Path,
) -> None:
    """Fail closed: no progress at the end of an iteration, after 2/3 at the start, rolls back
    (and says the check could not measure); the workspace is the start's again."""
    result, sink = await scripted_run(tmp_path, [(2, 3), None, None], 2, rollback="on_regression")
    assert [type(e).__name__ for e in sink.events if isinstance(e, CheckpointRestored)] == [
        "CheckpointRestored",
        "CheckpointRestored",
    ]
    assert (tmp_path / "ws" / "work.txt").read_text() == "v0"
    told = [m.content for m in result.sessions[1].messages if m.feedback_source == "rollback"]
    assert "could not measure the work" in told[0]


async def test_a_start_the_check_cannot_measure_is_said_once(tmp_path: Path) -> None:
    """A measuring check that gives no progress at the start: rollback cannot judge the
    first iteration, and a ``run.warning`` from ``rollback`` says so, once."""
    result, sink = await scripted_run(tmp_path, [None, (1, 3), (3, 3)], 2, rollback="on_regression")
    assert result.halt_reason == Completed()
    warned = [e.message for e in sink.events if isinstance(e, RunWarning)]
    assert warned == [UNMEASURED_START]


async def test_without_rollback_iterations_are_checkpointed_and_nothing_is_restored(
    tmp_path: Path,
) -> None:
    """`Harness(checkpoints=True)` alone: a checkpoint when the run starts and at the end of
    each iteration, with the measured progress, and no restore even when it got worse."""
    result, sink = await scripted_run(tmp_path, [(2, 3), (1, 3)], 2)
    assert checkpoints_of(sink) == [
        ("run started", None),
        ("iteration 1 ended", (2, 3)),
        ("iteration 2 ended", (1, 3)),
    ]
    assert not [e for e in sink.events if isinstance(e, CheckpointRestored)]
    assert (tmp_path / "ws" / "work.txt").read_text() == "v2"
    assert result.iterations == 2


async def test_a_rejected_claim_in_the_plain_loop_is_checkpointed_with_its_progress(
    tmp_path: Path,
) -> None:
    """The plain loop checkpoints at the run's start and at every rejected claim."""
    ws = tmp_path / "ws"
    ws.mkdir()
    sink = ListSink()
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}
    model = ScriptedModelClient.from_responses(
        [{"text": "done"}, {"tool_calls": [write]}, {"text": "done"}]
    )
    harness = Harness(
        model=model,
        policy=TerminationPolicy(completion_check=Scripted([(0, 1), (1, 1)])),
        tools=workspace_tools(),
        workspace=ws,
        clock=FakeClock(),
        sinks=[sink],
        checkpoints=Checkpointing(state_dir=tmp_path / "state"),
    )
    result = await harness.run("work")
    assert result.verified
    assert checkpoints_of(sink) == [
        ("run started", None),
        ("claim rejected (builder, iteration 1, turn 1)", (0, 1)),
    ]


async def test_an_evaluators_fail_is_a_rejected_claim_and_is_checkpointed(
    tmp_path: Path,
) -> None:
    """Under SelfVerifying, the work the evaluator failed is checkpointed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    sink = ListSink()
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}
    builder = ScriptedModelClient.from_responses(
        [{"tool_calls": [write]}, {"text": "done"}, {"text": "fixed"}]
    )
    evaluator = ScriptedModelClient.from_responses(
        [{"text": "Too short.\nVERDICT: FAIL"}, {"text": "VERDICT: PASS"}]
    )
    harness = Harness(
        model=builder,
        policy=TerminationPolicy(),
        strategy=SelfVerifying(evaluator=evaluator, evaluator_must_use_tools=False),
        tools=workspace_tools(),
        workspace=ws,
        clock=FakeClock(),
        sinks=[sink],
        checkpoints=Checkpointing(state_dir=tmp_path / "state"),
    )
    assert (await harness.run("work")).verified
    assert checkpoints_of(sink) == [
        ("run started", None),
        ("claim rejected by the evaluator (round 1)", None),
    ]


async def test_rollback_without_a_workspace_runs_without_checkpoints(tmp_path: Path) -> None:
    """No workspace, nothing to checkpoint: Ralph runs as without rollback."""
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_responses([{"text": "done"}]),
        policy=TerminationPolicy(completion_check=Scripted([(1, 1), (1, 1)])),
        strategy=Ralph(max_iterations=1, rollback="on_regression"),
        clock=FakeClock(),
        sinks=[sink],
    )
    result = await harness.run("work")
    assert result.verified
    assert not [e for e in sink.events if isinstance(e, CheckpointSaved | CheckpointFailed)]


def test_the_demo_runs_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness run fixtures/rollback/spec.toml` (with this interpreter's pytest first on
    PATH, as in the project's virtual environment) is verified after one rollback."""
    from strategies._cli import main

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    transcript = tmp_path / "demo.jsonl"
    spec = tmp_path / "spec.toml"
    text = (DEMO / "spec.toml").read_text()
    spec.write_text(text.replace('checkpoint_dir = "../../runs/demo-rollback-checkpoints"', ""))
    shutil.copytree(DEMO / "workspace", tmp_path / "workspace")
    shutil.copy(DEMO / "agent.jsonl", tmp_path / "agent.jsonl")
    assert main(["run", str(spec), "--transcript", str(transcript), "-q"]) == 0
    events = [json.loads(line)["event"] for line in transcript.read_text().splitlines()]
    assert events.count("checkpoint.restored") == 1
    assert events.count("checkpoint.saved") == 3
    assert "VERIFIED" in capsys.readouterr().out


def test_checkpoint_events_read_back_typed_and_bad_ones_are_named(tmp_path: Path) -> None:
    """The transcript reader turns the three checkpoint events into their classes, and a
    progress that cannot be (done above total) is an error naming the line and field."""
    events = [
        CheckpointSaved(1.0, "run started", "ab" * 20, "cd" * 20, 0, "git", WorkProgress(1, 2)),
        CheckpointRestored(2.0, "ab" * 20, "run started", "why", 0, 1, 0),
        CheckpointFailed(3.0, "iteration 1 ended", "CheckpointError: disk full"),
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in events))
    assert [e for _, e in TranscriptReader(path)] == events
    bad = events[0].to_dict() | {"progress": {"done": 3, "total": 2}}
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(FixtureError, match=r":1 field 'progress.done': 'done' must not exceed"):
        list(TranscriptReader(path))


def test_the_viewer_shows_checkpoints_and_rollbacks_escaped(tmp_path: Path) -> None:
    """`harness view` draws a checkpoint with its progress and a rollback with its reason;
    test names from the agent's workspace are escaped."""
    from strategies._cli import main

    events = [
        CheckpointSaved(
            1.0,
            "run started",
            "ab" * 20,
            "cd" * 20,
            0,
            "git",
            WorkProgress(1, 2, "tests", ("<script>x",)),
        ),
        CheckpointRestored(2.0, "ab" * 20, "run started", "iteration 1 ended below", 0, 1, 0),
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in events))
    assert main(["view", str(path), "-o", str(tmp_path / "t.html")]) == 0
    page = (tmp_path / "t.html").read_text()
    assert "checkpoint abababababab (run started: 1 of 2 tests)" in page
    assert "rolled back to checkpoint abababababab (run started)" in page
    assert "iteration 1 ended below" in page
    assert "<script>x" not in page
    assert "&lt;script&gt;x" in page


def test_rollback_settings_are_validated(tmp_path: Path) -> None:
    """A bad rollback mode is refused in Python and in a spec, naming the key."""
    with pytest.raises(ConfigurationError, match="'rollback' must be one of never, on_regression"):
        Ralph(rollback="always")  # type: ignore[arg-type]
    checks = [{"type": "always_complete"}]
    table: dict[str, Any] = {
        "prompt": "p",
        "strategy": {"type": "ralph", "rollback": "always"},
        "checks": checks,
    }
    with pytest.raises(ConfigurationError, match=r"strategy\.rollback must be one of"):
        spec_from_table(table, tmp_path / "spec.toml")
    table = {"prompt": "p", "checkpoint_dir": "x", "checks": checks}
    with pytest.raises(ConfigurationError, match="checkpoint_dir is set but checkpoints"):
        spec_from_table(table, tmp_path / "spec.toml")
    with pytest.raises(ConfigurationError, match="'checkpoints' must be a bool"):
        Harness(
            model=ScriptedModelClient.from_responses([]),
            policy=TerminationPolicy(),
            checkpoints="yes",
        )
