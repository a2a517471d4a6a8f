"""`harness run` and `harness hook claude-stop` attacked from outside, as real processes: the
process exits once the run has returned, and SIGTERM or SIGINT ends a run like a deadline,
with a typed halt, the paths printed, a documented exit code and nothing left running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60  # seconds a command under test may take before the test calls it hung

BLOCKING_TOOL = '''
import time


def block() -> str:
    """Blocks its thread far longer than any test waits."""
    time.sleep(1000)
    return "woke"
'''


def _harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "strategies", *args]


def _env(*paths: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *map(str, paths)])
    return env


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_process_exits_once_the_run_returns_while_a_sync_tool_still_blocks(
    tmp_path: Path, backend: str
) -> None:
    """A sync tool stuck in time.sleep(1000) is abandoned at the 1 s wall time, and the
    command exits then: the tool's thread does not hold the interpreter open (it did on
    asyncio)."""
    (tmp_path / "blocking_tool.py").write_text(BLOCKING_TOOL)
    (tmp_path / "ws").mkdir()
    (tmp_path / "script.jsonl").write_text(
        json.dumps({"tool_calls": [{"name": "block", "arguments": {}}]}) + "\n"
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "block"\nworkspace = "ws"\ntools = ["blocking_tool:block"]\n'
        '[model]\ntype = "fixture"\npath = "script.jsonl"\n'
        "[budget]\nmax_wall_time = 1\n"
        '[[checks]]\ntype = "files"\npaths = ["done.txt"]\n'
    )
    done = subprocess.run(
        _harness("run", str(spec), "-q", "--backend", backend),
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=TIMEOUT,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("NOT VERIFIED: budget exceeded: max_wall_time")
