"""SelfVerifying: the builder works until the check passes, then an evaluator with its own model
and read-only tools judges; only a clear `VERDICT: PASS` completes, anything else goes back to the
builder, and the rounds are capped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import (
    BudgetExceeded,
    Completed,
    ConfigurationError,
    FixtureUnconsumed,
    Harness,
    IterationStarted,
    ScriptedModelClient,
    SessionStateSnapshot,
    VerdictReached,
    tool,
    workspace_tools,
)
from harness.testing import FakeClock, ListSink
from strategies import SelfVerifyExhausted, SelfVerifying
from termination import Budget, TerminationPolicy

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "loop"


class HelloExists:
    """Complete when hello.py exists in the workspace."""

    def __init__(self) -> None:
        self.calls = 0

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.calls += 1
        assert state.workspace is not None
        return None if (state.workspace / "hello.py").exists() else "hello.py does not exist"

    def description(self) -> str:
        return "hello.py exists."


def build(
    builder: ScriptedModelClient,
    evaluator: ScriptedModelClient,
    workspace: Path,
    *,
    sink: ListSink | None = None,
    check: Any = None,
    budget: Budget | None = None,
    **strategy: Any,
) -> Harness:
    return Harness(
        model=builder,
        policy=TerminationPolicy(
            budget=budget or Budget(), completion_check=check or HelloExists()
        ),
        strategy=SelfVerifying(evaluator=evaluator, **strategy),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink] if sink is not None else [],
    )


def writes_then_claims() -> ScriptedModelClient:
    """A builder that writes a wrong hello.py (the check only wants it to exist), then claims."""
    write = {"name": "write_file", "arguments": {"path": "hello.py", "content": "x"}}
    return ScriptedModelClient.from_responses([{"tool_calls": [write]}, {"text": "done"}])


@pytest.mark.anyio
async def test_a_failed_verdict_goes_back_to_the_builder_until_a_clear_pass(
    tmp_path: Path,
) -> None:
    """Round 1's FAIL reasons reach the builder's next turn as evaluator feedback; round 2's
    PASS completes the run. The evaluator is never offered write_file."""
    builder = ScriptedModelClient.from_jsonl(FIXTURES / "self_verifying_builder.jsonl")
    evaluator = ScriptedModelClient.from_jsonl(FIXTURES / "self_verifying_evaluator.jsonl")
    sink = ListSink()
    check = HelloExists()
    result = await build(builder, evaluator, tmp_path, sink=sink, check=check).run(
        "Write hello.py that prints 'hello'."
    )
    assert result.halt_reason == Completed()
    assert result.verified
    assert (tmp_path / "hello.py").read_text() == "print('hello')\n"
    verdicts = [
        (e.round, e.passed, e.reasons) for e in sink.events if isinstance(e, VerdictReached)
    ]
    assert verdicts == [
        (1, False, "hello.py prints 'hi' but the task asks for 'hello'."),
        (2, True, "It prints exactly 'hello'."),
    ]
    started = [(e.agent, e.iteration) for e in sink.events if isinstance(e, IterationStarted)]
    assert started == [("builder", 1), ("evaluator", 2), ("evaluator", 3)]
    assert result.iterations == 3
    assert [s.agent for s in result.sessions] == ["builder", "evaluator", "evaluator"]
    assert check.calls == 2
    assert result.turns == 8


@pytest.mark.anyio
async def test_max_rounds_halts_with_self_verify_exhausted(tmp_path: Path) -> None:
    """When the evaluator fails every round, the run halts with SelfVerifyExhausted naming the
    rounds and the last reasons, unverified."""
    builder = ScriptedModelClient.from_responses(
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "hello.py", "content": "x"}}
                ]
            },
            {"text": "done"},
            {"text": "still done", "expect": {"last_feedback_source": "evaluator"}},
        ]
    )
    evaluator = ScriptedModelClient.from_responses(
        [
            {"text": "Wrong output.\nVERDICT: FAIL"},
            {"text": "Still wrong: it prints x.\nVERDICT: FAIL"},
        ]
    )
    result = await build(builder, evaluator, tmp_path, max_rounds=2).run("hello")
    assert result.halt_reason == SelfVerifyExhausted(2, "Still wrong: it prints x.")
    assert not result.verified
    assert result.halt_reason.describe() == (
        "the evaluator failed the work in all 2 rounds: Still wrong: it prints x."
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    "answer",
    [
        "Looks good to me.",
        "VERDICT: PASS\nVERDICT: FAIL",
        "VERDICT: PASS\nVERDICT: FAIL - it prints 'hi'",
        "VERDICT: PASS\nVERDICT: PASS",
        "The verdict: pass, I think",
        "",
    ],
)
async def test_anything_but_a_clear_pass_is_a_fail(tmp_path: Path, answer: str) -> None:
    """An answer without exactly one clear PASS line is a FAIL."""
    (tmp_path / "hello.py").write_text("print('hello')\n")
    builder = ScriptedModelClient.from_responses([{"text": "done"}])
    evaluator = ScriptedModelClient.from_responses([{"text": answer}])
    sink = ListSink()
    result = await build(builder, evaluator, tmp_path, sink=sink, max_rounds=1).run("hello")
    assert isinstance(result.halt_reason, SelfVerifyExhausted)
    assert [e.passed for e in sink.events if isinstance(e, VerdictReached)] == [False]


@pytest.mark.anyio
async def test_explicit_evaluator_tools_replace_the_read_only_default(tmp_path: Path) -> None:
    """`evaluator_tools` is exactly what the evaluator is offered."""

    @tool(read_only=True)
    def run_tests() -> str:
        """Run the tests."""
        return "1 passed"

    (tmp_path / "hello.py").write_text("print('hello')\n")
    builder = ScriptedModelClient.from_responses([{"text": "done"}])
    evaluator = ScriptedModelClient.from_responses(
        [{"text": "VERDICT: PASS", "expect": {"tools": ["run_tests"]}}]
    )
    result = await build(
        builder, evaluator, tmp_path, evaluator_tools=[run_tests], evaluator_must_use_tools=False
    ).run("hello")
    assert result.verified


@pytest.mark.anyio
async def test_an_evaluator_out_of_budget_is_a_fail_not_a_pass(tmp_path: Path) -> None:
    """An evaluator that runs out of its own budget before a verdict counts as FAIL."""
    (tmp_path / "hello.py").write_text("print('hello')\n")
    builder = ScriptedModelClient.from_responses([{"text": "done"}])
    evaluator = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]}]
    )
    result = await build(
        builder, evaluator, tmp_path, evaluator_budget=Budget(max_turns=1), max_rounds=1
    ).run("hello")
    assert result.halt_reason == SelfVerifyExhausted(
        1,
        "the evaluator ran out of its budget (budget exceeded (session): max_turns used 1 of 1)",
    )


@pytest.mark.anyio
async def test_the_run_budget_bounds_builder_and_evaluator_together(tmp_path: Path) -> None:
    """The run's own budget counts the evaluator's turns too and halts the run unverified."""
    builder = writes_then_claims()
    evaluator = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]}]
    )
    result = await build(builder, evaluator, tmp_path, budget=Budget(max_turns=3)).run("hello")
    assert result.halt_reason == BudgetExceeded("max_turns", 3, 3)
    assert not result.verified


@pytest.mark.anyio
async def test_an_unused_evaluator_line_fails_the_replay(tmp_path: Path) -> None:
    """The evaluator's script fails closed like the builder's: a line left over is an error."""
    (tmp_path / "hello.py").write_text("print('hello')\n")
    builder = ScriptedModelClient.from_responses([{"text": "done"}])
    evaluator = ScriptedModelClient.from_responses(
        [{"text": "VERDICT: PASS"}, {"text": "never asked"}], name="evaluator.jsonl"
    )
    with pytest.raises(FixtureUnconsumed, match=r"evaluator\.jsonl:2"):
        await build(builder, evaluator, tmp_path, evaluator_must_use_tools=False).run("hello")


UNREAD = (
    "the evaluator answered VERDICT: PASS without opening the work (it used none of its "
    "tools this round), so the pass does not count"
)


@pytest.mark.anyio
async def test_a_pass_without_opening_the_work_does_not_count(tmp_path: Path) -> None:
    """With evaluator_must_use_tools, round 1's PASS given without a tool call is a FAIL that
    tells the builder why; round 2's evaluator looks and finds the fault; round 3's look passes."""
    builder = ScriptedModelClient.from_jsonl(FIXTURES / "self_verifying_unread_builder.jsonl")
    evaluator = ScriptedModelClient.from_jsonl(FIXTURES / "self_verifying_unread_evaluator.jsonl")
    sink = ListSink()
    result = await build(
        builder, evaluator, tmp_path, sink=sink, evaluator_must_use_tools=True
    ).run("Write hello.py that prints 'hello'.")
    assert result.verified
    assert (tmp_path / "hello.py").read_text() == "print('hello')\n"
    verdicts = [
        (e.round, e.passed, e.reasons) for e in sink.events if isinstance(e, VerdictReached)
    ]
    assert verdicts == [
        (1, False, UNREAD),
        (2, False, "hello.py prints 'hi', not 'hello'."),
        (3, True, "It prints 'hello'."),
    ]


@pytest.mark.anyio
async def test_without_the_option_an_unread_pass_completes_the_run(tmp_path: Path) -> None:
    """Turned off, the evaluator's word is taken, even on wrong work it never read."""
    builder = writes_then_claims()
    evaluator = ScriptedModelClient.from_responses(
        [{"text": "VERDICT: PASS", "expect": {"not_contains": "does not count"}}]
    )
    result = await build(builder, evaluator, tmp_path, evaluator_must_use_tools=False).run("hello")
    assert result.verified


