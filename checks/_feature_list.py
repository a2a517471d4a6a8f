"""`FeatureListCheck`: every feature in the workspace's feature list must pass."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import field, frozen

from harness import SessionStateSnapshot, WorkspaceEscape, resolve_in_workspace

_SHOW = 5


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


@frozen
class FeatureListCheck:
    """Complete when every feature in the list has ``"passes": true``.

    Accepts the long-running-agent schema (a JSON array of objects with ``category``,
    ``description``, ``steps`` and ``passes``), entries keyed by ``name`` or ``id``, and an
    object holding a ``features`` array. The path may not leave the workspace.
    """

    path: str = "feature_list.json"
    _baselines: dict[str, dict[str, Mapping[str, Any]]] = field(factory=dict, eq=False, repr=False)

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
            return
        self._baselines[state.run_id] = {f.key: _without_passes(f.raw) for f in features}

    async def check(self, state: SessionStateSnapshot) -> str | None:
        try:
            features = load_features(self._resolve(state), label=self.path)
        except FeatureListError as exc:
            return str(exc)
        tampered = self._tampering(state.run_id, features)
        if tampered:
            return tampered
        if not features:
            return f"{self.path} lists no features"
        failing = [f.key for f in features if not f.passes]
        if not failing:
            return None
        shown = ", ".join(failing[:_SHOW])
        more = f" and {len(failing) - _SHOW} more" if len(failing) > _SHOW else ""
        return (
            f"{len(failing)} of {len(features)} features in {self.path} do not pass yet: "
            f"{shown}{more}"
        )

    def _tampering(self, run_id: str, features: list[Feature]) -> str | None:
        baseline = self._baselines.get(run_id)
        if baseline is None:
            return None
        now = {f.key: _without_passes(f.raw) for f in features}
        removed = [k for k in baseline if k not in now]
        if removed:
            return (
                f"{self.path} no longer lists {len(removed)} feature(s) it had when the run "
                f"started: {', '.join(removed[:_SHOW])}; restore them, features may not be removed"
            )
        edited = [k for k, v in baseline.items() if now[k] != v]
        if edited:
            return (
                f"{self.path} changed more than 'passes' in {len(edited)} feature(s): "
                f"{', '.join(edited[:_SHOW])}; restore their text, only 'passes' may change"
            )
        return None


def _without_passes(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k != "passes"}
