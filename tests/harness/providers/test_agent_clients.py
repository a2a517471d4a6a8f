"""Gemini CLI and Cursor's agent as models: fake agents print each agent's documented JSON,
and the answer and token usage are read from it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

import pytest

from harness import (
    CursorAgentClient,
    GeminiCliClient,
    Harness,
    Message,
    ModelError,
    ModelFailed,
    OpenCodeClient,
    TurnFinished,
    Usage,
    model_from_config,
)
from harness._providers._agent_clients import cursor_answer, gemini_answer, opencode_answer
from harness._providers._agent_defaults import JSON_MAX_OUTPUT
from harness.extend import ModelRequest
from harness.testing import ListSink
from termination import TerminationPolicy

FAKES = Path(__file__).resolve().parents[2] / "fakes"
GEMINI = [sys.executable, str(FAKES / "fake_gemini.py")]
CURSOR = [sys.executable, str(FAKES / "fake_cursor_agent.py")]
OPENCODE = [sys.executable, str(FAKES / "fake_opencode.py")]


class Steps:
    """Done when steps.txt in the workspace has `needed` lines."""

    def __init__(self, needed: int) -> None:
        self.needed = needed

    async def check(self, state: Any) -> str | None:
        path = state.workspace / "steps.txt"
        have = len(path.read_text().splitlines()) if path.exists() else 0
        return None if have >= self.needed else f"steps.txt has {have} of {self.needed} steps"

    def description(self) -> str:
        return f"steps.txt must have {self.needed} steps"


def request(workspace: Path) -> ModelRequest:
    return ModelRequest(messages=[Message.user("Write a step.")], workspace=workspace)


@pytest.mark.parametrize(
    ("form", "usage"),
    [
        ("json", Usage(1200, 400, 200, cost_usd=None)),  # output = candidates + thoughts
        ("stream-json", Usage(1200, 300, 200, cost_usd=None)),
    ],
)
@pytest.mark.anyio
async def test_a_gemini_run_is_verified_with_the_tokens_gemini_reports(
    form: str, usage: Usage, tmp_path: Path
) -> None:
    """Two turns until the check passes; each answer is Gemini's response text alone (not the
    echoed prompt, not the stats), and the run's usage adds up what Gemini reported."""
    sink = ListSink()
    harness = Harness(
        model=GeminiCliClient([*GEMINI, "--output-format", form]),
        policy=TerminationPolicy(completion_check=Steps(2)),
        workspace=tmp_path,
        sinks=[sink],
    )
    result = await harness.run("Write two steps.")
    assert result.verified
    texts = [cast(TurnFinished, e).response.text for e in sink.of_type(TurnFinished)]
    assert [t.split(" (")[0] for t in texts] == ["Wrote step 1", "Wrote step 2"]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (
        2 * usage.input_tokens,
        2 * usage.output_tokens,
    )
    assert result.usage.cached_tokens == 2 * usage.cached_tokens
    assert result.usage.cost_usd is None


@pytest.mark.parametrize("form", ["json", "stream-json"])
@pytest.mark.anyio
async def test_a_cursor_run_is_verified_from_its_result_text(form: str, tmp_path: Path) -> None:
    """The prompt goes in as the last argument; the answer is the result event's text; Cursor
    reports no tokens, so none are counted and the cost is unknown."""
    sink = ListSink()
    harness = Harness(
        model=CursorAgentClient([*CURSOR, "-p", "--output-format", form]),
        policy=TerminationPolicy(completion_check=Steps(2)),
        workspace=tmp_path,
        sinks=[sink],
    )
    result = await harness.run("Write two steps.")
    assert result.verified
    texts = [cast(TurnFinished, e).response.text for e in sink.of_type(TurnFinished)]
    assert [t.split(" (")[0] for t in texts] == ["Wrote step 1", "Wrote step 2"]
    assert result.usage.total_tokens == 0
    assert result.usage.cost_usd is None


@pytest.mark.anyio
async def test_an_opencode_run_answers_with_its_last_step_and_counts_every_step(
    tmp_path: Path,
) -> None:
    """The answer is the text of the step that stopped, not the one before the tool call; the
    tokens add up both steps, with cache reads and writes as input and reasoning as output."""
    sink = ListSink()
    harness = Harness(
        model=OpenCodeClient([*OPENCODE, "run", "--format", "json"]),
        policy=TerminationPolicy(completion_check=Steps(1)),
        workspace=tmp_path,
        sinks=[sink],
    )
    result = await harness.run("Write a step.")
    assert result.verified
    [finished] = sink.of_type(TurnFinished)
    assert cast(TurnFinished, finished).response.text.startswith("Wrote step 1 (")
    assert result.usage.input_tokens == (500 + 120) + (700 + 120)
    assert result.usage.output_tokens == (50 + 10) + (40 + 10)
    assert result.usage.cached_tokens == 200
    assert result.usage.cost_usd is None


