"""A suite's baseline is taken once per content: cached under a key of the command, its
sandbox and the workspace's content, reused by every run on that content, and never used
when stale, corrupt, foreign or tampered with."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio
import pytest
from _checks_support import snapshot

import checks._baseline_cache as cache_module
from checks import TestSuiteCheck
from checks._baseline_cache import CACHE_ENV, BaselineCache, default_cache_dir, files_digest
from harness.extend import ProcessResult

pytestmark = pytest.mark.anyio

COMMAND = "pytest -rA"  # a runner that selects tests by name: a cached failure is rerun alone
LISTING = "t.py::test_a PASSED\nt.py::test_b FAILED\n=== 1 failed, 1 passed in 0.1s ===\n"


class Counting:
    """A sandbox that answers every run with `LISTING` and counts the runs; its repr (part
    of the cache key) is the same for every instance, as a real sandbox's is."""

    def __init__(self, output: str = LISTING, *, timed_out: bool = False) -> None:
        self.runs = 0
        self.alone = 0  # runs of some tests by name (``-k``): a cached failure seen again
        self.output = output
        self.timed_out = timed_out
        self.gate: anyio.Event | None = None
        self.started = anyio.Event()

    def __repr__(self) -> str:
        return "Counting()"

    async def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout: float | None,  # noqa: ASYNC109 - the protocol's signature
        env: Mapping[str, str] | None = None,
        workspace: Path | None = None,
    ) -> ProcessResult:
        if "-k" in (command.split() if isinstance(command, str) else command):
            self.alone += 1
        else:
            self.runs += 1
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        return ProcessResult(1, self.output, self.timed_out, False, 0.1)


def workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "t.py").write_text("def test_a(): pass\n")
    (root / "node_modules").mkdir(exist_ok=True)
    (root / "node_modules" / "dep.js").write_text("1")
    return root


async def prepared(root: Path, sandbox: Counting, **options: object) -> TestSuiteCheck:
    """A fresh check (as each board attempt and hook session builds one), prepared."""
    check = TestSuiteCheck(COMMAND, baseline=True, sandbox=sandbox, **options)  # type: ignore[arg-type]
    await check.prepare(snapshot(root))
    return check


def entries() -> list[Path]:
    return sorted(default_cache_dir().glob("*.json"))


async def test_runs_on_the_same_content_take_the_baseline_once(tmp_path: Path) -> None:
    """Two checks on two folders of the same content: the second reuses the first's
    baseline, and judges with it (test_b failing before the run does not block)."""
    sandbox = Counting()
    await prepared(workspace(tmp_path / "a"), sandbox)
    second = await prepared(workspace(tmp_path / "b"), sandbox)
    # test_b run alone twice: its flaky rerun at the baseline, then the second run's check
    # that the cached failure still fails.
    assert (sandbox.runs, sandbox.alone) == (1, 2)
    recorded = second.baseline_for("run-1")
    assert recorded is not None
    assert recorded.failing == ("t.py::test_b",)
    assert await second.check(snapshot(tmp_path / "b")) is None


async def test_a_changed_file_takes_it_again(tmp_path: Path) -> None:
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    await prepared(root, sandbox)
    (root / "t.py").write_text("def test_a(): assert 0\n")
    await prepared(root, sandbox)
    (root / "new.py").write_text("")
    await prepared(root, sandbox)
    assert sandbox.runs == 3
    assert len(entries()) == 3


async def test_skipped_folders_are_not_part_of_the_content(tmp_path: Path) -> None:
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    await prepared(root, sandbox)
    (root / "node_modules" / "dep.js").write_text("2")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "t.pyc").write_bytes(b"\0")
    await prepared(root, sandbox)
    assert sandbox.runs == 1


async def test_another_command_or_sandbox_is_another_key(tmp_path: Path) -> None:
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    await prepared(root, sandbox)
    await prepared(root, sandbox, env={"CI": "1"})
    await prepared(root, sandbox, timeout=5.0)
    other = Counting()
    other.__class__ = type("Other", (Counting,), {"__repr__": lambda self: "Other()"})
    await prepared(root, other)
    assert (sandbox.runs, other.runs) == (3, 1)


