"""Which tests failed, read from a runner's output or from a JUnit XML report.

Understood: pytest (the short summary's ``FAILED``/``ERROR`` lines, verbose ``PASSED``/``FAILED``
lines and the closing counts), unittest (``FAIL:``/``ERROR:`` headers), ``go test``
(``--- FAIL:``) and JUnit XML (``<testcase>`` with ``<failure>`` or ``<error>``), which most
runners can write.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

_PYTEST_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (?P<id>.+?)(?: - .*)?$")
_PYTEST_VERBOSE = re.compile(r"^(?P<id>\S+::\S+(?:\[.*?\])?) (?:FAILED|ERROR)(?:\s+\[\s*\d+%\])?$")
_PYTEST_COUNTS = re.compile(
    r"^=*\s*(?P<counts>\d+ \w+(?:, \d+ \w+)* in \d+(?:\.\d+)?s(?: \([^)]*\))?)\s*=*$"
)
_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (?P<name>\S+) \((?P<where>[^)]*)\)")
_GO = re.compile(r"^\s*--- FAIL: (?P<name>\S+)")


def failing_tests(output: str) -> list[str]:
    """The failing tests the output names, in order, without repeats."""
    found: list[str] = []
    for raw in output.splitlines():
        line = raw.rstrip()
        name = None
        if (match := _PYTEST_SUMMARY.match(line)) or (match := _PYTEST_VERBOSE.match(line)):
            name = match["id"]
        elif match := _UNITTEST.match(line):
            where = match["where"]
            name = where if where.endswith(match["name"]) else f"{where}.{match['name']}"
        elif match := _GO.match(line):
            name = match["name"]
        if name is not None and name not in found:
            found.append(name)
    return found


def summary_counts(output: str) -> str | None:
    """pytest's closing counts (``2 failed, 3 passed in 0.12s``), when the output has them."""
    counts = None
    for line in output.splitlines():
        if match := _PYTEST_COUNTS.match(line.strip()):
            counts = match["counts"]
    return counts


class JunitError(ValueError):
    """The JUnit XML report cannot be read."""


def junit_failures(path: Path, *, label: str) -> tuple[int, list[str]]:
    """(how many test cases the report has, the failing ones as ``classname.name``)."""
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        raise JunitError(f"{label} was not written") from None
    except ET.ParseError as exc:
        line, column = exc.position
        raise JunitError(f"{label} is not valid XML (line {line}, column {column})") from None
    except OSError as exc:
        raise JunitError(f"{label} cannot be read: {exc.strerror}") from None
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
