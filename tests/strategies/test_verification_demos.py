"""The verification demos in fixtures/verification/ run to a verified finish with `harness run`
on both backends, and their transcripts show what each demonstrates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strategies._cli import main

DEMOS = Path(__file__).resolve().parents[2] / "fixtures" / "verification"


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_demo(name: str, tmp_path: Path, backend: str) -> tuple[list[dict[str, Any]], str]:
    transcript = tmp_path / f"{name}.jsonl"
    spec = DEMOS / name / "spec.toml"
    code = main(["run", str(spec), "--transcript", str(transcript), "--backend", backend, "-q"])
    assert code == 0
    return events(transcript), (DEMOS / name / "workspace" / "calc.py").read_text()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_weakened_test_is_refused_and_the_code_is_fixed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    """(a) The protected test cannot be written; the claim that follows is rejected; the
    run completes once the code is fixed, and the template is untouched."""
    found, template = run_demo("weakened_test", tmp_path, backend)
    assert capsys.readouterr().out.startswith("VERIFIED COMPLETE")
    recorded = [e for e in found if e["event"] == "protected.recorded"]
    assert [(e["rules"], e["files"]) for e in recorded] == [(["tests/**"], 2)]
    refused = [e for e in found if e["event"] == "tool.called" and e["is_error"]]
    assert len(refused) == 1
    assert "protected by the rule 'tests/**'" in refused[0]["content"]
    (failed,) = [e for e in found if e["event"] == "check.failed"]
    assert "must_pass tests not passing: test_sub" in failed["reason"]
    assert found[-1]["event"] == "run.halted"
    assert found[-1]["verified"] is True
    assert "return a + b\n" in template.split("def sub")[1]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_failure_that_predates_the_task_does_not_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    """(c) The baseline records TestLegacy failing; the run completes with it still failing."""
    found, _ = run_demo("predating_failure", tmp_path, backend)
    assert capsys.readouterr().out.startswith("VERIFIED COMPLETE")
    (baseline,) = [e["baseline"] for e in found if e["event"] == "baseline.recorded"]
    assert baseline["runner"] == "unittest"
    assert baseline["failing"] == [
        "tests.test_calc.TestCalc.test_sub",
        "tests.test_calc.TestLegacy.test_float_sum",
    ]
    (failed,) = [e for e in found if e["event"] == "check.failed"]
    assert (
        "failing since before the run began (these do not block): "
        "tests.test_calc.TestLegacy.test_float_sum" in failed["reason"]
    )
    assert found[-1]["verified"] is True
