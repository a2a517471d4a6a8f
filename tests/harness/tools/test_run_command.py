"""`run_command`: a command in the workspace under the chosen sandbox, with its exit code, a
deadline, its whole process tree stopped, its output cut in the middle and no provider keys,
locally and under bubblewrap, including hostile commands."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
import pytest
from _processes import gone, running

from checks import BubblewrapSandbox, LocalSandbox
from harness import (
    ConfigurationError,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    run_command_tool,
    workspace_tools,
)
from harness.extend import (
    Clock,
    CommandSandbox,
    ProcessResult,
    SessionStore,
    SystemClock,
    bytecode_prefix,
    is_secret_name,
)
from harness.testing import FakeClock

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bwrap is not installed (apt-get install bubblewrap); the isolation cannot be tested",
)
SANDBOXES = ["local", pytest.param("bubblewrap", marks=needs_bwrap)]


def _tool(kind: str, clock: Clock, **options: Any) -> Tool:
    sandbox: CommandSandbox | None = None
    if kind == "bubblewrap":
        sandbox = BubblewrapSandbox(clock=clock)
    return run_command_tool(sandbox, **options)


async def _call(tool: Tool, workspace: Path, clock: Clock, **arguments: Any) -> ToolResult:
    call = ToolCall("c1", tool.name, arguments)
    context = ToolContext(workspace, SessionStore(), clock, call, "builder")
    return await tool.call(arguments, context, time_limit=1000)


def _live(marker: str) -> list[int]:
    """Live processes whose command line is exactly ``sleep <marker>``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cmdline == f"sleep {marker} " and running(int(entry.name)):
            found.append(int(entry.name))
    return found