async def test_a_tampered_entry_is_ignored_with_a_warning_and_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An entry whose baseline was edited (test_a marked failing, so that breaking it would
    look older than the run) no longer matches its digest: it is never used."""
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    await prepared(root, sandbox)
    (entry,) = entries()
    data = json.loads(entry.read_text())
    data["baseline"]["results"]["outcomes"]["t.py::test_a"] = "failed"
    entry.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="checks.baseline_cache"):
        check = await prepared(root, sandbox)
    assert sandbox.runs == 2
    recorded = check.baseline_for("run-1")
    assert recorded is not None
    assert recorded.failing == ("t.py::test_b",)
    assert "event=baseline_cache.ignored" in caplog.text
    assert "its baseline does not match its digest" in caplog.text
    assert json.loads(entry.read_text())["baseline"]["results"]["outcomes"]["t.py::test_a"] == (
        "passed"
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "it is not JSON"),
        ('{"format": 99}', "it is not a baseline entry of format 1"),
        ("[]", "it is not a baseline entry of format 1"),
    ],
)
async def test_a_corrupt_entry_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: str, why: str
) -> None:
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    await prepared(root, sandbox)
    (entry,) = entries()
    entry.write_text(content)
    with caplog.at_level(logging.WARNING, logger="checks.baseline_cache"):
        await prepared(root, sandbox)
    assert sandbox.runs == 2
    assert why in caplog.text


async def test_a_foreign_entry_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An entry copied under another key's name (its digest intact) is not that key's."""
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    await prepared(root, sandbox)
    (first,) = entries()
    (root / "t.py").write_text("changed\n")
    cache = BaselineCache.default()
    key = await cache.key(TestSuiteCheck(COMMAND, sandbox=sandbox)._cache_inputs(), root)
    shutil.copy(first, cache.folder / f"{key}.json")
    with caplog.at_level(logging.WARNING, logger="checks.baseline_cache"):
        await prepared(root, sandbox)
    assert sandbox.runs == 2
    assert "it holds another key" in caplog.text


async def test_a_baseline_that_timed_out_is_not_kept(tmp_path: Path) -> None:
    sandbox = Counting(timed_out=True)
    root = workspace(tmp_path / "a")
    await prepared(root, sandbox)
    await prepared(root, sandbox)
    assert sandbox.runs == 2
    assert entries() == []


async def test_without_the_cache_nothing_is_kept(tmp_path: Path) -> None:
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    await prepared(root, sandbox, baseline_cache=False)
    await prepared(root, sandbox, baseline_cache=False)
    assert sandbox.runs == 2
    kept = [p.name for p in default_cache_dir().iterdir()]
    assert kept == ["bytecode"]  # conftest.py's link to the session's bytecode: no baseline


async def test_runs_that_start_together_take_one_baseline(tmp_path: Path) -> None:
    """The first run holds the key's lock while its suite runs; the others wait, then reuse."""
    sandbox = Counting()
    sandbox.gate = anyio.Event()
    roots = [workspace(tmp_path / name) for name in "abc"]
    async with anyio.create_task_group() as group:
        for root in roots:
            group.start_soon(prepared, root, sandbox)
        await sandbox.started.wait()
        sandbox.gate.set()
    assert sandbox.runs == 1


