"""Numbers from outside that are not finite (issue 41 item 9), met where a user meets them:
`harness run` as a process, over a spec and a scripted fixture. Python reads ``nan`` in TOML
and ``NaN`` in JSON; each is refused naming the field (exit 2), and ``--json`` is JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CHECK = '[[checks]]\ntype = "files"\npaths = ["done.txt"]\n'


def _strict(text: str) -> object:
    """JSON as the standard has it: ``NaN`` and ``Infinity`` are errors."""

    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _run(tmp_path: Path, spec: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "spec.toml").write_text(spec)
    return subprocess.run(
        [sys.executable, "-m", "strategies", "run", "spec.toml", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT), OPENAI_API_KEY="sk-test"),
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("price", ["nan", "inf", "-inf"])
def test_a_spec_price_that_is_not_finite_is_refused_naming_the_field(
    tmp_path: Path, price: str
) -> None:
    """A price of ``nan`` was accepted: every call's cost became NaN."""
    spec = (
        'prompt = "x"\n[model]\ntype = "openai"\nmodel = "my-model"\n'
        f'base_url = "http://127.0.0.1:9/v1"\nprice = {{ input = {price}, output = 1.0 }}\n' + CHECK
    )
    done = _run(tmp_path, spec)
    assert done.returncode == 2, done.stderr
    out = _strict(done.stdout)
    assert isinstance(out, dict)
    assert "model.price.input must be a finite number of dollars >= 0" in out["error"]
    assert "Traceback" not in done.stderr


def test_a_fixture_cost_of_nan_is_refused_and_json_stays_json(tmp_path: Path) -> None:
    """A scripted line's ``"cost_usd": NaN`` never tripped ``max_cost_usd`` (every turn ran)
    and ``--json`` printed ``"cost_usd": NaN``. The line is refused, naming file, line and
    field, before the first turn."""
    (tmp_path / "nan.jsonl").write_text(
        '{"text": "done", "usage": {"input_tokens": 5, "cost_usd": NaN}}\n'
    )
    spec = (
        'prompt = "x"\n[model]\ntype = "fixture"\npath = "nan.jsonl"\n'
        "[budget]\nmax_cost_usd = 1.0\nmax_turns = 3\n" + CHECK
    )
    done = _run(tmp_path, spec)
    assert done.returncode == 2, done.stderr
    out = _strict(done.stdout)
    assert isinstance(out, dict)
    assert out["turns"] is None
    assert (
        "nan.jsonl:1 field 'usage.cost_usd': must be a finite number >= 0 or null (got nan)"
        in (out["error"])
    )
