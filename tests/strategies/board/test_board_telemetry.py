"""`harness board run --otel`: one trace per board run, a ``harness.board`` span with a
``harness.attempt`` span per attempt under it and each attempt's run (``invoke_agent ...``)
under its attempt; checked with the SDK's in-memory exporter on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest
from _board_support import DEMO, make_board, task_toml, writes
from _otel_support import Traced
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from strategies._cli import _telemetry, main


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> Traced:
    traced = Traced()
    monkeypatch.setattr(_telemetry, "tracer_provider_from_env", lambda: traced.provider)
    return traced


def _attempts(traced: Traced) -> dict[str, ReadableSpan]:
    found = {}
    for span in traced.named("harness.attempt"):
        attributes = span.attributes or {}
        task, number = attributes["harness.task.id"], attributes["harness.attempt.number"]
        found[f"{task!s}#{number!s}"] = span
    return found


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_board_run_is_one_trace_of_attempts_and_their_runs(
    tmp_path: Path, traced: Traced, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["board", "run", str(DEMO), "--agents", "2", "--state", str(tmp_path / "s")]
    assert main([*args, "--otel", "-q", "--backend", backend]) == 1
    board = traced.one("harness.board")
    assert board.parent is None
    assert board.attributes is not None
    assert board.attributes["harness.board.engine"] == "local"
    assert board.attributes["harness.board.complete"] is False
    assert board.attributes["harness.board.tasks.complete"] == 4
    assert board.attributes["harness.board.tasks.review"] == 1
    assert board.status.status_code is StatusCode.ERROR

    attempts = _attempts(traced)
    assert set(attempts) == {"schema#1", "api#1", "changelog#1", "docs#1", "release#1"}
    assert board.context is not None
    assert {s.context.trace_id for s in traced.spans if s.context} == {board.context.trace_id}
    for label, attempt in attempts.items():
        assert attempt.parent is not None
        assert attempt.parent.span_id == board.context.span_id
        assert attempt.attributes is not None
        assert attempt.attributes["harness.role"] in ("backend", "docs")
        assert str(attempt.attributes["harness.agent"]).startswith(("backend-", "docs-"))
        (run,) = traced.children(attempt)
        assert run.name.startswith("invoke_agent ")
        assert run.attributes is not None
        assert run.attributes["harness.verified"] is (label != "release#1")
        assert [s.name for s in traced.children(run)][:1] == ["session builder"]
    release = attempts["release#1"]
    assert release.attributes is not None
    assert release.attributes["harness.attempt.outcome"] == "review"
    assert release.status.status_code is StatusCode.ERROR
    schema = attempts["schema#1"]
    assert schema.attributes is not None
    assert schema.attributes["harness.attempt.outcome"] == "complete"
    assert schema.status.status_code is StatusCode.UNSET
    # The spans are exported before the table is printed.
    assert capsys.readouterr().out.splitlines()[-1] == "4 complete, 1 review"


def test_an_attempt_that_never_ran_its_agent_has_its_span_alone(
    tmp_path: Path, traced: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task whose verify command is missing fails before its run starts: its attempt span
    says so, with no run under it; a complete board's span is not an error."""
    missing = '[[checks]]\ntype = "command"\ncommand = ["no-such-program-4242"]'
    make_board(
        tmp_path,
        {"a": task_toml("a"), "b": task_toml("b", check=missing)},
        {"a": writes("a.txt"), "b": writes("b.txt")},
    )
    assert main(["board", "run", str(tmp_path), "--otel", "-q"]) == 1
    b = _attempts(traced)["b#1"]
    assert b.attributes is not None
    assert b.attributes["harness.attempt.outcome"] == "failed"
    assert "not installed" in str(b.attributes["harness.attempt.message"])
    assert traced.children(b) == []
    assert len(traced.children(_attempts(traced)["a#1"])) == 1

    (tmp_path / "tasks" / "b.toml").unlink()
    traced = Traced()  # the command shut the last provider down
    monkeypatch.setattr(_telemetry, "tracer_provider_from_env", lambda: traced.provider)
    assert main(["board", "run", str(tmp_path), "--otel", "-q"]) == 0
    board = traced.one("harness.board")
    assert board.status.status_code is StatusCode.UNSET
    assert traced.named("harness.attempt") == []  # a was already complete
