"""Every test a run names, with its outcome: what a baseline is compared with.

`read_results` reads a runner's whole listing, passing tests included, or says why it cannot
(`Unreadable`). A listing is only accepted when it is known to be whole:

- pytest, with ``-v`` (``id PASSED``) or ``-rA`` (``PASSED id``): the names must account for
  the closing counts (``3 passed, 1 failed``), so output cut short, or interleaved with what
  the tests print, is caught;
- unittest with ``-v`` (``test (module.Class.test) ... ok``): one result per ``Ran N tests``;
- ``go test -v`` (``--- PASS:``; names are ``package.Test``, taken from the package line that
  closes each package) and ``go test -json`` (``"Action": "pass"``);
- ``node --test``, TAP or spec reporter: a listing of every test by construction, accepted
  when its closing ``tests N`` count is there and the output was not cut;
- ``cargo test``: one ``test name ... ok`` line per ``running N tests``, names qualified by the
  source that ``Running`` announces (``src/lib.rs::tests::add``).

A JUnit XML report (`junit_results`) is whole by construction: ``classname.name``.
A quiet listing (pytest's dots, ``go test`` without ``-v``) names only failures, so it is
`Unreadable`, and a check comparing with a baseline falls back to the exit code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Literal

from attrs import field, frozen

Outcome = Literal["passed", "failed", "skipped"]
_RANK: dict[Outcome, int] = {"skipped": 0, "passed": 1, "failed": 2}


def _outcomes(value: Mapping[str, Outcome]) -> Mapping[str, Outcome]:
    return dict(value)


@frozen
class TestResults:
    """Each named test's outcome (a test reported twice keeps its worst) and the runner."""

    __test__ = False  # not a pytest test class, despite the name

    runner: str
    outcomes: Mapping[str, Outcome] = field(converter=_outcomes, hash=False)

    @property
    def passed(self) -> frozenset[str]:
        return frozenset(n for n, o in self.outcomes.items() if o == "passed")

    @property
    def failed(self) -> frozenset[str]:
        return frozenset(n for n, o in self.outcomes.items() if o == "failed")

    def to_json(self) -> dict[str, object]:
        return {"runner": self.runner, "outcomes": dict(sorted(self.outcomes.items()))}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> TestResults:
        runner, outcomes = data.get("runner"), data.get("outcomes")
        if not isinstance(runner, str) or not isinstance(outcomes, dict):
            raise ValueError("test results need a 'runner' string and an 'outcomes' object")
        for name, outcome in outcomes.items():
            if not isinstance(name, str) or outcome not in _RANK:
                raise ValueError(f"not a test outcome: {name!r}: {outcome!r}")
        return cls(runner, outcomes)


@frozen
class Unreadable:
    """The output cannot be read into every test's name and outcome; `why` says so."""

    why: str


