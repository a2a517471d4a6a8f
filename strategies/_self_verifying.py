"""`SelfVerifying`: build until the check passes, then an independent evaluator judges it."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from attrs import field, frozen

from harness import (
    BudgetExceeded,
    Completed,
    ConfigurationError,
    HaltReason,
    Message,
    ModelClient,
    Run,
    Tool,
    VerdictReached,
)
from harness._tools import as_tools
from termination import Budget

from ._reasons import SelfVerifyExhausted

EVALUATOR_PROMPT = (
    "You are an independent evaluator. You did not write this work and you must not change "
    "it. Inspect it with your tools and judge strictly whether it fully does the task. End "
    "your answer with exactly one line `VERDICT: PASS` or `VERDICT: FAIL`; with FAIL, say "
    "precisely what is wrong or missing."
)

_VERDICT = re.compile(r"^[*_`\s]*verdict[*_`\s]*:[*_`\s]*(pass|fail)[*_`.!\s]*$", re.IGNORECASE)


@frozen
class Verdict:
    """The evaluator's judgement: a pass only when it said exactly one clear PASS."""

    passed: bool
    reasons: str


def parse_verdict(text: str | None) -> Verdict:
    """Anything but exactly one ``VERDICT: PASS`` line (and no FAIL) is a FAIL."""
    if not text or not text.strip():
        return Verdict(False, "the evaluator gave no answer")
    lines = text.strip().splitlines()
    verdicts = [m.group(1).upper() for line in lines if (m := _VERDICT.match(line))]
    body = "\n".join(line for line in lines if not _VERDICT.match(line)).strip()
    if verdicts == ["PASS"]:
        return Verdict(True, body)
    if not verdicts:
        why = "the evaluator gave no clear verdict (no `VERDICT: PASS` line)"
        return Verdict(False, f"{why}: {body}" if body else why)
    if len(verdicts) > 1 and "FAIL" not in verdicts:
        return Verdict(False, f"the evaluator gave more than one verdict line: {body}")
    return Verdict(False, body or "the evaluator failed the work without saying why")


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigurationError(f"{name!r} must be a positive int (got {value!r})")


@frozen(kw_only=True)
class SelfVerifying:
    """Build, then verify with an evaluator that did not write the work.

    The builder runs until it claims done and the completion check passes. A fresh
    evaluator session (its own model, prompt and tools; by default only the builder's
    read-only tools) then returns a verdict. Anything but a clear PASS is a FAIL whose reasons
    go into the builder's next turn. After `max_rounds` failed verdicts the run halts with
    `SelfVerifyExhausted`.
    """

    evaluator: ModelClient
    evaluator_prompt: str = EVALUATOR_PROMPT
    evaluator_tools: Sequence[Tool | Callable[..., Any]] | None = None
    evaluator_budget: Budget | None = None
    max_rounds: int = 3
    name: str = "self_verifying"
    _tools: dict[str, Tool] | None = field(init=False, default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _positive_int("max_rounds", self.max_rounds)
        if not callable(getattr(self.evaluator, "complete", None)):
            raise ConfigurationError(f"'evaluator' must be a ModelClient (got {self.evaluator!r})")
        if self.evaluator_tools is not None:
            object.__setattr__(self, "_tools", as_tools(self.evaluator_tools))

    async def run(self, run: Run) -> HaltReason:
        run.use_model(self.evaluator)
        builder = run.new_session(agent="builder")
        last_reason = ""
        for round_ in range(1, self.max_rounds + 1):
            end = await builder.run()
            if not isinstance(end.reason, Completed):
                assert end.reason is not None
                return end.reason
            outcome = await self._evaluate(run, end.snapshot.final_text)
            if isinstance(outcome, HaltReason):
                return outcome
            run.emit(VerdictReached(run.elapsed(), round_, outcome.passed, outcome.reasons))
            if outcome.passed:
                return Completed()
            last_reason = outcome.reasons
            builder.inject(
                "evaluator",
                "An independent evaluator reviewed your work and did not pass it:\n"
                f"{outcome.reasons}\nFix this, then claim done again.",
            )
        return SelfVerifyExhausted(self.max_rounds, last_reason)

    async def _evaluate(self, run: Run, claim: str | None) -> Verdict | HaltReason:
        tools = self._tools
        if tools is None:
            tools = {name: t for name, t in run.tools.items() if t.read_only}
        request = (
            f"The task given to the builder:\n{run.task}\n\n"
            f"The builder says it is done:\n{claim or '(no summary given)'}\n\n"
            "Check the work yourself, then give your verdict."
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
                return Verdict(
                    False, f"the evaluator ran out of its budget ({end.reason.describe()})"
                )
            return end.reason
        return parse_verdict(end.snapshot.final_text)
