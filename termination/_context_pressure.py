"""`ContextPressureSensor`: the transcript nears the model's context window."""

from __future__ import annotations

from attrs import frozen

from harness import ConfigurationError, SessionStateSnapshot
from harness.extend import SensorReading, check_positive

from ._sensors import Action, check_action, check_name, graded


def _fraction(name: str, value: object, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ConfigurationError(
            f"ContextPressureSensor: {name!r} must be a fraction in (0, 1] (got {value!r})"
        )


@frozen
class ContextPressureSensor:
    """Trips when the transcript fills `limit` (a fraction) of the model's context window.

    The size is the larger of two measures: the input tokens of the session's latest model
    call (what the provider counted for the request just answered) and the transcript's
    characters divided by `chars_per_token` (which also covers the tool results the next
    request will add, and models that report no usage). The window is `context_window`, or
    the run's (`Harness(context_window=...)`); with neither, reading is a configuration error.
    """

    limit: float = 0.9
    warn_at: float | None = 0.75
    name: str = "context_pressure"
    action: Action = "halt"
    context_window: int | None = None
    chars_per_token: float = 4.0

    def __attrs_post_init__(self) -> None:
        _fraction("limit", self.limit)
        _fraction("warn_at", self.warn_at, allow_none=True)
        if self.warn_at is not None and self.warn_at >= self.limit:
            raise ConfigurationError(
                f"ContextPressureSensor: 'warn_at' must be below limit={self.limit} "
                f"(got {self.warn_at!r})"
            )
        check_action("ContextPressureSensor", self.action)
        check_name("ContextPressureSensor", self.name)
        owner = "ContextPressureSensor"
        check_positive(
            "context_window", self.context_window, integer=True, allow_none=True, owner=owner
        )
        check_positive("chars_per_token", self.chars_per_token, owner=owner)

    def bind(self) -> _BoundContextPressure:
        return _BoundContextPressure(self)

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        raise ConfigurationError(
            "ContextPressureSensor keeps per-session memory: read the instance bind() returns "
            "(TerminationPolicy does this for you)"
        )


class _BoundContextPressure:
    """Remembers the session's input tokens so far, so the difference is the latest call's."""

    __slots__ = ("_config", "_seen_input")

    def __init__(self, config: ContextPressureSensor) -> None:
        self._config = config
        self._seen_input = 0

    @property
    def name(self) -> str:
        return self._config.name

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        config = self._config
        window = config.context_window or snapshot.context_window
        if window is None:
            raise ConfigurationError(
                "ContextPressureSensor needs the model's context window: set "
                "Harness(context_window=...) or ContextPressureSensor(context_window=...)"
            )
        total_input = snapshot.usage.input_tokens
        latest_call = max(total_input - self._seen_input, 0)
        self._seen_input = total_input
        chars = sum(len(m.content) for m in snapshot.messages)
        estimate = int(chars / config.chars_per_token)
        size = max(latest_call, estimate)
        share = size / window
        return graded(
            share,
            limit=config.limit,
            warn_at=config.warn_at,
            action=config.action,
            halt=lambda: (
                f"the transcript is about {size:,} tokens, {share:.0%} of the model's "
                f"{window:,}-token context window"
            ),
            warn=lambda: (
                f"Your conversation is about {size:,} tokens, {share:.0%} of your "
                f"{window:,}-token context window. Be brief: read only the parts of files you "
                "need and avoid large outputs."
            ),
        )

    def __repr__(self) -> str:
        return f"ContextPressureSensor(bound, window={self._config.context_window})"
