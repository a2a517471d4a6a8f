"""The protected paths at the edges of a run: `write_file` refuses them by any name, the
policy takes them as rules, a claim that changed them is rejected with what the untouched
verifier said, and `TamperingSensor` counts such claims."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checks import AllOf, AlwaysComplete, run_check
from harness import ConfigurationError, SessionStateSnapshot, ToolCall, ToolContext, write_file
from harness.extend import ProtectedPaths, ProtectsPaths, SessionStore, Tampering
from harness.testing import FakeClock
from termination import TamperingSensor, TerminationPolicy

pytestmark = pytest.mark.anyio


def snapshot(workspace: Path | None = None, **fields: Any) -> SessionStateSnapshot:
    return SessionStateSnapshot.standalone(workspace, final_text="done", **fields)


def context(workspace: Path, rules: list[str]) -> ToolContext:
    return ToolContext(
        workspace,
        SessionStore(),
        FakeClock(),
        ToolCall("c1", "write_file", {}),
        "builder",
        ProtectedPaths(rules),
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("def test_a():\n    assert False\n")
    (root / "alias").symlink_to("tests")
    return root


@pytest.mark.parametrize(
    "path", ["tests/test_a.py", "./tests/../tests/test_a.py", "alias/test_a.py", "tests/new.py"]
)
async def test_write_file_refuses_a_protected_path_by_any_name(workspace: Path, path: str) -> None:
    """By its own name, a roundabout one, or through a link that leads into the folder: the
    tool answers with an error naming the rule, and the file is untouched."""
    result = await write_file.call(
        {"path": path, "content": "x"}, context(workspace, ["tests/**"]), time_limit=10.0
    )
    assert result.is_error
    assert "protected by the rule 'tests/**'" in result.content
    assert (workspace / "tests" / "test_a.py").read_text().startswith("def test_a")
    assert not (workspace / "tests" / "new.py").exists()


async def test_write_file_refuses_an_absolute_path_to_a_protected_file(workspace: Path) -> None:
    path = str(workspace / "tests" / "test_a.py")
    result = await write_file.call(
        {"path": path, "content": "x"}, context(workspace, ["tests"]), time_limit=10.0
    )
    assert result.is_error
    assert "protected by the rule 'tests'" in result.content


async def test_write_file_writes_what_no_rule_covers(workspace: Path) -> None:
    ctx = context(workspace, ["tests/**"])
    result = await write_file.call(
        {"path": "src/calc.py", "content": "x = 1\n"}, ctx, time_limit=10.0
    )
    assert not result.is_error
    assert (workspace / "src" / "calc.py").read_text() == "x = 1\n"


def test_the_policy_takes_rules_and_offers_them_to_the_run() -> None:
    policy = TerminationPolicy(protected=["tests/**", "feature_list.json"])
    assert policy.protected == ProtectedPaths(["tests/**", "feature_list.json"])
    assert isinstance(policy, ProtectsPaths)
    assert not TerminationPolicy().protected
    with pytest.raises(ConfigurationError, match="may not leave it"):
        TerminationPolicy(protected=["../x"])


class Fails:
    """A check that always names what is missing."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return "test_a failed"

    def description(self) -> str:
        return "fails"


async def test_the_rejection_names_the_files_and_what_the_check_said() -> None:
    """`run_check`, the one verdict every path asks, rejects a tampered claim: the files,
    then the check's own reason, or that it passes with the files as they were."""
    changed = (Tampering("tests/test_a.py", "modified", "tests/**"),)
    state = snapshot(tampering=changed)
    failing = (await run_check(Fails(), state)).reason
    assert failing is not None
    assert "- tests/test_a.py (modified; protected by 'tests/**')" in failing
    assert failing.endswith("the completion check reports:\ntest_a failed")
    passing = (await run_check(AlwaysComplete(), state)).reason
    assert passing is not None
    assert passing.endswith("the completion check passes: restore them and claim again.")
    composed = (await run_check(AllOf.of(Fails(), AlwaysComplete()), state)).reason
    assert composed is not None
    assert composed.count("Protected files were changed") == 1


async def test_a_claim_with_tampering_is_rejected_even_when_the_check_passes(
    tmp_path: Path,
) -> None:
    policy = TerminationPolicy(protected=["tests/**"])
    session = policy.start_session(clock=FakeClock())
    changed = (Tampering("tests/test_a.py", "deleted", "tests/**"),)
    reason = await session.check(snapshot(tmp_path, tampering=changed))
    assert reason is not None
    assert "tests/test_a.py (deleted" in reason
    assert await session.check(snapshot(tmp_path)) is None


def test_the_tampering_sensor_warns_then_halts() -> None:
    sensor = TamperingSensor(limit=2, warn_at=1)
    assert sensor.read(snapshot(tampered_claims=0)).status == "ok"
    warned = sensor.read(snapshot(tampered_claims=1))
    assert warned.status == "warn"
    assert "restore them" in warned.message
    changed = (Tampering("t.py", "modified", "t.py"),)
    halted = sensor.read(snapshot(tampered_claims=2, tampering=changed))
    assert halted.status == "halt"
    assert "t.py (modified; protected by 't.py')" in halted.message
    with pytest.raises(ConfigurationError, match="'limit'"):
        TamperingSensor(limit=0)


def test_the_verification_events_read_back_from_a_transcript_as_themselves() -> None:
    """`baseline.recorded`, `protected.recorded` and `protected.changed` survive a transcript
    line, typed; a change of an unknown kind is an error naming the field."""
    from harness import Event, FixtureError
    from harness.events import BaselineRecorded, ProtectedPathsChanged, ProtectedPathsRecorded
    from harness.extend import Baseline

    events = [
        BaselineRecorded(0.5, Baseline("`pytest -rA`", "pytest", 3, ("t.py::a",), 1)),
        BaselineRecorded(0.5, Baseline("`pytest -q`", None, 0, (), 1, "quiet")),
        ProtectedPathsRecorded(0.1, ("tests/**",), 4),
        ProtectedPathsChanged(2.0, "builder", 3, (Tampering("t.py", "added", "tests/**"),)),
    ]
    for event in events:
        assert Event.from_dict(event.to_dict()) == event
    row = events[3].to_dict()
    row["changes"][0]["change"] = "exploded"
    with pytest.raises(FixtureError, match=r"t.jsonl:7 field 'changes\[0\]\.change'"):
        Event.from_dict(row, path="t.jsonl", line=7)
