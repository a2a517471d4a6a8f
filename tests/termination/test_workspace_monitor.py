"""The run's workspace monitor: a file watcher off the event loop (a walk in a worker thread
where none can run) that sees writes by any process, settles before a reading that matters,
and starts and ends with the run, on asyncio and on trio."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from harness import (
    Cancelled,
    CancelToken,
    Completed,
    Harness,
    RunResult,
    ScriptedModelClient,
    SensorTripped,
    ToolContext,
    tool,
)
from termination import (
    Budget,
    Feedback,
    FeedbackContext,
    FeedbackTrigger,
    NoProgressSensor,
    TerminationPolicy,
)
from termination import _monitor as monitor_module
from termination._feedback_runner import _glob_match
from termination._fingerprint import WorkspaceScanner
from termination._monitor import WorkspaceMonitor, open_workspace_monitor

pytestmark = pytest.mark.anyio

SEEN: dict[str, Any] = {}


def _inotify_fds() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += "inotify" in os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
    return count


def _wait_for_inotify_fds(expected: int) -> int:
    """The count of inotify descriptors once it reaches `expected`, or after 5 s: the watcher's
    own thread closes its descriptor just after the run closed the watcher."""
    deadline = time.monotonic() + 5
    while _inotify_fds() != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return _inotify_fds()


def _wait_until(condition: Callable[[], object]) -> None:
    """Return once `condition()` holds, or after 5 s."""
    deadline = time.monotonic() + 5
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)


async def _inotify_fds_settle(expected: int) -> int:
    return await anyio.to_thread.run_sync(_wait_for_inotify_fds, expected)


@pytest.fixture
def no_watchfiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import watchfiles` fails, as where the extra is not installed."""
    monkeypatch.setitem(sys.modules, "watchfiles", None)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    SEEN.clear()
    yield
    SEEN.clear()


@tool
def shell_write(path: str, ctx: ToolContext) -> str:
    """Write a file from another process, which exits before the tool returns."""
    assert ctx.workspace is not None
    subprocess.run(
        ["sh", "-c", 'mkdir -p "$(dirname "$1")" && echo new > "$1"', "sh", path],
        cwd=ctx.workspace,
        check=True,
    )
    return f"wrote {path}"


@tool(inline=True)
def look(ctx: ToolContext) -> str:
    """Do nothing to the workspace."""
    return "nothing changed"


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


class Recorder:
    """Keeps the policy's monitor of the running run, to look at after it ended."""

    def __init__(self, policy: TerminationPolicy) -> None:
        self.policy = policy

    def emit(self, event: Any) -> None:
        run_id = getattr(event, "run_id", None)
        if run_id is not None and "monitor" not in SEEN:
            SEEN["run_id"] = run_id
        if "run_id" in SEEN and "monitor" not in SEEN:
            found = self.policy.monitor(SEEN["run_id"])
            if found is not None:
                SEEN["monitor"] = found


async def _run(
    tmp_path: Path, rows: list[dict[str, Any]], policy: TerminationPolicy, **kw: Any
) -> RunResult:
    (tmp_path / "README.md").write_text("before the run\n")
    harness = Harness(
        model=ScriptedModelClient.from_responses(rows),
        policy=policy,
        tools=[shell_write, look],
        workspace=tmp_path,
        sinks=[Recorder(policy)],
    )
    return await harness.run("Write the files.", **kw)


async def test_a_subprocess_write_just_before_the_turn_ends_is_progress(tmp_path: Path) -> None:
    """With limit=1 every still turn halts at once: a shell's write in the turn's only tool
    call must be seen when that turn ends, and a turn that writes nothing then halts."""
    policy = TerminationPolicy(budget=Budget(max_turns=10), sensors=[NoProgressSensor(limit=1)])
    rows = [_call("shell_write", path="a.txt"), _call("shell_write", path="deep/er/b.txt")]
    rows += [_call("look")]
    result = await _run(tmp_path, rows, policy)
    reason = result.halt_reason
    assert isinstance(reason, SensorTripped), reason
    assert reason.sensor == "no_progress"
    assert result.turns == 3
    monitor: WorkspaceMonitor = SEEN["monitor"]
    assert monitor.mode == "watch"
    assert [path for _, path in monitor.since(0)] == ["a.txt", "deep/er/b.txt"]
    # The still turn settles before it halts; a writing turn settles only when its events had
    # not arrived by the turn's end, which depends on how busy the machine is.
    assert monitor.statistics().settles >= 1


