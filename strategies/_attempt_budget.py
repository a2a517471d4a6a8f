"""Each best-of attempt's share of the run's budget, with the run's budget bounding them all.

An attempt gets `per` (by default the run's budget divided by the number of attempts, so all
of them fit), capped when it starts by what the run has left: the run's limit, less what the
finished attempts used and what the running ones may still use. An attempt that would start
with nothing left does not start. Wall time is not divided: the run's deadline bounds every
attempt (they may run side by side), and `per` may give each its own.
"""

from __future__ import annotations

from attrs import define, evolve, field

from harness import BudgetExceeded, RunResult
from termination import Budget

# The dimensions that add up over attempts, and what a finished attempt used of each.
ADDITIVE = (
    "max_turns",
    "max_tool_calls",
    "max_input_tokens",
    "max_output_tokens",
    "max_total_tokens",
    "max_cost_usd",
)


def _used(result: RunResult) -> dict[str, float]:
    usage = result.usage
    return {
        "max_turns": result.turns,
        "max_tool_calls": result.tool_calls,
        "max_input_tokens": usage.input_tokens,
        "max_output_tokens": usage.output_tokens,
        "max_total_tokens": usage.total_tokens,
        "max_cost_usd": usage.cost_usd or 0.0,
    }


def share_of(whole: Budget, n: int) -> Budget:
    """`whole` divided between `n` attempts (a count is rounded down, to 1 at least); no
    wall time of its own."""
    parts: dict[str, float | None] = {"max_wall_time": None}
    for name in ADDITIVE:
        limit = getattr(whole, name)
        if limit is None:
            parts[name] = None
        elif name == "max_cost_usd":
            parts[name] = limit / n
        else:
            parts[name] = max(1, int(limit) // n)
    return evolve(whole, **parts)  # type: ignore[arg-type]  # each is of its field's kind


@define
class BudgetPool:
    """What the attempts of one run may still use of `whole`."""

    whole: Budget
    per: Budget
    spent: dict[str, float] = field(factory=lambda: dict.fromkeys(ADDITIVE, 0.0))
    held: dict[int, Budget] = field(factory=dict)

    def reserve(self, attempt: int) -> Budget | BudgetExceeded:
        """The budget `attempt` starts with, or the run's limit it would start past."""
        parts: dict[str, float | None] = {}
        for name in ADDITIVE:
            limit, own = getattr(self.whole, name), getattr(self.per, name)
            if limit is None:
                parts[name] = own
                continue
            used = self.spent[name] + sum(
                getattr(b, name) or 0 for b in self.held.values() if b is not None
            )
            left = limit - used
            if left <= 0 or (name != "max_cost_usd" and left < 1):
                return BudgetExceeded(name, used, limit, "run")
            value = left if own is None else min(own, left)
            parts[name] = value if name == "max_cost_usd" else int(value)
        budget = evolve(self.per, **parts)  # type: ignore[arg-type]  # as in share_of
        self.held[attempt] = budget
        return budget

    def settle(self, attempt: int, result: RunResult | None) -> None:
        """`attempt` is over: what it used counts, its reservation is released."""
        self.held.pop(attempt, None)
        if result is not None:
            for name, used in _used(result).items():
                self.spent[name] += used
