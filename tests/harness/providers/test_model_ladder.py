"""A model ladder starts with the cheap model and climbs to the next when the run plateaus (the
same rejection reason `escalate_after` times, progress that does not move, a sensor's
warning), never back; the climb is a ``model.escalated`` event that the transcript keeps and
reads back, and a second run of the same scripts replays it identically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import (
    Completed,
    ConfigurationError,
    FixtureUnconsumed,
    Harness,
    ModelLadder,
    RejectionLimit,
    ScriptedModelClient,
    SessionStateSnapshot,
    TurnFinished,
    workspace_tools,
)
from harness.checkpoints import WorkProgress
from harness.events import ModelEscalated, TranscriptReader
from harness.extend import JudgedTurn, ModelRequest, ModelResponse
from harness.testing import FakeClock, ListSink
from strategies import Ralph
from termination import RepeatedToolCallSensor, TerminationPolicy

pytestmark = pytest.mark.anyio

REASON = "answer.txt must hold 42"


class AnswerCheck:
    """Complete when answer.txt holds 42; always the same reason otherwise."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        assert state.workspace is not None
        answer = state.workspace / "answer.txt"
        return None if answer.exists() and answer.read_text() == "42" else REASON

    def description(self) -> str:
        return "answer.txt holds 42."


def write(content: str) -> dict[str, Any]:
    call = {"name": "write_file", "arguments": {"path": "answer.txt", "content": content}}
    return {"tool_calls": [call], "model": "cheap"}


CHEAP = [
    write("41"),
    {"text": "done", "model": "cheap"},
    {"text": "really done", "model": "cheap"},
]
STRONG = [
    {**write("42"), "model": "strong"},
    {"text": "done: 42", "model": "strong"},
]


def ladder(cheap: list[dict[str, Any]], strong: list[dict[str, Any]], **kw: Any) -> ModelLadder:
    return ModelLadder(
        [ScriptedModelClient.from_responses(cheap), ScriptedModelClient.from_responses(strong)],
        names=["cheap", "strong"],
        **kw,
    )


def harness_for(
    model: Any, workspace: Path, *, transcript: Path | None = None, **kw: Any
) -> tuple[Harness, ListSink]:
    sink = ListSink()
    policy = TerminationPolicy(
        completion_check=AnswerCheck(), sensors=kw.pop("sensors", []), max_rejections=5
    )
    harness = Harness(
        model=model,
        policy=policy,
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink],
        transcript=transcript,
        **kw,
    )
    return harness, sink


def replayed(events: list[Any]) -> list[dict[str, Any]]:
    """The events as a replay must reproduce them (the run's random id and its folder aside)."""
    keys = [e.replay_key() for e in events]
    for key in keys:
        key.pop("run_id", None)
        key.pop("workspace", None)
    return keys


async def test_the_ladder_climbs_on_a_repeated_reason_and_replays(tmp_path: Path) -> None:
    """The cheap model's claim is rejected twice for the same reason: the next turn is the
    strong model's, which finishes the task; the climb is an event the transcript reads back,
    and a second run of the same scripts gives the same events."""
    runs = []
    for name in ("first", "second"):
        workspace = tmp_path / name
        workspace.mkdir()
        transcript = tmp_path / f"{name}.jsonl"
        harness, sink = harness_for(ladder(CHEAP, STRONG), workspace, transcript=transcript)
        result = await harness.run("write the answer")
        runs.append((result, sink.events, transcript))

    result, events, transcript = runs[0]
    assert result.halt_reason == Completed()
    [climb] = [e for e in events if isinstance(e, ModelEscalated)]
    assert (climb.agent, climb.turn, climb.from_rung, climb.to_rung) == ("builder", 3, 0, 1)
    assert (climb.from_model, climb.to_model) == ("cheap", "strong")
    assert climb.trigger == "repeated_rejection"
    assert climb.detail == f"rejected 2 times with: {REASON}"
    answered = [e.response.model for e in events if isinstance(e, TurnFinished)]
    assert answered == ["cheap", "cheap", "cheap", "strong", "strong"]  # never back
    # The climb comes after the turn's rejection and before the strong model's first turn.
    names = [e.name for e in events]
    at = names.index("model.escalated")
    assert names[at - 1] == "feedback.injected"
    assert names[at + 1] == "turn.started"

    read_back = [event for _, event in TranscriptReader(transcript)]
    assert [e for e in read_back if isinstance(e, ModelEscalated)] == [climb]
    assert replayed(read_back) == replayed(events)
    assert replayed(runs[1][1]) == replayed(events)


