"""What the agent's shell costs: one `run_command` call, locally and under bubblewrap, and a
command that floods its output.

    python bench/shell.py            # 20 calls per row, a 100 MB flood
    python bench/shell.py --quick    # 5 calls per row, a 10 MB flood

C: wall time of a `run_command` call running `true`, in ms (median), through the tool as the
   loop calls it: with no sandbox, `LocalSandbox` and `BubblewrapSandbox` (skipped where
   ``bwrap`` is not installed).
F: wall time of a call whose command prints N MB, in s, and MB/s read; the model sees 16,000
   characters of it whatever N is.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from checks import BubblewrapSandbox, LocalSandbox
from harness import Tool, ToolCall, ToolContext, run_command_tool
from harness.extend import CommandSandbox, SessionStore, SystemClock


async def _call(tool: Tool, workspace: Path, command: str) -> str:
    arguments: dict[str, Any] = {"command": command}
    call = ToolCall("c1", tool.name, arguments)
    context = ToolContext(workspace, SessionStore(), SystemClock(), call, "bench")
    result = await tool.call(arguments, context, time_limit=600)
    assert not result.is_error, result.content
    return result.content


async def main(quick: bool) -> None:
    calls = 5 if quick else 20
    megabytes = 10 if quick else 100
    sandboxes: dict[str, CommandSandbox | None] = {"none": None, "local": LocalSandbox()}
    if shutil.which("bwrap") is not None:
        sandboxes["bubblewrap"] = BubblewrapSandbox()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        print(f"C: one run_command call running `true`, median of {calls}")
        for name, sandbox in sandboxes.items():
            tool = run_command_tool(sandbox)
            samples = []
            for _ in range(calls):
                started = time.perf_counter()
                await _call(tool, workspace, "true")
                samples.append(time.perf_counter() - started)
            print(f"   sandbox {name:<11} {statistics.median(samples) * 1000:8.1f} ms")
        print(f"F: a command printing {megabytes} MB")
        command = f"head -c {megabytes * 1_000_000} /dev/zero | tr '\\0' x"
        for name, sandbox in sandboxes.items():
            tool = run_command_tool(sandbox)
            started = time.perf_counter()
            text = await _call(tool, workspace, command)
            took = time.perf_counter() - started
            print(
                f"   sandbox {name:<11} {took:8.2f} s  {megabytes / took:8.0f} MB/s  "
                f"{len(text):,} characters shown"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls, a smaller flood")
    anyio.run(main, parser.parse_args().quick)