def repository_and_clone(tmp_path: Path) -> tuple[Path, Path]:
    root = workspace(tmp_path / "a")
    (root / ".gitignore").write_text("node_modules/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    clone = tmp_path / "b"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    return root, clone


async def test_clean_git_checkouts_of_one_commit_share_the_key(tmp_path: Path) -> None:
    """A clean checkout is keyed by its git tree (so an untracked file, or an edit, is
    another key), wherever it lives."""
    root, clone = repository_and_clone(tmp_path)
    content = await cache_module.workspace_content(root)
    assert content.startswith("git-tree:")
    assert await cache_module.workspace_content(clone) == content
    (clone / "untracked.py").write_text("")
    assert (await cache_module.workspace_content(clone)).startswith(f"{content}+changes:")
    sandbox = Counting()
    await prepared(root, sandbox)
    (clone / "untracked.py").unlink()
    await prepared(clone, sandbox)
    assert sandbox.runs == 1


async def test_git_checkouts_with_the_same_changes_share_the_key(tmp_path: Path) -> None:
    """A checkout with changes is keyed by its tree and the changed paths as they are: the
    same changes in two checkouts are one key, and any edit, deletion, rename or new file
    is another; an untracked file in a skipped folder (``node_modules``) is not part of it."""
    root, clone = repository_and_clone(tmp_path)
    clean = await cache_module.workspace_content(root)
    keys = {clean}
    for folder in (root, clone):
        (folder / "t.py").write_text("def test_a(): assert 0\n")
        (folder / "new.py").write_text("x = 1\n")
    changed = await cache_module.workspace_content(root)
    assert changed.startswith(f"{clean}+changes:")
    assert await cache_module.workspace_content(clone) == changed
    keys.add(changed)
    (clone / "node_modules").mkdir()
    (clone / "node_modules" / "lib.js").write_text("")
    assert await cache_module.workspace_content(clone) == changed
    (clone / "new.py").write_text("x = 2\n")  # the same size: the content decides
    keys.add(await cache_module.workspace_content(clone))
    (clone / "new.py").chmod(0o755)
    keys.add(await cache_module.workspace_content(clone))
    await anyio.run_process(["git", "-C", str(clone), "mv", "t.py", "u.py"])
    keys.add(await cache_module.workspace_content(clone))
    (clone / "u.py").unlink()
    keys.add(await cache_module.workspace_content(clone))
    assert len(keys) == 6


def test_the_stat_index_never_hides_a_changed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file rewritten with the same size and its old mtime put back is read again (its
    ctime changed), so the digest follows the content."""
    monkeypatch.setattr(cache_module, "_RACY_NS", -(10**12))  # index even brand-new files
    root = workspace(tmp_path / "a")
    index = tmp_path / "index"
    first = files_digest(root, index)
    assert files_digest(root, index) == first
    info = (root / "t.py").stat()
    (root / "t.py").write_text("def test_b(): pass\n")
    os.utime(root / "t.py", ns=(info.st_atime_ns, info.st_mtime_ns))
    assert (root / "t.py").stat().st_size == info.st_size
    changed = files_digest(root, index)
    assert changed != first
    assert files_digest(root, None) == changed


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "/somewhere/else")
    assert default_cache_dir() == Path("/somewhere/else")
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    if os.name == "posix" and os.uname().sysname == "Linux":
        assert default_cache_dir() == Path("/xdg/completion-harness/baselines")


async def test_a_cache_folder_that_cannot_be_written_keeps_nothing_and_stops_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The cache's folder is a file (as full or read-only it would fail the same way): the
    baseline is taken, used and not kept, with a warning; a real check command still runs
    (its bytecode has nowhere to go)."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocked))
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    with caplog.at_level(logging.WARNING):
        check = await prepared(root, sandbox)
        await prepared(root, sandbox)
    assert sandbox.runs == 2
    assert check.baseline_for("run-1") is not None
    assert "baseline_cache.not_written" in caplog.text
    real = TestSuiteCheck([sys.executable, "-c", "print('t.py::test_a PASSED'); print('1 passed')"])
    assert await real.check(snapshot(root)) is None


async def test_without_a_home_folder_there_is_no_cache_and_checks_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No $COMPLETION_HARNESS_CACHE, no HOME and no user entry (a bare container): the
    baseline is taken without a cache, with a warning, and commands run without bytecode."""
    for name in (CACHE_ENV, "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)

    def homeless(cls: type[Path]) -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", classmethod(homeless))
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    with caplog.at_level(logging.WARNING):
        check = await prepared(root, sandbox)
    assert sandbox.runs == 1
    assert check.baseline_for("run-1") is not None
    assert "baseline_cache.unavailable" in caplog.text
    real = TestSuiteCheck([sys.executable, "-c", "print('t.py::test_a PASSED'); print('1 passed')"])
    assert await real.check(snapshot(root)) is None


async def test_a_cached_failure_that_passes_now_excuses_nothing(tmp_path: Path) -> None:
    """From outside, with a real suite: the baseline is cached while test_helper fails; the
    helper is then fixed in a git-ignored folder the suite imports (the key does not see it).
    The next run sees the cached failure pass when run alone, takes the baseline again, and
    an agent that breaks the helper once more is rejected, as without the cache."""
    root = tmp_path / "repo"
    (root / "vendor").mkdir(parents=True)
    (root / ".gitignore").write_text("vendor/\n")
    (root / "test_it.py").write_text(
        "import sys\n\nsys.path.insert(0, 'vendor')\nfrom helper import helper\n\n\n"
        "def test_helper():\n    assert helper() == 1\n\n\n"
        "def test_other():\n    pass\n"
    )
    helper = root / "vendor" / "helper.py"
    helper.write_text("def helper():\n    return 0\n")
    commit_all(root)
    command = (sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider")
    env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

    first = TestSuiteCheck(command, env=env, baseline=True)
    await first.prepare(snapshot(root, run_id="first"))
    cached = first.baseline_for("first")
    assert cached is not None
    assert cached.failing == ("test_it.py::test_helper",)
    assert len(entries()) == 1

    helper.write_text("def helper():\n    return 1\n")  # fixed where the key does not look
    second = TestSuiteCheck(command, env=env, baseline=True)
    await second.prepare(snapshot(root, run_id="second"))
    taken = second.baseline_for("second")
    assert taken is not None
    assert taken.failing == ()
    helper.write_text("def helper():\n    return 2\n")  # the agent breaks it again
    reason = await second.check(snapshot(root, run_id="second"))
    assert reason is not None
    assert "tests that passed before the run no longer pass: test_it.py::test_helper" in reason


def commit_all(root: Path) -> None:
    """`root` made a git repository with everything in it committed."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)


async def test_a_watchman_that_exits_at_once_leaves_the_key_to_the_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `watchman` on PATH that exits before reading its question (a stub, or a watchman
    that cannot start): the baseline is taken, the key computed from the content, and the
    next check on the same content reuses it, with no error from the broken pipe."""
    stub = tmp_path / "bin" / "watchman"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\nexec 0<&-\nexit 0\n")
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stub.parent}{os.pathsep}{os.environ['PATH']}")
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    check = await prepared(root, sandbox)
    await prepared(root, sandbox)
    assert sandbox.runs == 1
    assert check.baseline_for("run-1") is not None


def _plant_fifo(entry: Path) -> None:
    os.mkfifo(entry)


def _plant_link_to_dev_zero(entry: Path) -> None:
    entry.symlink_to("/dev/zero")


def _plant_not_utf8(entry: Path) -> None:
    entry.write_bytes(b'{"format": 1, "key": "\xff"}')


def _plant_deep_json(entry: Path) -> None:
    entry.write_text("[" * 200_000 + "]" * 200_000)


@pytest.mark.parametrize(
    ("plant", "why"),
    [
        (_plant_fifo, "it is not a regular file"),
        (_plant_link_to_dev_zero, "it is a symbolic link"),
        (_plant_not_utf8, "it is not UTF-8 (byte 0xff at offset 22)"),
        (_plant_deep_json, "it is not JSON"),
    ],
    ids=["fifo", "link-to-dev-zero", "not-utf8", "deep-json"],
)
async def test_an_entry_planted_as_a_special_file_is_ignored_and_the_suite_runs(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    plant: Callable[[Path], None],
    why: str,
) -> None:
    """In place of the entry, a FIFO (which would wait for a writer for ever), a link to
    /dev/zero (which never ends), bytes that are not UTF-8 or JSON nested past the parser:
    a `baseline_cache.ignored` warning naming it, and the baseline is taken again."""
    sandbox = Counting()
    root = workspace(tmp_path / "a")
    await prepared(root, sandbox)
    (entry,) = entries()
    entry.unlink()
    plant(entry)
    with caplog.at_level(logging.WARNING, logger="checks.baseline_cache"):
        with anyio.fail_after(10):
            check = await prepared(root, sandbox)
    assert sandbox.runs == 2
    assert check.baseline_for("run-1") is not None
    assert "baseline_cache.ignored" in caplog.text
    assert str(entry) in caplog.text
    assert why in caplog.text


@pytest.mark.parametrize("plant", [_plant_fifo, _plant_link_to_dev_zero], ids=["fifo", "link"])
def test_a_stat_index_planted_as_a_special_file_is_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, plant: Callable[[Path], None]
) -> None:
    """The stat index beside the entries, as a FIFO or a link to /dev/zero: ignored with a
    warning, the files read, the same digest as without an index."""
    root = workspace(tmp_path / "a")
    index = tmp_path / "index" / "index" / f"{cache_module._folder_id(root)}.json"
    index.parent.mkdir(parents=True)
    plant(index)
    with caplog.at_level(logging.WARNING, logger="checks.baseline_cache"):
        assert files_digest(root, tmp_path / "index") == files_digest(root, None)
    assert "the stat index is unreadable" in caplog.text
