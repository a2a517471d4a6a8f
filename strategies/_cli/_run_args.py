"""`harness run SPEC`: its command line (the handler is `_run.handle`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._handlers import Handler


def register(sub: Any) -> None:
    parser = sub.add_parser("run", help="run a spec until the work is verified or a limit halts it")
    parser.add_argument("spec", type=Path, help="the run spec (TOML)")
    parser.add_argument("--workspace", type=Path, help="work in this folder instead")
    parser.add_argument(
        "--keep-workspace",
        action="store_true",
        help="keep the temporary copy of the spec's workspace_template (removed by default)",
    )
    parser.add_argument(
        "--transcript",
        type=Path,
        help="write the JSONL transcript here (default: the spec's, else a new file in runs/ "
        "beside the spec)",
    )
    parser.add_argument(
        "--no-transcript",
        action="store_true",
        help="write no transcript (as transcript = false in the spec)",
    )
    parser.add_argument("--record", type=Path, help="record every model exchange as a fixture")
    parser.add_argument(
        "--replay",
        type=Path,
        metavar="FIXTURE",
        help="replay this recording (a JSONL fixture) as the model, instead of the spec's "
        "[model]; a SelfVerifying evaluator replays FIXTURE's .evaluator.jsonl beside it",
    )
    parser.add_argument(
        "--realtime",
        action="store_true",
        help="replay a fixture at its recorded pace (by default a replay skips the recorded "
        "delays, and wall-time budgets count them as if they had passed)",
    )
    parser.add_argument(
        "--max-turns",
        type=_positive_int,
        metavar="N",
        help="cap the run at N turns (replaces the spec's [budget] max_turns)",
    )
    parser.add_argument(
        "--max-wall-time",
        type=_positive_float,
        metavar="SECONDS",
        help="cap the run's wall time (replaces the spec's [budget] max_wall_time)",
    )
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the outcome")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every event")
    parser.add_argument(
        "--otel",
        action="store_true",
        help="emit OpenTelemetry spans; the exporter comes from OTEL_TRACES_EXPORTER "
        "(console on stderr by default, or otlp)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the outcome as one JSON object on stdout (everything else goes to stderr)",
    )
    parser.set_defaults(handler=Handler("._run", "handle"))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number (got {text!r})")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds (got {text!r})")
    return value