class _Listing:
    """Outcomes collected while reading, a test reported twice keeping its worst."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Outcome] = {}

    def add(self, name: str, outcome: Outcome) -> None:
        before = self.outcomes.get(name)
        if before is None or _RANK[outcome] > _RANK[before]:
            self.outcomes[name] = outcome


Reader = Callable[[list[str], bool], "TestResults | Unreadable | None"]


def read_results(output: str, *, truncated: bool = False) -> TestResults | Unreadable:
    """Every test the output names with its outcome, or why it cannot be read whole.

    `truncated` says the output's start was cut off. Output from more than one runner is
    merged; one unreadable part makes the whole unreadable.
    """
    lines = [line.rstrip() for line in output.splitlines()]
    found: list[TestResults] = []
    for reader in _READERS:
        read = reader(lines, truncated)
        if isinstance(read, Unreadable):
            return read
        if read is not None:
            found.append(read)
    if not found:
        return Unreadable(
            "no test runner's listing of each test's result was found in the output "
            "(readable: pytest -v or -rA, unittest -v, go test -v or -json, node --test, "
            "cargo test)"
        )
    merged = _Listing()
    for results in found:
        for name, outcome in results.outcomes.items():
            merged.add(name, outcome)
    return TestResults(" + ".join(r.runner for r in found), merged.outcomes)


def junit_results(path: Path, *, label: str) -> TestResults:
    """Every ``<testcase>`` of a JUnit XML report: failed (``<failure>``/``<error>``),
    skipped (``<skipped>``) or passed. Raises `JunitError` when it cannot be read."""
    # Loaded here: only a check configured with a JUnit report reads one.
    from ._junit_xml import parse_report

    root = parse_report(path, label=label)
    listing = _Listing()
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        classname = case.get("classname")
        full = f"{classname}.{name}" if classname else name
        if case.find("failure") is not None or case.find("error") is not None:
            listing.add(full, "failed")
        elif case.find("skipped") is not None:
            listing.add(full, "skipped")
        else:
            listing.add(full, "passed")
    return TestResults("JUnit XML", listing.outcomes)


# pytest ----------------------------------------------------------------------------------

_PYTEST_WORDS: dict[str, Outcome] = {
    "PASSED": "passed",
    "XPASS": "passed",
    "FAILED": "failed",
    "ERROR": "failed",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
}
_PYTEST_VERBOSE = re.compile(
    r"^(?P<id>\S.*?::.+?) (?P<word>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
    r"(?: \(.*\))?(?:\s+\[\s*\d+%\])?$"
)
_PYTEST_SUMMARY = re.compile(r"^(?P<word>PASSED|FAILED|ERROR|XFAIL|XPASS) (?P<id>[^\s\[(].*?)$")
_PYTEST_CLOSING = re.compile(
    r"^=*\s*(?P<counts>(?:\d+ \w+(?:, )?)+|no tests ran) in \d+(?:\.\d+)?s(?: \([^)]*\))?\s*=*$"
)
_PYTEST_COUNT = re.compile(r"(?P<n>\d+) (?P<what>\w+)")


def _pytest(lines: list[str], truncated: bool) -> TestResults | Unreadable | None:
    closing = [m for line in lines if (m := _PYTEST_CLOSING.match(line.strip()))]
    if not closing:
        if any(line.startswith("=") and "test session starts" in line for line in lines):
            return Unreadable("pytest's closing summary line is missing (did it crash?)")
        return None
    counts = {m["what"]: int(m["n"]) for m in _PYTEST_COUNT.finditer(closing[-1]["counts"])}
    passed_ids: set[str] = set()
    failed_ids: set[str] = set()
    listing = _Listing()
    for line in lines:
        if verbose := _PYTEST_VERBOSE.match(line):
            name, word = verbose["id"], verbose["word"]
        elif summary := _PYTEST_SUMMARY.match(line):
            name, word = summary["id"], summary["word"]
            if word in ("FAILED", "ERROR", "XFAIL"):
                name = name.split(" - ", 1)[0]  # the summary adds " - <message>"
        else:
            continue
        outcome = _PYTEST_WORDS[word]
        listing.add(name, outcome)
        if outcome == "passed":
            passed_ids.add(name)
        elif outcome == "failed":
            failed_ids.add(name)
    want_passed = counts.get("passed", 0) + counts.get("xpassed", 0)
    want_failed = counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
    if len(passed_ids) != want_passed or len(failed_ids) != want_failed:
        named = f"{len(passed_ids)} passing and {len(failed_ids)} failing"
        if want_passed and not passed_ids:
            hint = "run pytest with -v or -rA so that it names passing tests"
        elif truncated:
            hint = "the start of the output was cut off"
        else:
            hint = "its output is mixed with other lines, or cut short"
        return Unreadable(
            f"pytest counted {want_passed} passing and {want_failed} failing but named "
            f"{named} ({hint})"
        )
    return TestResults("pytest", listing.outcomes)


# unittest --------------------------------------------------------------------------------

_UNITTEST_NAME = re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]+)\)")
_UNITTEST_RESULT = re.compile(
    r" \.\.\. (?P<word>ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)$"
)
_UNITTEST_RAN = re.compile(r"^Ran (?P<n>\d+) tests? in \d+(?:\.\d+)?s$")
_UNITTEST_IMPORT = "unittest.loader._FailedTest."


def _unittest_name(name: str, where: str) -> str:
    if where.startswith(_UNITTEST_IMPORT):  # a test module that could not be imported
        return where.removeprefix(_UNITTEST_IMPORT)
    return where if where.endswith(f".{name}") else f"{where}.{name}"


def _unittest(lines: list[str], truncated: bool) -> TestResults | Unreadable | None:
    ran = [int(m["n"]) for line in lines if (m := _UNITTEST_RAN.match(line))]
    if not ran:
        return None
    listing = _Listing()
    results = 0
    pending: str | None = None  # a test whose docstring line carries its result
    for line in lines:
        head = _UNITTEST_NAME.match(line)
        result = _UNITTEST_RESULT.search(line)
        if head is not None:
            pending = _unittest_name(head["name"], head["where"])
        if result is not None and pending is not None:
            word = result["word"]
            outcome: Outcome = (
                "passed"
                if word == "ok"
                else "failed"
                if word in ("FAIL", "ERROR", "unexpected success")
                else "skipped"
            )
            listing.add(pending, outcome)
            results += 1
            pending = None
        elif head is None and not line.strip():
            pending = None
    if results != sum(ran):
        hint = (
            "run unittest with -v so that it names each test"
            if results == 0
            else "the start of the output was cut off"
            if truncated
            else "its output is mixed with what the tests print"
        )
        total = sum(ran)
        return Unreadable(
            f"unittest ran {total} test{'s' if total != 1 else ''} but named {results} "
            f"result{'s' if results != 1 else ''} ({hint})"
        )
    return TestResults("unittest", listing.outcomes)


# go test ---------------------------------------------------------------------------------

_GO_RESULT = re.compile(r"^\s*--- (?P<word>PASS|FAIL|SKIP): (?P<name>\S+) \(")
_GO_RUN = re.compile(r"^=== RUN +(?P<name>\S+)$")
_GO_PACKAGE = re.compile(r"^(?:ok +|FAIL)\t(?P<package>\S+)\t")
_GO_WORDS: dict[str, Outcome] = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}
_GO_JSON_WORDS: dict[str, Outcome] = {"pass": "passed", "fail": "failed", "skip": "skipped"}


def _go(lines: list[str], truncated: bool) -> TestResults | Unreadable | None:
    events = [e for line in lines if line.startswith("{") and (e := _json_event(line))]
    if events:
        return _go_json(events, truncated)
    results = [m for line in lines if (m := _GO_RESULT.match(line))]
    packages = [line for line in lines if _GO_PACKAGE.match(line)]
    if not results and not packages:
        return None
    if truncated:
        return Unreadable("the start of go test's output was cut off")
    if not any(_GO_RUN.match(line) for line in lines):
        return Unreadable("go test names passing tests only with -v or -json")
    listing = _Listing()
    waiting: dict[str, Outcome] = {}
    started: set[str] = set()
    for line in lines:
        if match := _GO_RUN.match(line):
            started.add(match["name"])
        elif match := _GO_RESULT.match(line):
            waiting[match["name"]] = _GO_WORDS[match["word"]]
            started.discard(match["name"])
        elif match := _GO_PACKAGE.match(line):
            for name in started:  # still running when the package failed (a panic)
                waiting[name] = "failed"
            for name, outcome in waiting.items():
                listing.add(f"{match['package']}.{name}", outcome)
            waiting, started = {}, set()
    if waiting or started:
        return Unreadable("go test's output ends before the line that names the package")
    return TestResults("go test", listing.outcomes)


def _json_event(line: str) -> dict[str, object] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("Action"), str) else None


def _go_json(events: list[dict[str, object]], truncated: bool) -> TestResults | Unreadable:
    if truncated:
        return Unreadable("the start of go test -json's output was cut off")
    listing = _Listing()
    running: dict[tuple[str, str], None] = {}
    for event in events:
        test, package, action = event.get("Test"), event.get("Package"), event.get("Action")
        if not isinstance(test, str) or not isinstance(package, str):
            if action == "fail" and isinstance(package, str):  # a panic ends its package
                for pkg, name in [key for key in running if key[0] == package]:
                    listing.add(f"{pkg}.{name}", "failed")
                    del running[(pkg, name)]
            continue
        if action == "run":
            running[(package, test)] = None
        elif isinstance(action, str) and action in _GO_JSON_WORDS:
            running.pop((package, test), None)
            listing.add(f"{package}.{test}", _GO_JSON_WORDS[action])
    if running:
        return Unreadable("go test -json's output ends while tests are still running")
    return TestResults("go test", listing.outcomes)


# node --test -----------------------------------------------------------------------------

_TAP_SUBTEST = re.compile(r"^(?P<indent> *)# Subtest: (?P<name>.*)$")
_TAP_RESULT = re.compile(
    r"^(?P<indent> *)(?P<not>not )?ok \d+(?: - (?P<name>.*?))?(?P<directive> # (?:TODO|SKIP)\b.*)?$"
)
_NODE_SUITE = re.compile(r"^(?P<indent> *)▶ (?P<name>.*)$")
_NODE_SPEC = re.compile(
    r"^(?P<indent> *)(?P<mark>[✔✖﹣]) (?P<name>.*?)(?: \(\d+(?:\.\d+)?m?s\))?(?P<directive> # .*)?$"
)
_NODE_TESTS = re.compile(r"^(?:# |\N{INFORMATION SOURCE} )tests (?P<n>\d+)$")
_NODE_FAILING = "✖ failing tests:"


def _node(lines: list[str], truncated: bool) -> TestResults | Unreadable | None:
    totals = [int(m["n"]) for line in lines if (m := _NODE_TESTS.match(line))]
    tap = any(line == "TAP version 13" or _TAP_SUBTEST.match(line) for line in lines)
    if not totals:
        if tap:
            return Unreadable("node --test's closing counts (# tests N) are missing")
        return None
    if truncated:
        return Unreadable("the start of node --test's output was cut off")
    leaves = _tree(lines, tap)
    if sum(totals) and not leaves:
        return Unreadable("node --test counted tests but its output names none")
    return TestResults("node --test", leaves)


def _tree(lines: list[str], tap: bool) -> dict[str, Outcome]:
    """The leaves of node's test tree, named ``suite > test``, with their outcomes; a suite or
    a test with subtests is named only when it failed and none of its children did."""
    listing = _Listing()
    path: list[str] = []
    child_seen: dict[int, bool] = {}  # depth -> a result at that depth since its parent opened
    child_failed: dict[int, bool] = {}  # depth -> a failure at that depth since then
    step = 4 if tap else 2
    opener, closer = (_TAP_SUBTEST, _TAP_RESULT) if tap else (_NODE_SUITE, _NODE_SPEC)
    for line in lines:
        if line == _NODE_FAILING:
            break  # the spec reporter's closing list repeats the failures
        if opened := opener.match(line):
            path[len(opened["indent"]) // step :] = [opened["name"]]
            continue
        closed = closer.match(line)
        if closed is None or closed["name"] is None:
            continue
        depth = len(closed["indent"]) // step
        is_parent = child_seen.pop(depth + 1, False)
        below_failed = child_failed.pop(depth + 1, False)
        child_seen[depth] = True
        outcome = _node_outcome(closed, tap)
        if outcome == "failed":
            child_failed[depth] = True
        # A parent's result is its children's, unless it failed on its own (a hook, say).
        if is_parent and (outcome != "failed" or below_failed):
            continue
        name = _tap_unescape(closed["name"]) if tap else closed["name"]
        listing.add(" > ".join([*path[:depth], name]), outcome)
    return listing.outcomes


def _node_outcome(match: re.Match[str], tap: bool) -> Outcome:
    directive = match["directive"] or ""
    if tap:
        failed = bool(match["not"])
    else:
        failed = match["mark"] == "✖"
        if match["mark"] == "﹣":
            return "skipped"
    if "# TODO" in directive or "# SKIP" in directive:
        return "skipped"
    return "failed" if failed else "passed"


def _tap_unescape(name: str) -> str:
    return name.replace("\\#", "#").replace("\\\\", "\\")


# cargo test ------------------------------------------------------------------------------

_CARGO_RUNNING = re.compile(r"^running (?P<n>\d+) tests?$")
_CARGO_SOURCE = re.compile(r"^\s*Running (?:unittests )?(?P<source>\S+)(?: \(.*\))?$")
_CARGO_DOCTESTS = re.compile(r"^\s*Doc-tests \S+$")
_CARGO_LINE = re.compile(
    r"^test (?P<name>.+?)(?: - should panic)? \.\.\. (?P<word>ok|FAILED|ignored\b.*)$"
)


def _cargo(lines: list[str], truncated: bool) -> TestResults | Unreadable | None:
    running = [int(m["n"]) for line in lines if (m := _CARGO_RUNNING.match(line))]
    if not running:
        return None
    if truncated:
        return Unreadable("the start of cargo test's output was cut off")
    listing = _Listing()
    source = ""
    named = 0
    for line in lines:
        if match := _CARGO_SOURCE.match(line):
            source = f"{match['source']}::"
        elif _CARGO_DOCTESTS.match(line):
            source = ""  # a doc-test's name already says its file and line
        elif match := _CARGO_LINE.match(line):
            named += 1
            word = match["word"]
            outcome: Outcome = (
                "passed" if word == "ok" else "failed" if word == "FAILED" else "skipped"
            )
            listing.add(f"{source}{match['name']}", outcome)
    if named != sum(running):
        hint = "run it without -q or --format terse" if named == 0 else "lines are missing"
        return Unreadable(f"cargo test ran {sum(running)} tests but named {named} ({hint})")
    return TestResults("cargo test", listing.outcomes)


_READERS: tuple[Reader, ...] = (_pytest, _unittest, _go, _node, _cargo)


def names(results: Iterable[str], limit: int) -> str:
    """At most `limit` names joined with commas, then how many more."""
    shown = sorted(results)
    text = ", ".join(shown[:limit])
    return text + (f" and {len(shown) - limit} more" if len(shown) > limit else "")
