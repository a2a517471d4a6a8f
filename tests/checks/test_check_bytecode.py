"""A check's Python bytecode: cached outside the workspace, never anything of the workspace.

The commands run for real (pytest on the local sandbox); the cache folder is the session's
(tests/conftest.py points ``COMPLETION_HARNESS_CACHE`` at a temporary folder).
"""

from __future__ import annotations

import os
import py_compile
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from _checks_support import snapshot

from checks import CommandCheck, TestSuiteCheck
from checks._bytecode import FRESH_BYTECODE, bytecode_prefix
from harness.extend import ProcessResult

pytestmark = pytest.mark.anyio

PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
TEST = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"  # the same size as BROKEN


def _workspace(root: Path) -> Path:
    root.mkdir()
    (root / "test_calc.py").write_text(TEST)
    (root / "calc.py").write_text(BROKEN)
    return root


def _cached(source: Path) -> Path:
    """Where Python run by a check looks for `source`'s bytecode."""
    image = bytecode_prefix().joinpath(*Path(os.path.realpath(source)).parent.parts[1:])
    return image / f"{source.stem}.{sys.implementation.cache_tag}.pyc"


def _fix_within_the_same_second(source: Path) -> None:
    stamp = source.stat()
    source.write_text(FIXED)
    os.utime(source, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))


async def test_bytecode_planted_in_the_cache_for_the_workspace_is_never_used(
    tmp_path: Path,
) -> None:
    """Bytecode of the broken code, valid by Python's rule (same mtime, same size) and planted
    where the check's Python looks, is removed before the command runs: the fix is tested."""
    workspace = _workspace(tmp_path / "ws")
    source = workspace / "calc.py"
    planted = _cached(source)
    planted.parent.mkdir(parents=True)
    py_compile.compile(str(source), cfile=str(planted))
    _fix_within_the_same_second(source)
    assert await TestSuiteCheck(PYTEST).check(snapshot(workspace)) is None


async def test_a_fix_within_the_second_of_the_last_run_is_what_gets_tested(
    tmp_path: Path,
) -> None:
    """The run that failed leaves no bytecode of the workspace behind for the next to trust."""
    workspace = _workspace(tmp_path / "ws")
    check = TestSuiteCheck(PYTEST)
    assert await check.check(snapshot(workspace)) is not None
    assert not _cached(workspace / "calc.py").exists()
    _fix_within_the_same_second(workspace / "calc.py")
    assert await check.check(snapshot(workspace)) is None


async def test_bytecode_of_files_outside_the_workspace_is_kept(tmp_path: Path) -> None:
    """What a command imports from outside the workspace (here the standard library's
    `calendar`) is compiled once into the cache; nothing lands in the workspace."""
    import calendar

    workspace = _workspace(tmp_path / "ws")
    kept = _cached(Path(calendar.__file__))
    kept.unlink(missing_ok=True)
    check = CommandCheck([sys.executable, "-c", "import calendar, calc"])
    assert await check.check(snapshot(workspace)) is None
    assert kept.is_file()
    assert not (workspace / "__pycache__").exists()
    assert not _cached(workspace / "calc.py").parent.exists()


async def test_the_checks_env_decides_where_bytecode_goes(tmp_path: Path) -> None:
    """A check whose `env` names a prefix gets that one."""
    workspace = _workspace(tmp_path / "ws")
    mine = tmp_path / "mine"
    check = CommandCheck(
        [sys.executable, "-c", "import calc"], env={"PYTHONPYCACHEPREFIX": str(mine)}
    )
    assert await check.check(snapshot(workspace)) is None
    assert any(mine.rglob(f"calc.{sys.implementation.cache_tag}.pyc"))


class _Elsewhere:
    """A sandbox of another kind (a container, say): it records the environment it is given."""

    name = "elsewhere"

    def __init__(self) -> None:
        self.env: Mapping[str, str] = {}

    async def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout: float | None,  # noqa: ASYNC109 - the protocol's signature
        env: Mapping[str, str] | None = None,
        workspace: Path | None = None,
    ) -> ProcessResult:
        self.env = dict(env or {})
        return ProcessResult(
            exit_code=0, output_tail="", timed_out=False, truncated=False, duration=0.0
        )


async def test_another_sandbox_neither_reads_nor_writes_bytecode(tmp_path: Path) -> None:
    """The cache's paths are this machine's: a sandbox of another kind gets none of them."""
    sandbox = _Elsewhere()
    assert await CommandCheck("true", sandbox=sandbox).check(snapshot(tmp_path)) is None
    assert {k: sandbox.env[k] for k in FRESH_BYTECODE} == FRESH_BYTECODE
