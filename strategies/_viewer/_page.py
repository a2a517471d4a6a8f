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
import io
from functools import cache
from importlib.resources import files
from typing import IO

from ._chart import has_usage, usage_chart
from ._markup import Child, Html, cost, join, seconds, tag, tokens, void
from ._records import RunView, TranscriptView
from ._timeline import halt_section, text_block


@cache
def _asset(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def render_page(view: TranscriptView) -> str:
    """The whole HTML page for a transcript, as text (`write_page` writes it to a file)."""
    out = io.BytesIO()
    write_page(view, out)
    return out.getvalue().decode("utf-8")


def write_page(view: TranscriptView, out: IO[bytes]) -> None:
    """Write the HTML page for a transcript to `out`, copying each run's timeline from the
    view's timeline file in pieces (a long transcript is never held whole)."""
    style, script = _asset("viewer.css"), _asset("viewer.js")
    policy = (
        "default-src 'none'; img-src data:; base-uri 'none'; form-action 'none'; "
        f"style-src '{_digest(style)}'; script-src '{_digest(script)}'"
    )
    name = view.path.rsplit("/", 1)[-1]
    header = tag(
        "header",
        {"class": "top"},
        tag("h1", None, "Run ", tag("span", {"class": "file"}, name)),
        tag("p", {"class": "source"}, f"{view.events} events from {view.path}"),
        _cut_off(view),
        tag("div", {"id": "controls", "class": "controls", "hidden": True}),
    )
    nav = tag("nav", {"id": "index", "class": "index", "hidden": True, "aria-label": "Turns"})

    def write(text: str) -> None:
        out.write(text.encode("utf-8", "backslashreplace"))

    write(document_head(f"{name}: {_title(view)}", style, policy))
    write(f'<body>{header}<div class="layout">{nav}<main>')
    if not view.runs:
        write(tag("p", {"class": "empty"}, "The transcript has no events."))
    for i, run in enumerate(view.runs):
        head, tail = _run(run, f"r{i + 1}")
        write(head)
        _copy(view.timeline, run.timeline, out)
        write(tail)
    write(f"</main></div><script>{script}</script></body>\n</html>\n")


def _copy(source: IO[bytes], span: tuple[int, int], out: IO[bytes]) -> None:
    start, end = span
    source.seek(start)
    left = end - start
    while left > 0:
        chunk = source.read(min(left, 1 << 20))
        if not chunk:
            raise OSError(f"the viewer's timeline file ended {left} bytes early")
        out.write(chunk)
        left -= len(chunk)
    source.seek(0, io.SEEK_END)


def document_head(title: str, style: str, policy: str) -> str:
    """The start of every viewer page, up to its ``<body>``: its Content Security Policy
    `policy` and its inline stylesheet `style`."""
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
    return f'<!DOCTYPE html>\n<html lang="en">\n<head>{head}</head>\n'


def document(title: str, style: str, policy: str, body: Html) -> str:
    """A page: `body` (the ``<body>`` element) after `document_head`."""
    return f"{document_head(title, style, policy)}{body}\n</html>\n"


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


def _run(run: RunView, anchor: str) -> tuple[str, str]:
    """The run's section around its timeline: what goes before it, and after it."""
    halt = run.halt
    head = join(
        [
            void("section", {"class": "run", "id": anchor, "data-run": run.run_id or ""}),
            tag("h2", None, f"run {run.run_id}" if run.run_id else "run (no run.started)"),
            _outcome(run) if halt is not None else _crash_banner(run),
            _summary(run),
            _task(run),
            tag(
                "section",
                {"class": "usage"},
                tag("h3", None, "Usage over time"),
                usage_chart(run.points, anchor),
                _legend(run) if has_usage(run.points) else None,
            ),
            void("section", {"class": "timeline"}),
            tag("h3", None, "Timeline"),
        ]
    )
    tail = join([halt_section(halt) if halt is not None else None, Html("</section></section>")])
    return head, tail


def _outcome(run: RunView) -> Html:
    halt = run.halt
    assert halt is not None
    kind = "verified" if halt.verified else "unverified"
    label = "Verified complete" if halt.verified else "Not verified"
    return tag(
        "div",
        {"class": f"outcome {kind}", "role": "status"},
        tag("strong", None, label),
        # A block that keeps its lines: a test runner's report in the reason stays readable.
        text_block(halt.description, "reason"),
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
    if run.unanswered is not None:
        words.append(f" Turn {run.unanswered} started, and its model call never returned.")
    return tag(
        "div",
        {"class": "outcome crashed", "role": "status"},
        tag("strong", None, "Ended without run.halted"),
        tag("span", None, "".join(words)),
    )


def _summary(run: RunView) -> Html:
    usage = run.usage
    failed = (
        tag("small", {"class": "bad"}, f"{run.tool_errors} failed") if run.tool_errors else None
    )
    cards: list[tuple[str, Child]] = [
        ("turns", str(run.turns)),
        ("tool calls", [str(run.tool_calls), " " if failed else None, failed]),
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
    agents = list(dict.fromkeys(t.agent for t in run.points))
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
