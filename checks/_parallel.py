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

from ._protocol import CompletionCheck
from ._run_check import CheckVerdict, ask


async def answers_at_once(
    checks: Sequence[CompletionCheck], state: SessionStateSnapshot, *, every: bool
) -> list[CheckVerdict | None]:
    """Every check asked at once, the answers in declared order. Unless `every` is asked for,
    the checks still running once the verdict is known (an error or a reason with only passes
    before it) are cancelled, and their answers are None: all of them come after it."""
    answers: list[CheckVerdict | None] = [None] * len(checks)

    async with anyio.create_task_group() as group:

        async def one(index: int) -> None:
            answers[index] = await ask(checks[index], state)
            if not every and _decided(answers):
                group.cancel_scope.cancel()

        for index in range(len(checks)):
            group.start_soon(one, index)
    return answers


def _decided(answers: list[CheckVerdict | None]) -> bool:
    """Whether the first reason in order is known: a reason with only passes before it."""
    for answer in answers:
        if answer is None:
            return False
        if answer.reason is not None or answer.error is not None:
            return True
    return False
