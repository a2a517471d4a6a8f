"""`Budget`: hard limits on a run (or a session), checked before every call with ``>=``."""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from harness import BudgetExceeded, ConfigurationError, SessionStateSnapshot
from harness.extend import Scope, positive

_COUNT = positive(integer=True, allow_none=True)
_AMOUNT = positive(allow_none=True)


@frozen(kw_only=True)
class Budget:
    """Limits on turns, tool calls, tokens, cost (of the run, and of each of its iterations)
    and wall time; None means unlimited.

    A dimension is used up when ``used >= limit``. The loop asks before every model call (and
    before every tool call, for the tool-call count) and accounts usage after the call, so a
    call that starts within budget may end past it; the next one is refused. Wall time is
    also a deadline scope that cancels whatever is running when it passes.

    Args:
        max_turns: Model calls, over every session of the run.
        max_tool_calls: Tool calls.
        max_input_tokens: Input tokens the model read.
        max_output_tokens: Output tokens the model wrote.
        max_total_tokens: Input and output tokens together.
        max_cost_usd: US dollars, as the model client prices its usage (it needs known
            prices: a model whose prices are unknown is refused when the `Harness` is built).
        max_wall_time: Seconds from the run's start, on the run's clock.
        max_iteration_cost_usd: US dollars one iteration may spend (see the field below).
    """

    max_turns: int | None = field(default=None, validator=_COUNT)
    max_tool_calls: int | None = field(default=None, validator=_COUNT)
    max_input_tokens: int | None = field(default=None, validator=_COUNT)
    max_output_tokens: int | None = field(default=None, validator=_COUNT)
    max_total_tokens: int | None = field(default=None, validator=_COUNT)
    max_cost_usd: float | None = field(default=None, validator=_AMOUNT)
    max_wall_time: float | None = field(default=None, validator=_AMOUNT)
    max_iteration_cost_usd: float | None = field(default=None, validator=_AMOUNT)
    """US dollars one iteration may spend: one session of the agent (a Ralph iteration, a
    SelfVerifying builder round; under the loop strategy, the run's one session). Used up, it
    ends that session with `BudgetExceeded` of scope ``"session"``: Ralph goes on with a fresh
    iteration within the run's budget, the loop strategy halts. Each attempt of a board task
    (or of best-of-N) is a run: `max_cost_usd` bounds it as a whole."""

    @property
    def wall_time(self) -> float | None:
        return self.max_wall_time

    @property
    def bounded(self) -> bool:
        """True when at least one dimension has a limit."""
        return any(
            limit is not None
            for limit in (
                self.max_turns,
                self.max_tool_calls,
                self.max_input_tokens,
                self.max_output_tokens,
                self.max_total_tokens,
                self.max_cost_usd,
                self.max_wall_time,
                self.max_iteration_cost_usd,
            )
        )

    def exceeded(
        self,
        snapshot: SessionStateSnapshot,
        *,
        scope: Scope = "run",
        tools_only: bool = False,
        pending: int = 0,
    ) -> BudgetExceeded | None:
        """The first used-up dimension as a `BudgetExceeded`, or None.

        With `tools_only`, only the tool-call count (what gates a tool call); `pending` counts
        tool calls admitted since `snapshot` was taken (earlier calls of the same batch).
        """
        # Asked twice a turn: each dimension is read only when it has a limit.
        run = scope == "run"
        if self.max_wall_time is not None and not tools_only:
            started = snapshot.started_at if run else snapshot.session_started_at
            elapsed = snapshot.now - started
            if elapsed >= self.max_wall_time:
                return BudgetExceeded("max_wall_time", elapsed, self.max_wall_time, scope)
        if self.max_tool_calls is not None:
            calls = (snapshot.run_tool_calls if run else snapshot.tool_calls) + pending
            if calls >= self.max_tool_calls:
                return BudgetExceeded("max_tool_calls", calls, self.max_tool_calls, scope)
        if tools_only:
            return None
        if run:
            turns, usage = snapshot.run_turns, snapshot.run_usage
        else:
            turns, usage = snapshot.turns, snapshot.usage
        if self.max_turns is not None and turns >= self.max_turns:
            return BudgetExceeded("max_turns", turns, self.max_turns, scope)
        if self.max_input_tokens is not None and usage.input_tokens >= self.max_input_tokens:
            return BudgetExceeded(
                "max_input_tokens", usage.input_tokens, self.max_input_tokens, scope
            )
        if self.max_output_tokens is not None and usage.output_tokens >= self.max_output_tokens:
            return BudgetExceeded(
                "max_output_tokens", usage.output_tokens, self.max_output_tokens, scope
            )
        if self.max_total_tokens is not None:
            total = usage.input_tokens + usage.output_tokens  # Usage.total_tokens, inline
            if total >= self.max_total_tokens:
                return BudgetExceeded("max_total_tokens", total, self.max_total_tokens, scope)
        if (
            self.max_cost_usd is not None
            and usage.cost_usd is not None
            and usage.cost_usd >= self.max_cost_usd
        ):
            return BudgetExceeded("max_cost_usd", usage.cost_usd, self.max_cost_usd, scope)
        if self.max_iteration_cost_usd is not None:
            spent = snapshot.usage.cost_usd  # the session's, whatever the scope asked
            if spent is not None and spent >= self.max_iteration_cost_usd:
                return BudgetExceeded(
                    "max_iteration_cost_usd", spent, self.max_iteration_cost_usd, "session"
                )
        return None

    @classmethod
    def from_config(cls, table: dict[str, Any], *, where: str = "budget") -> Budget:
        """Build from a config table; unknown keys are an error naming the key."""
        from ._keys import BUDGET  # the spec's schemas are for specs, not every run

        BUDGET.validate(table, where)
        try:
            return cls(**table)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None
