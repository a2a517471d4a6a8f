"""What a run cannot do as configured is said at its start, and each protected change is
listed once: a rollback on regression whose check cannot measure progress, a `prepare` that
returns no baseline (a ``run.warning`` event and a warning log line), and the tampering of
a run whose agent claims several times with the same protected file changed."""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog
from structlog.testing import capture_logs

from checks import AllOf, FeatureListCheck, FilesCheck, TestSuiteCheck
from harness import (
    Harness,
    RunWarning,
    ScriptedModelClient,
    SessionStateSnapshot,
    Tool,
    ToolContext,
)
from harness.extend import Tampering
from harness.testing import FakeClock, ListSink
from strategies import Ralph
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio


class Wrapper:
    """A check of the user's that wraps one that measures, without passing `measure` on."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return await self.inner.check(state)  # type: ignore[attr-defined, no-any-return]

    def description(self) -> str:
        return "wrapped"


class ForgetfulWrapper(Wrapper):
    """Prepares the wrapped suite for the run, and forgets to return its baseline."""

    async def prepare(self, state: SessionStateSnapshot) -> None:
        await self.inner.prepare(state)  # type: ignore[attr-defined]


def _warnings(sink: ListSink) -> list[RunWarning]:
    return [e for e in sink.events if isinstance(e, RunWarning)]


@pytest.mark.parametrize(
    ("check", "how"),
    [
        (Wrapper(FilesCheck(["done.txt"])), "give it measure(state)"),
        (AllOf.of(FilesCheck(["a"]), FilesCheck(["b"])), "AllOf(..., progress=True)"),
    ],
    ids=["wrapper", "all_of"],
)
async def test_a_rollback_whose_check_cannot_measure_says_so_at_the_start(
    tmp_path: Path, check: object, how: str
) -> None:
    sink = ListSink()
    with capture_logs() as logs:
        harness = Harness(
            model=ScriptedModelClient.from_responses([{"text": "done"}] * 2),
            policy=TerminationPolicy(completion_check=check),
            strategy=Ralph(max_iterations=2, rollback="on_regression"),
            workspace=tmp_path,
            clock=FakeClock(),
            sinks=[sink],
            logger=structlog.get_logger(),
        )
        await harness.run("work")
    (warning,) = _warnings(sink)
    assert warning.source == "rollback"
    assert "will never roll back" in warning.message
    assert how in warning.message
    assert sink.events.index(warning) < 3  # at the start, before any turn
    logged = [e for e in logs if e["event"] == "run.warning"]
    assert [e["log_level"] for e in logged] == ["warning"]


async def test_a_rollback_whose_check_measures_says_nothing(tmp_path: Path) -> None:
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_responses([{"text": "done"}]),
        policy=TerminationPolicy(completion_check=FilesCheck(["done.txt"])),
        strategy=Ralph(max_iterations=1, rollback="on_regression"),
        workspace=tmp_path,
        clock=FakeClock(),
        sinks=[sink],
    )
    await harness.run("work")
    assert _warnings(sink) == []


async def test_a_prepare_that_returns_none_is_said_at_the_start(tmp_path: Path) -> None:
    """The wrapped suite took its baseline, but none reaches the transcript or the result:
    a warning names the check; checks that keep their record to themselves say nothing."""
    (tmp_path / "feature_list.json").write_text('[{"name": "a", "passes": false}]')
    sink = ListSink()
    suite = TestSuiteCheck(["true"], baseline=True)
    harness = Harness(
        model=ScriptedModelClient.from_responses([{"text": "done"}]),
        policy=TerminationPolicy(completion_check=ForgetfulWrapper(suite)),
        workspace=tmp_path,
        clock=FakeClock(),
        sinks=[sink],
    )
    result = await harness.run("work")
    (warning,) = _warnings(sink)
    assert warning.source == "policy"
    assert "ForgetfulWrapper prepared for the run and returned None" in warning.message
    assert result.baselines == ()
    quiet = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_responses([{"text": "done"}]),
        policy=TerminationPolicy(
            completion_check=AllOf.of(FeatureListCheck(), TestSuiteCheck(["true"])),
            max_rejections=1,
        ),
        workspace=tmp_path,
        clock=FakeClock(),
        sinks=[quiet],
    )
    await harness.run("work")
    assert _warnings(quiet) == []


def _break_test(ctx: ToolContext) -> str:
    """Weaken the test."""
    assert ctx.workspace is not None
    (ctx.workspace / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    return "done"


async def test_each_protected_change_is_listed_once(tmp_path: Path) -> None:
    """Three claims with the same protected file changed: RunResult.tampering names the
    change once (the claims are counted apart, `tampered_claims`)."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    assert False\n")
    harness = Harness(
        model=ScriptedModelClient.from_responses(
            [{"tool_calls": [{"name": "_break_test", "arguments": {}}]}, *[{"text": "done"}] * 3]
        ),
        tools=[Tool.from_function(_break_test)],
        policy=TerminationPolicy(
            completion_check=FilesCheck(["tests/test_a.py"]),
            protected=["tests/**"],
            max_rejections=3,
        ),
        workspace=tmp_path,
        clock=FakeClock(),
    )
    result = await harness.run("work")
    assert result.tampering == (Tampering("tests/test_a.py", "modified", "tests/**"),)
