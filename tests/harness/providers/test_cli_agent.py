"""Command-line agents as the model: a real executable, run once per turn in the workspace."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
import pytest
from _processes import gone, running

from harness import CliAgentClient, ConfigurationError, Harness, Message, ModelFailed, TurnFinished
from harness.extend import Clock, ModelRequest, ModelResponse, render_prompt
from harness.testing import FakeClock, ListSink
from strategies import Ralph, SelfVerifying
from termination import Budget, TerminationPolicy

pytestmark = pytest.mark.anyio

AGENT = """\
#!{python}
import os, pathlib, subprocess, sys

mode = os.environ.get("AGENT_MODE", "step")
prompt = sys.argv[-1] if "--prompt" in sys.argv else sys.stdin.read()
log = os.environ.get("PROMPT_LOG")
if log:
    with open(log, "a") as f:
        f.write(prompt + "\\n=====\\n")
progress = pathlib.Path("progress.txt")
steps = len(progress.read_text().splitlines()) if progress.exists() else 0
if mode == "step":
    with progress.open("a") as f:
        f.write(f"step {{steps + 1}}\\n")
    print(f"did step {{steps + 1}}")
elif mode == "judge":
    print(f"I see {{steps}} steps.")
    print("VERDICT: PASS" if steps >= 2 else "VERDICT: FAIL\\nneeds a second step")
elif mode == "fail":
    print("cannot log in", file=sys.stderr)
    sys.exit(3)
elif mode == "hang":
    child = subprocess.Popen(["sleep", "100"])
    print("working", flush=True)
    pathlib.Path(os.environ["PID_FIFO"]).write_text(str(child.pid))
    child.wait()
elif mode == "env":
    print("secret=" + os.environ.get("SECRET_TOKEN", "-"))
    print("other=" + os.environ.get("OTHER_VAR", "-"))
"""


class Steps:
    """Done when progress.txt in the workspace has `needed` lines."""

    def __init__(self, needed: int) -> None:
        self.needed = needed

    async def check(self, state: Any) -> str | None:
        path = state.workspace / "progress.txt"
        have = len(path.read_text().splitlines()) if path.exists() else 0
        return None if have >= self.needed else f"progress.txt has {have} of {self.needed} steps"

    def description(self) -> str:
        return f"progress.txt must have {self.needed} steps"


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(python=sys.executable))
    script.chmod(0o755)
    return script


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def prompts(log: Path) -> list[str]:
    return [p.strip() for p in log.read_text().split("=====") if p.strip()]


async def test_the_plain_loop_feeds_the_check_reason_into_the_next_prompt(
    agent: Path, workspace: Path, tmp_path: Path
) -> None:
    """Each turn is a claim of done; the check's latest reason is in the next turn's prompt."""
    log = tmp_path / "prompts.log"
    client = CliAgentClient([str(agent)], env={"PROMPT_LOG": str(log)})
    sink = ListSink()
    harness = Harness(
        model=client,
        policy=TerminationPolicy(completion_check=Steps(3)),
        workspace=workspace,
        sinks=[sink],
    )
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified
    assert result.turns == 3
    assert (workspace / "progress.txt").read_text() == "step 1\nstep 2\nstep 3\n"
    texts = [cast(TurnFinished, e).response.text for e in sink.of_type(TurnFinished)]
    assert texts == ["did step 1", "did step 2", "did step 3"]
    first, second, third = prompts(log)
    assert all("Add steps to progress.txt." in p for p in (first, second, third))
    assert "progress.txt must have 3 steps" in first
    assert "has 1 of 3 steps" not in first
    assert "progress.txt has 1 of 3 steps" in second
    assert "progress.txt has 2 of 3 steps" in third
    assert "1 of 3" not in third
    assert result.usage.cost_usd is None


async def test_ralph_runs_the_agent_in_fresh_iterations_carrying_the_reason(
    agent: Path, workspace: Path, tmp_path: Path
) -> None:
    """Ralph wraps the command: one iteration per claim, the reason carried into the next."""
    log = tmp_path / "prompts.log"
    client = CliAgentClient([str(agent)], env={"PROMPT_LOG": str(log)})
    harness = Harness(
        model=client,
        policy=TerminationPolicy(completion_check=Steps(2)),
        strategy=Ralph(max_iterations=4),
        workspace=workspace,
    )
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified
    assert result.iterations == 2
    first, second = prompts(log)
    assert "iteration 2 of at most 4" in second
    assert "progress.txt has 1 of 2 steps" in second
    assert "iteration 2" not in first


async def test_self_verifying_can_use_command_line_agents_for_both_roles(
    agent: Path, workspace: Path
) -> None:
    """A command-line builder is judged by a command-line evaluator until it says PASS."""
    builder = CliAgentClient([str(agent)])
    evaluator = CliAgentClient([str(agent)], env={"AGENT_MODE": "judge"})
    harness = Harness(
        model=builder,
        policy=TerminationPolicy(),
        # The command-line evaluator reads the work with its own tools, which the run cannot see.
        strategy=SelfVerifying(evaluator=evaluator, max_rounds=3, evaluator_must_use_tools=False),
        workspace=workspace,
    )
    result = await harness.run("Add steps to progress.txt.")
    assert result.verified
    assert (workspace / "progress.txt").read_text() == "step 1\nstep 2\n"


async def test_the_prompt_can_be_an_argument(agent: Path, workspace: Path, tmp_path: Path) -> None:
    """In argument mode the "{prompt}" item of argv is replaced by the prompt."""
    log = tmp_path / "prompts.log"
    client = CliAgentClient(
        [str(agent), "--prompt", "{prompt}"], prompt="argument", env={"PROMPT_LOG": str(log)}
    )
    assert client.command("p") == [str(agent), "--prompt", "p"]
    assert CliAgentClient(["x"], prompt="argument").command("p") == ["x", "p"]
    harness = Harness(
        model=client, policy=TerminationPolicy(completion_check=Steps(1)), workspace=workspace
    )
    result = await harness.run("One step, please.")
    assert result.verified
    assert "One step, please." in prompts(log)[0]


async def test_a_failing_command_halts_the_run_with_its_output(
    agent: Path, workspace: Path
) -> None:
    """A non-zero exit is a ModelFailed that quotes the exit code and the output."""
    client = CliAgentClient([str(agent)], env={"AGENT_MODE": "fail"})
    harness = Harness(model=client, policy=TerminationPolicy(), workspace=workspace)
    result = await harness.run("anything")
    assert isinstance(result.halt_reason, ModelFailed)
    assert "exited with code 3" in result.halt_reason.message
    assert "cannot log in" in result.halt_reason.message


async def test_a_timeout_kills_the_process_tree_and_returns_what_it_printed(
    agent: Path, workspace: Path, tmp_path: Path
) -> None:
    """At the timeout the agent and its children are killed; the turn ends as 'timeout'."""
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    clock = FakeClock()
    client = CliAgentClient(
        [str(agent)],
        timeout=30,
        env={"AGENT_MODE": "hang", "PID_FIFO": str(fifo)},
        clock=cast(Clock, clock),
    )
    request = ModelRequest([Message.user("go")], workspace=workspace)
    responses: list[ModelResponse] = []

    async def call() -> None:
        responses.append(await client.complete(request))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        grandchild = int(await anyio.to_thread.run_sync(fifo.read_text))
        assert running(grandchild)
        clock.advance(30)
    [response] = responses
    assert response.stop_reason == "timeout"
    assert response.text.startswith("working")
    assert "stopped after 30s" in response.text
    assert response.tool_calls == ()
    assert await gone(grandchild)


async def test_cancellation_kills_the_process_tree(
    agent: Path, workspace: Path, tmp_path: Path
) -> None:
    """Cancelling the turn from outside kills the agent and everything it started."""
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    client = CliAgentClient([str(agent)], env={"AGENT_MODE": "hang", "PID_FIFO": str(fifo)})
    request = ModelRequest([Message.user("go")], workspace=workspace)
    finished: list[ModelResponse] = []

    async def call() -> None:
        finished.append(await client.complete(request))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        grandchild = int(await anyio.to_thread.run_sync(fifo.read_text))
        tg.cancel_scope.cancel()
    assert finished == []
    assert await gone(grandchild)


async def test_only_named_variables_reach_the_agent_and_their_values_are_redacted(
    agent: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pass_env forwards a variable (its value redacted from output); others stay behind."""
    monkeypatch.setenv("SECRET_TOKEN", "tok-123456789")
    monkeypatch.setenv("OTHER_VAR", "leaked")
    client = CliAgentClient([str(agent)], env={"AGENT_MODE": "env"}, pass_env=["SECRET_TOKEN"])
    response = await client.complete(ModelRequest([Message.user("go")], workspace=workspace))
    assert response.text == "secret=[redacted]\nother=-"


