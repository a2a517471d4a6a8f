"""The tools demo: a scripted API agent runs the tests with `run_command`, fixes the code with
`edit_file` and is verified by a `TestSuiteCheck`, locally and under bubblewrap."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from checks import BubblewrapSandbox, LocalSandbox, SandboxProvider, TestSuiteCheck
from harness import (
    Compaction,
    Completed,
    Harness,
    ScriptedModelClient,
    ToolCalled,
    workspace_tools,
)
from harness.testing import ListSink
from strategies import load_spec
from strategies._cli import main
from termination import Budget, TerminationPolicy

DEMO = Path(__file__).parents[3] / "fixtures" / "tools"
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


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", ["local", pytest.param("bubblewrap", marks=needs_bwrap)])
def test_harness_run_runs_the_demo_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str, kind: str
) -> None:
    """`harness run fixtures/tools/spec.toml` exits 0 verified, with the sandbox the spec
    names for the shell and the check; the template workspace is left as it was."""
    spec = tmp_path / "spec.toml"
    text = (DEMO / "spec.toml").read_text().replace('sandbox = "local"', f'sandbox = "{kind}"')
    spec.write_text(
        text.replace('"workspace"', f'"{DEMO / "workspace"}"').replace(
            '"agent.jsonl"', f'"{DEMO / "agent.jsonl"}"'
        )
    )
    transcript = tmp_path / "run.jsonl"
    before = (DEMO / "workspace" / "calc.py").read_text()
    code = main(["run", str(spec), "--transcript", str(transcript), "--backend", backend])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("VERIFIED COMPLETE: completed")
    assert "failing: test_calc.TotalTest.test_disco" in err
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    calls = [e["call"]["name"] for e in events if e["event"] == "tool.called"]
    assert calls == ["run_command", "search_files", "edit_file", "run_command"]
    assert (DEMO / "workspace" / "calc.py").read_text() == before


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('tools = ["run_command"]', "tools[0] 'run_command' is the shell, which is configured"),
        ("[tools]\ntimeout = 5", "tools.timeout is set but the shell is off (set shell = true)"),
        ("[tools]\nshell = true\nshel = 1", "unknown key 'shel' for the tools table"),
        ('[tools]\nshell = true\nsandbox = "docker"', "unknown sandbox 'docker'"),
        ('[tools]\nshell = true\npass_env = ["GITHUB_TOKEN"]', "'GITHUB_TOKEN' looks like a"),
        ('compaction = "summarize"', "'compaction' needs 'context_window'"),
        ('compaction = "forget"\ncontext_window = 1000', "compaction must be one of"),
    ],
)
def test_tools_and_compaction_settings_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, message: str
) -> None:
    """A bad `[tools]` table or `compaction` is a spec error naming the file and the key."""
    (tmp_path / "ws").mkdir()
    spec = tmp_path / "spec.toml"
    top, _, table = setting.partition("[tools]")
    body = f'prompt = "p"\nworkspace = "ws"\n{top}\n'
    if table:
        body += f"[tools]{table}\n"
    body += '[[checks]]\ntype = "files"\npaths = ["x"]\n'
    spec.write_text(body)
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert str(spec) in err
    assert message in err


def test_the_tools_table_gives_the_workspace_tools_and_the_shell(tmp_path: Path) -> None:
    """`[tools] shell = true` gives the five workspace tools and `run_command`; the list form
    is unchanged; `compaction` reaches the harness."""
    (tmp_path / "ws").mkdir()
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "p"\nworkspace = "ws"\ncontext_window = 8000\ncompaction = "summarize"\n'
        '[tools]\nshell = true\n[model]\ntype = "fixture"\npath = "x.jsonl"\n'
        '[[checks]]\ntype = "files"\npaths = ["x"]\n'
    )
    loaded = load_spec(spec, purpose="checks")
    assert [t.name for t in loaded.tools] == [
        "read_file",
        "list_files",
        "search_files",
        "write_file",
        "edit_file",
        "run_command",
    ]
    assert loaded.compaction == Compaction("summarize")
