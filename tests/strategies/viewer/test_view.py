"""`harness view`: the page's structure, its escaping, and transcripts that are cut off,
malformed, or hold several sessions or runs."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from _dom import Node, parse
from _view_support import (
    HOSTILE,
    HOSTILE_ATTR,
    HOSTILE_CLOSE,
    HOSTILE_IMG,
    demo_transcript,
    halted,
    self_verifying_transcript,
    started,
    tool,
    turn,
    write_events,
)

from harness import FixtureError
from strategies._cli import main
from strategies._viewer import build_view, read_for_view, render_page
from strategies._viewer._chart import MAX_DOTS, axis, label_step, nice_ceiling
from strategies._viewer._markup import cost, seconds, tag
from strategies._viewer._timeline import MAX_TEXT


def view(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Node, str]:
    """Run `harness view` on `path`; the parsed page and what it said on stderr."""
    out = path.with_suffix(".html")
    capsys.readouterr()  # whatever the run that wrote the transcript printed
    assert main(["view", str(path), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out)
    return parse(out.read_text(encoding="utf-8")), captured.err


def texts(page: Node, tag_: str | None = None, cls: str | None = None) -> list[str]:
    return [" ".join(n.text().split()) for n in page.find_all(tag_, cls)]


def test_the_demo_page_shows_every_turn_check_and_the_halt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's two Ralph sessions, its six turns with their tool calls and results, the
    rejected claim, the feedback carried over, the passing check and the verified halt."""
    page, err = view(demo_transcript(tmp_path), capsys)
    assert err == ""
    assert texts(page, "h4", "segment-title") == ["builder · session 1", "builder · session 2"]
    turns = page.find_all("article", "turn")
    assert [t.attrs["id"] for t in turns] == [f"r1-t{n}" for n in range(1, 7)]
    assert "Let me look at the features." in turns[0].text()
    first_call = turns[0].find("div", "call")
    assert first_call.find("code", "tool").text() == "read_file"
    assert "feature_list.json" in first_call.find("dl", "arguments").text()
    assert '"name": "word_count"' in first_call.find("div", "result").text()
    assert "claims done" in texts(turns[2], "span", "badge")
    notes = [
        (n.attrs["data-kind"], " ".join(n.text().split())) for n in page.find_all("div", "note")
    ]
    assert notes[0][0] == "check.failed"
    assert "2 of 3 features in feature_list.json do not pass yet" in notes[0][1]
    assert notes[1][0] == "feedback.injected"
    assert "previous_iteration" in notes[1][1]
    assert notes[2][0] == "check.passed"
    halt = page.find("section", "halt")
    assert "verified" in halt.classes
    assert "completed: the completion check passed" in halt.text()
    outcome = page.find("div", "outcome")
    assert "verified" in outcome.classes
    assert "Verified complete" in outcome.text()
    cards = dict(zip(texts(page, "dt"), texts(page, "dd"), strict=False))
    assert cards["turns"] == "6"
    assert cards["tokens in"] == "8,000"
    assert cards["cost"] == "$0.0354"


def test_the_usage_chart_has_a_bar_per_turn_linking_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each turn is a bar in an inline SVG, linking to its turn, with its usage as a tooltip;
    the cumulative cost is a line, and a dashed line marks where a new session starts."""
    page, _ = view(demo_transcript(tmp_path), capsys)
    chart = page.find("svg", "chart")
    bars = chart.find_all("a", "bar")
    assert [b.attrs["href"] for b in bars] == [f"#r1-t{n}" for n in range(1, 7)]
    assert "900 in, 40 out; cost $0.0033" in bars[0].find("title").text()
    points = chart.find("polyline", "cost-line").attrs["points"] or ""
    assert len(points.split()) == 6
    assert len(chart.find_all("line", "session-edge")) == 1


def test_the_page_is_self_contained_and_locked_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No external resource, one inline script and one stylesheet, and a Content Security
    Policy that allows exactly those two (by hash) and nothing from the network."""
    page, _ = view(demo_transcript(tmp_path), capsys)
    for node in page.iter():
        for name in ("src", "href", "action", "data", "srcset"):
            value = node.attrs.get(name)
            assert value is None or value.startswith("#"), (node.tag, name, value)
    assert page.find_all("link") == []
    (script,) = page.find_all("script")
    (style,) = page.find_all("style")
    meta = [m for m in page.find_all("meta") if m.attrs.get("http-equiv")]
    policy = meta[0].attrs["content"] or ""

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert "default-src 'none'" in policy
    assert f"script-src 'sha256-{digest(script.text())}'" in policy
    assert f"style-src 'sha256-{digest(style.text())}'" in policy
    assert "innerHTML" not in script.text()


