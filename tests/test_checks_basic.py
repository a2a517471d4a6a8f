"""Files, signal and plan checks: the edges the fixture table does not reach."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _checks_support import snapshot

from checks import (
    AlwaysComplete,
    CompletionCheck,
    FeatureListCheck,
    FilesCheck,
    PlanCheck,
    SignalCheck,
    is_inline,
)
from harness import ConfigurationError, Message, Plan, PlanStep, SessionStateSnapshot

pytestmark = pytest.mark.anyio


async def test_files_through_a_symlink_out_of_the_workspace_do_not_count(tmp_path: Path) -> None:
    """An artifact that is really a link to a file outside the workspace is missing."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "secret.txt").write_text("x")
    os.symlink(tmp_path / "secret.txt", workspace / "report.txt")
    os.symlink(tmp_path / "secret.txt", workspace / "other.log")
    check = FilesCheck(("report.txt", "*.log"))
    assert await check.check(snapshot(workspace)) == (
        "missing 2 of 2: report.txt, *.log (no match)"
    )


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        ([], "'paths' must be a non-empty list"),
        (["ok", ""], "'paths' must hold non-empty strings"),
        (["/etc/passwd"], "'paths' entries are relative to the workspace"),
    ],
)
def test_files_configuration_is_checked(paths: list[str], message: str) -> None:
    """Empty lists, blank entries and absolute paths are refused up front."""
    with pytest.raises(ConfigurationError, match=message):
        FilesCheck(paths)


def test_files_description_lists_the_paths() -> None:
    """The agent is told which files must exist."""
    assert FilesCheck("a.txt", non_empty=True).description() == (
        "These files exist and are not empty in the workspace: a.txt."
    )


async def test_signal_echoed_from_a_system_message_does_not_count() -> None:
    """A final text that copies the system prompt holding the signal does not pass through it."""
    system = "Rules:\nWhen you are done, write\n<promise>DONE</promise>"
    text = f"My instructions were:\n{system}\nStill working."
    reason = await SignalCheck().check(
        snapshot(final_text=text, messages=[Message.system(system), Message.user("go")])
    )
    assert reason is not None
    assert (
        await SignalCheck().check(snapshot(final_text=f"{text}\n<promise>DONE</promise>")) is None
    )


@pytest.mark.parametrize("token", ["", "  ", "A\nB", 5])
def test_signal_token_must_be_one_line(token: object) -> None:
    """A blank or multi-line token could never be matched fairly, so it is refused."""
    with pytest.raises(ConfigurationError, match="'token' must be a non-empty single line"):
        SignalCheck(token)


def test_signal_description_names_the_token() -> None:
    """The agent is told the exact line to write."""
    assert SignalCheck("SHIP IT").description() == (
        "Your final message contains the line SHIP IT on its own, and you write it only when "
        "the task is completely done."
    )


async def test_plan_reads_the_latest_plan() -> None:
    """An old finished plan does not count once the agent wrote a new one with open steps."""
    old = Plan((PlanStep("a", "done"),))
    new = Plan((PlanStep("a", "done"), PlanStep("b", "in_progress")))
    assert await PlanCheck().check(snapshot(store=[old])) is None
    assert await PlanCheck().check(snapshot(store=[old, new])) == (
        "1 of 2 plan steps are not done: 'b'; finish them and mark them done with update_plan"
    )


async def test_always_complete_is_a_value() -> None:
    """AlwaysComplete passes, compares equal to itself and prints plainly."""
    assert await AlwaysComplete().check(snapshot()) is None
    assert AlwaysComplete() == AlwaysComplete()
    assert repr(AlwaysComplete()) == "AlwaysComplete()"


def _finished_at_once(check: CompletionCheck, state: SessionStateSnapshot) -> Any:
    """The verdict of `check`, which must come from the coroutine's first step: an inline
    check runs without a deadline scope, so it must never wait."""
    coroutine = check.check(state)
    with pytest.raises(StopIteration) as finished:
        coroutine.send(None)
    return finished.value.value


def test_the_checks_declared_inline_never_wait(tmp_path: Path) -> None:
    """Every standard check that declares ``inline = True`` reaches its verdict, pass or
    reason, without waiting: the declaration that lets the policy skip its deadline holds.
    FilesCheck looks at the disk in a worker thread, so it is not inline."""
    done = Plan((PlanStep("a", "done"),))
    features = tmp_path / "feature_list.json"
    signal = SignalCheck()
    cases: list[tuple[CompletionCheck, SessionStateSnapshot, bool]] = [
        (AlwaysComplete(), snapshot(), True),
        (signal, snapshot(final_text=f"ok\n{signal.token}"), True),
        (signal, snapshot(final_text="ok"), False),
        (PlanCheck(), snapshot(store=[done]), True),
        (PlanCheck(), snapshot(), False),
        (FeatureListCheck(), snapshot(tmp_path), False),  # no list yet
        (AlwaysComplete() & PlanCheck(), snapshot(store=[done]), True),
    ]
    for check, state, passes in cases:
        assert is_inline(check), check
        assert (_finished_at_once(check, state) is None) is passes, check
    features.write_text(json.dumps([{"description": "a", "passes": False}]))
    assert _finished_at_once(FeatureListCheck(), snapshot(tmp_path)) is not None
    features.write_text(json.dumps([{"description": "a", "passes": True}]))
    assert _finished_at_once(FeatureListCheck(), snapshot(tmp_path)) is None
    assert not is_inline(FilesCheck(("report.txt",)))