@pytest.mark.anyio
@pytest.mark.parametrize("kind", SANDBOXES)
async def test_the_result_carries_the_exit_code_and_the_output(tmp_path: Path, kind: str) -> None:
    """The model sees the exit code first, then stdout and stderr; the command ran in the
    workspace (a relative `cwd` inside it works too)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.txt").write_text("inside\n")
    clock = SystemClock()
    tool = _tool(kind, clock)
    result = await _call(
        tool, tmp_path, clock, command="cat data.txt; echo oops >&2; exit 3", cwd="sub"
    )
    assert not result.is_error
    assert result.content == "exit code: 3\n--- output (stdout and stderr) ---\ninside\noops\n"
    quiet = await _call(tool, tmp_path, clock, command="true")
    assert quiet.content == "exit code: 0\n(no output)"
    missing = await _call(tool, tmp_path, clock, command="no-such-program-xyz")
    assert missing.content.startswith("exit code: 127\n")
    assert "no-such-program-xyz" in missing.content


@pytest.mark.anyio
async def test_a_folder_outside_the_workspace_and_bad_arguments_are_error_results(
    tmp_path: Path,
) -> None:
    """`cwd` outside the workspace, an empty command and a timeout above the maximum are each an
    error result the model sees; nothing runs."""
    clock = SystemClock()
    tool = run_command_tool(max_timeout=30)
    escape = await _call(tool, tmp_path, clock, command="touch made", cwd="..")
    assert escape.is_error
    assert "WorkspaceEscape" in escape.content
    empty = await _call(tool, tmp_path, clock, command="  ")
    assert empty.is_error
    assert "'command' must not be empty" in empty.content
    long = await _call(tool, tmp_path, clock, command="true", timeout=31)
    assert long.is_error
    assert "'timeout' must be in (0, 30] seconds (got 31)" in long.content
    assert not (tmp_path.parent / "made").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("kind", SANDBOXES)
async def test_a_daemon_the_command_leaves_behind_is_killed(tmp_path: Path, kind: str) -> None:
    """A command that starts a detached daemon (setsid and a double fork) and exits returns at
    once, and the daemon does not outlive the call."""
    marker = "4321.0017"
    clock = SystemClock()
    tool = _tool(kind, clock)
    command = (
        f"(setsid sh -c 'sleep {marker} & echo $! > pid' &); "
        "until [ -s pid ]; do sleep 0.05; done; echo left it"
    )
    result = await _call(tool, tmp_path, clock, command=command)
    assert result.content.startswith("exit code: 0\n")
    assert "left it" in result.content
    assert (tmp_path / "pid").read_text().strip().isdigit()  # the daemon did start
    for pid in _live(marker):
        assert await gone(pid)
    assert _live(marker) == []


@pytest.mark.anyio
@pytest.mark.parametrize("kind", SANDBOXES)
async def test_a_hung_command_is_stopped_at_its_timeout_with_its_tree(
    tmp_path: Path, kind: str
) -> None:
    """A command that never ends is stopped when the call's timeout passes on the clock, with
    every process it started; the result says it timed out."""
    marker = "4321.0023"
    fake = FakeClock()
    clock = cast(Clock, fake)
    tool = _tool(kind, clock)
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    results: list[ToolResult] = []
    command = (
        f"sleep {marker} & a=$!; sleep {marker} & b=$!; "
        "until grep -q ^sleep /proc/$a/cmdline && grep -q ^sleep /proc/$b/cmdline; do :; done; "
        "echo up > started; wait"
    )

    async def run() -> None:
        results.append(await _call(tool, tmp_path, clock, command=command, timeout=7))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.to_thread.run_sync(fifo.read_text)
        assert len(_live(marker)) == 2  # both were running when the deadline came
        fake.advance(7)
    assert results[0].content.startswith("timed out after 7s: the command and every process")
    for pid in _live(marker):
        assert await gone(pid)
    assert _live(marker) == []


@pytest.mark.anyio
@pytest.mark.parametrize("kind", SANDBOXES)
async def test_a_flood_of_output_keeps_its_head_and_tail_and_says_how_much_was_cut(
    tmp_path: Path, kind: str
) -> None:
    """A command printing 100 MB gives the model its first and last characters, within the
    cap, and a marker with the bytes cut and the size in all."""
    clock = SystemClock()
    tool = _tool(kind, clock, max_output=2000)
    command = "echo START; head -c 100000000 /dev/zero | tr '\\0' x; echo; echo END"
    result = await _call(tool, tmp_path, clock, command=command)
    text = result.content
    assert text.startswith("exit code: 0\n--- output (stdout and stderr) ---\nSTART\nxxx")
    assert text.endswith("xxx\nEND\n")
    total = len("START\n") + 100_000_000 + len("\nEND\n")
    cut = total - 2000
    assert f"[... {cut:,} bytes of output cut here ({total:,} bytes in all) ...]" in text
    assert len(text) < 2200


@pytest.mark.anyio
@pytest.mark.parametrize("kind", SANDBOXES)
async def test_the_command_gets_no_provider_keys(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys in the harness's environment never reach the command's environment; chosen
    variables do (`env`, and `pass_env` copied at call time)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-openai-1")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "secret-token-2")
    monkeypatch.setenv("PROJECT_MODE", "fast")
    clock = SystemClock()
    tool = _tool(kind, clock, env={"GREETING": "hello"}, pass_env=["PROJECT_MODE"])
    result = await _call(tool, tmp_path, clock, command="env")
    assert "GREETING=hello" in result.content
    assert "PROJECT_MODE=fast" in result.content
    assert "sk-secret-openai-1" not in result.content
    assert "secret-token-2" not in result.content


@pytest.mark.anyio
@needs_bwrap
async def test_under_bubblewrap_no_process_environment_shows_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under bubblewrap the command sees only its own processes: reading every
    /proc/*/environ it can find shows no key of the harness's (locally it could read the
    harness's own, which the README says)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-3")
    clock = SystemClock()
    tool = run_command_tool(BubblewrapSandbox(clock=clock))
    command = (
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null; echo scanned"
    )
    result = await _call(tool, tmp_path, clock, command=command)
    assert "scanned" in result.content
    assert "sk-ant-secret-3" not in result.content


@pytest.mark.anyio
@pytest.mark.parametrize("local", [None, LocalSandbox()], ids=["no sandbox", "local sandbox"])
async def test_python_keeps_bytecode_outside_the_workspace_as_a_checks_does(
    tmp_path: Path, local: LocalSandbox | None
) -> None:
    """The agent's Python commands cache bytecode in the checks' prefix (the user's cache),
    not in the workspace, and no image of the workspace is left there: an edit within the
    second is never run stale, and the next test run does not compile its imports again."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    clock = SystemClock()
    command = (
        f"{sys.executable} -c 'import calc, calendar, sys; "
        "print(sys.pycache_prefix, sys.dont_write_bytecode)'"
    )
    result = await _call(run_command_tool(local), workspace, clock, command=command)
    assert f"{bytecode_prefix()} False" in result.content, result.content
    assert not (workspace / "__pycache__").exists()
    image = bytecode_prefix().joinpath(*workspace.resolve().parts[1:])
    assert not image.exists()
    assert list(bytecode_prefix().rglob("calendar.*.pyc"))


@pytest.mark.anyio
@needs_bwrap
async def test_under_bubblewrap_python_neither_reads_nor_writes_bytecode(tmp_path: Path) -> None:
    """Another sandbox sees other paths: its commands get no bytecode cache at all."""
    clock = SystemClock()
    tool = run_command_tool(BubblewrapSandbox(clock=clock))
    command = "python3 -c 'import sys; print(sys.dont_write_bytecode)'"
    result = await _call(tool, tmp_path, clock, command=command)
    assert "True" in result.content, result.content


def test_names_that_look_like_credentials_are_secrets() -> None:
    """The rule: KEY, API_KEY, TOKEN, SECRET, PASSWORD, CREDENTIALS, AUTH as a word, or a
    provider's prefix, marks a secret; ordinary names are not."""
    secrets = [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "APIKEY",
        "GITHUB_TOKEN",
        "HF_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "DB_PASSWORD",
        "MY_SECRET",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "npm_config_auth",
        "SSH_KEY",
    ]
    ordinary = [
        "PATH",
        "HOME",
        "LANG",
        "PYTHONPATH",
        "KEYBOARD",
        "TOKENIZERS_PARALLELISM",
        "MONKEY",
    ]
    assert [n for n in secrets if not is_secret_name(n)] == []
    assert [n for n in ordinary if is_secret_name(n)] == []


def test_configuring_a_secret_or_a_bad_value_is_refused() -> None:
    """Handing the command a variable that looks like a credential is a configuration error,
    as is a timeout above the maximum or a sandbox that is not one."""
    with pytest.raises(ConfigurationError, match=r"'OPENAI_API_KEY' looks like a credential"):
        run_command_tool(pass_env=["OPENAI_API_KEY"])
    with pytest.raises(ConfigurationError, match=r"'DEPLOY_TOKEN' looks like a credential"):
        run_command_tool(env={"DEPLOY_TOKEN": "x"})
    with pytest.raises(ConfigurationError, match=r"'timeout' \(90\) must not exceed"):
        run_command_tool(timeout=90, max_timeout=60)
    with pytest.raises(ConfigurationError, match=r"'sandbox' must be a CommandSandbox"):
        run_command_tool(cast(Any, "bwrap"))
    with pytest.raises(ConfigurationError, match=r"'pass_env' must be a list of names"):
        run_command_tool(pass_env=cast(Any, "PATH"))


def test_the_shell_is_off_unless_asked_for() -> None:
    """`workspace_tools()` has no `run_command`; `shell=True` adds it; a sandbox without
    `shell=True` is refused rather than silently ignored."""
    assert "run_command" not in [t.name for t in workspace_tools()]
    tools = workspace_tools(shell=True, timeout=5)
    assert [t.name for t in tools][-1] == "run_command"
    assert not tools[-1].read_only
    with pytest.raises(ConfigurationError, match="shell=False"):
        workspace_tools(sandbox=LocalSandbox())


def test_the_sandboxes_of_checks_are_command_sandboxes() -> None:
    """`checks`' sandboxes satisfy the harness's `CommandSandbox` protocol as they are."""
    assert isinstance(LocalSandbox(), CommandSandbox)
    if shutil.which("bwrap") is not None:
        assert isinstance(BubblewrapSandbox(), CommandSandbox)


def test_output_is_cut_in_the_middle_with_an_exact_count() -> None:
    """Output kept whole but longer than the cap, and output the process already cut, both
    show head and tail with the bytes cut and the size in all."""
    from harness._tools._shell import render_command_result

    whole = ProcessResult(0, "a" * 50 + "b" * 50, False, False, 0.1)
    assert render_command_result(whole, 5, 20).endswith(
        "a" * 10 + "\n[... 80 bytes of output cut here (100 bytes in all) ...]\n" + "b" * 10
    )
    cut = ProcessResult(1, "t" * 30, False, True, 0.1, output_head="h" * 30, omitted=1000)
    text = render_command_result(cut, 5, 20)
    assert text.endswith(
        "h" * 10 + "\n[... 1,040 bytes of output cut here (1,060 bytes in all) ...]\n" + "t" * 10
    )
    short = ProcessResult(0, "ok\n", False, False, 0.1)
    assert render_command_result(short, 5, 20).endswith("---\nok\n")
