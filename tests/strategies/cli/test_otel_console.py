"""`harness run --otel` with the console exporter prints one compact line per span."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strategies._cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_each_span_is_one_line_of_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "OTEL_TRACES_EXPORTER",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ):
        monkeypatch.delenv(name, raising=False)
    spec = ROOT / "fixtures" / "demo" / "ralph.toml"
    assert main(["run", str(spec), "--otel", "-q", "--transcript", "/dev/null"]) == 0
    lines = capsys.readouterr().err.splitlines()
    spans = [json.loads(line) for line in lines]  # every line is a whole span
    names = [span["name"] for span in spans]
    assert "invoke_agent ralph" in names
    assert names.count("session builder") == 2
    assert len(lines) == len(spans) >= 10
