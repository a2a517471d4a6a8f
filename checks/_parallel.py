"""`AllOf(parallel=True)`: the checks asked at once, the verdict as if asked in order.

The verdict is the first reason in declared order, as the sequential `AllOf` gives. As soon
as it is known (a check gave a reason and every check declared before it has passed), the
checks still running are cancelled, their processes with them: they cannot change it. The
whole runs under the deadline of the check that contains it (the policy's ``check_timeout``),
which cancels every child at once. Only checks that share no state belong here: two suites
that write the same files, or a check that reads what another writes, must stay in order.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from harness import SessionStateSnapshot
from harness.checkpoints import WorkProgress

from ._progress import Assessment
from ._protocol import CompletionCheck
from ._run_check import CheckVerdict, ask


async def first_reason(
    checks: Sequence[CompletionCheck], state: SessionStateSnapshot
) -> str | None:
    """Every check at once; the first reason in declared order (None: all passed)."""
    answers: list[CheckVerdict | None] = [None] * len(checks)

    async with anyio.create_task_group() as group:

        async def one(index: int) -> None:
            answers[index] = await ask(checks[index], state)
            if _decided(answers):
                group.cancel_scope.cancel()

        for index in range(len(checks)):
            group.start_soon(one, index)
    for answer in answers:
        if answer is None:  # cancelled after the verdict was known, so after its reason
            break
        if answer.reason is not None:
            return answer.reason
    return None


async def every_answer(
    checks: Sequence[CompletionCheck], state: SessionStateSnapshot
) -> Assessment:
    """Every check at once, none cancelled (so the progress is whole): the first reason in
    declared order, and the sum of the progress the checks report."""
    answers: list[CheckVerdict | None] = [None] * len(checks)

    async def one(index: int) -> None:
        answers[index] = await ask(checks[index], state)

    async with anyio.create_task_group() as group:
        for index in range(len(checks)):
            group.start_soon(one, index)
    done = [a for a in answers if a is not None]
    reason = next((a.reason for a in done if a.reason is not None), None)
    return Assessment(reason, WorkProgress.sum_of([a.progress for a in done]))


def _decided(answers: list[CheckVerdict | None]) -> bool:
    """Whether the first reason in order is known: a reason with only passes before it."""
    for answer in answers:
        if answer is None:
            return False
        if answer.reason is not None:
            return True
    return False
