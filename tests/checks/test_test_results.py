"""Every test's outcome, read from real runners' output (fixtures/test_output/): a listing is
accepted only when it is known to be whole, and anything else says why it cannot be used."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks._junit_xml import JunitError
from checks._test_results import TestResults, Unreadable, junit_results, read_results

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "test_output"
PY = "tests/test_calc.py::"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def outcomes(name: str) -> dict[str, str]:
    read = read_results(sample(name))
    assert isinstance(read, TestResults), read
    return dict(read.outcomes)


def why(name: str, *, truncated: bool = False) -> str:
    read = read_results(sample(name), truncated=truncated)
    assert isinstance(read, Unreadable), read
    return read.why


@pytest.mark.parametrize("name", ["pytest_verbose.txt", "pytest_ra.txt"])
def test_pytest_verbose_and_ra_listings_name_every_test(name: str) -> None:
    """``-v`` and ``-rA`` both name passing tests; skipped and xfailed tests are neither
    passing nor failing; parametrized ids keep their brackets."""
    found = outcomes(name)
    assert found[f"{PY}TestCalc::test_add"] == "failed"
    assert found[f"{PY}TestCalc::test_zero"] == "passed"
    assert found[f"{PY}test_param[0-0]"] == "passed"
    assert found[f"{PY}test_param[1--1]"] == "passed"
    assert found[f"{PY}test_xfail"] == "skipped"
    assert [n for n, o in found.items() if o == "failed"] == [f"{PY}TestCalc::test_add"]


def test_quiet_pytest_output_is_unreadable_and_says_which_flag_helps() -> None:
    """Dots name no passing test, so the listing is not whole: the reason says -v or -rA."""
    assert "run pytest with -v or -rA" in why("pytest_failures.txt")


def test_a_pytest_line_lost_from_the_listing_is_caught_by_the_counts() -> None:
    """A listing that names fewer tests than pytest counted is not whole."""
    text = sample("pytest_verbose.txt").replace(f"{PY}test_param[0-0] PASSED", "garbage")
    read = read_results(text)
    assert isinstance(read, Unreadable)
    assert "counted 3 passing and 1 failing but named 2 passing" in read.why


def test_pytest_that_crashed_before_its_summary_is_unreadable() -> None:
    """A session that started but never printed its closing counts is not a listing."""
    head = sample("pytest_verbose.txt").split("=== FAILURES")[0]
    assert "closing summary line is missing" in why_text(head)


def why_text(text: str) -> str:
    read = read_results(text)
    assert isinstance(read, Unreadable), read
    return read.why


def test_a_teardown_error_after_a_pass_makes_the_test_failed() -> None:
    """pytest reports one test PASSED then ERROR in teardown; its outcome is the worst."""
    text = (
        "t.py::test_a PASSED [ 50%]\nt.py::test_a ERROR [ 50%]\nt.py::test_b PASSED [100%]\n"
        "=== 2 passed, 1 error in 0.10s ===\n"
    )
    read = read_results(text)
    assert isinstance(read, TestResults)
    assert dict(read.outcomes) == {"t.py::test_a": "failed", "t.py::test_b": "passed"}


def test_unittest_verbose_names_each_test_even_with_a_docstring_line() -> None:
    """A docstring's first line carries the result of the test named on the line before."""
    assert outcomes("unittest_verbose.txt") == {
        "tests.test_calc.TestCalc.test_add": "failed",
        "tests.test_calc.TestCalc.test_skipped": "skipped",
        "tests.test_calc.TestCalc.test_zero": "passed",
    }


def test_quiet_unittest_is_unreadable() -> None:
    assert "run unittest with -v" in why("unittest_failures.txt")


def test_go_verbose_names_tests_with_their_package() -> None:
    """The package line that closes a package's output qualifies its tests and subtests."""
    assert outcomes("go_verbose_failures.txt") == {
        "example.com/calc.TestAdd": "failed",
        "example.com/calc.TestZero": "passed",
        "example.com/calc.TestTable": "failed",
        "example.com/calc.TestTable/negatives": "failed",
        "example.com/calc.TestTable/zeros": "passed",
    }


@pytest.mark.parametrize("name", ["go_failures.txt", "go_pass.txt", "go_pass_cached.txt"])
def test_go_without_verbose_is_unreadable(name: str) -> None:
    assert "only with -v or -json" in why(name)


def test_go_json_events_give_each_outcome() -> None:
    assert outcomes("go_json_failures.txt") == {
        "example.com/calc.TestAdd": "failed",
        "example.com/calc.TestZero": "passed",
        "example.com/calc.TestLater": "skipped",
    }


def test_a_panic_fails_the_test_that_was_running() -> None:
    """A package that fails while a test runs (a panic) fails that test."""
    assert outcomes("go_json_panic.txt") == {
        "example.com/calc.TestZero": "passed",
        "example.com/calc.TestDivide": "failed",
    }


def test_go_json_that_ends_mid_test_is_unreadable() -> None:
    lines = sample("go_json_panic.txt").splitlines()[:7]
    assert "still running" in why_text("\n".join(lines))


