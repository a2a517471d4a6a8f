"""A weak model recovers from its own editing mistakes through what the tools answer: an
`edit_file` miss shows the closest region of the file, numbered, which a scripted agent that
only copies what it is shown turns into an edit that lands; a call identical to one that just
failed still runs, and its result says so with the earlier error's first line.

The misses are the fixtures in fixtures/edit_misses/cases.json: the kinds a small model made
on real runs (indentation, tabs, a stale name, a typo, quotes, a skipped line, a big file) and
one the hint cannot help with (text from another file), which must say to read the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, ToolCall, ToolCalled, edit_file, read_file
from harness._tools._edit_hint import closest_region
from harness.extend import ModelRequest, ModelResponse
from harness.testing import FakeClock, ListSink, ScriptedModelClient
from termination import TerminationPolicy

CASES = json.loads(
    (Path(__file__).parents[3] / "fixtures" / "edit_misses" / "cases.json").read_text()
)
_NUMBERED = re.compile(r"^ *\d+\t(.*)$")


def _content(case: dict[str, Any]) -> str:
    content = case["content"]
    if isinstance(content, str):
        return content
    return "".join(content["repeat"].format(i=i) for i in range(content["times"]))


def _expected(case: dict[str, Any]) -> str | None:
    expected = case["expected"]
    if expected is None or isinstance(expected, str):
        return expected
    before, after = expected["replace"]
    return _content(case).replace(before, after, 1)


class CopyingAgent:
    """A weak agent: it edits from memory without reading the file, and after a miss does
    the one thing it can, copy the numbered lines the error shows (numbers and tabs off) and
    make its change to them; then it says it is done."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        before, after = self.case["change"]
        last = request.messages[-1]
        if self.calls == 1:
            old = self.case["old"]
            return self._edit(old, old.replace(before, after))
        if self.calls == 2 and last.role == "tool" and last.is_error:
            shown = [m.group(1) for m in map(_NUMBERED.match, last.content.split("\n")) if m]
            if shown:
                region = "\n".join(shown)
                return self._edit(region, region.replace(before, after))
        return ModelResponse(text="done")

    def _edit(self, old: str, new: str) -> ModelResponse:
        call = ToolCall(
            f"call_{self.calls}",
            "edit_file",
            {"path": self.case["path"], "old": old, "new": new},
        )
        return ModelResponse(tool_calls=(call,))


def _workspace(case: dict[str, Any], root: Path) -> Path:
    root.mkdir()
    (root / case["path"]).write_text(_content(case))
    return root


async def _run_case(case: dict[str, Any], root: Path) -> tuple[str, list[ToolCalled]]:
    sink = ListSink()
    harness = Harness(
        model=CopyingAgent(case),
        policy=TerminationPolicy(),
        tools=[edit_file, read_file],
        workspace=root,
        clock=FakeClock(),
        sinks=[sink],
    )
    await harness.run("make the change")
    results = [e for e in sink.events if isinstance(e, ToolCalled)]
    return (root / case["path"]).read_text(), results


@pytest.mark.anyio
async def test_a_copying_agent_recovers_from_every_near_miss(tmp_path: Path) -> None:
    """Each near miss of the fixtures fails once, shows the region, and the agent's copy of it
    lands the intended change; the one unrelated text gets no region and the advice to read the
    file, and the file is left as it was."""
    recovered = []
    for case in CASES:
        text, results = await _run_case(case, _workspace(case, tmp_path / case["name"]))
        first = results[0]
        assert first.is_error, case["name"]
        assert "'old' was not found" in first.content.split("\n", 1)[0]
        expected = _expected(case)
        if expected is None:
            assert "Read the file (read_file)" in first.content
            assert len(results) == 1
            assert text == _content(case)
            continue
        assert "must match the file exactly" in first.content, case["name"]
        assert len(results) == 2, case["name"]
        assert not results[1].is_error, (case["name"], results[1].content)
        assert text == expected, case["name"]
        recovered.append(case["name"])
    near_misses = [case["name"] for case in CASES if case["expected"] is not None]
    assert recovered == near_misses
    assert len(near_misses) == 7