async def test_without_the_ladder_the_cheap_model_alone_never_finishes(tmp_path: Path) -> None:
    """The same cheap script on its own: the check keeps rejecting, and nothing climbs."""
    claims = [{"text": "done" + "!" * n} for n in range(3)]
    cheap = ScriptedModelClient.from_responses([*CHEAP, *claims])
    harness, sink = harness_for(cheap, tmp_path)
    result = await harness.run("write the answer")
    assert result.halt_reason == RejectionLimit(5, REASON)
    assert not [e for e in sink.events if isinstance(e, ModelEscalated)]


async def test_ralph_iterations_feed_the_ladder(tmp_path: Path) -> None:
    """Under Ralph the verdict at each iteration's end counts: two iterations rejected for the
    same reason, and the third iteration runs on the strong model."""
    cheap = [{"text": "done", "model": "cheap"}, {"text": "done", "model": "cheap"}]
    harness, sink = harness_for(ladder(cheap, STRONG), tmp_path, strategy=Ralph(max_iterations=4))
    result = await harness.run("write the answer")
    assert result.verified
    [climb] = [e for e in sink.events if isinstance(e, ModelEscalated)]
    assert climb.trigger == "repeated_rejection"
    answered = [e.response.model for e in sink.events if isinstance(e, TurnFinished)]
    assert answered == ["cheap", "cheap", "strong", "strong"]


async def test_an_evaluators_repeated_verdict_climbs(tmp_path: Path) -> None:
    """Under SelfVerifying the evaluator's rejections count as the check's do: twice "Too
    short." and the builder's next round runs on the strong model, which the evaluator passes."""
    from strategies import SelfVerifying

    cheap = [{"text": "done", "model": "cheap"}, {"text": "done again", "model": "cheap"}]
    strong = [{"text": "done properly", "model": "strong"}]
    evaluator = ScriptedModelClient.from_responses(
        [
            {"text": "Too short.\nVERDICT: FAIL"},
            {"text": "Too short.\nVERDICT: FAIL"},
            {"text": "VERDICT: PASS"},
        ]
    )
    sink = ListSink()
    result = await Harness(
        model=ladder(cheap, strong),
        policy=TerminationPolicy(),
        strategy=SelfVerifying(evaluator=evaluator, evaluator_must_use_tools=False),
        clock=FakeClock(),
        sinks=[sink],
    ).run("write something long")
    assert result.verified
    [climb] = [e for e in sink.events if isinstance(e, ModelEscalated)]
    assert (climb.agent, climb.trigger) == ("builder", "repeated_rejection")
    answered = [e.response.model for e in sink.events if isinstance(e, TurnFinished)]
    assert [m for m in answered if m in ("cheap", "strong")] == ["cheap", "cheap", "strong"]


async def test_a_sensor_warning_climbs(tmp_path: Path) -> None:
    """A sensor's warning (the same call repeated) moves the run to the strong model."""
    cheap = [write("41"), write("41")]
    harness, sink = harness_for(
        ladder(cheap, STRONG),
        tmp_path,
        sensors=[RepeatedToolCallSensor(limit=4, warn_at=2)],
    )
    result = await harness.run("write the answer")
    assert result.verified
    [climb] = [e for e in sink.events if isinstance(e, ModelEscalated)]
    assert climb.trigger == "sensor_warning"
    assert climb.detail.startswith("repeated_tool_call: ")
    assert climb.turn == 2


async def test_a_rung_never_reached_with_lines_left_is_a_fixture_error(tmp_path: Path) -> None:
    """Scripted rungs fail closed: a strong script the run never climbed to is unconsumed."""
    cheap = [write("42"), {"text": "done"}]
    harness, _ = harness_for(ladder(cheap, STRONG), tmp_path)
    with pytest.raises(FixtureUnconsumed):
        await harness.run("write the answer")


class Named:
    """A model client that answers "done" under its name and counts its calls."""

    def __init__(self, name: str) -> None:
        self.model = name
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        return ModelResponse(text="done", model=self.model)


async def test_each_run_climbs_from_the_bottom(tmp_path: Path) -> None:
    """A harness run twice starts each run on the cheap model: a run's climb is its own."""
    cheap, strong = Named("cheap"), Named("strong")
    model = ModelLadder([cheap, strong], escalate_after=1)
    harness, sink = harness_for(model, tmp_path)
    for _ in range(2):
        await harness.run("write the answer")
    answered = [e.response.model for e in sink.events if isinstance(e, TurnFinished)]
    # Each run: the cheap model's claim is rejected once, then the strong model's, until the
    # rejection cap (5) ends the run.
    assert answered == ["cheap"] + ["strong"] * 4 + ["cheap"] + ["strong"] * 4
    assert model.rung == 0  # the harness's own ladder never moved