def test_hostile_text_is_shown_as_text_never_as_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script tag, an event handler, an attribute break-out and closing tags in model text,
    tool arguments and results, the evaluator's reasons and the task all reach the page as
    text: the parser finds no element or attribute they could have made."""
    page, _ = view(self_verifying_transcript(tmp_path), capsys)
    assert len(page.find_all("script")) == 1
    assert page.find_all("img") == []
    assert [s for s in page.find_all("svg") if "chart" not in s.classes] == []
    for node in page.iter():
        assert not [a for a in node.attrs if a.startswith("on")], node
    said = page.find("article", "turn").text()
    assert "nope.txt" in said
    writing = page.find_all("article", "turn")[1]
    assert HOSTILE in writing.find("div", "said").text()
    written = writing.find("dl", "arguments").text()
    for needle in (HOSTILE, HOSTILE_IMG, HOSTILE_ATTR, HOSTILE_CLOSE):
        assert needle in written
    verdict = [n for n in page.find_all("div", "note") if n.attrs["data-kind"] == "verdict.reached"]
    assert HOSTILE_ATTR in verdict[0].text()
    assert "<script>document.title=pwned</script>" in page.find("dl", "facts").text()
    title = page.find("title").text()
    assert "pwned" not in title


def test_tag_escapes_text_and_attribute_values() -> None:
    """The one way text reaches the page: `tag` escapes children and attribute values."""
    html = tag("p", {"title": '"><b x="'}, "<b>&", tag("i", None, "ok"))
    assert html == '<p title="&quot;&gt;&lt;b x=&quot;">&lt;b&gt;&amp;<i>ok</i></p>'


def test_a_self_verifying_run_shows_each_session_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Builder and evaluator sessions appear in the order they ran; the builder's session
    that resumes after the evaluator is marked so; verdicts, the sensor warning and the tool
    error are shown; a price unknown from turn 6 on makes the cost unknown."""
    page, _ = view(self_verifying_transcript(tmp_path), capsys)
    assert texts(page, "h4", "segment-title") == [
        "builder · session 1",
        "evaluator · session 2",
        "builder · session 1 (resumed)",
        "evaluator · session 3",
    ]
    kinds = [n.attrs["data-kind"] for n in page.find_all("div", "note")]
    assert kinds == [
        "sensor.reading",
        "feedback.injected",
        "check.passed",
        "verdict.reached",
        "feedback.injected",
        "check.passed",
        "verdict.reached",
    ]
    verdicts = [
        n for n in page.find_all("div", "note") if n.attrs["data-kind"] == "verdict.reached"
    ]
    assert "evaluator round 1: FAIL" in verdicts[0].text()
    assert "bad" in verdicts[0].classes
    assert "evaluator round 2: PASS" in verdicts[1].text()
    first = page.find("article", "turn")
    assert first.attrs["data-errors"] == "1"
    error = first.find("div", "call")
    assert "error" in error.classes
    assert "No such file" in error.find("div", "result").text()
    cards = dict(zip(texts(page, "dt"), texts(page, "dd"), strict=False))
    assert cards["cost"] == "unknown"
    assert cards["tool calls"] == "5 1 failed"
    assert "unknown from turn 7" in page.find("svg", "chart").text()


def test_a_cut_off_last_line_shows_what_is_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crashed run's half-written last line is reported, not raised: the page shows every
    event before it and says the run ended without `run.halted`; so does the command."""
    full = demo_transcript(tmp_path).read_text().splitlines(keepends=True)
    crashed = tmp_path / "crashed.jsonl"
    crashed.write_text("".join(full[:12]) + full[12][:40])
    page, err = view(crashed, capsys)
    assert f"{crashed}:13 was cut off mid-write" in err
    assert "ends without run.halted" in err
    assert "Line 13 was cut off mid-write" in page.find("p", "cut").text()
    outcome = page.find("div", "outcome")
    assert "crashed" in outcome.classes
    assert "Ended without run.halted" in outcome.text()
    assert page.find_all("section", "halt") == []
    assert len(page.find_all("article", "turn")) == 3


def test_a_model_call_that_never_returned_is_marked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A turn that started and has no `turn.finished` (the run died in the model call)."""
    rows = [started(), *turn(1, "working", [{"id": "c", "name": "t", "arguments": {}}])]
    rows.append(tool(1, {"id": "c", "name": "t", "arguments": {}}, "fine"))
    rows.append(turn(2)[0])
    page, _ = view(write_events(tmp_path / "t.jsonl", rows), capsys)
    last = page.find_all("article", "turn")[-1]
    assert "no response" in texts(last, "span", "badge")
    assert "never returned" in page.find("div", "outcome").text()
    assert page.find_all("svg", "chart")  # the finished turn still has its bar


