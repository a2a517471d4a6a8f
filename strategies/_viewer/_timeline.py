"""The timeline of a run's page: each session's turns, tool calls and notes, and the halt."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._markup import Html, cost, join, seconds, tag, tokens
from ._records import CallView, HaltView, NoteView, Segment, TurnView

MAX_TEXT = 40_000
"""Characters of one text shown on the page; the rest is in the transcript, at the named line."""
FOLD_LINES = 14
FOLD_CHARS = 1_200


def segment(segment: Segment, anchor: str) -> Html:
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
            tag("div", {"class": "said"}, text_block(turn.text, "assistant", turn.response_line))
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
            text_block(call.result, "output", call.line, open_=call.is_error),
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
            shown = text_block(value, "arg", line)
        else:
            shown = text_block(json.dumps(value, ensure_ascii=False, indent=2), "arg", line)
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
        text_block(note.body, "note", note.line) if note.body else None,
    )


def halt_section(halt: HaltView) -> Html:
    fields = [[tag("dt", None, "type"), tag("dd", None, tag("code", None, halt.type))]]
    for key, value in halt.fields.items():
        shown = value if isinstance(value, str) else json.dumps(value)
        fields.append([tag("dt", None, key), tag("dd", None, text_block(shown, "fact", halt.line))])
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


def text_block(text: str, kind: str, line: int | None = None, *, open_: bool = False) -> Html:
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