def test_the_rules_of_the_climb() -> None:
    """Same reason K times (spacing aside) climbs; different reasons do not; progress that does
    not move climbs (when asked); a warning climbs (when asked); the last rung stays."""
    a, b, c = Named("a"), Named("b"), Named("c")
    model = ModelLadder([a, b, c], escalate_after=3, on_no_progress=False)
    seen = [
        model.observe(JudgedTurn("builder", turn, True, reason))
        for turn, reason in enumerate(["x  failed", "y failed", "x failed", "y failed"], 1)
    ]
    assert seen == [None, None, None, None]
    climb = model.observe(JudgedTurn("builder", 5, True, "x\nfailed"))
    assert climb is not None
    assert (climb.from_model, climb.to_model, climb.trigger) == ("a", "b", "repeated_rejection")
    # The count starts again on the new rung.
    assert model.observe(JudgedTurn("builder", 6, True, "x failed")) is None
    assert model.observe(JudgedTurn("builder", 7, False, None, None, ("s: warned",)))
    assert model.rung == 2
    assert model.observe(JudgedTurn("builder", 8, False, None, None, ("s: warned",))) is None
    assert model.rung == 2  # the last rung stays, never back

    timed = ModelLadder([a, b], escalate_after=2, on_no_progress=False)
    first = "`pytest -q` exited with code 1\n1 failed, 3 passed in 0.53s\n<Obj at 0x7f3a>"
    again = "`pytest -q` exited with code 1\n1 failed, 3 passed in 1.2 s\n<Obj at 0x7f9c>"
    assert timed.observe(JudgedTurn("builder", 1, True, first)) is None
    climb = timed.observe(JudgedTurn("builder", 2, True, again))
    assert climb is not None  # a test run's time and addresses differ: the same reason
    other = ModelLadder([a, b], escalate_after=2, on_no_progress=False)
    assert other.observe(JudgedTurn("builder", 1, True, "1 failed, 3 passed")) is None
    assert other.observe(JudgedTurn("builder", 2, True, "2 failed, 2 passed")) is None

    stalled = ModelLadder([a, b], escalate_after=5)
    two = WorkProgress(2, 5, "tests")
    three = WorkProgress(3, 5, "tests")
    assert stalled.observe(JudgedTurn("builder", 1, True, "r1", two)) is None
    assert stalled.observe(JudgedTurn("builder", 2, True, "r2", three)) is None
    climb = stalled.observe(JudgedTurn("builder", 3, True, "r3", three))
    assert climb is not None
    assert climb.trigger == "no_progress"
    assert climb.detail == f"progress {three.describe()}, was {three.describe()}"

    deaf = ModelLadder([a, b], escalate_after=5, on_no_progress=False, on_sensor_warning=False)
    assert deaf.observe(JudgedTurn("builder", 1, True, "r", two)) is None
    assert deaf.observe(JudgedTurn("builder", 2, True, "r2", two)) is None
    assert deaf.observe(JudgedTurn("builder", 3, False, None, None, ("s: w",))) is None


@pytest.mark.parametrize(
    ("models", "kw", "message"),
    [
        ([], {}, "'models' must hold at least two model clients, cheapest first (got 0)"),
        (["gpt"], {}, "'models' must hold at least two"),
        ("ab", {}, "'models' must be a list of model clients"),
        ([Named("a"), "b"], {}, "models[1] must be a model client"),
        ([Named("a"), Named("b")], {"escalate_after": 0}, "'escalate_after' must be a positive"),
        ([Named("a"), Named("b")], {"escalate_after": True}, "'escalate_after' must be a positive"),
        ([Named("a"), Named("b")], {"names": ["a"]}, "'names' must name each of the 2 models"),
    ],
)
def test_a_wrong_ladder_is_a_configuration_error(
    models: Any, kw: dict[str, Any], message: str
) -> None:
    """Each mistake names the argument at fault."""
    with pytest.raises(ConfigurationError) as caught:
        ModelLadder(models, **kw)
    assert message in str(caught.value)


ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "fixtures" / "ladder"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_harness_run_climbs_a_spec_ladder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    """`[[model.ladder]]` in a spec: the demo's cheap model is rejected twice for the same
    reason, the run climbs (shown on stderr, kept in the transcript) and the strong model's
    work is verified; with --record each rung records its own fixture, and a spec naming those
    replays the same climb."""
    from strategies._cli import main

    transcript = tmp_path / "run.jsonl"
    record = tmp_path / "rec.jsonl"
    args = ["run", str(DEMO / "ladder.toml"), "--transcript", str(transcript)]
    code = main([*args, "--record", str(record), "--backend", backend])
    _out, err = capsys.readouterr()
    assert code == 0, err
    assert "model ladder: " in err
    assert "(repeated_rejection: rejected 2 times with: missing 1 of 1: answer.txt)" in err
    [climb] = [e for _, e in TranscriptReader(transcript) if isinstance(e, ModelEscalated)]
    assert (climb.turn, climb.from_rung, climb.to_rung) == (2, 0, 1)
    assert [(tmp_path / f"rec.rung{i}.jsonl").exists() for i in (0, 1)] == [True, True]

    spec = (DEMO / "ladder.toml").read_text()
    spec = spec.replace('"cheap.jsonl"', f'"{tmp_path / "rec.rung0.jsonl"}"')
    spec = spec.replace('"strong.jsonl"', f'"{tmp_path / "rec.rung1.jsonl"}"')
    spec = spec.replace(
        'workspace_template = "workspace"', f'workspace_template = "{DEMO}/workspace"'
    )
    (tmp_path / "replay.toml").write_text(spec)
    again = tmp_path / "again.jsonl"
    code = main(["run", str(tmp_path / "replay.toml"), "--transcript", str(again)])
    assert code == 0, capsys.readouterr().err
    [replayed_climb] = [e for _, e in TranscriptReader(again) if isinstance(e, ModelEscalated)]
    assert (replayed_climb.turn, replayed_climb.trigger, replayed_climb.detail) == (
        2,
        "repeated_rejection",
        climb.detail,
    )


