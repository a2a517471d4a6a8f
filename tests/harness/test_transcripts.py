"""Reading transcripts back: one typed reader, one line at a time, and one fold of the counts.

`TranscriptReader` turns each line into its event class (what a run emitted, field for
field), names the file, line and field of anything wrong, refuses deeply nested JSON as a
line error, and keeps what it does not know. `RunTally` counts what the run counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _dom import parse
from _view_support import halted, started, tool, turn, write_events
from test_events_agree import ALL_EVENTS, scenario

from harness import (
    Completed,
    Event,
    FixtureError,
    JsonlTranscript,
    ModelFailed,
    RunHalted,
    ScriptedModelClient,
    Usage,
    read_transcript,
)
from harness._fs._jsonl import MAX_DEPTH
from harness.events import RunTally, TranscriptReader, UnknownEvent
from harness.extend import UnknownHalt
from harness.testing import ListSink, fixture_from_transcript
from strategies._cli import main
from strategies._viewer import build_view, read_for_view, render_page
from strategies._viewer._timeline import GROUP


async def _run(tmp_path: Path) -> tuple[Path, list[Event], Any]:
    transcript = tmp_path / "run.jsonl"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    listed = ListSink()
    result = await scenario(workspace, transcript, [listed]).run("write a README")
    return transcript, listed.events, result


@pytest.mark.anyio
async def test_every_line_reads_back_as_the_event_the_run_emitted(tmp_path: Path) -> None:
    """Each line of a real run's transcript (every kind of event) is read as its own class,
    equal field for field to what the run emitted, with its line number."""
    transcript, emitted, _ = await _run(tmp_path)
    read = list(TranscriptReader(transcript))
    assert [line for line, _ in read] == list(range(1, len(emitted) + 1))
    assert [event for _, event in read] == emitted
    assert {type(event) for _, event in read} == set(ALL_EVENTS)
    assert read_transcript(transcript) == [json.loads(json.dumps(e.to_dict())) for e in emitted]


@pytest.mark.anyio
async def test_the_tally_counts_what_the_run_counted(tmp_path: Path) -> None:
    """Folded over the run's events, the tally has the result's turns, tool calls and usage;
    cut before `run.halted`, it has what the events up to there add up to."""
    transcript, emitted, result = await _run(tmp_path)
    tally = RunTally()
    for _, event in TranscriptReader(transcript):
        tally = tally.add(event)
    assert (tally.turns, tally.tool_calls, tally.usage) == (
        result.turns,
        result.tool_calls,
        result.usage,
    )
    assert tally.halt is not None
    assert tally.halt.verified
    assert tally.at == emitted[-1].at
    before_halt = RunTally()
    for event in emitted[:-1]:
        before_halt = before_halt.add(event)
    assert before_halt.halt is None
    assert before_halt.turns == before_halt.turns_finished == result.turns
    assert before_halt.tool_calls == result.tool_calls
    assert before_halt.usage.total_tokens == result.usage.total_tokens


def test_an_unknown_price_makes_the_tally_cost_unknown_from_there_on(tmp_path: Path) -> None:
    rows = [started(), *turn(1, "a"), *turn(2, "b")]
    rows[-1]["response"]["usage"]["cost_usd"] = None
    rows.append(tool(2, {"id": "c", "name": "t", "arguments": {}}, "no", is_error=True))
    tally = RunTally()
    for _, event in TranscriptReader(write_events(tmp_path / "t.jsonl", rows)):
        tally = tally.add(event)
    assert (tally.turns, tally.tool_calls, tally.tool_errors) == (2, 1, 1)
    assert tally.usage == Usage(20, 10, 0, None)


def test_unknown_events_and_halt_reasons_are_kept_as_they_were(tmp_path: Path) -> None:
    """A newer harness's event and halt reason read as `UnknownEvent` and `UnknownHalt`, and
    write back unchanged; a known reason whose fields do not fit is unknown too."""
    row = {"event": "board.tick", "at": 1.5, "n": 3, "agent": "w"}
    event = Event.from_dict(row)
    assert event == UnknownEvent(1.5, "board.tick", {"n": 3, "agent": "w"})
    assert event.to_dict() == row
    martian = {"type": "Martian", "why": "x"}
    assert Event.from_dict(halted() | {"reason": martian}) == RunHalted(
        9.0, UnknownHalt("Martian", {"why": "x"}), True, 1, 0, Usage(10, 5, 0, 0.001)
    )
    bogus = Event.from_dict(halted() | {"reason": {"type": "Completed", "bogus": 1}})
    assert isinstance(bogus, RunHalted)
    assert bogus.reason.describe() == "Completed(bogus=1)"
    assert bogus.reason.to_dict() == {"type": "Completed", "bogus": 1}
    failed = Event.from_dict(halted() | {"reason": {"type": "ModelFailed", "kind": "auth"}})
    assert isinstance(failed, RunHalted)
    assert isinstance(failed.reason, UnknownHalt)
    full = Event.from_dict(
        halted() | {"reason": {"type": "ModelFailed", "kind": "auth"} | {"message": "no"}}
    )
    assert isinstance(full, RunHalted)
    assert full.reason == ModelFailed("auth", "no")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ([1], ":3: not a transcript event (not an object)"),
        ({"at": 1}, ":3 field 'event': missing"),
        ({"event": 7}, ":3 field 'event': expected a string (got 7)"),
        ({"event": "turn.started", "agent": "a", "iteration": 1}, ":3 field 'turn': missing"),
        (
            {"event": "turn.started", "agent": "a", "iteration": True, "turn": 1},
            ":3 field 'iteration': expected an integer (got True)",
        ),
        (
            {"event": "tool.called", "agent": "a", "turn": 1, "call": {"id": "c"}},
            ":3 field 'call.name': missing",
        ),
        (
            halted() | {"usage": {"cost_usd": "free"}},
            ":3 field 'usage.cost_usd': expected a number (got 'free')",
        ),
        (halted() | {"reason": {"why": "?"}}, ":3 field 'reason.type': missing"),
    ],
)
def test_a_bad_event_names_the_file_line_and_field(
    tmp_path: Path, row: object, message: str
) -> None:
    """The same error from the reader, `read_transcript` and `fixture_from_transcript`."""
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(started()) + "\n\n" + json.dumps(row) + "\n")
    for read in (lambda p: list(TranscriptReader(p)), read_transcript, fixture_from_transcript):
        with pytest.raises(FixtureError) as caught:
            read(path)
        assert str(caught.value).startswith(f"{path}{message}")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_deeply_nested_json_is_a_line_error_not_a_recursion_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    """Nesting deeper than `MAX_DEPTH`, even far past Python's recursion limit, is an error
    naming the line, wherever a transcript or a fixture is read; `MAX_DEPTH` itself reads."""
    deep = "[" * depth + "]" * depth
    arguments = '{"x": ' + deep + "}"
    call = '{"id": "c", "name": "t", "arguments": ' + arguments + "}"
    line = '{"event": "tool.called", "agent": "a", "turn": 1, "content": "", "call": ' + call + "}"
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(started()) + "\n" + line + "\n")
    expected = f"{path}:2: nested deeper than {MAX_DEPTH} levels"
    for read in (lambda p: list(TranscriptReader(p)), read_transcript, fixture_from_transcript):
        with pytest.raises(FixtureError) as caught:
            read(path)
        assert str(caught.value).startswith(expected)
    assert main(["view", str(path)]) == 2
    assert expected in capsys.readouterr().err
    fixture = tmp_path / "fixture.jsonl"
    fixture.write_text('{"text": "fine"}\n{"text": "x", "tool_calls": [' + call + "]}\n")
    with pytest.raises(FixtureError) as caught:
        ScriptedModelClient.from_jsonl(fixture)
    assert str(caught.value).startswith(f"{fixture}:2: nested deeper")
    limit = "[" * (MAX_DEPTH - 3) + "]" * (MAX_DEPTH - 3)  # with the event, call, arguments
    path.write_text(line.replace(deep, limit) + "\n")
    assert len(list(TranscriptReader(path))) == 1


def test_the_reader_goes_one_line_at_a_time(tmp_path: Path) -> None:
    """Events come before a later bad line is read; a cut-off last line is an error unless
    the reader allows it, and then it names the line."""
    rows = [started(), *turn(1, "one")]
    path = write_events(tmp_path / "t.jsonl", rows, tail='{"event": "turn.sta')
    events = iter(TranscriptReader(path))
    assert next(events)[0] == 1
    with pytest.raises(FixtureError, match=r"t\.jsonl:4: not valid JSON"):
        list(events)
    tolerant = TranscriptReader(path, allow_cut_off=True)
    assert [line for line, _ in tolerant] == [1, 2, 3]
    assert tolerant.cut_off_line == 4
    path.write_text(path.read_text() + "\n")  # the same line with its newline: not cut off
    with pytest.raises(FixtureError, match=r":4: not valid JSON"):
        list(TranscriptReader(path, allow_cut_off=True))


def test_rows_from_another_process_are_written_as_safe_lines(tmp_path: Path) -> None:
    """`JsonlTranscript.write_row` (how a board writes its attempts' events) writes whole,
    valid UTF-8 lines: a lone surrogate becomes its escape and reads back as itself."""
    path = tmp_path / "t.jsonl"
    sink = JsonlTranscript(path)
    name = "caf\udce9.txt"
    sink.write_row(tool(1, {"id": "c", "name": "read_file", "arguments": {"path": name}}, name))
    sink.close()
    path.read_bytes().decode("utf-8")
    ((_, event),) = TranscriptReader(path)
    assert event.to_dict()["content"] == name


def _long_run(tmp_path: Path, turns: int, failing: int) -> Path:
    rows = [started()]
    for n in range(1, turns + 1):
        call = {"id": f"c{n}", "name": "run", "arguments": {"command": "pytest"}}
        rows += turn(n, f"step {n}", [call])
        rows.append(tool(n, call, "ok" if n != failing else "boom", is_error=n == failing))
    rows.append(
        {"event": "check.failed", "at": 99.0, "agent": "builder", "turn": turns} | {"reason": "no"}
    )
    rows += [{"event": "<b>tick</b>", "at": 99.5, "n": n} for n in range(GROUP + 2)]
    rows.append(halted(turns=turns))
    return write_events(tmp_path / "long.jsonl", rows)


def test_a_long_run_collapses_into_groups_and_its_page_stays_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Turns beyond `GROUP` in a row fold into collapsed groups of `GROUP`, each saying what
    it holds (a failed call marks its group); a note between them stays in view; a long run
    of one unknown event folds too, its hostile name escaped."""
    turns = 2 * GROUP + 7
    path = _long_run(tmp_path, turns, failing=GROUP + 3)
    out = tmp_path / "long.html"
    assert main(["view", str(path), "-o", str(out)]) == 0
    capsys.readouterr()
    page = parse(out.read_text(encoding="utf-8"))
    groups = page.find_all("details", "group")
    labels = [g.find("span", "preview").text() for g in groups]
    assert labels == [
        f"turns 1 to {GROUP}",
        f"turns {GROUP + 1} to {2 * GROUP}",
        f"turns {2 * GROUP + 1} to {turns}",
        f"{GROUP} <b>tick</b> events",
        "2 <b>tick</b> events",
    ]
    assert ["has-errors" in g.classes for g in groups] == [False, True, False, False, False]
    assert all("open" not in g.attrs for g in groups)
    assert f"{GROUP} tool calls · 1 failed" in groups[1].find("span", "size").text()
    assert [len(g.find_all("article", "turn")) for g in groups[:3]] == [GROUP, GROUP, 7]
    assert page.find_all("b") == []
    (failed_check,) = [
        n for n in page.find_all("div", "note") if n.attrs["data-kind"] == "check.failed"
    ]
    assert "no" in failed_check.text()
    cards = dict(
        zip(
            [n.text() for n in page.find_all("dt")],
            [n.text() for n in page.find_all("dd")],
            strict=False,
        )
    )
    assert cards["turns"] == str(turns)
    view = build_view(read_for_view(path))
    assert view.runs[0].tool_errors == 1
    assert len(view.runs[0].points) == turns


def test_notes_that_come_while_a_turn_is_open_follow_it(tmp_path: Path) -> None:
    """A note between a turn's response and its tool results (a sink that failed meanwhile)
    is drawn after the turn, and the results still join their turn."""
    call = {"id": "c", "name": "t", "arguments": {}}
    failed = {"event": "sink.failed", "at": 1.55, "sink": "S()", "failed_on": "x", "error": "E"}
    rows = [started(), *turn(1, "one", [call]), failed, tool(1, call, "result"), halted()]
    view = build_view(read_for_view(write_events(tmp_path / "t.jsonl", rows)))
    page = parse(render_page(view))
    (article,) = page.find_all("article", "turn")
    assert "result" in article.find("div", "result").text()
    (note,) = page.find_all("div", "note")
    assert note.attrs["data-kind"] == "sink.failed"
    order = [n for n in page.iter() if n is article or n is note]
    assert order == [article, note]


def test_a_halt_with_its_reason_reads_as_its_class() -> None:
    event = Event.from_dict(halted())
    assert isinstance(event, RunHalted)
    assert event.reason == Completed(early=False)


def test_the_decoder_loads_every_module_that_defines_an_event_kind() -> None:
    """`_KIND_MODULES` (what the decoder imports before it calls a name unknown) lists exactly
    the modules of harness/_events/ that define an event kind: a kind in a module left off it
    would be read back as an `UnknownEvent` by a process that never imported that module."""
    import importlib
    import inspect

    import harness._events as events_package
    from harness._events._base import _KIND_MODULES

    folder = Path(events_package.__file__).parent
    defining = set()
    for path in sorted(folder.glob("_*.py")):
        name = f"harness._events.{path.stem}"
        if name == "harness._events._base" or path.name == "__init__.py":
            continue  # the decoder's own module (Event, UnknownEvent)
        module = importlib.import_module(name)
        kinds = [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == name and issubclass(cls, Event) and cls is not Event
        ]
        if kinds:
            defining.add(name)
    assert defining, "no event kind found: the search is broken"
    assert sorted(_KIND_MODULES) == sorted(defining)
