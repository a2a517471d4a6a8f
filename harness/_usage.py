"""`Usage`: the tokens and cost of one model call, or of a run so far.

Apart from the messages (`_messages`) because a budget and a session snapshot count usage and
read no message: a stop hook, which checks a workspace with a snapshot of no run, needs this
one value of them.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen


@frozen
class Usage:
    """Tokens and cost of one model call, or a running total.

    `cost_usd` is None when the price is unknown; an unknown price is never counted as zero,
    and it makes every total it is added to unknown as well.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        # The empty total adds as nothing, so a total's cost is known only once a call is in.
        if self is NO_USAGE:
            return other
        if other is NO_USAGE:
            return self
        cost = self.cost_usd
        if cost is not None:
            added = other.cost_usd
            cost = None if added is None else cost + added
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            cost,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "cost_usd": self.cost_usd,
        }


NO_USAGE = Usage(cost_usd=None)
"""No call yet: where a run's and a session's totals start. Its cost is unknown (None), not
$0, so a run in which no call succeeded reports no cost rather than a free one; adding a
call's usage to it gives that usage itself (so totals can be compared by identity; see
`Session._account`)."""

ZERO_USAGE = Usage()
"""A call that used nothing and cost nothing: the usage of a `ModelResponse` built without one."""
