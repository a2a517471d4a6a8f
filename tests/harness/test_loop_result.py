"""A run ends in a typed `RunResult`, never an exception of its own; programmer mistakes are
`ConfigurationError`s; cancellation from outside propagates, while a `CancelToken` stops the
run with a typed result; and a wall-time deadline cancels
whatever hangs (model call, tool, check) and halts with BudgetExceeded(max_wall_time)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from _clocks import CLOCK_BACKENDS, clock_backend, clock_for

from harness import (
    BudgetExceeded,
    Cancelled,
    CancelToken,
    Completed,
    ConfigurationError,
    Harness,
    Message,
    ModelFailed,
    RunHalted,
    RunResult,
    ScriptedModelClient,
    SessionStateSnapshot,
    Tool,
    ToolContext,
    Usage,
    tool,
)
from harness.extend import Clock, ModelRequest, ModelResponse, SystemClock
from harness.testing import FakeClock, ListSink
from termination import Budget, TerminationPolicy

anyio_backend = pytest.fixture(params=CLOCK_BACKENDS)(clock_backend)
clock = pytest.fixture(clock_for)


async def hang(clock: Clock) -> None:
    """Wait far longer than any deadline: on a FakeClock by sleeping on it, otherwise forever."""
    if isinstance(clock, FakeClock):
        await clock.sleep(10**9)
    else:
        await anyio.sleep_forever()


async def echo(text: str) -> str:
    """Echo (async: a worker thread would let trio's MockClock jump while it runs)."""
    return text


# --- the typed result -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_result_carries_reason_verification_transcript_usage_and_counts(
    clock: Clock,
) -> None:
    """RunResult holds the halt reason, whether it was verified, every message, the summed usage
    and the turn, tool-call and iteration counts."""
    model = ScriptedModelClient.from_responses(
        [
            {
                "tool_calls": [{"name": "echo", "arguments": {"text": "a"}}],
                "usage": {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.5},
            },
            {"text": "said a", "usage": {"input_tokens": 20, "output_tokens": 3, "cost_usd": 0.25}},
        ]
    )
    harness = Harness(model=model, policy=TerminationPolicy(), tools=[echo], clock=clock)
    result = await harness.run("say a")
    assert result.halt_reason == Completed()
    assert result.verified is True
    assert result.usage == Usage(30, 5, 0, 0.75)
    assert (result.turns, result.tool_calls, result.iterations) == (2, 1, 1)
    assert [m.role for m in result.transcript] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert result.transcript[1] == Message.user("say a")
    assert result.final_text == "said a"
    assert len(result.run_id) == 12
    assert (
        repr(result)
        == "RunResult(halt_reason=Completed(early=False), verified=True, turns=2, iterations=1)"
    )


@pytest.mark.anyio
async def test_a_model_failure_is_a_typed_halt_that_keeps_the_transcript(clock: Clock) -> None:
    """A provider error halts with ModelFailed (kind and message) and the transcript so far."""
    model = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]},
            {"error": {"kind": "auth", "message": "invalid API key"}},
        ]
    )
    harness = Harness(model=model, policy=TerminationPolicy(), tools=[echo], clock=clock)
    result = await harness.run("say a")
    assert result.halt_reason == ModelFailed("auth", "invalid API key")
    assert not result.verified
    assert [m.role for m in result.transcript] == ["system", "user", "assistant", "tool"]


# --- configuration errors ---------------------------------------------------------------------


def f_args(*items: str) -> str:
    """Bad: *args."""
    return ""


def f_type(value: complex) -> str:
    """Bad: a type without a schema."""
    return ""


def done() -> str:
    """A tool that collides with the done tool."""
    return ""


def model() -> ScriptedModelClient:
    return ScriptedModelClient.from_responses([])


CONFIG_ERRORS: list[tuple[str, Callable[[], object], str]] = [
    (
        "duplicate tool names",
        lambda: Harness(model=model(), policy=TerminationPolicy(), tools=[echo, echo]),
        "two tools are named 'echo'",
    ),
    (
        "done tool collision",
        lambda: Harness(model=model(), policy=TerminationPolicy(), tools=[done], done_tool=True),
        "a tool is named 'done' and done_tool=True adds another",
    ),
    (
        "tool_timeout",
        lambda: Harness(model=model(), policy=TerminationPolicy(), tool_timeout=0),
        "'tool_timeout' must be a positive number (got 0)",
    ),
    (
        "not a model",
        lambda: Harness(model="gpt-5", policy=TerminationPolicy()),  # type: ignore[arg-type]
        "'model' must be a ModelClient (got 'gpt-5')",
    ),
    (
        "not a policy",
        lambda: Harness(model=model(), policy=Budget()),  # type: ignore[arg-type]
        "'policy' must be a Policy",
    ),
    (
        "not a strategy",
        lambda: Harness(model=model(), policy=TerminationPolicy(), strategy="ralph"),  # type: ignore[arg-type]
        "'strategy' must be a Strategy (got 'ralph')",
    ),
    (
        "missing workspace",
        lambda: Harness(model=model(), policy=TerminationPolicy(), workspace="/no/such/dir"),
        "'workspace' must be an existing folder (got '/no/such/dir')",
    ),
    ("tool *args", lambda: Tool.from_function(f_args), "may not take *args or **kwargs"),
    ("tool type", lambda: Tool.from_function(f_type), "has a type the schema cannot express"),
    ("tool name", lambda: tool(name="has space")(echo), "tool name must match"),
    (
        "tool timeout",
        lambda: tool(timeout=-1)(echo),
        "tool 'echo': 'timeout' must be a positive number (got -1)",
    ),
    (
        "check timeout",
        lambda: TerminationPolicy(check_timeout=0),
        "'check_timeout' must be a positive number (got 0)",
    ),
    (
        "max rejections",
        lambda: TerminationPolicy(max_rejections=0),
        "'max_rejections' must be a positive int (got 0)",
    ),
    (
        "not a check",
        lambda: TerminationPolicy(completion_check="tests pass"),
        "'completion_check' must have async check(state) and description()",
    ),
    (
        "not a budget",
        lambda: TerminationPolicy(budget={"max_turns": 3}),  # type: ignore[arg-type]
        "'budget' must be a Budget",
    ),
]