@pytest.mark.parametrize("watch", [True, False], ids=["watch", "walk"])
async def test_no_progress_trips_on_the_same_turn_watching_or_walking(
    tmp_path: Path, watch: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """limit=3 and a write on turn 2: turns 3, 4 and 5 are still, so the sensor trips on turn
    5, with the watcher as with the walk (a write whose event arrived after its turn ended
    was counted for the next turn, and the watcher tripped on turn 6)."""
    if not watch:
        monkeypatch.setitem(sys.modules, "watchfiles", None)
    policy = TerminationPolicy(budget=Budget(max_turns=10), sensors=[NoProgressSensor(limit=3)])
    rows = [_call("look"), _call("shell_write", path="a.txt"), *[_call("look")] * 3]
    result = await _run(tmp_path, rows, policy)
    reason = result.halt_reason
    assert isinstance(reason, SensorTripped), reason
    assert result.turns == 5
    assert SEEN["monitor"].mode == ("watch" if watch else "walk")


async def test_a_glob_trigger_fires_on_the_turn_a_subprocess_wrote_the_file(
    tmp_path: Path,
) -> None:
    """A glob fires on the turn its file appeared, written by another process; files already
    there, other names and rewrites do not fire it."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.json").write_text("{}")
    fired: list[int] = []

    class Tell:
        name = "Outputs"

        def should_run(self, context: FeedbackContext) -> bool:
            return True

        def provide(self, context: FeedbackContext) -> Feedback:
            fired.append(context.snapshot.turns)
            return Feedback(self.name, "new output")

    policy = TerminationPolicy(
        budget=Budget(max_turns=10),
        feedback=[(Tell(), FeedbackTrigger(file_appears="out/**/*.json"))],
    )
    rows = [
        _call("shell_write", path="out/a.txt"),
        _call("shell_write", path="out/x/y/a.json"),
        _call("shell_write", path="out/old.json"),
        _call("shell_write", path="out/b.json"),
        {"text": "done"},
    ]
    result = await _run(tmp_path, rows, policy)
    assert isinstance(result.halt_reason, Completed)
    assert fired == [2, 4]
    assert SEEN["monitor"].mode == "watch"


async def test_the_watcher_starts_and_ends_with_the_run(tmp_path: Path) -> None:
    """During the run an inotify watcher and a worker thread exist; after it, neither (nor
    the marker folder), and the policy no longer holds the run's monitor."""
    before = _inotify_fds()
    policy = TerminationPolicy(budget=Budget(max_turns=5), sensors=[NoProgressSensor(limit=3)])

    @tool
    def during(ctx: ToolContext) -> str:
        """Look at the watcher while the run is on."""
        SEEN["fds"] = _inotify_fds()
        return "ok"

    harness = Harness(
        model=ScriptedModelClient.from_responses([_call("during"), {"text": "done"}]),
        policy=policy,
        tools=[during],
        workspace=tmp_path,
        sinks=[Recorder(policy)],
    )
    result = await harness.run("Look.")
    assert isinstance(result.halt_reason, Completed)
    monitor: WorkspaceMonitor = SEEN["monitor"]
    assert SEEN["fds"] == before + 1
    assert await _inotify_fds_settle(before) == before
    assert policy.monitor(result.run_id) is None
    assert not Path(monitor._private).exists()  # noqa: ASYNC240
    assert monitor._worker_done.is_set()  # its worker thread returned


async def test_a_cancelled_run_closes_its_watcher(tmp_path: Path) -> None:
    """Cancelling the run from outside ends the watcher too."""
    before = _inotify_fds()
    token = CancelToken()

    @tool(inline=True)
    def cancel(ctx: ToolContext) -> str:
        """Cancel the run from inside a tool."""
        token.cancel("the test")
        return "cancelled"

    policy = TerminationPolicy(budget=Budget(max_turns=5), sensors=[NoProgressSensor()])
    harness = Harness(
        model=ScriptedModelClient.from_responses([_call("cancel"), {"text": "done", "delay": 5}]),
        policy=policy,
        tools=[cancel],
        workspace=tmp_path,
    )
    result = await harness.run("Stop.", cancel=token)
    assert isinstance(result.halt_reason, Cancelled)
    assert await _inotify_fds_settle(before) == before


@pytest.mark.usefixtures("no_watchfiles")
async def test_without_watchfiles_the_walk_runs_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the extra the monitor walks, never on the event loop's thread, and the
    subprocess's write is still seen on its turn."""
    loop_thread = threading.get_ident()
    walked_on: set[int] = set()
    scan = WorkspaceScanner.scan_changes

    def spy(self: WorkspaceScanner) -> Any:
        walked_on.add(threading.get_ident())
        return scan(self)

    monkeypatch.setattr(WorkspaceScanner, "scan_changes", spy)
    policy = TerminationPolicy(budget=Budget(max_turns=10), sensors=[NoProgressSensor(limit=1)])
    rows = [_call("shell_write", path="a.txt"), _call("look")]
    result = await _run(tmp_path, rows, policy)
    assert isinstance(result.halt_reason, SensorTripped)
    assert result.turns == 2
    assert SEEN["monitor"].mode == "walk"
    assert walked_on
    assert loop_thread not in walked_on


async def test_a_marker_that_never_arrives_falls_back_to_walking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watcher that cannot keep up is stopped after SETTLE_TIMEOUT; the turn then walks,
    and the change is still seen."""
    monkeypatch.setattr(monitor_module, "SETTLE_TIMEOUT", 0.05)
    monkeypatch.setattr(WorkspaceMonitor, "_mark", lambda self, token: None)
    async with open_workspace_monitor(tmp_path) as monitor:
        assert monitor.mode == "watch"
        (tmp_path / "late.txt").write_text("x")
        await monitor.refresh(settle=True)
        assert monitor.statistics().mode == "walk"
        assert ("added", "late.txt") in monitor.since(0)


async def test_a_turn_ends_with_a_rename_of_the_one_marker_file(tmp_path: Path) -> None:
    """Each turn's end renames the one marker file to its token: no file is created (an inode
    and a journal entry per turn) nor deleted after its event arrived."""
    async with open_workspace_monitor(tmp_path) as monitor:
        for _ in range(3):
            monitor.post_marker()
            await monitor.refresh(settle=True)
            assert os.listdir(monitor._private) == [f"s{monitor.turn_end}"]
        assert monitor.statistics().settles == 3


async def test_only_a_batch_a_turn_waits_for_wakes_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher's thread leaves a batch for the loop's next read instead of handing it
    over; only the batch holding the marker a settling turn waits for is handed over."""
    handed: list[str] = []
    run_sync = anyio.from_thread.run_sync

    def spy(func: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(func.__name__)
        return run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.from_thread, "run_sync", spy)
    async with open_workspace_monitor(tmp_path) as monitor:
        handed.clear()  # the watcher saying it is up
        (tmp_path / "a.txt").write_text("x")
        token = monitor.post_marker()
        # Off the loop, until the watcher's thread has the marker's batch (left or handed over).
        inbox = getattr(monitor, "_inbox", ())
        await anyio.to_thread.run_sync(
            _wait_until, lambda: handed or any(t >= token for _, t in list(inbox))
        )
        assert handed == []
        assert monitor.position(token) == 1
        assert list(monitor.since(0)) == [("added", "a.txt")]
        await monitor.refresh(settle=True)
        assert handed == ["_drain"]


