"""Every case in fixtures/completion_checks/*.jsonl gives the verdict it expects.

A case is one JSON object per line: ``check`` (a table for `check_from_config`), ``files``
(workspace path -> text, or a JSON value written as JSON), ``start_files`` (the workspace as
the run found it, given to `prepare` first), ``workspace: false`` (no workspace), ``state``
(``task``, ``final_text``, ``plan`` steps, ``sql_results``) and ``expect``: either
``{"complete": true}`` or ``{"reason_contains": [...]}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _checks_support import snapshot

from checks import PreparesForRun, SqlResult, check_from_config
from harness import Plan

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "completion_checks"
CASE_KEYS = {"name", "check", "files", "start_files", "workspace", "state", "expect"}


def _cases() -> list[Any]:
    cases = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                case = json.loads(line)
                cases.append(pytest.param(case, id=f"{path.stem}:{number}:{case['name']}"))
    return cases


def _write(root: Path, files: dict[str, Any]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else json.dumps(content, indent=2)
        path.write_text(text, encoding="utf-8")


def _store(state: dict[str, Any]) -> list[object]:
    values: list[object] = []
    if "plan" in state:
        values.append(Plan.from_items(state["plan"]))
    for row in state.get("sql_results", []):
        values.append(
            SqlResult(
                row["query"],
                tuple(row.get("columns", ())),
                tuple(tuple(r) for r in row.get("rows", ())),
                row.get("error"),
            )
        )
    return values


def test_the_fixture_files_exist() -> None:
    """The table of cases is not silently empty, and feature_list_complete.jsonl is in it."""
    assert (FIXTURES / "feature_list_complete.jsonl").is_file()
    assert len(_cases()) >= 40


@pytest.mark.anyio
@pytest.mark.parametrize("case", _cases())
async def test_case(case: dict[str, Any], tmp_path: Path) -> None:
    """The configured check gives the case's expected verdict or reason fragments."""
    assert set(case) <= CASE_KEYS, f"unknown keys {set(case) - CASE_KEYS}"
    check = check_from_config(case["check"], where=case["name"])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = case.get("state", {})
    base = {
        "workspace": workspace if case.get("workspace", True) else None,
        "task": state.get("task", "Do the task."),
        "store": _store(state),
    }
    if "start_files" in case:
        _write(workspace, case["start_files"])
        assert isinstance(check, PreparesForRun)
        await check.prepare(snapshot(**base))
    _write(workspace, case.get("files", {}))
    reason = await check.check(snapshot(final_text=state.get("final_text"), **base))
    expect = case["expect"]
    if expect.get("complete"):
        assert reason is None
    else:
        assert reason is not None, "expected a reason, the check passed"
        for fragment in expect["reason_contains"]:
            assert fragment in reason
