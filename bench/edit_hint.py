"""What an `edit_file` miss costs: finding the closest region of the file for the hint.

    python bench/edit_hint.py            # files of 1,000 to 100,000 lines, 5 runs each
    python bench/edit_hint.py --quick    # up to 10,000 lines, 3 runs each

H: time to build the hint (`miss_hint`, the search included), in ms (median), for an `old`
   of 3 lines with wrong indentation whose real text sits near the end of the file, and for
   an `old` of 40 lines; and the whole failed `edit_file` call through the tool (read, decode,
   count, hint) for the 3-line miss. The search is linear in the file's lines: difflib
   compares only a few windows, each cut to a bounded length.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from harness import ToolCall, ToolContext, edit_file
from harness._tools._edit_hint import miss_hint
from harness.extend import SessionStore, SystemClock


def _file(lines: int) -> str:
    return "".join(
        f"def helper_{i}(value):\n    return value * {i}\n\n\n" for i in range(lines // 4)
    )


def _median_ms(text: str, old: str, times: int) -> float:
    took = []
    for _ in range(times):
        start = time.perf_counter()
        miss_hint("big.py", text, old)
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took)


async def _tool_ms(root: Path, old: str, times: int) -> float:
    arguments = {"path": "big.py", "old": old, "new": "x"}
    context = ToolContext(
        root, SessionStore(), SystemClock(), ToolCall("c", "edit_file", arguments), "bench"
    )
    took = []
    for _ in range(times):
        start = time.perf_counter()
        result = await edit_file.call(arguments, context, time_limit=600)
        took.append((time.perf_counter() - start) * 1000)
        assert result.is_error
        assert "closest text" in result.content, result.content[:200]
    return statistics.median(took)


async def main(quick: bool) -> None:
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    times = 3 if quick else 5
    print(
        f"{'lines':>8} {'bytes':>10} {'hint 3 lines':>13} {'hint 40 lines':>14} {'tool call':>10}"
    )
    for lines in sizes:
        text = _file(lines)
        target = lines // 4 - 10
        short = f"def helper_{target}(value):\n  return value * {target}\n"
        long = "".join(
            f"def helper_{i}(value):\n  return value * {i}\n\n\n"
            for i in range(target - 9, target + 1)
        )
        hint_short = _median_ms(text, short, times)
        hint_long = _median_ms(text, long, times)
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "big.py").write_text(text)
            tool_ms = await _tool_ms(root, short, times)
        print(
            f"{lines:>8,} {len(text):>10,} {hint_short:>10.1f} ms {hint_long:>11.1f} ms "
            f"{tool_ms:>7.1f} ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    anyio.run(main, parser.parse_args().quick)