def test_a_call_without_a_result_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [started(), *turn(1, "", [{"id": "c", "name": "slow", "arguments": {"n": 1}}])]
    page, _ = view(write_events(tmp_path / "t.jsonl", rows), capsys)
    call = page.find("div", "call")
    assert "pending" in call.classes
    assert "No result recorded" in call.text()


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ('{"event": "run.started", "at": 0}\n{oops\n{"event": "x"}\n', ":2: not valid JSON"),
        ('{"event": "run.started"}\n{oops\n', ":2: not valid JSON"),  # the newline: not cut off
        ('{"event": "run.started"}\n[1, 2]\n', ":2: not a transcript event"),
        ('{"at": 1}\n', ":1 field 'event': missing"),
        ('{"event": "turn.started", "at": "soon"}\n', ":1 field 'at': expected a number"),
        (
            json.dumps(
                {
                    "event": "turn.finished",
                    "agent": "a",
                    "iteration": 1,
                    "turn": 1,
                    "response": {"text": "", "usage": {"input_tokens": "9"}},
                }
            )
            + "\n",
            ":1 field 'response.usage.input_tokens': expected an integer (got '9')",
        ),
        (
            json.dumps(
                {
                    "event": "turn.finished",
                    "agent": "a",
                    "iteration": 1,
                    "turn": 1,
                    "response": {"text": "", "tool_calls": [{"id": "x"}]},
                }
            )
            + "\n",
            ":1 field 'response.tool_calls[0].name': missing",
        ),
        ('{"event": "tool.called", "agent": "a", "turn": 1}\n', ":1 field 'call': missing"),
        (
            '{"event": "run.halted", "reason": {"type": "Completed"}, "verified": "yes"}\n',
            ":1 field 'verified': expected true or false",
        ),
    ],
)
def test_a_malformed_line_is_an_error_naming_the_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: str, message: str
) -> None:
    """Anything but a cut-off last line that is wrong exits 2 and names where; no page."""
    path = tmp_path / "bad.jsonl"
    path.write_text(lines)
    assert main(["view", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}{message}" in err
    assert not path.with_suffix(".html").exists()
    with pytest.raises(FixtureError):
        build_view(read_for_view(path))


def test_command_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing transcript, or an output that is the transcript itself, exits 2."""
    assert main(["view", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    path = write_events(tmp_path / "t.html", [started()])
    assert main(["view", str(path)]) == 2
    assert "would overwrite the transcript" in capsys.readouterr().err


def test_default_output_is_beside_the_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_events(tmp_path / "run.jsonl", [started(), *turn(1, "hi"), halted()])
    assert main(["view", str(path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "run.html")
    assert "hi" in (tmp_path / "run.html").read_text()


def test_several_runs_in_one_file_and_unknown_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each `run.started` begins a run of its own; an event the viewer does not know is kept
    as a note with its fields, so a newer harness's transcript loses nothing."""
    rows = [
        started("first"),
        *turn(1, "one"),
        halted(verified=False),
        started("second"),
        {"event": "board.assigned", "at": 0.1, "task": "T-1 <b>", "agent": "builder"},
        {"event": "board.tick", "at": 0.2, "n": 3},
        *turn(1, "two"),
        halted(),
    ]
    page, _ = view(write_events(tmp_path / "t.jsonl", rows), capsys)
    runs = page.find_all("section", "run")
    assert [r.attrs["data-run"] for r in runs] == ["first", "second"]
    assert "the completion check rejected 2 claims of done" in runs[0].find("div", "outcome").text()
    assert [t.attrs["id"] for t in runs[1].find_all("article", "turn")] == ["r2-t1"]
    notes = {n.attrs["data-kind"]: n.text() for n in runs[1].find_all("div", "note")}
    assert "task: T-1 <b>" in notes["board.assigned"]
    assert "n: 3" in notes["board.tick"]


def test_long_text_folds_and_very_long_text_is_clipped_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"id": "c", "name": "read_file", "arguments": {"path": "big"}}
    big = "\n".join(f"line {i}" for i in range(MAX_TEXT))
    rows = [started(), *turn(1, "", [call]), tool(1, call, big), halted()]
    page, _ = view(write_events(tmp_path / "t.jsonl", rows), capsys)
    fold = page.find("div", "result").find("details", "fold")
    assert "open" not in fold.attrs
    assert fold.find("span", "preview").text() == "line 0"
    assert len(fold.find("pre").text()) == MAX_TEXT
    hidden = len(big) - MAX_TEXT
    assert f"… {hidden:,} more characters in the transcript (transcript line 4)" in fold.text()