@pytest.mark.anyio
async def test_python_and_a_spec_have_the_same_default_the_evaluator_must_look(
    tmp_path: Path,
) -> None:
    """`SelfVerifying` built in Python requires the evaluator to use a tool, as a spec does: a
    PASS given without looking does not count."""
    import attrs

    from strategies._strategy_config import STRATEGIES

    name = "evaluator_must_use_tools"
    (key,) = [k for k in STRATEGIES.schemas["self_verifying"].keys if k.name == name]
    assert key.default is getattr(attrs.fields(SelfVerifying), name).default is True
    builder = writes_then_claims()
    evaluator = ScriptedModelClient.from_responses([{"text": "VERDICT: PASS"}])
    result = await build(builder, evaluator, tmp_path, max_rounds=1).run("hello")
    assert result.halt_reason == SelfVerifyExhausted(1, UNREAD)


@pytest.mark.anyio
async def test_only_a_tool_call_that_answered_counts_as_looking(tmp_path: Path) -> None:
    """A failed tool call (a file that is not there) is not a look at the work, and the last
    round's reason says the pass did not count."""
    (tmp_path / "hello.py").write_text("print('hello')\n")
    builder = ScriptedModelClient.from_responses([{"text": "done"}])
    evaluator = ScriptedModelClient.from_responses(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.py"}}]},
            {"text": "VERDICT: PASS"},
        ]
    )
    result = await build(
        builder, evaluator, tmp_path, max_rounds=1, evaluator_must_use_tools=True
    ).run("hello")
    assert result.halt_reason == SelfVerifyExhausted(1, UNREAD)