async def test_a_client_without_a_folder_is_a_configuration_error() -> None:
    """With neither a workspace nor a cwd there is nowhere to run the agent."""
    with pytest.raises(ConfigurationError, match="needs a folder"):
        await CliAgentClient(["true"]).complete(ModelRequest([Message.user("go")]))


def test_the_prompt_is_the_system_prompt_task_and_what_is_new() -> None:
    """render_prompt keeps the task and the feedback since the last answer, not old answers."""
    messages = [
        Message.system("SYSTEM"),
        Message.user("TASK"),
        Message.feedback("previous_iteration", "CARRIED"),
        Message.assistant("OLD ANSWER"),
        Message.feedback("completion_check", "REASON 1"),
        Message.assistant("NEWER ANSWER"),
        Message.feedback("completion_check", "REASON 2"),
    ]
    prompt = render_prompt(ModelRequest(messages))
    assert prompt.startswith("SYSTEM\n\nTASK\n\n")
    assert "REASON 2" in prompt
    assert "REASON 1" not in prompt
    assert "CARRIED" not in prompt
    assert "ANSWER" not in prompt
    first = render_prompt(ModelRequest(messages[:3]))
    assert "CARRIED" in first


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"argv": []}, "'argv'"),
        ({"argv": "claude -p"}, "'argv'"),
        ({"prompt": "file"}, "'prompt'"),
        ({"timeout": 0}, "'timeout'"),
        ({"pass_env": "KEY"}, "'pass_env'"),
        ({"max_output": 0}, "'max_output'"),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs: dict[str, Any], name: str) -> None:
    """Each invalid argument names itself."""
    args: dict[str, Any] = {"argv": ["claude", "-p"], **kwargs}
    argv = args.pop("argv")
    with pytest.raises(ConfigurationError, match=name):
        CliAgentClient(argv, **args)


def test_a_cost_budget_is_refused_because_the_cost_is_unknown() -> None:
    """A command-line agent reports no tokens, so a cost budget cannot be enforced."""
    with pytest.raises(ConfigurationError, match="max_cost_usd"):
        Harness(
            model=CliAgentClient(["claude", "-p"]),
            policy=TerminationPolicy(budget=Budget(max_cost_usd=1.0)),
        )
