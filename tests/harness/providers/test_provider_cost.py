"""A run's cost is unknown until a call reports one: no successful call is not $0, while
calls priced at zero are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _provider_server import FakeProvider, Reply, openai_body

from harness import Harness, ModelFailed, ModelPrice, OpenAIClient, RetryPolicy, Usage
from harness._usage import NO_USAGE
from harness.testing import FakeClock
from strategies._cli import main
from termination import TerminationPolicy


def test_the_empty_total_adds_as_nothing() -> None:
    """The total before any call has an unknown cost, and adding a call gives that call."""
    call = Usage(10, 5, 0, 0.0)
    assert NO_USAGE.cost_usd is None
    assert NO_USAGE + call is call
    assert call + NO_USAGE is call
    assert NO_USAGE + NO_USAGE is NO_USAGE
    assert (NO_USAGE + call + Usage(1, 1, 0, 0.5)).cost_usd == 0.5
    assert (NO_USAGE + call + Usage(1, 1, 0, None)).cost_usd is None


def client(provider: FakeProvider, clock: FakeClock) -> OpenAIClient:
    return OpenAIClient(
        "local",
        base_url=provider.url + "/v1",
        api_key_env=None,
        price=ModelPrice(0.0, 0.0),
        retry=RetryPolicy.none(),
        clock=clock,
    )


@pytest.mark.anyio
async def test_a_run_whose_only_call_failed_has_an_unknown_cost(
    provider: FakeProvider, tmp_path: Path
) -> None:
    """A priced model that never answered spent an unknown amount, not $0: the result and
    the transcript say so."""
    provider.script(Reply({"error": {"message": "no such model"}}, 404))
    clock = FakeClock()
    transcript = tmp_path / "run.jsonl"
    result = await Harness(
        model=client(provider, clock),
        policy=TerminationPolicy(),
        clock=clock,
        transcript=transcript,
    ).run("say hi")
    assert isinstance(result.halt_reason, ModelFailed)
    assert result.usage.cost_usd is None
    halted = json.loads(transcript.read_text().splitlines()[-1])
    assert halted["event"] == "run.halted"
    assert halted["usage"]["cost_usd"] is None


@pytest.mark.anyio
async def test_calls_priced_at_zero_cost_a_real_zero(provider: FakeProvider) -> None:
    """A model priced at $0 that answered costs exactly 0.0."""
    provider.script(Reply(openai_body("hi")))
    clock = FakeClock()
    result = await Harness(
        model=client(provider, clock), policy=TerminationPolicy(), clock=clock
    ).run("say hi")
    assert result.verified
    assert result.usage.cost_usd == 0.0


SPEC = """
prompt = "say hi"
workspace = "ws"
[model]
type = "openai"
model = "local"
base_url = "{url}/v1"
api_key_env = false
price = {{ input = 0.0, output = 0.0 }}
retry = {{ max_attempts = 1 }}
[budget]
max_turns = 1
[[checks]]
type = "files"
paths = ["done.txt"]
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        (Reply({"error": {"message": "no such model"}}, 404), "cost=unknown"),
        (Reply(openai_body("hi")), "cost=$0.0000"),
    ],
)
def test_the_command_line_shows_unknown_when_no_call_succeeded(
    provider: FakeProvider,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: str,
    reply: Reply,
    shown: str,
) -> None:
    """`harness run` prints cost=unknown for a run with no answered call, $0 for a free one."""
    provider.script(reply)
    (tmp_path / "ws").mkdir()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(url=provider.url))
    code = main(["run", str(spec), "-q", "--backend", backend])
    out, err = capsys.readouterr()
    assert f" {shown} " in out, (code, out, err)
