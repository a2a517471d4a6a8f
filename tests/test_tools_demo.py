"""The tools demo: a scripted API agent runs the tests with `run_command`, fixes the code with
`edit_file` and is verified by a `TestSuiteCheck`, locally and under bubblewrap."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checks import BubblewrapSandbox, LocalSandbox, SandboxProvider, TestSuiteCheck
from harness import Completed, Harness, ScriptedModelClient, ToolCalled, workspace_tools
from harness.testing import ListSink
from termination import Budget, TerminationPolicy

DEMO = Path(__file__).parent.parent / "fixtures" / "tools"
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bwrap is not installed (apt-get install bubblewrap); the isolation cannot be tested",
)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["local", pytest.param("bubblewrap", marks=needs_bwrap)])
async def test_the_agent_runs_the_tests_fixes_the_code_and_is_verified(
    tmp_path: Path, kind: str
) -> None:
    """The early claim is refused with the failing test's name; the agent's own test run shows
    the failure, its edit fixes it, and the check's own run of the suite passes."""
    workspace = tmp_path / "ws"
    shutil.copytree(DEMO / "workspace", workspace)
    sandbox: SandboxProvider = BubblewrapSandbox() if kind == "bubblewrap" else LocalSandbox()
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_jsonl(DEMO / "agent.jsonl"),
        policy=TerminationPolicy(
            budget=Budget(max_turns=10),
            completion_check=TestSuiteCheck("python3 -m unittest -v", sandbox=sandbox),
        ),
        tools=workspace_tools(shell=True, sandbox=sandbox),
        workspace=workspace,
        sinks=[sink],
    )
    result = await harness.run("Make the tests pass.")
    assert result.halt_reason == Completed()
    assert result.verified
    names = [e.call.name for e in sink.events if isinstance(e, ToolCalled)]
    assert names == ["run_command", "search_files", "edit_file", "run_command"]
    assert "(100 - discount) / 100" in (workspace / "calc.py").read_text()
    assert (workspace / "test_calc.py").read_text() == (
        DEMO / "workspace" / "test_calc.py"
    ).read_text()
    assert not (workspace / "__pycache__").exists()  # commands leave no bytecode behind
