"""What a test runner's output says: which tests failed, the counts, and whether any test ran.

Understood, from the runners' own output (samples in ``fixtures/test_output/``):

- pytest: the short summary's ``FAILED``/``ERROR`` lines, verbose ``PASSED``/``FAILED``
  lines, the closing counts, and ``no tests ran``;
- unittest: ``FAIL:``/``ERROR:`` headers, ``Ran N tests`` and the ``FAILED (...)``/``OK``/
  ``NO TESTS RAN`` line after it;
- ``go test``: ``--- FAIL:`` lines (a parent whose subtest failed is left out for the
  subtest), ``ok``/``FAIL`` package lines, ``[no test files]`` and ``[no tests to run]``;
- ``node --test``: the TAP reporter (``not ok``, ``# tests N``) and the spec reporter (``✖``,
  and ``tests N`` after an information sign); a suite that failed only because a test in it
  failed is left out for that test, whose name is given as ``suite > test``;
- ``cargo test``: ``test name ... FAILED`` lines, the closing ``failures:`` list, and
  ``running N tests`` / ``test result:`` lines (summed over every test binary);
- JUnit XML (``<testcase>`` with ``<failure>`` or ``<error>``), which most runners can write.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from attrs import frozen

from ._junit_xml import parse_report

_PYTEST_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (?P<id>[^\s(].*?)(?: - .*)?$")
_PYTEST_VERBOSE = re.compile(r"^(?P<id>\S+::\S+(?:\[.*?\])?) (?:FAILED|ERROR)(?:\s+\[\s*\d+%\])?$")
_PYTEST_ERROR = re.compile(r"^ERROR (?P<id>[^\s(].*?)(?: - .*)?$")
_PYTEST_ERROR_VERBOSE = re.compile(r"^(?P<id>\S+::\S+(?:\[.*?\])?) ERROR(?:\s+\[\s*\d+%\])?$")
_PYTEST_COUNTS = re.compile(
    r"^=*\s*(?P<counts>\d+ \w+(?:, \d+ \w+)* in \d+(?:\.\d+)?s(?: \([^)]*\))?)\s*=*$"
)
_PYTEST_NONE = re.compile(r"^=*\s*(?P<said>no tests ran(?:, [^=]*)? in \d+(?:\.\d+)?s)\s*=*$")
_PYTEST_RAN = re.compile(r"\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed)\b")
_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (?P<name>\S+) \((?P<where>[^)]*)\)")
_UNITTEST_IMPORT = "unittest.loader._FailedTest."
_UNITTEST_RAN = re.compile(r"^Ran (?P<n>\d+) tests? in \d+(?:\.\d+)?s$")
_UNITTEST_OUTCOME = re.compile(r"^(?P<word>FAILED|OK|NO TESTS RAN)(?: \((?P<infos>[^)]*)\))?$")
_GO = re.compile(r"^(?P<indent>\s*)--- FAIL: (?P<name>\S+)")
_GO_RESULT = re.compile(r"^--- (?:PASS|FAIL|SKIP): ")
# go test writes "ok  \t<package>\t<time>", "FAIL\t<package>\t<time>" and
# "?   \t<package>\t[no test files]" (cmd/go/internal/test).
_GO_PACKAGE_OK = re.compile(r"^ok +\t\S+\t(?P<rest>.*)$")
_GO_PACKAGE_FAIL = re.compile(r"^FAIL\t\S+\t")
_GO_NO_FILES = re.compile(r"^\? +\t\S+\t\[no test files\]$")
_GO_NO_TESTS = "[no tests to run]"
_COLLECTION = re.compile(
    r"errors? during collection|^_+ ERROR collecting |\[(?:build|setup) failed\]$"
    r"|^error: could not compile "
)
_TAP_SUBTEST = re.compile(r"^(?P<indent> *)# Subtest: (?P<name>.*)$")
_TAP_RESULT = re.compile(
    r"^(?P<indent> *)(?P<not>not )?ok \d+(?: - (?P<name>.*?))?(?P<directive> # (?:TODO|SKIP)\b.*)?$"
)
_NODE_SUITE = re.compile(r"^(?P<indent> *)▶ (?P<name>.*)$")
_NODE_SPEC = re.compile(
    r"^(?P<indent> *)(?P<mark>[✔✖﹣]) (?P<name>.*?)(?: \(\d+(?:\.\d+)?m?s\))?(?P<directive> # .*)?$"
)
_NODE_FAILING = "✖ failing tests:"
_INFO = "\N{INFORMATION SOURCE}"  # the spec reporter's mark before its counts
_NODE_COUNT = re.compile(
    rf"^(?:# |{_INFO} )(?P<what>tests|pass|fail|cancelled|skipped|todo) (?P<n>\d+)$"
)
_CARGO = re.compile(r"^test (?P<name>.+?)(?: - should panic)? \.\.\. FAILED$")
_CARGO_TERSE = re.compile(r"^(?P<name>\S+) --- FAILED$")
_CARGO_LISTED = re.compile(r"^    (?P<name>\S.*)$")
_CARGO_RUNNING = re.compile(r"^running (?P<n>\d+) tests?$")
_CARGO_RESULT = re.compile(
    r"^test result: \w+\. (?P<passed>\d+) passed; (?P<failed>\d+) failed; (?P<ignored>\d+) ignored"
)


@frozen
class SuiteOutput:
    """What one run's output says.

    `ran` is True when the output shows that some test ran, False when it shows that none
    did (`none_ran` quotes where it says so), and None when it shows neither.
    """

    failing: tuple[str, ...]
    counts: str | None
    ran: bool | None
    none_ran: str | None = None


def read_output(output: str, *, complete: bool = True) -> SuiteOutput:
    """Read `output`; pass `complete=False` when its start was cut off, so that a summary of
    zero tests at its end is not taken for the whole run (an earlier part may have run some)."""
    lines = [line.rstrip() for line in output.splitlines()]
    ran, none_ran = _whether_any_ran(lines)
    if ran is False and not complete:
        ran, none_ran = None, None
    return SuiteOutput(tuple(failing_tests(output)), _counts(lines), ran, none_ran)


def failing_tests(output: str) -> list[str]:
    """The failing tests the output names, in order, without repeats."""
    lines = [line.rstrip() for line in output.splitlines()]
    return _unique(
        [
            *_by_line(lines),
            *_go(lines),
            *_cargo_listed(lines),
            *_node_tap(lines),
            *_node_spec(lines),
        ]
    )


def errored_tests(output: str) -> frozenset[str]:
    """The tests the output says errored rather than failed (pytest's ``ERROR`` lines, an
    error in a fixture; unittest's ``ERROR:`` headers), by the names `failing_tests` gives."""
    found: set[str] = set()
    for line in (line.rstrip() for line in output.splitlines()):
        if (match := _PYTEST_ERROR.match(line)) or (match := _PYTEST_ERROR_VERBOSE.match(line)):
            found.add(match["id"])
        elif line.startswith("ERROR: ") and (match := _UNITTEST.match(line)):
            name, where = match["name"], match["where"]
            if not where.startswith(_UNITTEST_IMPORT):
                found.add(where if where.endswith(name) else f"{where}.{name}")
    return frozenset(found)


def collection_failed(output: str) -> bool:
    """Whether the output says some tests could not even be collected: a module that does not
    import or compile (pytest's collection errors, unittest's failed imports, a go package
    whose build or setup failed, a crate that does not compile)."""
    return any(_COLLECTION.search(line) or _UNITTEST_IMPORT in line for line in output.splitlines())


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _by_line(lines: list[str]) -> Iterable[str]:
    """Runners that name a failure on one line of its own: pytest, unittest, cargo."""
    for line in lines:
        if (match := _PYTEST_SUMMARY.match(line)) or (match := _PYTEST_VERBOSE.match(line)):
            yield match["id"]
        elif match := _UNITTEST.match(line):
            name, where = match["name"], match["where"]
            if where.startswith(_UNITTEST_IMPORT):  # a test module that could not be imported
                yield where.removeprefix(_UNITTEST_IMPORT)
            else:
                yield where if where.endswith(name) else f"{where}.{name}"
        elif (match := _CARGO.match(line)) or (match := _CARGO_TERSE.match(line)):
            yield match["name"]


def _go(lines: list[str]) -> list[str]:
    """``--- FAIL:`` names, without a parent whose failure is a failed subtest's."""
    names = _unique(m["name"] for line in lines if (m := _GO.match(line)))
    return [n for n in names if not any(other.startswith(f"{n}/") for other in names)]


def _cargo_listed(lines: list[str]) -> Iterable[str]:
    """The names in cargo's closing ``failures:`` list (the first ``failures:`` section holds
    each test's output instead, and starts with a blank line)."""
    for i, line in enumerate(lines):
        if line != "failures:":
            continue
        for listed in lines[i + 1 :]:
            match = _CARGO_LISTED.match(listed)
            if match is None:
                break
            yield match["name"]


def _node_tap(lines: list[str]) -> list[str]:
    """``not ok`` leaves of node's TAP tree, named ``suite > test``."""
    found: list[str] = []
    path: list[str] = []
    failed_below: dict[int, bool] = {}
    for line in lines:
        if match := _TAP_SUBTEST.match(line):
            depth = len(match["indent"]) // 4
            path[depth:] = [_tap_unescape(match["name"])]
        elif (match := _TAP_RESULT.match(line)) and match["name"] is not None:
            depth = len(match["indent"]) // 4
            _leaf(
                found,
                path,
                failed_below,
                depth,
                _tap_unescape(match["name"]),
                failed=bool(match["not"]) and not match["directive"],
            )
    return found


def _node_spec(lines: list[str]) -> list[str]:
    """``✖`` leaves of node's spec tree, named ``suite > test``; the closing list of
    failing tests repeats them, so it is read only when the tree was cut off."""
    found: list[str] = []
    path: list[str] = []
    failed_below: dict[int, bool] = {}
    closing: list[str] = []
    in_closing = False
    for line in lines:
        if line == _NODE_FAILING:
            in_closing = True
        elif in_closing:
            match = _NODE_SPEC.match(line)
            if match and match["mark"] == "✖" and not match["indent"]:
                closing.append(match["name"])
        elif match := _NODE_SUITE.match(line):
            depth = len(match["indent"]) // 2
            path[depth:] = [match["name"]]
        elif match := _NODE_SPEC.match(line):
            depth = len(match["indent"]) // 2
            directive = match["directive"] or ""
            failed = match["mark"] == "✖" and "# TODO" not in directive
            _leaf(found, path, failed_below, depth, match["name"], failed=failed)
    return found or closing


def _leaf(
    found: list[str],
    path: list[str],
    failed_below: dict[int, bool],
    depth: int,
    name: str,
    *,
    failed: bool,
) -> None:
    """Record a test's result in a tree report: a failure is named unless one of its own
    children failed (then the child names it)."""
    child_failed = failed_below.pop(depth + 1, False)
    if failed:
        failed_below[depth] = True
        if not child_failed:
            found.append(" > ".join([*path[:depth], name]))


def _tap_unescape(name: str) -> str:
    return name.replace("\\#", "#").replace("\\\\", "\\")


def _counts(lines: list[str]) -> str | None:
    found = [
        c
        for c in (
            _pytest_counts(lines),
            _unittest_counts(lines),
            _cargo_counts(lines),
            _node_counts(lines),
        )
        if c
    ]
    return "; ".join(found) or None


def _pytest_counts(lines: list[str]) -> str | None:
    counts = None
    for line in lines:
        if match := _PYTEST_COUNTS.match(line.strip()):
            counts = match["counts"]
    return counts


def _unittest_counts(lines: list[str]) -> str | None:
    ran = None
    for i, line in enumerate(lines):
        if match := _UNITTEST_RAN.match(line):
            ran = f"ran {match['n']} test{'' if match['n'] == '1' else 's'}"
            outcome = next((o for o in lines[i + 1 :] if o), "")
            if (said := _UNITTEST_OUTCOME.match(outcome)) and said["infos"]:
                ran += f": {said['infos']}"
    return ran


def _cargo_counts(lines: list[str]) -> str | None:
    totals = [0, 0, 0]
    seen = False
    for line in lines:
        if match := _CARGO_RESULT.match(line):
            seen = True
            for i, key in enumerate(("passed", "failed", "ignored")):
                totals[i] += int(match[key])
    if not seen:
        return None
    passed, failed, ignored = totals
    return f"{passed} passed, {failed} failed" + (f", {ignored} ignored" if ignored else "")


def _node_counts(lines: list[str]) -> str | None:
    counts: dict[str, str] = {}
    for line in lines:
        if match := _NODE_COUNT.match(line):
            counts[match["what"]] = match["n"]
    if "tests" not in counts:
        return None
    parts = [f"{counts['tests']} tests"]
    parts += [
        f"{counts[what]} {word}"
        for what, word in (
            ("pass", "passed"),
            ("fail", "failed"),
            ("cancelled", "cancelled"),
            ("skipped", "skipped"),
            ("todo", "todo"),
        )
        if counts.get(what, "0") != "0"
    ]
    return ", ".join(parts)


def _whether_any_ran(lines: list[str]) -> tuple[bool | None, str | None]:
    """(True if a line shows a test ran, else False if one shows none did, else None; and the
    first line that shows none did)."""
    none_ran: str | None = None
    for line in lines:
        ran = _shows_a_test_ran(line)
        if ran:
            return True, None
        if ran is False and none_ran is None:
            none_ran = " ".join(line.strip(" =").split())
    return (False, none_ran) if none_ran is not None else (None, None)


def _shows_a_test_ran(line: str) -> bool | None:
    """True: some test ran; False: this line reports that none ran; None: neither."""
    stripped = line.strip()
    if match := _PYTEST_COUNTS.match(stripped):
        if _PYTEST_RAN.search(match["counts"]):
            return True
        return False if "deselected" in match["counts"] else None
    if _PYTEST_NONE.match(stripped) or stripped == "NO TESTS RAN":
        return False
    if (match := _UNITTEST_RAN.match(line)) or (match := _CARGO_RUNNING.match(line)):
        return int(match["n"]) > 0
    if match := _NODE_COUNT.match(line):
        return None if match["what"] != "tests" else int(match["n"]) > 0
    if match := _GO_PACKAGE_OK.match(line):
        rest = match["rest"]
        return not (_GO_NO_TESTS in rest or "[no test files]" in rest)
    if _GO_RESULT.match(line) or _GO_PACKAGE_FAIL.match(line):
        return True
    if _GO_NO_FILES.match(line) or stripped == "testing: warning: no tests to run":
        return False
    return None


def junit_failures(path: Path, *, label: str) -> tuple[int, list[str]]:
    """(how many test cases the report has, the failing ones as ``classname.name``)."""
    root = parse_report(path, label=label)
    cases = list(root.iter("testcase"))
    failing: list[str] = []
    for case in cases:
        if case.find("failure") is None and case.find("error") is None:
            continue
        name = case.get("name", "?")
        classname = case.get("classname")
        full = f"{classname}.{name}" if classname else name
        if full not in failing:
            failing.append(full)
    return len(cases), failing