@pytest.mark.anyio
async def test_warnings_around_the_json_do_not_hide_the_answer(tmp_path: Path) -> None:
    """stdout and stderr arrive together: the pretty-printed object is found among them."""
    client = GeminiCliClient([*GEMINI, "--output-format", "json"], env={"FAKE_MODE": "noise"})
    response = await client.complete(request(tmp_path))
    assert response.text.startswith("Wrote step 1")
    assert response.usage.input_tokens == 1200


@pytest.mark.parametrize(
    ("client", "message"),
    [
        (
            GeminiCliClient([*GEMINI, "--output-format", "json"], env={"FAKE_MODE": "error"}),
            "Please sign in",
        ),
        (
            CursorAgentClient(
                [*CURSOR, "-p", "--output-format", "json"], env={"FAKE_MODE": "error"}
            ),
            "You have been logged out",
        ),
        (
            OpenCodeClient([*OPENCODE, "run", "--format", "json"], env={"FAKE_MODE": "error"}),
            "No API key for provider",
        ),
    ],
)
@pytest.mark.anyio
async def test_an_agents_documented_failure_halts_the_run_with_its_message(
    client: Any, message: str, tmp_path: Path
) -> None:
    """A failure is a ModelFailed quoting what the agent said, never an empty answer."""
    harness = Harness(model=client, policy=TerminationPolicy(), workspace=tmp_path)
    result = await harness.run("anything")
    assert isinstance(result.halt_reason, ModelFailed)
    assert message in result.halt_reason.message


@pytest.mark.parametrize(
    ("client", "flag"),
    [
        (GeminiCliClient(GEMINI), "--output-format json"),
        (CursorAgentClient([*CURSOR, "-p"]), "-p --output-format json"),
        (OpenCodeClient([sys.executable, "-c", "print('hello')"]), "run --format json"),
    ],
)
@pytest.mark.anyio
async def test_output_without_the_documented_json_is_a_clear_error(
    client: Any, flag: str, tmp_path: Path
) -> None:
    """An argv without the output flag prints text: the error names the flag to add."""
    with pytest.raises(ModelError, match=flag) as caught:
        await client.complete(request(tmp_path))
    assert caught.value.kind == "malformed"


def test_the_spec_names_each_agent_as_a_model(tmp_path: Path) -> None:
    """`[model] type = "gemini_cli"` / `"cursor_agent"` build the clients, with the agent's
    documented headless command line when no argv is given."""
    gemini = model_from_config({"type": "gemini_cli"}, base=tmp_path)
    assert isinstance(gemini, GeminiCliClient)
    assert gemini.argv == ("gemini", "--output-format", "json")
    assert gemini.prompt_mode == "stdin"
    cursor = model_from_config(
        {"type": "cursor_agent", "timeout": 60, "pass_env": ["CURSOR_API_KEY"]}, base=tmp_path
    )
    assert isinstance(cursor, CursorAgentClient)
    assert cursor.command("do it") == ["cursor-agent", "-p", "--output-format", "json", "do it"]
    assert (cursor.timeout, cursor.pass_env) == (60.0, ("CURSOR_API_KEY",))
    opencode = model_from_config({"type": "opencode"}, base=tmp_path)
    assert isinstance(opencode, OpenCodeClient)
    assert opencode.command("go") == ["opencode", "run", "--format", "json", "go"]
    custom = model_from_config(
        {"type": "gemini_cli", "argv": ["gemini", "-o", "stream-json", "-y"]}, base=tmp_path
    )
    assert custom.argv == ("gemini", "-o", "stream-json", "-y")  # type: ignore[attr-defined]
    assert "GeminiCliClient" in repr(custom)


@pytest.mark.parametrize(
    ("read", "output", "message"),
    [
        (
            gemini_answer,
            '{"type": "init", "session_id": "s", "model": "m"}\n'
            '{"type": "result", "status": "error", "error": {"type": "FatalTurnLimitedError", '
            '"message": "Reached max session turns"}}\n',
            "FatalTurnLimitedError: Reached max session turns",
        ),
        (
            gemini_answer,
            '{\n  "session_id": "s",\n  "error": {"type": "ApiError", "message": "quota"}\n}\n',
            "ApiError: quota",
        ),
        (
            cursor_answer,
            '{"type": "result", "subtype": "error", "is_error": true, "result": "tool crashed"}',
            "tool crashed",
        ),
        (opencode_answer, "{not json\nplain words\n", "run --format json"),
    ],
)
def test_a_documented_error_in_the_json_is_a_model_error_naming_it(
    read: Any, output: str, message: str
) -> None:
    """An error the agent reports in its JSON (even with exit code 0) fails the turn."""
    with pytest.raises(ModelError, match=message):
        read(output)


def test_the_json_clients_keep_enough_output_for_a_whole_object() -> None:
    """A pretty-printed object must fit whole, so these clients keep 4 MiB, not the tail of 64 KiB;
    `max_output=` still sets it."""
    assert GeminiCliClient().max_output == JSON_MAX_OUTPUT == 4 * 1024 * 1024
    assert CursorAgentClient(max_output=1000).max_output == 1000
    assert model_from_config({"type": "opencode"}).max_output == JSON_MAX_OUTPUT  # type: ignore[attr-defined]