@pytest.mark.anyio
async def test_requiring_a_look_with_no_tools_to_look_with_is_refused(tmp_path: Path) -> None:
    """An evaluator that must use a tool but has none could never pass: a ConfigurationError
    before the builder starts, so no work is spent."""
    builder = ScriptedModelClient.from_responses([])
    evaluator = ScriptedModelClient.from_responses([])
    strategy = SelfVerifying(evaluator=evaluator, evaluator_tools=[], evaluator_must_use_tools=True)
    harness = Harness(
        model=builder,
        policy=TerminationPolicy(completion_check=HelloExists()),
        strategy=strategy,
        tools=workspace_tools(),
        workspace=tmp_path,
        clock=FakeClock(),
    )
    with pytest.raises(ConfigurationError, match="'evaluator_must_use_tools' is on but the"):
        await harness.run("hello")
    assert builder.requests == []


def test_bad_self_verifying_settings_are_configuration_errors() -> None:
    """max_rounds must be a positive int and the evaluator a model client."""
    evaluator = ScriptedModelClient.from_responses([])
    with pytest.raises(ConfigurationError, match=r"'max_rounds' must be a positive int \(got 0\)"):
        SelfVerifying(evaluator=evaluator, max_rounds=0)
    with pytest.raises(ConfigurationError, match="'evaluator' must be a ModelClient"):
        SelfVerifying(evaluator="gpt")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="'evaluator_must_use_tools' must be true or"):
        SelfVerifying(evaluator=evaluator, evaluator_must_use_tools="yes")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_builder_that_never_passes_the_check_never_meets_the_evaluator(
    tmp_path: Path,
) -> None:
    """The evaluator only judges work the check has passed: a builder stopped by its budget
    halts the run with that budget, and the evaluator is never asked."""
    builder = ScriptedModelClient.from_responses([{"text": "done"}, {"text": "done"}])
    evaluator = ScriptedModelClient.from_responses([])
    result = await build(builder, evaluator, tmp_path, budget=Budget(max_turns=2)).run("hello")
    assert result.halt_reason == BudgetExceeded("max_turns", 2, 2)
    assert evaluator.requests == []
    assert [s.agent for s in result.sessions] == ["builder"]


@pytest.mark.anyio
async def test_evaluator_lines_a_run_never_reached_fail_the_replay(tmp_path: Path) -> None:
    """An evaluator script the run never got to is a divergence too, reported on its first line."""
    builder = ScriptedModelClient.from_responses([{"text": "done"}])
    evaluator = ScriptedModelClient.from_responses([{"text": "VERDICT: PASS"}], name="eval")
    harness = build(builder, evaluator, tmp_path, budget=Budget(max_turns=1))
    with pytest.raises(FixtureUnconsumed, match="eval:1: the run ended with 1 script line"):
        await harness.run("hello")