@pytest.mark.parametrize(
    ("build", "message"), [c[1:] for c in CONFIG_ERRORS], ids=[c[0] for c in CONFIG_ERRORS]
)
def test_programmer_mistakes_are_configuration_errors(
    build: Callable[[], object], message: str
) -> None:
    """Building something that cannot work raises ConfigurationError (a ValueError) naming it."""
    with pytest.raises(ConfigurationError) as caught:
        build()
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


# --- cancellation and deadlines -----------------------------------------------------------------


class HangingModel:
    """A model whose call never returns; `called` is set once the call has started."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.called = anyio.Event()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.called.set()
        await hang(self.clock)
        return ModelResponse("never")


@pytest.mark.anyio
@pytest.mark.parametrize("wall_time", [None, 600.0])
async def test_cancellation_from_outside_propagates_not_a_result(
    clock: Clock, wall_time: float | None
) -> None:
    """Cancelling the caller's scope while the model call hangs raises the cancellation out of
    `run`, with or without the run's own deadline; no result is returned."""
    model = HangingModel(SystemClock())  # hangs for real, whatever the run's clock
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_wall_time=wall_time)),
        clock=clock,
    )
    outcome: list[str] = []

    async def drive() -> None:
        try:
            await harness.run("hang")
        except anyio.get_cancelled_exc_class():
            outcome.append("cancelled")
            raise
        outcome.append("returned")

    async with anyio.create_task_group() as group:
        group.start_soon(drive)
        await model.called.wait()
        group.cancel_scope.cancel()
    assert outcome == ["cancelled"]


@pytest.mark.anyio
@pytest.mark.parametrize("wall_time", [None, 600.0])
async def test_a_cancel_token_stops_the_run_with_a_typed_result(
    clock: Clock, wall_time: float | None
) -> None:
    """Cancelling the run's `CancelToken` while the model call hangs stops the run as a
    deadline would: `run` returns a result halted `Cancelled(by)`, unverified, with the
    transcript so far, and `run.halted` says so."""
    model = HangingModel(SystemClock())
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_wall_time=wall_time)),
        clock=clock,
        sinks=[sink],
    )
    token = CancelToken()
    results: list[RunResult] = []

    async def drive() -> None:
        results.append(await harness.run("hang", cancel=token))

    async with anyio.create_task_group() as group:
        group.start_soon(drive)
        await model.called.wait()
        token.cancel("SIGTERM")
    [result] = results
    assert result.halt_reason == Cancelled("SIGTERM")
    assert result.halt_reason.describe() == "cancelled by SIGTERM"
    assert not result.verified
    assert result.turns == 1
    assert [m.role for m in result.transcript] == ["system", "user"]
    assert sink.events[-1] == RunHalted(
        result.elapsed, Cancelled("SIGTERM"), False, 1, 0, result.usage
    )
    assert token.cancelled
    assert token.by == "SIGTERM"


@pytest.mark.anyio
async def test_a_token_cancelled_before_the_run_stops_it_before_the_first_call(
    clock: Clock,
) -> None:
    """A run handed a token that was already cancelled makes no model call; the fixture lines
    it never reached are not an error (the run was stopped, it did not end early)."""
    model = ScriptedModelClient.from_responses([{"text": "done"}])
    token = CancelToken()
    token.cancel()
    token.cancel("a second request")  # the first reason is kept
    result = await Harness(model=model, policy=TerminationPolicy(), clock=clock).run(
        "task", cancel=token
    )
    assert result.halt_reason == Cancelled("the caller")
    assert result.turns == 0


