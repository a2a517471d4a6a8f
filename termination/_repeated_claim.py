"""`RepeatedClaimSensor`: the agent claims done again, word for word, after each rejection."""

from __future__ import annotations

from attrs import frozen

from harness import ConfigurationError, SessionStateSnapshot
from harness.extend import SensorReading

from ._check_churn import collapse_space, same_in_a_row
from ._sensors import Action, _threshold, check_action, check_name, graded

_OK = SensorReading.ok()


@frozen
class RepeatedClaimSensor:
    """Trips when the agent's last `limit` rejected claims of done were the same text.

    A claim's text is its final message (or the `done` tool's summary), compared with
    whitespace collapsed. An agent that answers each rejection by repeating its claim is not
    working on the check's reason, whatever that reason says; `CheckChurnSensor` watches the
    other side (the check's reason repeating). The policy reads it right after each rejection
    (`read_verdict`), so it trips on the turn of the `limit`-th identical rejected claim.

    It remembers claims within one session: the plain loop, or SelfVerifying's builder. A
    Ralph iteration ends at its first claim and the next starts afresh, so across Ralph
    iterations use `CheckChurnSensor`.
    """

    limit: int = 3
    warn_at: int | None = None
    name: str = "repeated_claim"
    action: Action = "halt"

    def __attrs_post_init__(self) -> None:
        _threshold("RepeatedClaimSensor", self.limit, self.warn_at)
        check_action("RepeatedClaimSensor", self.action)
        check_name("RepeatedClaimSensor", self.name)

    def bind(self) -> _BoundRepeatedClaim:
        return _BoundRepeatedClaim(self)

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        raise ConfigurationError(
            "RepeatedClaimSensor keeps per-session memory: read the instance bind() returns "
            "(TerminationPolicy does this for you)"
        )


class _BoundRepeatedClaim:
    """Remembers the session's latest rejected claims (at most `limit` of them)."""

    __slots__ = ("_claims", "_config")

    def __init__(self, config: RepeatedClaimSensor) -> None:
        self._config = config
        self._claims: list[str] = []

    @property
    def name(self) -> str:
        return self._config.name

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        return _OK  # a claim is judged once the check has rejected it (read_verdict)

    def read_verdict(self, snapshot: SessionStateSnapshot, reason: str) -> SensorReading:
        config = self._config
        claims = self._claims
        claims.append(collapse_space(snapshot.final_text or ""))
        del claims[: -config.limit]
        run = same_in_a_row(claims, config.limit, str)
        if run < 2:
            return _OK
        claim = claims[-1]
        shown = repr(claim[:200]) if claim else "an empty message"
        return graded(
            run,
            limit=config.limit,
            warn_at=config.warn_at,
            action=config.action,
            halt=lambda: (
                f"the agent made the same claim of done {run} times in a row and the "
                f"completion check rejected it each time: {shown}"
            ),
            warn=lambda: (
                f"You have made the same claim of done, word for word, {run} times in a row, "
                "and the completion check rejected it each time. Saying it again will not "
                "change the verdict: do what the check's reason asks, then say what you changed."
            ),
        )

    def __repr__(self) -> str:
        remembered, limit = len(self._claims), self._config.limit
        return f"RepeatedClaimSensor(bound, remembered={remembered}, limit={limit})"
