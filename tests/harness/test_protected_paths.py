"""Protected paths: the rules, the record taken when a run starts, every change found by
comparing digests (whatever route made it), and the pristine copy checks judge."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from harness import ConfigurationError
from harness.extend import PathGuard, ProtectedPaths, Tampering

RULES = ProtectedPaths(["tests/**", "feature_list.json", "**/conftest.py", "scripts/*.sh"])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "tests" / "unit").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "scripts").mkdir()
    (root / "tests" / "test_calc.py").write_text("def test_add():\n    assert add(2, 2) == 4\n")
    (root / "tests" / "unit" / "data.json").write_text("[1, 2]\n")
    (root / "feature_list.json").write_text("[]\n")
    (root / "scripts" / "check.sh").write_text("#!/bin/sh\npytest\n")
    (root / "scripts" / "check.sh").chmod(0o755)
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return 0\n")
    return root


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("tests/test_calc.py", "tests/**"),
        ("tests/a/b/c.py", "tests/**"),
        ("tests", "tests/**"),
        ("feature_list.json", "feature_list.json"),
        ("feature_list.json/inside", "feature_list.json"),
        ("conftest.py", "**/conftest.py"),
        ("a/b/conftest.py", "**/conftest.py"),
        ("scripts/check.sh", "scripts/*.sh"),
        ("scripts/sub/check.sh", None),
        ("src/calc.py", None),
        ("testsuite/x.py", None),
        ("feature_list.json.bak", None),
    ],
)
def test_rules_match_whole_folder_names(path: str, rule: str | None) -> None:
    """``*`` stays inside one folder name, ``**`` spans folders, a plain name covers what
    is below it, and a name is never matched by its prefix."""
    assert RULES.rule_for(path) == rule


@pytest.mark.parametrize("rule", ["/etc/passwd", "../outside", "tests/../../x", "", "a\\b"])
def test_rules_may_not_leave_the_workspace(rule: str) -> None:
    with pytest.raises(ConfigurationError, match="'protected'"):
        ProtectedPaths([rule])


def test_character_classes_and_single_characters() -> None:
    rules = ProtectedPaths(["data/v[0-9].csv", "data/?.txt", "data/[!a]*.log"])
    assert rules.rule_for("data/v3.csv") == "data/v[0-9].csv"
    assert rules.rule_for("data/vx.csv") is None
    assert rules.rule_for("data/a.txt") == "data/?.txt"
    assert rules.rule_for("data/ab.txt") is None
    assert rules.rule_for("data/b.log") == "data/[!a]*.log"
    assert rules.rule_for("data/a.log") is None


def test_nothing_changed_means_no_tampering(workspace: Path) -> None:
    guard = PathGuard.record(workspace, RULES)
    assert sorted(guard.files) == [
        "feature_list.json",
        "scripts/check.sh",
        "tests/test_calc.py",
        "tests/unit/data.json",
    ]
    (workspace / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert guard.changes(workspace) == ()


def test_every_kind_of_change_is_found(workspace: Path) -> None:
    """Modified, deleted, added under a rule, a mode bit changed, and a file replaced by a
    link are each a change, named with the rule that protects the path."""
    guard = PathGuard.record(workspace, RULES)
    (workspace / "tests" / "test_calc.py").write_text("def test_add():\n    pass\n")
    (workspace / "tests" / "unit" / "data.json").unlink()
    (workspace / "tests" / "test_new.py").write_text("")
    (workspace / "src" / "conftest.py").write_text("")
    (workspace / "scripts" / "check.sh").chmod(0o644)
    (workspace / "feature_list.json").unlink()
    (workspace / "feature_list.json").symlink_to(workspace / "src" / "calc.py")
    assert guard.changes(workspace) == (
        Tampering("feature_list.json", "replaced", "feature_list.json"),
        Tampering("scripts/check.sh", "modified", "scripts/*.sh"),
        Tampering("src/conftest.py", "added", "**/conftest.py"),
        Tampering("tests/test_calc.py", "modified", "tests/**"),
        Tampering("tests/test_new.py", "added", "tests/**"),
        Tampering("tests/unit/data.json", "deleted", "tests/**"),
    )


def test_a_protected_folder_replaced_by_a_link_is_not_followed(
    workspace: Path, tmp_path: Path
) -> None:
    """A link put where the tests were is reported, and what it points at (an exact copy
    of the tests, say) is never read as the tests."""
    guard = PathGuard.record(workspace, RULES)
    elsewhere = tmp_path / "elsewhere"
    os.rename(workspace / "tests", elsewhere)
    (workspace / "tests").symlink_to(elsewhere, target_is_directory=True)
    changes = {(t.path, t.change) for t in guard.changes(workspace)}
    assert changes == {
        ("tests", "added"),
        ("tests/test_calc.py", "deleted"),
        ("tests/unit/data.json", "deleted"),
    }


def test_a_link_inside_a_protected_folder_is_recorded_as_a_link(
    workspace: Path, tmp_path: Path
) -> None:
    """Retargeting a link is a change; the target's content is not the record's business."""
    target = tmp_path / "target.txt"
    target.write_text("a")
    (workspace / "tests" / "link").symlink_to(target)
    guard = PathGuard.record(workspace, RULES)
    assert guard.files["tests/link"].kind == "link"
    target.write_text("b")
    assert guard.changes(workspace) == ()
    (workspace / "tests" / "link").unlink()
    (workspace / "tests" / "link").symlink_to(tmp_path)
    assert guard.changes(workspace) == (Tampering("tests/link", "modified", "tests/**"),)


@pytest.mark.anyio
async def test_the_pristine_copy_restores_the_verifier_and_keeps_the_work(
    workspace: Path,
) -> None:
    """The copy has the agent's code with every protected path as recorded (an added test
    removed, a deleted one back, a link replaced by the file); the workspace is untouched,
    and the copy is gone after the block."""
    guard = PathGuard.record(workspace, RULES)
    (workspace / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (workspace / "tests" / "test_calc.py").write_text("weakened\n")
    (workspace / "tests" / "test_new.py").write_text("new\n")
    (workspace / "scripts" / "check.sh").unlink()
    (workspace / "feature_list.json").unlink()
    (workspace / "feature_list.json").symlink_to("src/calc.py")
    changes = guard.changes(workspace)
    async with guard.pristine(workspace, changes) as copy:
        assert copy != workspace
        assert (copy / "src" / "calc.py").read_text().endswith("a + b\n")
        assert (copy / "tests" / "test_calc.py").read_text().startswith("def test_add")
        assert not (copy / "tests" / "test_new.py").exists()
        assert (copy / "scripts" / "check.sh").stat().st_mode & 0o777 == 0o755
        assert not (copy / "feature_list.json").is_symlink()
        assert (copy / "feature_list.json").read_text() == "[]\n"
        assert guard.changes(copy) == ()
    assert not copy.exists()
    assert (workspace / "tests" / "test_calc.py").read_text() == "weakened\n"
    assert (workspace / "feature_list.json").is_symlink()


@pytest.mark.anyio
async def test_the_pristine_copy_is_removed_when_the_block_is_cancelled(
    workspace: Path,
) -> None:
    guard = PathGuard.record(workspace, RULES)
    (workspace / "tests" / "test_calc.py").write_text("weakened\n")
    seen: list[Path] = []
    with anyio.CancelScope() as scope:
        async with guard.pristine(workspace, guard.changes(workspace)) as copy:
            seen.append(copy)
            scope.cancel()
            await anyio.sleep(1)
    assert seen
    assert not seen[0].exists()


def test_too_much_to_keep_is_a_configuration_error(workspace: Path) -> None:
    with pytest.raises(ConfigurationError, match="protect the files that judge the work"):
        PathGuard.record(workspace, RULES, max_bytes=10)


def test_a_saved_record_loads_back_and_finds_the_same_changes(
    workspace: Path, tmp_path: Path
) -> None:
    """The stop hooks keep the record on disk between invocations."""
    guard = PathGuard.record(workspace, RULES)
    guard.save(tmp_path / "record")
    loaded = PathGuard.load(tmp_path / "record", RULES)
    assert loaded is not None
    assert loaded.files == guard.files
    (workspace / "tests" / "test_calc.py").write_text("weakened\n")
    assert loaded.changes(workspace) == guard.changes(workspace)
    assert PathGuard.load(tmp_path / "record", ProtectedPaths(["other/**"])) is None
    assert PathGuard.load(tmp_path / "nothing", RULES) is None
    blob = next((tmp_path / "record" / "blobs").iterdir())
    blob.write_bytes(b"tampered")
    with pytest.raises(ValueError, match="damaged"):
        PathGuard.load(tmp_path / "record", RULES)


def test_caches_beside_the_tests_are_not_changes(workspace: Path) -> None:
    """An agent that runs the suite itself leaves bytecode caches under tests/."""
    guard = PathGuard.record(workspace, RULES)
    (workspace / "tests" / "__pycache__").mkdir()
    (workspace / "tests" / "__pycache__" / "test_calc.cpython-311.pyc").write_bytes(b"\0")
    (workspace / "tests" / ".pytest_cache").mkdir()
    assert guard.changes(workspace) == ()
    strict = ProtectedPaths(["tests/**"], ignore=())
    assert PathGuard.record(workspace, strict).files.keys() >= {
        "tests/__pycache__/test_calc.cpython-311.pyc"
    }