@pytest.mark.anyio
async def test_the_wall_time_deadline_cancels_a_hung_model_call(clock: Clock) -> None:
    """A model call that never returns is cancelled at the run's deadline; the run halts with
    BudgetExceeded(max_wall_time) and keeps its transcript."""
    start = clock.now()
    check_calls: list[int] = []
    harness = Harness(
        model=HangingModel(clock),
        policy=TerminationPolicy(
            budget=Budget(max_wall_time=60), completion_check=_Recording(check_calls)
        ),
        clock=clock,
    )
    result = await harness.run("hang")
    assert result.halt_reason == BudgetExceeded("max_wall_time", 60, 60)
    assert not result.verified
    assert result.elapsed == 60
    assert clock.now() - start == 60
    assert [m.role for m in result.transcript] == ["system", "user"]
    assert check_calls == []


@pytest.mark.anyio
async def test_the_wall_time_deadline_cuts_a_scripted_delay(clock: Clock) -> None:
    """A fixture line whose `delay` outlasts the deadline is cut off at the deadline exactly."""
    model = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}], "delay": 10},
            {"text": "too late", "delay": 10**6},
        ]
    )
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_wall_time=60)),
        tools=[echo],
        clock=clock,
    )
    result = await harness.run("hang")
    assert result.halt_reason == BudgetExceeded("max_wall_time", 60, 60)
    assert result.turns == 2


@pytest.mark.anyio
async def test_the_wall_time_deadline_cancels_a_hung_tool(clock: Clock) -> None:
    """A tool hanging past the run's deadline (within its own timeout) is cancelled at the
    deadline and the run halts with BudgetExceeded(max_wall_time)."""

    async def stuck(ctx: ToolContext) -> str:
        """Never finishes."""
        await hang(ctx.clock)
        return "never"

    model = ScriptedModelClient.from_responses([{"tool_calls": [{"name": "stuck"}]}])
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_wall_time=60)),
        tools=[stuck],
        clock=clock,
        tool_timeout=3600,
        sinks=[sink],
    )
    result = await harness.run("hang")
    assert result.halt_reason == BudgetExceeded("max_wall_time", 60, 60)
    assert result.tool_calls == 1
    assert "tool.called" not in sink.names()  # the tool never returned


@pytest.mark.anyio
async def test_the_wall_time_deadline_cancels_a_hung_check(clock: Clock) -> None:
    """A completion check hanging past the run's deadline is cancelled there: the run halts with
    BudgetExceeded(max_wall_time), never Completed."""

    class HungCheck:
        async def check(self, state: SessionStateSnapshot) -> str | None:
            await hang(clock)
            return None

        def description(self) -> str:
            return "Hangs."

    model = ScriptedModelClient.from_responses([{"text": "done"}])
    harness = Harness(
        model=model,
        policy=TerminationPolicy(
            budget=Budget(max_wall_time=60), completion_check=HungCheck(), check_timeout=None
        ),
        clock=clock,
    )
    result = await harness.run("hang")
    assert result.halt_reason == BudgetExceeded("max_wall_time", 60, 60)
    assert not result.verified


@pytest.mark.anyio
async def test_the_wall_time_deadline_cancels_a_hung_early_check(clock: Clock) -> None:
    """Even the check before the first turn is bounded by the run's deadline."""

    class HungCheck:
        async def check(self, state: SessionStateSnapshot) -> str | None:
            await hang(clock)
            return None

        def description(self) -> str:
            return "Hangs."

    harness = Harness(
        model=ScriptedModelClient.from_responses([]),
        policy=TerminationPolicy(
            budget=Budget(max_wall_time=60),
            completion_check=HungCheck(),
            check_timeout=None,
            check_before_first_turn=True,
        ),
        clock=clock,
    )
    result = await harness.run("hang")
    assert result.halt_reason == BudgetExceeded("max_wall_time", 60, 60)


class _Recording:
    def __init__(self, calls: list[int]) -> None:
        self.calls = calls

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.calls.append(state.turns)
        return None

    def description(self) -> str:
        return "Records."


@pytest.mark.anyio
async def test_streaming_a_run_and_leaving_early_cancels_it(clock: Clock, tmp_path: Path) -> None:
    """Leaving `Harness.stream` before the run ends cancels the run instead of leaking it."""
    model = HangingModel(SystemClock())
    harness = Harness(model=model, policy=TerminationPolicy(), clock=clock)
    names = []
    async with harness.stream("hang") as events:
        async for event in events:
            names.append(event.name)
            if event.name == "turn.started":
                break
    assert names == ["run.started", "iteration.started", "turn.started"]
    with pytest.raises(RuntimeError, match="has not finished"):
        events.result  # noqa: B018


def test_a_standalone_snapshot_has_no_run_behind_it(tmp_path: Path) -> None:
    """`SessionStateSnapshot.standalone` zeroes every counter, claims done only with a final
    text, and takes any field by name."""
    snap = SessionStateSnapshot.standalone(tmp_path, task="t", now=5.0)
    assert (snap.turns, snap.run_turns, snap.tool_calls, len(snap.messages)) == (0, 0, 0, 0)
    assert (snap.elapsed, snap.session_elapsed, snap.claims_done) == (0.0, 0.0, False)
    done = SessionStateSnapshot.standalone(final_text="all done", turns=3)
    assert (done.claims_done, done.final_text, done.turns) == (True, "all done", 3)