def test_the_region_is_numbered_from_the_files_own_line_numbers() -> None:
    """The region starts at the line the file has it on and spans as many lines as `old`."""
    text = "".join(f"line {i}\n" for i in range(1, 101)) + "    value = compute(x)\n    y = 2\n"
    found = closest_region(text, "  value = compute(x )\n  y = 2\n")
    assert found is not None
    first, region, ratio = found
    assert (first, region) == (101, ["    value = compute(x)", "    y = 2"])
    assert ratio > 0.8


def test_the_hint_is_bounded_on_a_long_region(tmp_path: Path) -> None:
    """An `old` of hundreds of lines shows at most 40 of the region, and says how many more."""
    from harness._tools._edit_hint import miss_hint

    text = "".join(f"    row_{i} = {i}\n" for i in range(500))
    old = "".join(f"  row_{i} = {i}\n" for i in range(100, 300))
    hint = miss_hint("big.py", text, old)
    numbered = [line for line in hint.split("\n") if _NUMBERED.match(line)]
    assert len(numbered) == 40
    assert numbered[0] == "   101\t    row_100 = 100"
    assert "[... 160 more line(s) of the region not shown]" in hint


@pytest.mark.anyio
async def test_a_repeated_failing_call_runs_and_says_it_repeats(tmp_path: Path) -> None:
    """The same failed call sent again is run again; its result says it repeats the previous
    call and quotes that error's first line; a third copy quotes the error, not the note; a
    different call in between clears the memory."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    miss = {"path": "a.py", "old": "y = 1", "new": "y = 2"}
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "edit_file", "arguments": miss}]},
        {"tool_calls": [{"name": "edit_file", "arguments": dict(reversed(list(miss.items())))}]},
        {"tool_calls": [{"name": "edit_file", "arguments": miss}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": miss}]},
        {"text": "done"},
    ]
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_responses(steps),
        policy=TerminationPolicy(),
        tools=[edit_file, read_file],
        workspace=root,
        clock=FakeClock(),
        sinks=[sink],
    )
    await harness.run("edit")
    results = [e for e in sink.events if isinstance(e, ToolCalled)]
    error_line = "error: ValueError: 'old' was not found in 'a.py' (0 occurrences); nothing changed"
    assert results[0].content.startswith(error_line)
    for repeat in results[1:3]:
        assert repeat.is_error
        assert repeat.content.startswith(
            "note: this call is identical to your previous one, which failed with:\n"
            f"  {error_line}\nIt was run again and failed again."
        )
        assert f"\n\n{error_line}" in repeat.content  # run again: its own error follows
    assert not results[3].is_error
    assert "note:" not in results[3].content
    assert results[4].content.startswith(error_line)  # a read came between: not a repeat


@pytest.mark.anyio
async def test_a_repeat_that_now_succeeds_says_so() -> None:
    """A repeated call that succeeds this time (a service that was down is up) says that it
    repeats a failed call and that it succeeded; unknown tools' errors count as failures too."""
    attempts: list[str] = []

    def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: the page
        """
        attempts.append(url)
        if len(attempts) == 1:
            raise ConnectionError("service unavailable\ntry later")
        return "<html>ok</html>"

    call = {"name": "fetch", "arguments": {"url": "http://x"}}
    steps: list[dict[str, Any]] = [
        {"tool_calls": [call]},
        {"tool_calls": [call]},
        {"text": "done"},
    ]
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_responses(steps),
        policy=TerminationPolicy(),
        tools=[fetch],
        clock=FakeClock(),
        sinks=[sink],
    )
    await harness.run("fetch")
    first, second = [e for e in sink.events if isinstance(e, ToolCalled)]
    assert first.is_error
    assert not second.is_error
    assert second.content == (
        "note: this call is identical to your previous one, which failed with:\n"
        "  error: ConnectionError: service unavailable\n"
        "It was run again and succeeded this time.\n\n<html>ok</html>"
    )
