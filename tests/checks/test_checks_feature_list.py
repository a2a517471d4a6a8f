"""`FeatureListCheck` baselines: one per run, bounded in number, and failing closed when lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _checks_support import snapshot

from checks import AllOf, AlwaysComplete, FeatureListCheck
from harness import ConfigurationError
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio


def write(workspace: Path, *features: tuple[str, bool]) -> None:
    rows = [{"name": name, "passes": passes} for name, passes in features]
    (workspace / "feature_list.json").write_text(json.dumps(rows), encoding="utf-8")


async def test_each_run_is_guarded_against_its_own_start(tmp_path: Path) -> None:
    """Two runs sharing the check are compared with the list each of them started from."""
    check = FeatureListCheck()
    write(tmp_path, ("a", False), ("b", False))
    await check.prepare(snapshot(tmp_path, run_id="first"))
    write(tmp_path, ("a", False))
    await check.prepare(snapshot(tmp_path, run_id="second"))
    write(tmp_path, ("a", True))
    assert await check.check(snapshot(tmp_path, run_id="second")) is None
    first = await check.check(snapshot(tmp_path, run_id="first"))
    assert first is not None
    assert first.startswith("feature_list.json no longer lists 1 feature(s)")


async def test_baselines_are_bounded(tmp_path: Path) -> None:
    """However many runs share the check, it keeps baselines for the newest `max_runs` only."""
    check = FeatureListCheck(max_runs=3)
    write(tmp_path, ("a", True))
    for n in range(50):
        await check.prepare(snapshot(tmp_path, run_id=f"run-{n}"))
    assert len(check._baselines) == 3
    assert await check.check(snapshot(tmp_path, run_id="run-49")) is None


async def test_a_run_whose_baseline_was_pushed_out_fails_closed(tmp_path: Path) -> None:
    """A run whose baseline was discarded is not complete, and the reason says how to fix it."""
    check = FeatureListCheck(max_runs=2)
    write(tmp_path, ("a", True))
    for n in range(3):
        await check.prepare(snapshot(tmp_path, run_id=f"run-{n}"))
    reason = await check.check(snapshot(tmp_path, run_id="run-0"))
    assert reason == (
        "the feature list as this run found it was discarded: more than 2 newer runs share this "
        "FeatureListCheck (raise max_runs or give each run its own)"
    )


async def test_checking_keeps_an_active_run_fresh(tmp_path: Path) -> None:
    """A run that is still checking is the most recently used, so newer runs push others out."""
    check = FeatureListCheck(max_runs=2)
    write(tmp_path, ("a", True))
    await check.prepare(snapshot(tmp_path, run_id="long"))
    await check.prepare(snapshot(tmp_path, run_id="short"))
    assert await check.check(snapshot(tmp_path, run_id="long")) is None
    await check.prepare(snapshot(tmp_path, run_id="newest"))
    assert await check.check(snapshot(tmp_path, run_id="long")) is None
    assert await check.check(snapshot(tmp_path, run_id="short")) is not None


async def test_the_policy_prepares_a_nested_feature_list(tmp_path: Path) -> None:
    """TerminationPolicy.start_run reaches a FeatureListCheck inside a composite."""
    check = FeatureListCheck()
    policy = TerminationPolicy(completion_check=AlwaysComplete() & check)
    write(tmp_path, ("a", False), ("b", False))
    await policy.start_run(snapshot(tmp_path, run_id="r"))
    write(tmp_path, ("a", True))
    reason = await AllOf.of(check).check(snapshot(tmp_path, run_id="r"))
    assert reason is not None
    assert "no longer lists 1 feature(s) it had when the run started: b" in reason


def test_equality_ignores_the_baselines() -> None:
    """Two checks with the same settings are equal whatever runs they have seen."""
    assert FeatureListCheck() == FeatureListCheck()
    assert repr(FeatureListCheck("f.json")) == "FeatureListCheck(path='f.json', max_runs=64)"


@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_max_runs_must_be_a_positive_int(value: object) -> None:
    """A bound that is not a positive int is a configuration error."""
    with pytest.raises(ConfigurationError, match="'max_runs' must be a positive int"):
        FeatureListCheck(max_runs=value)  # type: ignore[arg-type]


async def test_long_feature_names_are_shortened_in_reasons(tmp_path: Path) -> None:
    """A feature keyed by a long description is cut so the reason stays short."""
    long = "The user can " + "really " * 30 + "export"
    write(tmp_path, (long, False))
    reason = await FeatureListCheck().check(snapshot(tmp_path))
    assert reason is not None
    assert reason.endswith("...")
    assert len(reason) < 160