LADDER_SPEC = """
prompt = "x"
workspace = "."
[[checks]]
type = "always_complete"
[model]
type = "ladder"
"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("", "model.ladder is required for a ladder model"),
        (
            '[[model.ladder]]\ntype = "fixture"\npath = "a.jsonl"\n',
            "model.ladder must hold at least two model tables, cheapest first (got 1)",
        ),
        (
            '[[model.ladder]]\ntype = "fixture"\npath = "a.jsonl"\n'
            '[[model.ladder]]\ntype = "openai"\n',
            "model.ladder[1].model is required",
        ),
        (
            '[[model.ladder]]\ntype = "fixture"\npath = "a.jsonl"\n'
            '[[model.ladder]]\ntype = "ladder"\nladder = []\n',
            "model.ladder[1].type must not be 'ladder'",
        ),
        (
            'escalate_after = 0\n[[model.ladder]]\ntype = "fixture"\npath = "a.jsonl"\n'
            '[[model.ladder]]\ntype = "fixture"\npath = "a.jsonl"\n',
            "model.escalate_after must be a positive integer (got 0)",
        ),
        (
            'escalate_after = "2"\n[[model.ladder]]\ntype = "fixture"\npath = "a.jsonl"\n',
            "model.escalate_after must be an integer (got '2')",
        ),
        (
            '[[model.ladder]]\ntype = "fixture"\npath = "a.jsonl"\nretries = 1\n'
            '[[model.ladder]]\ntype = "fixture"\npath = "a.jsonl"\n',
            "model.ladder[0]: unknown key 'retries' for a fixture model",
        ),
    ],
)
def test_a_wrong_spec_ladder_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, message: str
) -> None:
    """Each mistake in `[model]`/`[[model.ladder]]` is an error naming the spec and the key."""
    from strategies._cli import main

    (tmp_path / "a.jsonl").write_text('{"text": "done"}\n')
    spec = tmp_path / "spec.toml"
    spec.write_text(LADDER_SPEC + body)
    code = main(["run", str(spec)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert str(spec) in err


async def test_the_run_viewer_shows_the_climb_as_text(tmp_path: Path) -> None:
    """`harness view` shows the climb as a note of the session; a model name that looks like
    markup is text on the page, never an element."""
    from _dom import parse

    from strategies._viewer import write_view

    hostile = "<img src=x onerror=alert(1)>"
    transcript = tmp_path / "run.jsonl"
    model = ModelLadder(
        [ScriptedModelClient.from_responses(CHEAP), ScriptedModelClient.from_responses(STRONG)],
        names=[hostile, "strong"],
    )
    harness, _ = harness_for(model, tmp_path, transcript=transcript)
    await harness.run("write the answer")
    out = tmp_path / "run.html"
    write_view(transcript, out)
    page = parse(out.read_text(encoding="utf-8"))
    [note] = [n for n in page.find_all("div", "note") if n.attrs["data-kind"] == "model.escalated"]
    assert f"model ladder: {hostile} -> strong (repeated_rejection)" in note.text()
    assert f"rejected 2 times with: {REASON}" in note.text()
    assert page.find_all("img") == []
