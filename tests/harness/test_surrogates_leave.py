"""A lone surrogate (a non-UTF-8 file name that `list_files` returned) in a tool result must not
end the run where text leaves the process: a provider's request and a command-line agent's
standard input."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _provider_server import FakeProvider, Reply, anthropic_body, fake_provider, openai_body

from harness import (
    AnthropicClient,
    CliAgentClient,
    Harness,
    ModelClient,
    OpenAIClient,
    list_files,
)
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

NAME = b"caf\xe9.txt"  # Latin-1: Python lists it as 'caf\udce9.txt'


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with fake_provider() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    with open(os.path.join(os.fsencode(ws), NAME), "wb") as handle:
        handle.write(b"x")
    return ws


class Once:
    """Done at the second claim: the first run of the check asks for another turn."""

    def __init__(self) -> None:
        self.calls = 0

    async def check(self, state: Any) -> str | None:
        self.calls += 1
        return None if self.calls > 1 else "look again"

    def description(self) -> str:
        return "say done twice"


async def run(model: ModelClient, workspace: Path) -> Any:
    harness = Harness(
        model=model,
        policy=TerminationPolicy(completion_check=Once()),
        tools=[list_files],
        workspace=workspace,
    )
    return await harness.run("list the files")


LIST = {"id": "c1", "name": "list_files", "arguments": "{}"}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_provider_request_carries_the_name_as_an_escape(
    provider: FakeProvider, workspace: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The tool result with the surrogate goes to the provider as ``\\udce9`` text (valid
    UTF-8 JSON), and the run goes on to its verified end."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    model: ModelClient
    if kind == "openai":
        provider.script(
            Reply(openai_body("", tool_calls=[LIST])),
            Reply(openai_body("done")),
            Reply(openai_body("done")),
        )
        model = OpenAIClient("gpt-4o-mini", base_url=provider.url)
    else:
        use = {"type": "tool_use", "id": "c1", "name": "list_files", "input": {}}
        provider.script(
            Reply(anthropic_body([use], stop_reason="tool_use")),
            Reply(anthropic_body([{"type": "text", "text": "done"}])),
            Reply(anthropic_body([{"type": "text", "text": "done"}])),
        )
        model = AnthropicClient("claude-sonnet-4-20250514", base_url=provider.url)
    result = await run(model, workspace)
    assert result.verified, result.halt_reason
    sent = str(provider.requests[1].body["messages"])
    assert "caf\\\\udce9.txt" in sent


AGENT = """\
import sys
prompt = sys.stdin.buffer.read()
with open(sys.argv[1], "ab") as log:
    log.write(prompt + b"\\n--\\n")
print("done")
"""


async def test_a_command_line_agent_reads_the_names_own_bytes(
    workspace: Path, tmp_path: Path
) -> None:
    """A name with a surrogate in the prompt (here the task; a check's reason can carry one
    too) reaches the agent's stdin as the name's own bytes, as it would in an argument."""
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    log = tmp_path / "prompts.log"
    agent = CliAgentClient([sys.executable, str(script), str(log)], prompt="stdin")
    harness = Harness(
        model=agent, policy=TerminationPolicy(completion_check=Once()), workspace=workspace
    )
    result = await harness.run(f"the file is {os.fsdecode(NAME)}")
    assert result.verified, result.halt_reason
    assert b"the file is " + NAME in log.read_bytes()