@pytest.mark.parametrize("name", ["node_tap_listing.txt", "node_spec_listing.txt"])
def test_node_listings_name_leaves_under_their_suites(name: str) -> None:
    """A suite or a parent test is its children's result; a skipped test is skipped."""
    assert outcomes(name) == {
        "adds two numbers": "failed",
        "zero is neutral": "passed",
        "later": "skipped",
        "calculator > adds negatives": "failed",
        "calculator > subtracts": "passed",
        "parent > child one": "passed",
        "parent > child two": "passed",
    }


def test_a_parent_that_fails_on_its_own_is_named() -> None:
    """A test whose subtests pass but which fails itself (a hook, say) is a failure."""
    text = (
        "TAP version 13\n# Subtest: parent\n    # Subtest: child\n    ok 1 - child\n"
        "    1..1\nnot ok 1 - parent\n1..1\n# tests 2\n# pass 1\n# fail 1\n"
    )
    read = read_results(text)
    assert isinstance(read, TestResults)
    assert dict(read.outcomes) == {"parent > child": "passed", "parent": "failed"}


def test_node_output_cut_off_is_unreadable() -> None:
    assert "cut off" in why("node_tap_listing.txt", truncated=True)


def test_cargo_names_are_qualified_by_their_source() -> None:
    assert outcomes("cargo_pass.txt") == {
        "src/lib.rs::tests::negatives": "passed",
        "src/lib.rs::tests::zero": "passed",
        "src/lib.rs::tests::adds_two": "passed",
        "tests/integration.rs::it_adds": "passed",
    }
    assert outcomes("cargo_failures.txt")["src/lib.rs::tests::adds_two"] == "failed"


def test_terse_cargo_is_unreadable() -> None:
    assert "ran 3 tests but named 0" in why("cargo_terse_failures.txt")


@pytest.mark.parametrize(
    "name",
    [
        "pytest_no_tests.txt",
        "unittest_no_tests_py311.txt",
        "node_tap_no_tests.txt",
        "cargo_no_tests.txt",
    ],
)
def test_a_run_of_no_tests_is_an_empty_listing(name: str) -> None:
    assert outcomes(name) == {}


def test_output_of_no_known_runner_is_unreadable() -> None:
    assert "no test runner" in why_text("all good\n")


def test_junit_report_lists_every_case(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text(
        '<testsuite><testcase classname="t" name="a"/>'
        '<testcase classname="t" name="b"><failure message="x"/></testcase>'
        '<testcase classname="t" name="c"><skipped/></testcase>'
        '<testcase name="d"><error/></testcase></testsuite>',
        encoding="utf-8",
    )
    read = junit_results(report, label="report.xml")
    assert dict(read.outcomes) == {
        "t.a": "passed",
        "t.b": "failed",
        "t.c": "skipped",
        "d": "failed",
    }
    with pytest.raises(JunitError, match="was not written"):
        junit_results(tmp_path / "missing.xml", label="missing.xml")


def test_results_round_trip_through_json() -> None:
    read = read_results(sample("pytest_verbose.txt"))
    assert isinstance(read, TestResults)
    assert TestResults.from_json(read.to_json()) == read
    with pytest.raises(ValueError, match="not a test outcome"):
        TestResults.from_json({"runner": "x", "outcomes": {"a": "exploded"}})


LAUGHS = b"""<?xml version="1.0"?>
<!-- written by the agent -->
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<testsuite><testcase classname="t" name="a&lol3;"/></testsuite>
"""
PLAIN = b"""<?xml version="1.0" encoding="utf-8"?>
<!-- a comment, then the suite; "<!DOCTYPE" inside a message is only text -->
<testsuite><testcase classname="t" name="a"><failure message="&lt;!DOCTYPE x&gt;"/></testcase>
<testcase classname="t" name="b"/></testsuite>
"""


@pytest.mark.parametrize("defused", [True, False], ids=["defusedxml", "stdlib"])
def test_a_junit_report_with_a_dtd_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, defused: bool
) -> None:
    """The agent writes the report: a DTD (an entity bomb's way in) is refused with a reason
    naming the report, by defusedxml when installed and without it alike; a plain report,
    comments and all, reads as ever."""
    import sys

    from checks._test_output import junit_failures
    from checks._test_results import junit_results

    if defused:
        pytest.importorskip("defusedxml")
    else:
        monkeypatch.setitem(sys.modules, "defusedxml", None)
        monkeypatch.setitem(sys.modules, "defusedxml.ElementTree", None)
    bomb = tmp_path / "bomb.xml"
    bomb.write_bytes(LAUGHS)
    with pytest.raises(JunitError, match=r"report\.xml declares a DTD"):
        junit_results(bomb, label="report.xml")
    with pytest.raises(JunitError, match=r"report\.xml declares a DTD"):
        junit_failures(bomb, label="report.xml")
    plain = tmp_path / "plain.xml"
    plain.write_bytes(PLAIN)
    assert junit_failures(plain, label="report.xml") == (2, ["t.a"])
    assert junit_results(plain, label="report.xml").failed == frozenset({"t.a"})
