"""A check that cannot judge the work is not the agent's unfinished work: a command whose
program cannot be found is refused before the first model call; a command that cannot start,
or a check that raises the same error, at `max_check_errors` claims in a row halts the run
`CheckBroken` (on the loop and on Ralph); the traceback is on the claim's `check.failed`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from checks import AllOf, CommandCheck, TestSuiteCheck
from harness import (
    CheckBroken,
    CheckFailed,
    ConfigurationError,
    Harness,
    RejectionLimit,
    ScriptedModelClient,
    SessionStateSnapshot,
)
from harness.testing import FakeClock, ListSink
from strategies import Ralph
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

CLAIMS = [{"text": "done"}] * 6


def _harness(tmp_path: Path, check: object, lines: int = 6, **policy: object) -> Harness:
    return Harness(
        model=ScriptedModelClient.from_responses([{"text": "done"}] * lines),
        policy=TerminationPolicy(completion_check=check, **policy),  # type: ignore[arg-type]
        workspace=tmp_path,
        clock=FakeClock(),
    )


@pytest.mark.parametrize(
    "command",
    [
        ["no-such-program-of-the-harness-tests", "-q"],
        "no-such-program-of-the-harness-tests -q",
        ["/nonexistent/harness/run-tests"],
    ],
)
async def test_a_program_that_cannot_be_found_is_refused_before_the_first_model_call(
    tmp_path: Path, command: list[str] | str
) -> None:
    """A bare name not on PATH, or a path outside the workspace that does not exist: a
    ConfigurationError naming the command, before the (empty) script is asked anything."""
    harness = Harness(
        model=ScriptedModelClient.from_responses([]),
        policy=TerminationPolicy(completion_check=AllOf.of(TestSuiteCheck(command))),
        workspace=tmp_path,
    )
    with pytest.raises(ConfigurationError, match=r"cannot run: .*(not on PATH|does not exist)"):
        await harness.run("work")


async def test_a_script_inside_the_workspace_is_the_agents_to_create(tmp_path: Path) -> None:
    """``./run_tests.sh`` inside the workspace may not exist yet: the run starts, and each
    claim is an ordinary rejection (the agent can write it), not a broken check."""
    harness = _harness(tmp_path, CommandCheck(["./run_tests.sh"]), lines=4, max_rejections=4)
    result = await harness.run("work")
    assert isinstance(result.halt_reason, RejectionLimit)


async def test_python_dash_m_of_a_missing_module_is_refused_before_the_first_model_call(
    tmp_path: Path,
) -> None:
    """``python -m MODULE``: the interpreter is asked whether it finds MODULE, and a missing
    one is a ConfigurationError naming it, before the (empty) script is asked anything."""
    harness = Harness(
        model=ScriptedModelClient.from_responses([]),
        policy=TerminationPolicy(
            completion_check=TestSuiteCheck([sys.executable, "-m", "no_such_runner_of_the_tests"])
        ),
        workspace=tmp_path,
    )
    with pytest.raises(ConfigurationError, match="finds no module 'no_such_runner_of_the_tests'"):
        await harness.run("work")


def _unnamed_python(tmp_path: Path) -> str:
    """This interpreter under a name the preflight does not take for Python's (it asks only
    a ``python*`` whether it finds a module), so the claim meets the missing module."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "interp").symlink_to(sys.executable)
    return str(folder / "interp")


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["PYTHON", "-m", "no_such_runner_of_the_tests"], "is not installed"),
        (["sh", "-c", "exit 127"], "exited with code 127"),
    ],
)
async def test_a_command_that_cannot_start_halts_after_three_claims(
    tmp_path: Path, command: list[str], said: str
) -> None:
    """The runner's own module missing, or exit 127: three claims in a row (the documented
    default), then `CheckBroken`, not the rejection cap after ten."""
    command = [_unnamed_python(tmp_path) if w == "PYTHON" else w for w in command]
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_responses(CLAIMS[:3]),
        policy=TerminationPolicy(completion_check=CommandCheck(command)),
        workspace=tmp_path,
        clock=FakeClock(),
        sinks=[sink],
    )
    result = await harness.run("work")
    halt = result.halt_reason
    assert isinstance(halt, CheckBroken), halt
    assert (halt.claims, halt.cannot_run) == (3, True)
    assert said in halt.message
    assert halt.describe().startswith("the completion check could not run at 3 claims in a row")
    assert len([e for e in sink.events if isinstance(e, CheckFailed)]) == 3


class Raising:
    """A check that raises, with the message given (the same one each time by default)."""

    def __init__(self, *messages: str) -> None:
        self.messages = list(messages)

    async def check(self, state: SessionStateSnapshot) -> str | None:
        message = self.messages.pop(0) if len(self.messages) > 1 else self.messages[0]
        raise KeyError(message)

    def description(self) -> str:
        return "raises"


async def test_the_same_exception_at_three_claims_halts_with_its_traceback_recorded(
    tmp_path: Path,
) -> None:
    """Each claim's check.failed carries the traceback (the reason only its last line); the
    third claim in a row with the same exception halts `CheckBroken`."""
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_responses(CLAIMS[:3]),
        policy=TerminationPolicy(completion_check=Raising("no such key")),
        workspace=tmp_path,
        clock=FakeClock(),
        sinks=[sink],
    )
    result = await harness.run("work")
    assert result.halt_reason == CheckBroken(3, "KeyError: 'no such key'")
    failed = [e for e in sink.events if isinstance(e, CheckFailed)]
    assert len(failed) == 3
    error = failed[0].error
    assert error is not None
    assert error.startswith("Traceback (most recent call last):")
    assert "raise KeyError(message)" in error
    assert CheckFailed.from_dict(failed[0].to_dict()) == failed[0]  # it replays


async def test_different_exceptions_do_not_count_as_the_same(tmp_path: Path) -> None:
    """The counter is for the same error in a row: a different one starts it again."""
    harness = Harness(
        model=ScriptedModelClient.from_responses(CLAIMS[:4]),
        policy=TerminationPolicy(completion_check=Raising("a", "b", "a", "b"), max_rejections=4),
        workspace=tmp_path,
        clock=FakeClock(),
    )
    result = await harness.run("work")
    assert isinstance(result.halt_reason, RejectionLimit)


async def test_max_check_errors_none_leaves_it_to_the_rejection_cap(tmp_path: Path) -> None:
    """`max_check_errors=None` turns the halt off: the rejection cap ends the run."""
    harness = _harness(tmp_path, Raising("x"), lines=4, max_rejections=4, max_check_errors=None)
    assert isinstance((await harness.run("work")).halt_reason, RejectionLimit)


async def test_ralph_stops_spending_iterations_on_a_check_that_cannot_run(
    tmp_path: Path,
) -> None:
    """A Ralph run of ten iterations whose test runner is missing stops after three."""
    harness = Harness(
        model=ScriptedModelClient.from_responses(CLAIMS[:3]),
        policy=TerminationPolicy(
            completion_check=TestSuiteCheck(
                [_unnamed_python(tmp_path), "-m", "no_such_runner_of_the_tests"]
            )
        ),
        strategy=Ralph(max_iterations=10),
        workspace=tmp_path,
        clock=FakeClock(),
    )
    result = await harness.run("work")
    halt = result.halt_reason
    assert isinstance(halt, CheckBroken)
    assert (halt.claims, halt.cannot_run, result.iterations) == (3, True, 3)
