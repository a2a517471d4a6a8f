"""`ModelLadder`: start with a cheap model and move to a stronger one when the run plateaus.

A ladder is a `ModelClient` over a list of clients, cheapest first. Every call goes to the
current rung. After each turn the policy judged (and each verdict a strategy asked for) the
loop hands it a `JudgedTurn` (see `harness._escalation`), and the ladder climbs one rung when
the run has plateaued on the current one:

- ``repeated_rejection``: the completion check rejected a claim with the same reason
  `escalate_after` times on this rung (the same but for spacing, durations and addresses:
  `same_reason`);
- ``no_progress``: the check measured progress (tests passing, features done) and a verdict
  found it no better than the verdict before it on this rung (`on_no_progress`);
- ``sensor_warning``: a sensor warned (`on_sensor_warning`).

It never climbs down, and on the last rung it stays. The climb is deterministic in what the
run saw, so a replay of the same scripts climbs at the same turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._clock import Clock
from .._errors import ConfigurationError
from .._escalation import Escalation, JudgedTurn
from .._messages import ModelRequest, ModelResponse
from .._model import ChecksConsumed, ForksAttempts, KnowsPrices, ModelClient, ReadsClock
from .._protocols import implements
from .._validate import got
from .._work_progress import WorkProgress


class ModelLadder:
    """A model client that climbs from cheap to strong models when the run plateaus.

    ``ModelLadder([cheap, strong], escalate_after=2)``: calls go to `cheap` until the check
    rejects two claims for the same reason (or the progress it measures stalls, or a sensor
    warns), then to `strong` for the rest of the run. `names` labels the rungs in events
    (default: each client's model name).
    """

    def __init__(
        self,
        models: Sequence[ModelClient],
        *,
        escalate_after: int = 2,
        on_no_progress: bool = True,
        on_sensor_warning: bool = True,
        names: Sequence[str] | None = None,
    ) -> None:
        given: object = models  # a caller without type checks may pass anything
        if isinstance(given, str) or not isinstance(given, Sequence):
            raise ConfigurationError(
                f"'models' must be a list of model clients, cheapest first (got {got(models)})"
            )
        if len(models) < 2:
            raise ConfigurationError(
                f"'models' must hold at least two model clients, cheapest first (got {len(models)})"
            )
        for index, model in enumerate(models):
            if not callable(getattr(model, "complete", None)):
                raise ConfigurationError(
                    f"models[{index}] must be a model client, with a complete() method "
                    f"(got {got(model)})"
                )
        if isinstance(escalate_after, bool) or not isinstance(escalate_after, int):
            raise ConfigurationError(
                f"'escalate_after' must be a positive int (got {escalate_after!r})"
            )
        if escalate_after < 1:
            raise ConfigurationError(
                f"'escalate_after' must be a positive int (got {escalate_after})"
            )
        if names is not None and len(names) != len(models):
            raise ConfigurationError(
                f"'names' must name each of the {len(models)} models (got {len(names)})"
            )
        self.models: tuple[ModelClient, ...] = tuple(models)
        self.names: tuple[str, ...] = tuple(names) if names is not None else _names(self.models)
        self.escalate_after = escalate_after
        self.on_no_progress = on_no_progress
        self.on_sensor_warning = on_sensor_warning
        self.rung = 0
        self._reasons: dict[str, int] = {}
        self._progress: WorkProgress | None = None

    @property
    def current(self) -> ModelClient:
        """The model the next call goes to."""
        return self.models[self.rung]

    @property
    def model(self) -> str:
        """The current rung's name."""
        return self.names[self.rung]

    def for_run(self) -> ModelLadder:
        """A ladder over the same clients, at its first rung: one run's climb."""
        return self.with_models(self.models)

    def for_attempt(self, attempt: int) -> ModelLadder:
        """A ladder for best-of attempt `attempt` (`harness.extend.ForksAttempts`): each rung
        forked for it where the rung can be (a scripted fixture's lines for that attempt, a
        seed), at the first rung: every attempt starts cheap and climbs on its own."""
        return self.with_models(
            [m.for_attempt(attempt) if implements(m, ForksAttempts) else m for m in self.models]
        )

    def with_models(self, models: Sequence[ModelClient]) -> ModelLadder:
        """A ladder with the same settings and names over `models` (each rung wrapped in a
        recorder, say), at its first rung."""
        return ModelLadder(
            models,
            escalate_after=self.escalate_after,
            on_no_progress=self.on_no_progress,
            on_sensor_warning=self.on_sensor_warning,
            names=self.names,
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.models[self.rung].complete(request)

    def observe(self, judged: JudgedTurn) -> Escalation | None:
        """Take in a judged turn (see the module docstring); the climb it caused, or None."""
        if self.rung == len(self.models) - 1:
            return None
        if self.on_sensor_warning and judged.warnings:
            return self._climb("sensor_warning", judged.warnings[0])
        if not judged.checked:
            return None
        progress, before = judged.progress, self._progress
        if progress is not None:
            self._progress = progress
        reason = judged.rejection
        if reason is None:
            return None
        key = same_reason(reason)
        seen = self._reasons[key] = self._reasons.get(key, 0) + 1
        if seen >= self.escalate_after:
            times = "once" if seen == 1 else f"{seen} times"
            return self._climb("repeated_rejection", f"rejected {times} with: {reason}")
        if (
            self.on_no_progress
            and progress is not None
            and before is not None
            and not before.ranks_below(progress)
        ):
            return self._climb(
                "no_progress", f"progress {progress.describe()}, was {before.describe()}"
            )
        return None

    def _climb(self, trigger: str, detail: str) -> Escalation:
        was = self.rung
        self.rung += 1
        self._reasons = {}
        self._progress = None
        return Escalation(was, self.rung, self.names[was], self.names[self.rung], trigger, detail)

    # The capabilities of the clients below, passed through.

    def bind_clock(self, clock: Clock) -> None:
        for model in self.models:
            if implements(model, ReadsClock):
                model.bind_clock(clock)

    @property
    def prices_known(self) -> bool:
        """Every rung's prices are known (a cost budget must be able to price any of them)."""
        return all(not implements(m, KnowsPrices) or m.prices_known for m in self.models)

    def verify_consumed(self) -> None:
        """Each scripted rung was used as it expected: one the run never climbed to must have
        no lines either."""
        for model in self.models:
            if implements(model, ChecksConsumed):
                model.verify_consumed()

    def __repr__(self) -> str:
        return f"ModelLadder({list(self.names)!r}, rung={self.rung})"


_TIME = re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds)\b")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")


def same_reason(reason: str) -> str:
    """What two rejections must share to count as the same reason: the text with its spacing
    collapsed and what changes from one run of a test suite to the next (a duration such as
    ``in 0.53s``, an object's address) blanked."""
    text = _ADDRESS.sub("0x?", _TIME.sub("?s", reason))
    return " ".join(text.split())


def _names(models: Sequence[ModelClient]) -> tuple[str, ...]:
    """Each client's model name (``model``, else ``name``), else its class and position."""
    names: list[str] = []
    for index, model in enumerate(models):
        name = getattr(model, "model", None)
        if not isinstance(name, str) or not name:
            name = getattr(model, "name", None)
        if not isinstance(name, str) or not name:
            name = f"{type(model).__name__}#{index}"
        names.append(name)
    return tuple(names)
