"""A module of the user's named like one of the library's packages (``checks.py``,
``harness.py`` in the folder Python starts from, or on ``PYTHONPATH``) is refused with one
error that names the file and the fix, from Python and from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60  # seconds a command under test may take before the test calls it hung
SPEC = (
    'prompt = "work"\n[model]\ntype = "fixture"\npath = "x.jsonl"\n'
    '[[checks]]\ntype = "python"\nfunction = "mine:check"\n'
)


def _run(cwd: Path, *args: str, path: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (path, str(ROOT)) if p)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )


@pytest.mark.parametrize("name", ["checks", "harness"])
def test_importing_the_library_beside_a_shadowing_module_names_it(
    tmp_path: Path, name: str
) -> None:
    """`from termination import Budget` in a folder holding checks.py (or harness.py) fails
    with one ImportError naming that file and how to get out of the way."""
    shadow = tmp_path / f"{name}.py"
    shadow.write_text("async def check(state):\n    return None\n")
    done = _run(tmp_path, "-c", "from termination import Budget")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: {shadow} shadows completion-harness's '{name}'"), last
    assert f"Rename it (for example to my{name}.py" in last
    assert "cannot import name" not in done.stderr
    assert "During handling" not in done.stderr  # one error, not a chain


@pytest.mark.parametrize("name", ["checks", "harness", "termination"])
def test_the_cli_beside_a_shadowing_module_says_so_in_one_line_and_exits_2(
    tmp_path: Path, name: str
) -> None:
    """The custom-check recipe (``PYTHONPATH=. harness check spec.toml``) run beside a
    checks.py: one `harness:` line naming the file and the fix, exit 2 (configuration)."""
    shadow = tmp_path / f"{name}.py"
    shadow.write_text("VALUE = 1\n")
    (tmp_path / "spec.toml").write_text(SPEC)
    done = _run(tmp_path, "-m", "strategies", "check", "spec.toml", path=".")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"harness: {shadow} shadows completion-harness's '{name}'")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_recipe_with_a_name_that_cannot_collide_runs(tmp_path: Path) -> None:
    """The docs' recipe with a bare ``async def check(state)`` (as the README describes a
    check) in a module whose name cannot collide, found through ``PYTHONPATH=.``."""
    (tmp_path / "mine.py").write_text("async def check(state):\n    return 'not yet'\n")
    (tmp_path / "spec.toml").write_text(SPEC)
    done = _run(tmp_path, "-m", "strategies", "check", "spec.toml", path=".")
    assert "not yet" in done.stdout + done.stderr
