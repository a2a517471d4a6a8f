"""The hint an `edit_file` miss answers with: the region of the file closest to the text the
agent asked to replace, numbered, so that a model which did not read the file first can copy
the real lines and try again.

The search is bounded, whatever the file's size. A first pass scores every window of the
file as long as `old` (in lines) by the lines it shares with `old` (or, when it shares none,
the words), from prefix sums: linear in the file's size. Only the best few windows are then
compared character by character with `difflib.SequenceMatcher`, on at most `MAX_COMPARED`
characters of each side, so the quadratic part never grows with the file.
`bench/edit_hint.py` prints what it costs on large files.
"""

from __future__ import annotations

import difflib
import re

MAX_SHOWN_LINES = 40  # lines of the region shown at most
MAX_SHOWN_CHARS = 4_000  # characters of the region shown at most
MAX_COMPARED = 3_000  # characters of each side difflib compares at most
CANDIDATES = 6  # windows the first pass hands to difflib
MIN_RATIO = 0.3  # below this, no region is "close": the hint says to read the file instead

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}|\d+")


def closest_region(text: str, old: str) -> tuple[int, list[str], float] | None:
    """The region of `text` most like `old`: its first line's number (from 1), its lines and
    the similarity (0..1), or None when the file is empty or nothing in it resembles `old`."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the end of the last line, not a line of its own
    wanted = old.removesuffix("\n").split("\n")
    if not lines or not any(line.strip() for line in wanted):
        return None
    size = min(len(wanted), len(lines))
    starts = _candidates(lines, wanted, size)
    target = "\n".join(wanted)[:MAX_COMPARED]
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)  # difflib indexes the second sequence once, for every candidate
    best: tuple[float, int] | None = None
    for start in starts:
        matcher.set_seq1("\n".join(lines[start : start + size])[:MAX_COMPARED])
        ratio = matcher.ratio()
        if best is None or ratio > best[0]:
            best = (ratio, start)
    if best is None or best[0] < MIN_RATIO:
        return None
    ratio, start = best
    return start + 1, lines[start : start + size], ratio


def _candidates(lines: list[str], wanted: list[str], size: int) -> list[int]:
    """The starts of the windows most worth comparing: those holding the most of `wanted`'s
    lines (the same but for spacing); when no line of the file is, those sharing the most
    words with it. Each of the file's lines is looked at once or twice."""
    same = {_squeezed(line) for line in wanted if line.strip()}
    weights = [1.0 if _squeezed(line) in same else 0.0 for line in lines]
    if not any(weights):
        words = {word for line in wanted for word in _WORD.findall(line)}
        for index, line in enumerate(lines):
            found = _WORD.findall(line)
            if found:
                weights[index] = sum(word in words for word in found) / len(found)
    totals = [0.0]
    for weight in weights:
        totals.append(totals[-1] + weight)
    scores = sorted(
        ((totals[start + size] - totals[start], start) for start in range(len(lines) - size + 1)),
        key=lambda pair: (-pair[0], pair[1]),
    )
    chosen: list[int] = []
    for score, start in scores:
        if len(chosen) == CANDIDATES or (score == 0 and chosen):
            break
        if all(abs(start - other) >= max(1, size // 2) for other in chosen):
            chosen.append(start)
    return chosen


def _squeezed(line: str) -> str:
    return " ".join(line.split())


def miss_hint(path: str, text: str, old: str) -> str:
    """What an `edit_file` miss adds to its error: the closest region, numbered, and the
    instruction to match it exactly; or, when nothing is close, to read the file first."""
    found = closest_region(text, old)
    if found is None:
        return (
            f"No part of {path} resembles it. Read the file (read_file) and copy the exact "
            "lines you want to replace into 'old'."
        )
    first, region, _ = found
    shown: list[str] = []
    chars = 0
    for number, line in enumerate(region, first):
        row = f"{number:>6}\t{line}"
        if len(shown) == MAX_SHOWN_LINES or chars + len(row) > MAX_SHOWN_CHARS:
            shown.append(f"[... {len(region) - len(shown)} more line(s) of the region not shown]")
            break
        shown.append(row)
        chars += len(row) + 1
    last = first + len(region) - 1
    span = f"line {first}" if last == first else f"lines {first}-{last}"
    return "\n".join(
        [
            f"The closest text in {path} is at {span} (line number, a tab, then the line):",
            *shown,
            "'old' must match the file exactly, character for character (spacing and "
            "indentation included): copy these lines without their numbers and tabs, or "
            "read the file first.",
        ]
    )
