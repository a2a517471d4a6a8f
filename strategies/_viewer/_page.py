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
from functools import cache
from importlib.resources import files

from ._chart import has_usage, usage_chart
from ._markup import Child, Html, cost, join, seconds, tag, tokens, void
from ._records import RunView, TranscriptView
from ._timeline import halt_section, segment, text_block


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
    return document(f"{name}: {_title(view)}", style, policy, body)


def document(title: str, style: str, policy: str, body: Html) -> str:
    """A page: `body` (the ``<body>`` element) with the head every viewer page has, its
    Content Security Policy `policy` and its inline stylesheet `style`."""
    head = join(
        [
            Html('<meta charset="utf-8">'),
            void("meta", {"http-equiv": "Content-Security-Policy", "content": policy}),
            Html('<meta name="viewport" content="width=device-width, initial-scale=1">'),
            Html('<meta name="generator" content="harness view">'),
            tag("title", None, title),
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
            _legend(run) if has_usage(run.turns) else None,
        ),
        tag(
            "section",
            {"class": "timeline"},
            tag("h3", None, "Timeline"),
            [segment(s, anchor) for s in run.segments],
            halt_section(halt) if halt is not None else None,
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
        None if halt.verified else _last_reason(run),
    )


def _last_reason(run: RunView) -> Html | None:
    """What the check (or the evaluator) said last, for a run that ended unverified on
    something else (a budget, a sensor, a signal): the reason the work is not done."""
    note = run.last_rejection
    if note is None or run.halt is None or not note.body or note.body in run.halt.description:
        return None
    return tag(
        "div",
        {"class": "last-reason"},
        tag("b", None, f"Last reason ({note.title}, line {note.line}): "),
        text_block(note.body, "reason"),
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
            [tag("dt", None, k), tag("dd", None, text_block(v, "fact"))]
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
