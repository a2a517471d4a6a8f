"""Text an agent, a tool, a check or a task file controls, made safe to print on a terminal.

A model's answer, a tool's output, a test runner's report or a task's title may hold control
characters: an escape sequence can recolour or clear the operator's screen, retitle the
window, move the cursor over earlier lines (and so hide a failure), or, on some terminals,
write to the clipboard; a carriage return overprints a line; bidirectional overrides reorder
what is shown. `for_terminal` is the one helper every command-line output uses on such text:
each of those characters is shown as a visible escape (``\\x1b``, ``\\r``, ``\\u202e``), so
the text reads as what it is and does nothing. The command line's own colours are added
after, around text that has been through it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# C0 controls and DEL, C1 controls, and the bidirectional embeddings, overrides and isolates.
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_UNSAFE = (*range(0x20), 0x7F, *range(0x80, 0xA0), *_BIDI)
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _shown(code: int) -> str:
    if code in _NAMED:
        return _NAMED[code]
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_ONE_LINE = {code: _shown(code) for code in _UNSAFE}
_LINES = {code: shown for code, shown in _ONE_LINE.items() if code not in (0x09, 0x0A)}
_ANY_UNSAFE = re.compile("[" + "".join(re.escape(chr(c)) for c in _UNSAFE) + "]")


def for_terminal(text: object, *, lines: bool = False) -> str:
    """`text` with every control character shown as an escape (see the module). With `lines`,
    line breaks and tabs are kept (a multi-line report stays readable)."""
    shown = str(text)
    if _ANY_UNSAFE.search(shown) is None:
        return shown
    return shown.translate(_LINES if lines else _ONE_LINE)


# An escape sequence whole: CSI (colours, cursor moves), OSC (titles, hyperlinks, clipboard: up
# to BEL or ST), the other string sequences (DCS, SOS, PM, APC, up to ST) and two-character ones.
_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)


def without_escapes(text: object) -> str:
    """`text` for a reader that is not a terminal (an agent reading a block reason): every
    escape sequence removed whole (a test runner's colours are noise there, and a sequence is
    never passed on), then what control characters remain shown as `for_terminal` shows them,
    line breaks and tabs kept."""
    return for_terminal(_SEQUENCE.sub("", str(text)), lines=True)


def terminal_safe_values(_logger: Any, _method: str, event: Mapping[str, Any]) -> Any:
    """A structlog processor: every string value of the event (its name too) through
    `for_terminal`, so a log line on stderr cannot carry an agent's escape sequences."""
    return {
        key: for_terminal(value, lines=True) if isinstance(value, str) else value
        for key, value in event.items()
    }
