"""The live display on a terminal: a status line per run, redrawn in place with ANSI escapes.

What happened (a session started, a tool failed, a check's verdict, feedback, the halt)
scrolls above the panel as coloured lines; the per-turn lines of the plain display are left
to the panel, which shows the turn, session, tool calls, tokens, cost, elapsed time and what
the run is doing. A ticker thread redraws the panel a few times a second, so the elapsed
time moves during a long model call. Lines written with `write` (log lines) go above the
panel too, so nothing garbles it. The panel never wraps: each line is cut to the terminal's
width, read at every redraw. ``NO_COLOR`` turns colour off, not the panel.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType
from typing import TextIO

from harness.events import Event, EventSink, RunHalted, ToolCalled, TurnFinished
from termination import Budget

from .._terminal import for_terminal
from ._display import RunStatus, RunTracker, Tone, describe

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
CLEAR_DOWN = "\r\x1b[J"
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_COLOURS: dict[str, str] = {
    "good": "\x1b[32m",
    "bad": "\x1b[31m",
    "warn": "\x1b[33m",
    "strong": "\x1b[1m",
    "dim": "\x1b[2m",
    "accent": "\x1b[36m",
}
_RESET = "\x1b[0m"


class LiveProgress:
    """A live panel on the terminal `stream`; use it as a context manager (see `_progress`)."""

    def __init__(self, stream: TextIO, *, interval: float = 0.2, colour: bool | None = None):
        self._out = stream
        self._interval = interval
        self._colour = colour if colour is not None else "NO_COLOR" not in os.environ
        self._lock = threading.RLock()
        self._trackers: list[RunTracker] = []
        self._drawn = 0  # panel lines on screen, the cursor at the end of the last one
        self._pending = ""  # a written line still waiting for its newline
        self._frame = 0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- the display's API

    def track(self, label: str = "", budget: Budget | None = None) -> EventSink:
        tracker = RunTracker(label, budget, on_event=self._on_event)
        with self._lock:
            self._trackers.append(tracker)
        return tracker

    def forget(self, sink: EventSink) -> None:
        """Take a run's line off the panel (it ended without halting, or no longer matters)."""
        with self._lock:
            kept = [t for t in self._trackers if t is not sink]
            if len(kept) != len(self._trackers):
                self._trackers = kept
                self._print([])

    def write(self, text: str) -> None:
        with self._lock:
            self._pending += text
            if "\n" not in self._pending:
                return
            done, self._pending = self._pending.rsplit("\n", 1)
            self._print([done])

    def __enter__(self) -> LiveProgress:
        with self._lock:
            self._out.write(HIDE_CURSOR)
            self._out.flush()
        self._stop.clear()
        self._ticker = threading.Thread(target=self._tick, name="harness-progress", daemon=True)
        self._ticker.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            self._clear()
            if self._pending:
                self._out.write(self._pending + "\n")
                self._pending = ""
            self._out.write(SHOW_CURSOR)
            self._out.flush()

    # -- drawing

    def _on_event(self, tracker: RunTracker, event: Event) -> None:
        described = describe(event)
        shown = described is not None and not isinstance(event, TurnFinished)
        if isinstance(event, ToolCalled) and not event.is_error:
            shown = False
        with self._lock:
            lines = []
            if shown and described is not None:
                label = f"{for_terminal(tracker.status.label)}: " if tracker.status.label else ""
                stamp = self._paint(f"[{event.at:7.2f}s]", "dim")
                lines.append(f"{stamp} {label}{self._paint(described[0], described[1])}")
            if isinstance(event, RunHalted):
                self._trackers = [t for t in self._trackers if t is not tracker]
            self._print(lines)

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                self._frame += 1
                self._print([])

    def _print(self, lines: list[str]) -> None:
        """Clear the panel, print `lines` above it, draw it again (holding the lock)."""
        self._clear()
        for line in lines:
            self._out.write(line + "\n")
        panel = [self._status_line(t) for t in self._trackers]
        if panel:
            self._out.write("\n".join(panel))
        self._drawn = len(panel)
        self._out.flush()

    def _clear(self) -> None:
        if self._drawn > 1:
            self._out.write(f"\x1b[{self._drawn - 1}A")
        if self._drawn:
            self._out.write(CLEAR_DOWN)
        self._drawn = 0

    def _status_line(self, tracker: RunTracker) -> str:
        s = tracker.status
        label = for_terminal(s.label)
        head = f"{SPINNER[self._frame % len(SPINNER)]} {label + ' ' if label else ''}"
        plain = head + fit(status_parts(s, tracker.elapsed()), self._width() - 1 - len(head))
        if not self._colour:
            return plain
        return self._paint(head, "accent") + plain[len(head) :]

    def _width(self) -> int:
        try:
            return os.get_terminal_size(self._out.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            return 80

    def _paint(self, text: str, tone: Tone | str) -> str:
        code = _COLOURS.get(tone)
        if not self._colour or code is None:
            return text
        return f"{code}{text}{_RESET}"


def status_parts(s: RunStatus, elapsed: float) -> list[tuple[int, str]]:
    """The status line's parts in the order shown, each with its rank: when the terminal is
    too narrow, the parts of the highest rank go first."""
    limit = f"/{s.max_turns}" if s.max_turns else ""
    cost = "cost unknown" if s.cost_usd is None else f"${s.cost_usd:.4f}"
    if s.max_cost_usd and s.cost_usd is not None:
        cost += f" of ${s.max_cost_usd:g}"
    failed = f" ({s.tool_errors} failed)" if s.tool_errors else ""
    activity = s.activity
    if s.last_tool is not None and s.activity.startswith("running"):
        activity = f"{s.activity} · last: {s.last_tool}"
    parts = [
        (0, f"{s.agent} session {s.iteration}" if s.agent else ""),
        (0, f"turn {s.turns}{limit}"),
        (0, _elapsed(elapsed)),
        (2, f"{_compact(s.total_tokens)} tokens"),
        (2, cost),
        (3, f"{s.tool_calls} tool calls{failed}"),
        (1, activity),
    ]
    return [(rank, for_terminal(text)) for rank, text in parts if text]


def fit(parts: list[tuple[int, str]], width: int) -> str:
    """The parts joined with " · " in their order: every part of rank 0, then each other part,
    lowest rank first, if it still fits in `width`; what does not fit is cut with an
    ellipsis."""
    kept = {i for i, (rank, _) in enumerate(parts) if rank == 0}

    def joined(indexes: set[int]) -> str:
        return " · ".join(text for i, (_, text) in enumerate(parts) if i in indexes)

    for i in sorted(set(range(len(parts))) - kept, key=lambda i: (parts[i][0], i)):
        if len(joined(kept | {i})) <= width:
            kept.add(i)
    text = joined(kept)
    if len(text) > width:
        text = text[: max(0, width - 1)] + "…"
    return text


def _compact(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 10_000:
        return f"{count / 1_000:.0f}k"
    if count >= 1_000:
        return f"{count / 1_000:.1f}k"
    return str(count)


def _elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"
