"""`FeatureListCheck`: every feature in the workspace's feature list must pass."""

from __future__ import annotations

import json
from collections import OrderedDict, deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from attrs import Factory, define, field, frozen

from harness import SessionStateSnapshot, WorkspaceEscape, resolve_in_workspace
from harness.checkpoints import WorkProgress
from harness.extend import check_positive, of_type

from ._compose import Combinable
from ._progress import Assessment

_SHOW = 5
DEFAULT_MAX_RUNS = 64

Baseline = dict[str, dict[str, Any]]


def _max_runs(value: int) -> int:
    """Checked as it is converted, before the bounded history built from it."""
    check_positive("max_runs", value, integer=True)
    return value


@frozen
class Feature:
    """One entry of a feature list."""

    key: str
    passes: bool
    raw: Mapping[str, Any]


class FeatureListError(ValueError):
    """The feature list cannot be read or does not have the expected shape."""


def load_features(path: Path, *, label: str) -> list[Feature]:
    """Read and validate a feature list; errors name the line/column or the entry at fault."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FeatureListError(f"{label} does not exist") from None
    except OSError as exc:
        raise FeatureListError(f"{label} cannot be read: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FeatureListError(
            f"{label} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    if isinstance(data, dict):
        if not isinstance(data.get("features"), list):
            raise FeatureListError(f"{label} is an object without a 'features' array")
        data = data["features"]
    if not isinstance(data, list):
        raise FeatureListError(
            f"{label} must be a JSON array of features or an object with 'features'"
        )
    features: list[Feature] = []
    seen: set[str] = set()
    for index, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise FeatureListError(f"{label} entry {index} is not an object")
        passes = entry.get("passes")
        key = _key(entry, index)
        if not isinstance(passes, bool):
            raise FeatureListError(
                f"{label} entry {index} ({key}) has no boolean 'passes' (got {passes!r})"
            )
        if key in seen:
            key = f"{key} (entry {index})"
        seen.add(key)
        features.append(Feature(key, passes, entry))
    return features


def _key(entry: Mapping[str, Any], index: int) -> str:
    for name in ("name", "id", "description"):
        value = entry.get(name)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return f"entry {index}"


@define
class _Baselines:
    """The lists as each run found them, for the newest `limit` runs only.

    One check object may serve many runs (a service running the same spec over and over), so
    the baselines cannot grow with them. A run pushed out by `limit` newer runs is remembered
    (in a bounded list) as evicted, so its checks fail closed instead of skipping the guard.
    """

    limit: int
    _runs: OrderedDict[str, Baseline | None] = field(factory=OrderedDict)
    _evicted: deque[str] = field(init=False)

    def __attrs_post_init__(self) -> None:
        self._evicted = deque(maxlen=16 * self.limit)

    def remember(self, run_id: str, baseline: Baseline | None) -> None:
        self._runs[run_id] = baseline
        self._runs.move_to_end(run_id)
        while len(self._runs) > self.limit:
            old, _ = self._runs.popitem(last=False)
            self._evicted.append(old)

    def lookup(self, run_id: str) -> Baseline | None:
        """The run's baseline (None when it had no list to guard or was never prepared)."""
        if run_id in self._runs:
            self._runs.move_to_end(run_id)
            return self._runs[run_id]
        if run_id in self._evicted:
            raise FeatureListError(
                f"the feature list as this run found it was discarded: more than {self.limit} "
                "newer runs share this FeatureListCheck (raise max_runs or give each run its own)"
            )
        return None

    def __len__(self) -> int:
        return len(self._runs)


@frozen
class FeatureListCheck(Combinable):
    """Complete when every feature in the list has ``"passes": true``.

    Accepts the long-running-agent schema (a JSON array of objects with ``category``,
    ``description``, ``steps`` and ``passes``), entries keyed by ``name`` or ``id``, and an
    object holding a ``features`` array. The path may not leave the workspace. `prepare`
    records the list as the run found it; from then on a feature removed, or changed in
    anything but ``passes``, is "not complete". Baselines are kept for the newest `max_runs`
    runs that share this check.
    """

    baseline: ClassVar[bool] = False
    """`prepare` keeps the list for itself and returns no `harness.extend.Baseline`."""

    # Reads one small JSON file with plain file I/O, as `prepare` does: nothing to wait for.

    path: str = field(
        default="feature_list.json", validator=of_type(str, "a path in the workspace, as a string")
    )
    max_runs: int = field(default=DEFAULT_MAX_RUNS, converter=_max_runs)
    _baselines: _Baselines = field(
        init=False,
        eq=False,
        repr=False,
        default=Factory(lambda self: _Baselines(self.max_runs), takes_self=True),
    )

    def description(self) -> str:
        return (
            f'Every feature in {self.path} has "passes": true. Set a feature\'s "passes" to true '
            "only after it really works; do not remove or reword features."
        )

    def _resolve(self, state: SessionStateSnapshot) -> Path:
        if state.workspace is None:
            raise FeatureListError("the run has no workspace, so the feature list cannot be read")
        try:
            return resolve_in_workspace(state.workspace, self.path)
        except WorkspaceEscape as exc:
            raise FeatureListError(str(exc)) from None

    async def prepare(self, state: SessionStateSnapshot) -> None:
        """Remember the list as the run found it, to catch features removed or edited later."""
        try:
            features = load_features(self._resolve(state), label=self.path)
        except FeatureListError:
            self._baselines.remember(state.run_id, None)  # nothing to guard yet
            return
        self._baselines.remember(state.run_id, {f.key: _without_passes(f.raw) for f in features})

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return (await self.measure(state)).reason

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        """The verdict, and the features passing (none measured when the list cannot be read
        or was tampered with: its count would not be the run's)."""
        try:
            features = load_features(self._resolve(state), label=self.path)
            baseline = self._baselines.lookup(state.run_id)
        except FeatureListError as exc:
            return Assessment(str(exc))
        tampered = self._tampering(baseline, features)
        if tampered:
            return Assessment(tampered)
        if not features:
            return Assessment(f"{self.path} lists no features")
        failing = [f.key for f in features if not f.passes]
        progress = WorkProgress(len(features) - len(failing), len(features), "features", failing)
        if not failing:
            return Assessment(None, progress)
        shown = ", ".join(_short(k) for k in failing[:_SHOW])
        more = f" and {len(failing) - _SHOW} more" if len(failing) > _SHOW else ""
        return Assessment(
            f"{len(failing)} of {len(features)} features in {self.path} do not pass yet: "
            f"{shown}{more}",
            progress,
        )

    def _tampering(self, baseline: Baseline | None, features: list[Feature]) -> str | None:
        if baseline is None:
            return None
        now = {f.key: _without_passes(f.raw) for f in features}
        removed = [k for k in baseline if k not in now]
        if removed:
            return (
                f"{self.path} no longer lists {len(removed)} feature(s) it had when the run "
                f"started: {', '.join(_short(k) for k in removed[:_SHOW])}; "
                "restore them, features may not be removed"
            )
        edited = [k for k, v in baseline.items() if now[k] != v]
        if edited:
            return (
                f"{self.path} changed more than 'passes' in {len(edited)} feature(s): "
                f"{', '.join(_short(k) for k in edited[:_SHOW])}; "
                "restore their text, only 'passes' may change"
            )
        return None


def _short(key: str, limit: int = 80) -> str:
    return key if len(key) <= limit else key[: limit - 3] + "..."


def _without_passes(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k != "passes"}
