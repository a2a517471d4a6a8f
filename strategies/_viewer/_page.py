"""The run viewer's page: one self-contained HTML file for a transcript.

The page is complete without its script (everything is rendered here, escaped); the inline
script only adds an index of sessions and turns, filters and keyboard navigation. A Content
Security Policy allows nothing but that script and the stylesheet, by their hashes, so the page
loads nothing from the network and no script in the transcript could run even if it were not
escaped.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import Any

from ._chart import usage_chart
from ._markup import Child, Html, cost, join, seconds, tag, tokens, void
from ._model import CallView, HaltView, NoteView, RunView, Segment, TranscriptView, TurnView

MAX_TEXT = 40_000
"""Characters of one text shown on the page; the rest is in the transcript, at the named line."""
FOLD_LINES = 14
FOLD_CHARS = 1_200


@cache
def _asset(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def render_page(view: TranscriptView) -> str:
    """The whole HTML page for a transcript."""
    style, script = _asset("viewer.css"), _asset("viewer.js")
    policy = (
        "default-src 'none'; img-src data:; base-uri 'none'; form-action 'none'; "
        f"style-src '{_digest(style)}'; script-src '{_digest(script)}'"
    )
    name = view.path.rsplit("/", 1)[-1]
    runs = [_run(run, f"r{i + 1}") for i, run in enumerate(view.runs)]
    if not view.runs:
        runs = [tag("p", {"class": "empty"}, "The transcript has no events.")]
    body = tag(
        "body",
        None,
        tag(
            "header",
            {"class": "top"},
            tag("h1", None, "Run ", tag("span", {"class": "file"}, name)),
            tag("p", {"class": "source"}, f"{view.events} events from {view.path}"),
            _cut_off(view),
            tag("div", {"id": "controls", "class": "controls", "hidden": True}),
        ),
        tag(
            "div",
            {"class": "layout"},
            tag("nav", {"id": "index", "class": "index", "hidden": True, "aria-label": "Turns"}),
            tag("main", None, runs),
        ),
        Html(f"<script>{script}</script>"),
    )
    head = join(
        [
            Html('<meta charset="utf-8">'),
            void("meta", {"http-equiv": "Content-Security-Policy", "content": policy}),
            Html('<meta name="viewport" content="width=device-width, initial-scale=1">'),
            Html('<meta name="generator" content="harness view">'),
            tag("title", None, f"{name}: {_title(view)}"),
            Html(f"<style>{style}</style>"),
        ]
    )
    return f'<!DOCTYPE html>\n<html lang="en">\n<head>{head}</head>\n{body}\n</html>\n'


def _title(view: TranscriptView) -> str:
    if not view.runs:
        return "empty transcript"
    halt = view.runs[-1].halt
    if halt is None:
        return "ended without run.halted"
    return "verified complete" if halt.verified else "not verified"


def _cut_off(view: TranscriptView) -> Html | None:
    if view.cut_off_line is None:
        return None
    return tag(
        "p",
        {"class": "source cut"},
        f"Line {view.cut_off_line} was cut off mid-write (the run crashed or was killed while "
        "writing it) and is not shown; every line before it is.",
    )


def _run(run: RunView, anchor: str) -> Html:
    halt = run.halt
    return tag(
        "section",
        {"class": "run", "id": anchor, "data-run": run.run_id or ""},
        tag("h2", None, f"run {run.run_id}" if run.run_id else "run (no run.started)"),
        _outcome(run) if halt is not None else _crash_banner(run),
        _summary(run),
        _task(run),
        tag(
            "section",
            {"class": "usage"},
            tag("h3", None, "Usage over time"),
            usage_chart(run.turns, anchor),
            _legend(run),
        ),
        tag(
            "section",
            {"class": "timeline"},
            tag("h3", None, "Timeline"),
            [_segment(s, anchor) for s in run.segments],
            _halt(halt) if halt is not None else None,
        ),
    )


def _outcome(run: RunView) -> Html:
    halt = run.halt
    assert halt is not None
    kind = "verified" if halt.verified else "unverified"
    label = "Verified complete" if halt.verified else "Not verified"
    return tag(
        "div",
        {"class": f"outcome {kind}", "role": "status"},
        tag("strong", None, label),
        tag("span", None, halt.description),
    )


def _crash_banner(run: RunView) -> Html:
    words = [
        "The run ends without run.halted: it crashed, was killed or is still running.",
        " The figures below add up the turns recorded.",
    ]
    if run.turns and run.turns[-1].response_line is None:
        words.append(f" Turn {run.turns[-1].number} started, and its model call never returned.")
    return tag(
        "div",
        {"class": "outcome crashed", "role": "status"},
        tag("strong", None, "Ended without run.halted"),
        tag("span", None, "".join(words)),
    )


def _summary(run: RunView) -> Html:
    usage = run.usage
    halt = run.halt
    turns = halt.turns if halt is not None else len(run.turns)
    calls = halt.tool_calls if halt is not None else run.tool_calls
    failed = (
        tag("small", {"class": "bad"}, f"{run.tool_errors} failed") if run.tool_errors else None
    )
    cards: list[tuple[str, Child]] = [
        ("turns", str(turns)),
        ("tool calls", [str(calls), " " if failed else None, failed]),
        ("sessions", str(run.sessions)),
        ("tokens in", tokens(usage.input_tokens)),
        ("tokens out", tokens(usage.output_tokens)),
        ("cost", cost(usage.cost_usd)),
        ("elapsed", seconds(run.elapsed)),
    ]
    if usage.cached_tokens:
        cards.insert(5, ("cached", tokens(usage.cached_tokens)))
    return tag(
        "dl",
        {"class": "summary"},
        [tag("div", {"class": "card"}, tag("dt", None, k), tag("dd", None, v)) for k, v in cards],
    )


def _task(run: RunView) -> Html:
    rows = [
        ("strategy", run.strategy),
        ("workspace", run.workspace),
        ("task", run.task),
        ("completion check", run.check),
    ]
    return tag(
        "dl",
        {"class": "facts"},
        [
            [tag("dt", None, k), tag("dd", None, _text(v, "fact"))]
            for k, v in rows
            if v is not None and v != ""
        ],
    )


def _legend(run: RunView) -> Html:
    agents = list(dict.fromkeys(t.agent for t in run.turns))
    keys = [
        tag("span", {"class": "key"}, tag("i", {"class": f"swatch in agent-{i % 4}"}), f"{a} input")
        for i, a in enumerate(agents)
    ]
    keys += [
        tag(
            "span",
            {"class": "key"},
            tag("i", {"class": f"swatch out agent-{i % 4}"}),
            f"{a} output",
        )
        for i, a in enumerate(agents)
    ]
    keys.append(tag("span", {"class": "key"}, tag("i", {"class": "swatch cost"}), "cost so far"))
    keys.append(tag("span", {"class": "key"}, tag("i", {"class": "swatch edge"}), "new session"))
    return tag("p", {"class": "legend"}, keys)


def _segment(segment: Segment, anchor: str) -> Html:
    if segment.agent is None:
        return join(_note(n) for n in segment.items if isinstance(n, NoteView))
    title = f"{segment.agent} · session {segment.iteration}"
    if segment.resumed:
        title += " (resumed)"
    items = [_turn(i, anchor) if isinstance(i, TurnView) else _note(i) for i in segment.items]
    return tag(
        "section",
        {
            "class": "segment",
            "data-agent": segment.agent,
            "data-iteration": segment.iteration,
            "data-title": title,
        },
        tag("h4", {"class": "segment-title"}, title),
        items,
    )


def _turn(turn: TurnView, anchor: str) -> Html:
    usage = turn.usage
    facts = [f"at {seconds(turn.at if turn.at is not None else turn.started_at or 0.0)}"]
    if turn.at is not None and turn.started_at is not None:
        facts.append(f"model call {seconds(max(0.0, turn.at - turn.started_at))}")
    if usage is not None:
        facts.append(f"{tokens(usage.input_tokens)} in / {tokens(usage.output_tokens)} out")
        facts.append(cost(usage.cost_usd))
    if turn.model:
        facts.append(turn.model)
    flags = []
    if turn.errors:
        flags.append(
            tag(
                "span",
                {"class": "badge bad"},
                f"{turn.errors} tool error" + ("s" if turn.errors > 1 else ""),
            )
        )
    if turn.response_line is None:
        flags.append(tag("span", {"class": "badge bad"}, "no response"))
    elif not turn.calls:
        flags.append(tag("span", {"class": "badge claim"}, "claims done"))
    body: list[Html] = []
    if turn.response_line is None:
        body.append(
            tag(
                "p",
                {"class": "missing"},
                "The model call started and never returned (no turn.finished).",
            )
        )
    if turn.text:
        body.append(
            tag("div", {"class": "said"}, _text(turn.text, "assistant", turn.response_line))
        )
    elif turn.response_line is not None and not turn.calls:
        body.append(tag("p", {"class": "missing"}, "(no text)"))
    body.extend(_call(c, turn.response_line) for c in turn.calls)
    return tag(
        "article",
        {
            "class": "turn" + (" has-errors" if turn.errors else ""),
            "id": f"{anchor}-t{turn.number}",
            "data-turn": turn.number,
            "data-label": f"turn {turn.number}",
            "data-errors": turn.errors,
        },
        tag(
            "header",
            None,
            tag(
                "a",
                {"class": "turn-no", "href": f"#{anchor}-t{turn.number}"},
                f"turn {turn.number}",
            ),
            tag("span", {"class": "session-turn"}, f"{turn.agent} turn {turn.turn}"),
            flags,
            tag("span", {"class": "facts-inline"}, " · ".join(facts)),
            tag("span", {"class": "line"}, f"line {turn.line}"),
        ),
        body,
    )


def _call(call: CallView, line: int | None) -> Html:
    if call.result is None:
        state, result = (
            "pending",
            tag("p", {"class": "missing"}, "No result recorded for this call."),
        )
    else:
        state = "error" if call.is_error else "ok"
        result = tag(
            "div",
            {"class": "result"},
            tag("span", {"class": "label"}, "error" if call.is_error else "result"),
            _text(call.result, "output", call.line, open_=call.is_error),
        )
    return tag(
        "div",
        {"class": f"call {state}"},
        tag(
            "div",
            {"class": "call-head"},
            tag("code", {"class": "tool"}, call.name),
            tag("span", {"class": "badge bad"}, "error") if call.is_error else None,
            tag("span", {"class": "call-id"}, call.id),
        ),
        _arguments(call.arguments, line),
        result,
    )


def _arguments(arguments: Mapping[str, Any], line: int | None) -> Html | None:
    if not arguments:
        return None
    rows = []
    for key, value in arguments.items():
        if isinstance(value, str):
            shown = _text(value, "arg", line)
        else:
            shown = _text(json.dumps(value, ensure_ascii=False, indent=2), "arg", line)
        rows.append([tag("dt", None, key), tag("dd", None, shown)])
    return tag("dl", {"class": "arguments"}, rows)


def _note(note: NoteView) -> Html:
    return tag(
        "div",
        {"class": f"note {note.tone}", "data-kind": note.kind},
        tag(
            "div",
            {"class": "note-head"},
            tag("strong", None, note.title),
            tag("span", {"class": "facts-inline"}, f"at {seconds(note.at)}"),
            tag("span", {"class": "line"}, f"line {note.line}"),
        ),
        _text(note.body, "note", note.line) if note.body else None,
    )


def _halt(halt: HaltView) -> Html:
    fields = [[tag("dt", None, "type"), tag("dd", None, tag("code", None, halt.type))]]
    for key, value in halt.fields.items():
        shown = value if isinstance(value, str) else json.dumps(value)
        fields.append([tag("dt", None, key), tag("dd", None, _text(shown, "fact", halt.line))])
    fields.append([tag("dt", None, "verified"), tag("dd", None, "yes" if halt.verified else "no")])
    return tag(
        "section",
        {"class": f"halt {'verified' if halt.verified else 'unverified'}", "id": "halt"},
        tag(
            "div",
            {"class": "note-head"},
            tag("strong", None, "run halted: ", halt.description),
            tag("span", {"class": "facts-inline"}, f"at {seconds(halt.at)}"),
            tag("span", {"class": "line"}, f"line {halt.line}"),
        ),
        tag("dl", {"class": "facts"}, fields),
    )


def _text(text: str, kind: str, line: int | None = None, *, open_: bool = False) -> Html:
    """Text as a block that keeps its line breaks; a long one folds behind its first line."""
    hidden = len(text) - MAX_TEXT
    shown = text[:MAX_TEXT] if hidden > 0 else text
    clipped = None
    if hidden > 0:
        where = f" (transcript line {line})" if line is not None else ""
        clipped = tag(
            "p", {"class": "clipped"}, f"… {hidden:,} more characters in the transcript{where}"
        )
    block = tag("pre", {"class": f"text text-{kind}"}, shown)
    lines = shown.count("\n") + 1
    if lines <= FOLD_LINES and len(shown) <= FOLD_CHARS:
        return join([block, clipped])
    first = shown.strip().split("\n", 1)[0][:120]
    return tag(
        "details",
        {"class": "fold", "open": open_},
        tag(
            "summary",
            None,
            tag("span", {"class": "preview"}, first),
            tag("span", {"class": "size"}, f"{lines:,} lines, {len(text):,} characters"),
        ),
        block,
        clipped,
    )