@pytest.mark.parametrize("watch", [True, False])
async def test_the_monitor_logs_folders_moved_in_and_removed(tmp_path: Path, watch: bool) -> None:
    """A folder moved in brings its files; a folder removed takes them; a rewrite with the
    same bytes is not logged; ignored folders are not watched."""
    outside = tmp_path / "outside"
    (outside / "pkg" / "sub").mkdir(parents=True)
    (outside / "pkg" / "sub" / "m.py").write_text("x = 1\n")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("same")
    async with open_workspace_monitor(root, watch=watch) as monitor:
        assert monitor.mode == ("watch" if watch else "walk")
        os.rename(outside / "pkg", root / "pkg")
        (root / "keep.txt").write_text("same")
        (root / ".git").mkdir()
        (root / ".git" / "HEAD").write_text("ref")
        await monitor.refresh(settle=True)
        assert list(monitor.since(0)) == [("added", "pkg/sub/m.py")]
        mark = monitor.mark
        subprocess.run(["rm", "-r", str(root / "pkg")], check=True)  # noqa: ASYNC221
        await monitor.refresh(settle=True)
        assert list(monitor.since(mark)) == [("removed", "pkg/sub/m.py")]
        assert monitor.statistics().files == 1


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("out/a.json", "out/*.json", True),
        ("out/x/a.json", "out/*.json", False),
        ("out/x/a.json", "out/**/*.json", True),
        ("out/a.json", "out/**/*.json", True),
        ("a.json", "**/*.json", True),
        ("out/.hidden.json", "out/*.json", True),
        ("out/a.JSON", "out/*.json", False),
        ("report-7.md", "report-[0-9].md", True),
        ("out/a.json", "out", False),
    ],
)
def test_glob_matching_agrees_with_path_glob(
    path: str, pattern: str, expected: bool, tmp_path: Path
) -> None:
    """`*` stays within a folder, `**` spans any number of them, case matters: as
    `Path.glob` finds files."""
    assert _glob_match(path.split("/"), pattern.split("/")) is expected
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text("x")
    found = [p.relative_to(tmp_path).as_posix() for p in tmp_path.glob(pattern) if p.is_file()]
    assert (path in found) is expected
