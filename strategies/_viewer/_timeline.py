"""The timeline of a run's page: each session's turns, tool calls and notes, written as they
are folded (`TimelineWriter`), and the halt."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import IO, Any

from ._markup import AttrValue, Html, cost, join, seconds, tag, tokens, void
from ._records import CallView, HaltView, NoteView, TurnView

MAX_TEXT = 40_000
"""Characters of one text shown on the page; the rest is in the transcript, at the named line."""
FOLD_LINES = 14
FOLD_CHARS = 1_200


_FIRST_LINE = re.compile(r"\s*([^\n]{0,120})")
"""The start of a text's first line that is not blank (without copying the rest)."""

GROUP = 50
"""A run of more items of one kind (turns, or notes of one kind) than this in a session is
shown in collapsed groups of this many, so a long transcript's page stays usable."""


class TimelineWriter:
    """Writes one run's timeline as its items come, in order, to the binary file `out`:
    sessions as sections, turns and notes inside them, long runs of similar items collapsed
    into groups of `GROUP` (only the group being filled is held)."""

    def __init__(self, out: IO[bytes], anchor: str) -> None:
        self._out = out
        self._anchor = anchor
        self._in_section = False
        self._kind: str | None = None  # the kind of the items in `_held`
        self._held: list[tuple[TurnView | NoteView, Html]] = []
        self._grouping = False  # the current run of one kind is already being grouped
        self._groups = 0

    def segment(self, agent: str | None, iteration: int | None, resumed: bool) -> None:
        """Start a session's stretch (agent None: events of the run as a whole)."""
        self._end_run()
        self._close_section()
        if agent is None:
            return
        title = f"{agent} · session {iteration}"
        if resumed:
            title += " (resumed)"
        attrs = {
            "class": "segment",
            "data-agent": agent,
            "data-iteration": iteration,
            "data-title": title,
        }
        self._write(void("section", attrs) + tag("h4", {"class": "segment-title"}, title))
        self._in_section = True

    def item(self, item: TurnView | NoteView) -> None:
        kind = "turn" if isinstance(item, TurnView) else item.kind
        if kind != self._kind:
            self._end_run()
            self._kind = kind
        html = _turn(item, self._anchor) if isinstance(item, TurnView) else _note(item)
        self._held.append((item, html))
        if len(self._held) >= GROUP:
            self._grouping = True
            self._write_group()

    def close(self) -> None:
        self._end_run()
        self._close_section()

    def tell(self) -> int:
        """Where the next byte goes in the file."""
        return self._out.tell()

    def _end_run(self) -> None:
        if self._grouping and self._held:
            self._write_group()
        else:
            self._write(join(html for _, html in self._held))
        self._held = []
        self._kind = None
        self._grouping = False

    def _write_group(self) -> None:
        items = [item for item, _ in self._held]
        self._groups += 1
        label, facts, errors = _group_summary(items)
        attrs: dict[str, AttrValue] = {
            "class": "fold group" + (" has-errors" if errors else ""),
            "id": f"{self._anchor}-g{self._groups}",
            "data-label": label,
            "data-errors": errors,
        }
        summary = tag(
            "summary",
            None,
            tag("span", {"class": "preview"}, label),
            tag("span", {"class": "size"}, facts),
        )
        self._write(tag("details", attrs, summary, [html for _, html in self._held]))
        self._held = []

    def _close_section(self) -> None:
        if self._in_section:
            self._write(Html("</section>"))
            self._in_section = False

    def _write(self, html: str) -> None:
        if html:
            self._out.write(html.encode("utf-8", "backslashreplace"))


def _group_summary(items: list[TurnView | NoteView]) -> tuple[str, str, int]:
    """A group's label, its facts and its count of tool errors."""
    turns = [i for i in items if isinstance(i, TurnView)]
    notes = [i for i in items if isinstance(i, NoteView)]
    if notes:
        first, last = notes[0], notes[-1]
        return f"{len(notes)} {first.kind} events", f"lines {first.line:,} to {last.line:,}", 0
    calls = sum(len(t.calls) for t in turns)
    errors = sum(t.errors for t in turns)
    used = sum(t.usage.total_tokens for t in turns if t.usage is not None)
    facts = [f"{calls:,} tool calls"]
    if errors:
        facts.append(f"{errors:,} failed")
    facts.append(f"{tokens(used)} tokens")
    return f"turns {turns[0].number:,} to {turns[-1].number:,}", " · ".join(facts), errors


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
    match = _FIRST_LINE.match(shown)
    first = match.group(1) if match else ""
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
