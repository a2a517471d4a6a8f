"""`CheckChurnSensor`: the completion check keeps rejecting claims of done for the same reason."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from attrs import frozen

from harness import ConfigurationError, SessionStateSnapshot
from harness.extend import SensorReading

from ._sensors import Action, _threshold, check_action, check_name, graded

_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def collapse_space(text: str) -> str:
    """`text` with every run of whitespace made one space, and trimmed."""
    return _SPACE.sub(" ", text).strip()


def same_in_a_row(items: Sequence[str], limit: int, normalize: Callable[[str], str]) -> int:
    """How many of the latest `items` (at most `limit`) equal the newest, after `normalize`."""
    if not items:
        return 0
    tail = items[-limit:]
    last = normalize(tail[-1])
    run = 0
    for item in reversed(tail):
        if normalize(item) != last:
            break
        run += 1
    return run


@frozen
class CheckChurnSensor:
    """Trips when the completion check's last `limit` rejections gave the same reason.

    Reasons are compared with whitespace collapsed; with `ignore_numbers`, every number
    counts as the same (so "1 failed in 0.42s" and "1 failed in 0.40s" match). The policy
    reads it right after a rejection (`read_verdict`), so it trips on the turn of the
    `limit`-th identical rejection; when the check runs between sessions (Ralph), the next
    session's first turn reads it. Each rejection is judged once.
    """

    limit: int = 3
    warn_at: int | None = None
    name: str = "check_churn"
    action: Action = "halt"
    ignore_numbers: bool = False

    def __attrs_post_init__(self) -> None:
        _threshold("CheckChurnSensor", self.limit, self.warn_at)
        check_action("CheckChurnSensor", self.action)
        check_name("CheckChurnSensor", self.name)
        if not isinstance(self.ignore_numbers, bool):
            raise ConfigurationError(
                f"CheckChurnSensor: 'ignore_numbers' must be true or false "
                f"(got {self.ignore_numbers!r})"
            )

    def bind(self) -> _BoundCheckChurn:
        return _BoundCheckChurn(self)

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        raise ConfigurationError(
            "CheckChurnSensor keeps per-session memory: read the instance bind() returns "
            "(TerminationPolicy does this for you)"
        )

    def normalize(self, reason: str) -> str:
        text = collapse_space(reason)
        return _NUMBER.sub("#", text) if self.ignore_numbers else text

    def same_in_a_row(self, reasons: Sequence[str]) -> int:
        """How many of the latest reasons (at most `limit`) equal the newest one."""
        return same_in_a_row(reasons, self.limit, self.normalize)


class _BoundCheckChurn:
    """Remembers how many rejections it has judged, so none is judged twice."""

    __slots__ = ("_config", "_seen")

    def __init__(self, config: CheckChurnSensor) -> None:
        self._config = config
        self._seen = 0

    @property
    def name(self) -> str:
        return self._config.name

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        reasons = snapshot.check_reasons
        if len(reasons) <= self._seen:
            return SensorReading.ok()
        self._seen = len(reasons)
        return self._judge(reasons)

    def read_verdict(self, snapshot: SessionStateSnapshot, reason: str) -> SensorReading:
        earlier = snapshot.check_reasons
        self._seen = len(earlier) + 1
        # Only the newest `limit` reasons can count, so only they are copied.
        return self._judge([*earlier[-(self._config.limit - 1) :], reason])

    def _judge(self, reasons: Sequence[str]) -> SensorReading:
        """The reading for `reasons`, the newest last."""
        config = self._config
        run = config.same_in_a_row(reasons)
        if run < 2:
            return SensorReading.ok()
        reason = reasons[-1]
        return graded(
            run,
            limit=config.limit,
            warn_at=config.warn_at,
            action=config.action,
            halt=lambda: (
                f"the completion check rejected {run} claims of done in a row for the same "
                f"reason: {reason[:300]}"
            ),
            warn=lambda: (
                f"The completion check has rejected your claim of done {run} times in a row "
                "for the same reason. What you are doing does not address it: read the reason "
                "again and change your approach."
            ),
        )

    def __repr__(self) -> str:
        return f"CheckChurnSensor(bound, judged={self._seen}, limit={self._config.limit})"
