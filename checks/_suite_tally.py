"""How many tests passed, read from a test runner's closing counts (`WorkProgress` of a suite).

Read: pytest's last counts line (``3 failed, 5 passed in 0.2s``: passed and xpassed pass;
failed and errors fail; skipped, xfailed and deselected are not counted), unittest's ``Ran N
tests`` and the ``FAILED (...)``/``OK (...)`` line after it, cargo's ``test result:`` lines
(summed over the test binaries), node's ``pass``/``fail`` counts (TAP ``#`` or the spec
reporter's information sign) and, from ``go test -v``, the ``--- PASS:``/``--- FAIL:``
lines (subtests included).
"""

from __future__ import annotations

import re

from attrs import frozen

_PYTEST = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in \d+(?:\.\d+)?s(?: \([^)]*\))?\s*=*$")
_PAIR = re.compile(r"(\d+) (\w+)")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in \d+(?:\.\d+)?s$")
_UNITTEST_OUTCOME = re.compile(r"^(?:FAILED|OK)(?: \((?P<infos>[^)]*)\))?$")
_INFO = re.compile(r"(?P<what>[a-z ]+)=(?P<n>\d+)")
_CARGO = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed;")
_NODE = re.compile(r"^(?:# |\N{INFORMATION SOURCE} )(pass|fail|cancelled) (\d+)$")
_GO = re.compile(r"^\s*--- (PASS|FAIL): ")
_GO_RUN = re.compile(r"^=== RUN ")


@frozen
class Tally:
    """Tests that passed, of the tests that ran to a pass or a fail."""

    passed: int
    total: int


def tally(output: str) -> Tally | None:
    """The counts the output gives, summed over the runners it shows; None when none."""
    lines = [line.rstrip() for line in output.splitlines()]
    found = [
        t
        for t in (_pytest(lines), _unittest(lines), _cargo(lines), _node(lines), _go(lines))
        if t is not None
    ]
    if not found:
        return None
    return Tally(sum(t.passed for t in found), sum(t.total for t in found))


def _pytest(lines: list[str]) -> Tally | None:
    counts = None
    for line in lines:
        if match := _PYTEST.match(line.strip()):
            counts = {word: int(n) for n, word in _PAIR.findall(match[1])}
    if counts is None:
        return None
    passed = counts.get("passed", 0) + counts.get("xpassed", 0)
    failed = counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
    return Tally(passed, passed + failed)


def _unittest(lines: list[str]) -> Tally | None:
    result = None
    for index, line in enumerate(lines):
        if not (ran := _UNITTEST_RAN.match(line)):
            continue
        outcome = next((o for o in lines[index + 1 :] if o), "")
        said = _UNITTEST_OUTCOME.match(outcome)
        if said is None:
            continue
        infos = {m["what"].strip(): int(m["n"]) for m in _INFO.finditer(said["infos"] or "")}
        total = int(ran[1]) - infos.get("skipped", 0) - infos.get("expected failures", 0)
        failed = (
            infos.get("failures", 0) + infos.get("errors", 0) + infos.get("unexpected successes", 0)
        )
        total = max(total, failed)
        result = Tally(total - failed, total)
    return result


def _cargo(lines: list[str]) -> Tally | None:
    seen = [(int(m[1]), int(m[2])) for line in lines if (m := _CARGO.match(line))]
    if not seen:
        return None
    passed = sum(p for p, _ in seen)
    return Tally(passed, passed + sum(f for _, f in seen))


def _node(lines: list[str]) -> Tally | None:
    counts: dict[str, int] = {}
    for line in lines:
        if match := _NODE.match(line):
            counts[match[1]] = int(match[2])
    if "pass" not in counts and "fail" not in counts:
        return None
    passed = counts.get("pass", 0)
    return Tally(passed, passed + counts.get("fail", 0) + counts.get("cancelled", 0))


def _go(lines: list[str]) -> Tally | None:
    """Only from ``go test -v``: without it, passing tests are not named, so not counted."""
    marks = [m[1] for line in lines if (m := _GO.match(line))]
    if not marks or not any(_GO_RUN.match(line) for line in lines):
        return None
    return Tally(marks.count("PASS"), len(marks))
