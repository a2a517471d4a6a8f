"""`SelfVerifying`: build until the check passes, then an independent evaluator judges it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from attrs import field, frozen

from checks import ModelVerdict, parse_verdict
from harness import (
    BudgetExceeded,
    Completed,
    ConfigurationError,
    HaltReason,
    Message,
    ModelClient,
    SessionStateSnapshot,
    Tool,
)
from harness.events import VerdictReached
from harness.extend import Run, as_tools, check_positive, check_type
from termination import Budget

from ._reasons import SelfVerifyExhausted

EVALUATOR_PROMPT = (
    "You are an independent evaluator. You did not write this work and you must not change "
    "it. Inspect it with your tools and judge strictly whether it fully does the task. End "
    "your answer with exactly one line `VERDICT: PASS` or `VERDICT: FAIL`; with FAIL, say "
    "precisely what is wrong or missing."
)


@frozen(kw_only=True)
class SelfVerifying:
    """Build, then verify with an evaluator that did not write the work.

    The builder runs until it claims done and the completion check passes. A fresh
    evaluator session (its own model, prompt and tools; by default only the builder's
    read-only tools) then returns a verdict. Anything but a clear PASS is a FAIL whose reasons
    go into the builder's next turn. After `max_rounds` failed verdicts the run halts with
    `SelfVerifyExhausted`.

    With `evaluator_must_use_tools`, a PASS counts only when the evaluator used at least one of
    its tools successfully in that round (it opened the work rather than trusting the builder's
    summary); a PASS without one is a FAIL that says so. On by default, as in a spec; an
    evaluator meant to judge from the claim alone needs it off.
    """

    evaluator: ModelClient
    evaluator_prompt: str = EVALUATOR_PROMPT
    evaluator_tools: Sequence[Tool | Callable[..., Any]] | None = None
    evaluator_budget: Budget | None = None
    max_rounds: int = 3
    evaluator_must_use_tools: bool = True
    name: str = "self_verifying"
    _tools: dict[str, Tool] | None = field(init=False, default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        check_positive("max_rounds", self.max_rounds, integer=True)
        check_type("evaluator_prompt", self.evaluator_prompt, str, "a string (the system prompt)")
        check_type("evaluator_budget", self.evaluator_budget, Budget, "a Budget", allow_none=True)
        if not isinstance(self.evaluator_must_use_tools, bool):
            raise ConfigurationError(
                "'evaluator_must_use_tools' must be true or false "
                f"(got {self.evaluator_must_use_tools!r})"
            )
        if not callable(getattr(self.evaluator, "complete", None)):
            raise ConfigurationError(f"'evaluator' must be a ModelClient (got {self.evaluator!r})")
        if self.evaluator_tools is not None:
            object.__setattr__(
                self, "_tools", as_tools(self.evaluator_tools, name="evaluator_tools")
            )

    async def run(self, run: Run) -> HaltReason:
        tools = self._evaluator_tools(run)
        if self.evaluator_must_use_tools and not tools:
            raise ConfigurationError(
                "SelfVerifying: 'evaluator_must_use_tools' is on but the evaluator has no tools "
                "(the run has no read-only tool); give it evaluator_tools or turn the option off"
            )
        run.use_model(self.evaluator)
        builder = run.new_session(agent="builder")
        last_reason = ""
        for round_ in range(1, self.max_rounds + 1):
            end = await builder.run()
            if not isinstance(end.reason, Completed):
                assert end.reason is not None
                return end.reason
            outcome = await self._evaluate(run, end.snapshot.final_text, tools)
            if isinstance(outcome, HaltReason):
                return outcome
            run.emit(VerdictReached(run.elapsed(), round_, outcome.passed, outcome.reasons))
            if outcome.passed:
                return Completed()
            last_reason = outcome.reasons
            builder.report_verdict(outcome.reasons)  # a model ladder counts it as a rejection
            # The evaluator rejected the builder's claim: keep the work it judged.
            await run.checkpoint(f"claim rejected by the evaluator (round {round_})")
            builder.inject("evaluator", _to_builder(outcome))
        return SelfVerifyExhausted(self.max_rounds, last_reason)

    def _evaluator_tools(self, run: Run) -> dict[str, Tool]:
        if self._tools is not None:
            return self._tools
        return {name: t for name, t in run.tools.items() if t.read_only}

    async def _evaluate(
        self, run: Run, claim: str | None, tools: dict[str, Tool]
    ) -> ModelVerdict | HaltReason:
        must_look = (
            " You must open the work with your tools before you judge it: a PASS given "
            "without using any tool does not count."
            if self.evaluator_must_use_tools
            else ""
        )
        request = (
            f"The task given to the builder:\n{run.task}\n\n"
            f"The builder says it is done:\n{claim or '(no summary given)'}\n\n"
            f"Check the work yourself, then give your verdict.{must_look}"
        )
        session = run.new_session(
            agent="evaluator",
            messages=[Message.system(self.evaluator_prompt), Message.user(request)],
            model=self.evaluator,
            tools=tools,
            limit=self.evaluator_budget,
            on_claim="return",
        )
        end = await session.run()
        if end.reason is not None:
            if isinstance(end.reason, BudgetExceeded) and end.reason.scope == "session":
                return ModelVerdict(
                    False, f"the evaluator ran out of its budget ({end.reason.describe()})"
                )
            return end.reason
        verdict = parse_verdict(end.snapshot.final_text)
        if verdict.passed and self.evaluator_must_use_tools and not _looked(end.snapshot, tools):
            return _UNINSPECTED
        return verdict


# A PASS that does not count: the evaluator never opened the work.
_UNINSPECTED = ModelVerdict(
    False,
    "the evaluator answered VERDICT: PASS without opening the work (it used none of its "
    "tools this round), so the pass does not count",
    clear=False,
)


def _to_builder(verdict: ModelVerdict) -> str:
    if verdict is _UNINSPECTED:
        return (
            "The evaluator passed your work without opening it (it used none of its tools), "
            "so the pass does not count and nothing in your work was found wrong. Make sure "
            "the work is complete and saved in the workspace, then claim done again so that "
            "it is evaluated again."
        )
    return (
        "An independent evaluator reviewed your work and did not pass it:\n"
        f"{verdict.reasons}\nFix this, then claim done again."
    )


def _looked(snapshot: SessionStateSnapshot, tools: dict[str, Tool]) -> bool:
    """Whether the evaluator's session used one of its tools and got an answer (not an error)."""
    return any(o.call.name in tools and not o.is_error for o in snapshot.tool_outcomes)