def test_unknown_halt_types_and_formatting() -> None:
    """A halt reason the viewer cannot rebuild is shown by type and fields; numbers read well."""
    from strategies._viewer._fold import describe_halt

    assert describe_halt("Completed", {"early": True}).startswith("completed: the work was")
    assert describe_halt("BudgetExceeded", {"limit": "max_turns", "used": 3, "limit_value": 3}) == (
        "budget exceeded: max_turns used 3 of 3"
    )
    assert describe_halt("Martian", {"why": "x"}) == "Martian(why='x')"
    assert describe_halt("Completed", {"bogus": 1}) == "Completed(bogus=1)"
    assert cost(None) == "unknown"
    assert cost(0.0354) == "$0.0354"
    assert cost(0.000125) == "$0.000125"
    assert seconds(3.14159) == "3.14s"
    assert seconds(75) == "1m 15s"
    assert seconds(3725) == "1h 02m 05s"
    assert nice_ceiling(1700) == 2000
    assert nice_ceiling(0.0212) == 0.025
    assert axis(1700) == [0, 500, 1000, 1500, 2000]
    assert axis(0.0212, 4, exactly=True) == [0, 0.01, 0.02, 0.03, 0.04]


def test_a_long_run_keeps_its_chart_readable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hundreds of turns: axis labels at round turn numbers, and a cost line without a dot per
    turn."""
    rows = [started()]
    for n in range(1, 251):
        rows += turn(n, "step")
    rows.append(halted(turns=250))
    page, _ = view(write_events(tmp_path / "t.jsonl", rows), capsys)
    chart = page.find("svg", "chart")
    labels = [
        t.text() for t in chart.find_all("text", "axis") if t.attrs.get("text-anchor") == "middle"
    ]
    assert labels == ["1", "50", "100", "150", "200", "250"]
    assert len(chart.find_all("a", "bar")) == 250
    assert chart.find_all("circle", "cost-dot") == []
    assert [label_step(n) for n in (12, 13, 25, 100, 1000)] == [1, 2, 5, 10, 100]
    assert MAX_DOTS < 250


def test_an_empty_transcript_renders_a_page_that_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    page, err = view(path, capsys)
    assert "no events" in page.find("p", "empty").text()
    assert "ends without run.halted" in err
    assert render_page(build_view(read_for_view(path))).startswith("<!DOCTYPE html>")


def test_the_outcome_box_keeps_a_multi_line_reasons_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reason of several lines (a test runner's failure report) is shown as a block that keeps
    its line breaks, not run together into one paragraph."""
    report = "2 tests failed:\n  test_add: expected 3, got 4\n  test_sub: expected 1, got -1"
    reason = {"type": "RejectionLimit", "rejections": 2, "last_reason": report}
    rows = [started(), *turn(1, "done"), {**halted(verified=False), "reason": reason}]
    page, _ = view(write_events(tmp_path / "t.jsonl", rows), capsys)
    block = page.find("div", "outcome").find("pre")
    assert "  test_add: expected 3, got 4\n  test_sub: expected 1, got -1" in block.text()


def test_baselines_and_tampering_are_notes_with_their_names_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run's baseline reads as the tests failing before the first turn; a protected file
    the agent changed is a bad note in its session, names escaped like any agent text."""
    baseline = {
        "check": "`pytest -rA`",
        "runner": "pytest",
        "passed": 3,
        "failing": ["t.py::test_<b>old</b>"],
        "exit_code": 1,
        "unreadable": None,
    }
    change = {"path": "tests/<script>x</script>.py", "change": "modified", "rule": "tests/**"}
    rows = [
        started(),
        {"event": "baseline.recorded", "at": 0.1, "baseline": baseline},
        *turn(1, "done"),
        {
            "event": "protected.changed",
            "at": 0.2,
            "agent": "builder",
            "turn": 1,
            "changes": [change],
        },
        halted(),
    ]
    page, html = view(write_events(tmp_path / "t.jsonl", rows), capsys)
    notes = {n.attrs["data-kind"]: n.text() for n in page.find_all("div", "note")}
    assert "baseline: 3 passing, 1 failing before the first turn" in notes["baseline.recorded"]
    assert "t.py::test_<b>old</b>" in notes["baseline.recorded"]
    assert (
        "tests/<script>x</script>.py (modified; protected by 'tests/**')"
        in notes["protected.changed"]
    )
    assert "<script>x</script>" not in html
