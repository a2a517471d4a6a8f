"""Files, signal and plan checks: the edges the fixture table does not reach."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _checks_support import snapshot

from checks import (
    AlwaysComplete,
    FilesCheck,
    PlanCheck,
    SignalCheck,
)
from harness import ConfigurationError, Message, Plan, PlanStep

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
