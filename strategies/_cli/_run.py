"""`harness run SPEC.toml`: run a spec, show progress, exit 0 only when the work is verified."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import structlog

from harness import (
    ConfigurationError,
    EventSink,
    FixtureError,
    Harness,
    ModelClient,
    RecordingModelClient,
    RunResult,
)

from ._progress import ProgressPrinter
from ._spec import Spec, load_spec
from ._telemetry import tracer_provider_from_env

EXIT_VERIFIED = 0
EXIT_UNVERIFIED = 1
EXIT_ERROR = 2


def register(sub: Any) -> None:
    parser = sub.add_parser("run", help="run a spec until the work is verified or a limit halts it")
    parser.add_argument("spec", type=Path, help="the run spec (TOML)")
    parser.add_argument("--workspace", type=Path, help="work in this folder instead")
    parser.add_argument("--transcript", type=Path, help="write the JSONL transcript here")
    parser.add_argument("--record", type=Path, help="record every model exchange as a fixture")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument(
        "--otel",
        action="store_true",
        help="emit OpenTelemetry spans; the exporter comes from OTEL_TRACES_EXPORTER "
        "(console on stderr by default, or otlp)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the outcome")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every event")
    parser.set_defaults(handler=handle)


class _Stderr:
    """Whatever `sys.stderr` is at the moment of writing (tests swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


@contextmanager
def logging_to_stderr(verbose: bool) -> Iterator[None]:
    """Structured logs go to stderr for the command's duration: warnings by default, every
    event with --verbose. The caller's structlog configuration is restored afterwards."""
    saved = structlog.get_config()
    level = logging.DEBUG if verbose else logging.WARNING
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    try:
        yield
    finally:
        structlog.configure(**saved)


def handle(args: argparse.Namespace) -> int:
    with logging_to_stderr(args.verbose):
        return _handle(args)


def _handle(args: argparse.Namespace) -> int:
    provider: Any = None
    try:
        spec = load_spec(args.spec)
        if args.workspace is not None and not args.workspace.is_dir():
            print(f"harness: --workspace {str(args.workspace)!r} is not a folder", file=sys.stderr)
            return EXIT_ERROR
        workspace = spec.prepare_workspace(args.workspace)
        model = spec.build_model()
        wrap = None
        if args.record is not None:
            record: Path = args.record
            model = RecordingModelClient(model, record)

            def wrap(client: ModelClient, role: str) -> ModelClient:
                # Each extra model gets its own fixture beside the builder's: run.jsonl ->
                # run.evaluator.jsonl, so a SelfVerifying run replays with both scripts.
                return RecordingModelClient(client, record.with_suffix(f".{role}{record.suffix}"))

        transcript = args.transcript or spec.transcript
        sinks: list[EventSink] = [] if args.quiet else [ProgressPrinter()]
        if args.otel:
            provider = tracer_provider_from_env()
            sinks.append(otel_sink(spec, provider))
        harness = Harness(
            model=model,
            policy=spec.policy,
            tools=spec.tools,
            strategy=spec.build_strategy(wrap_model=wrap),
            workspace=workspace,
            system_prompt=spec.system_prompt,
            sinks=sinks,
            transcript=transcript,
            tool_timeout=spec.tool_timeout,
            done_tool=spec.done_tool,
            context_window=spec.context_window,
        )
    except (ConfigurationError, FixtureError) as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return EXIT_ERROR

    async def go() -> RunResult:
        return await harness.run(spec.prompt)

    try:
        result = anyio.run(go, backend=args.backend)
    except FixtureError as exc:
        print(f"harness: {exc}", file=sys.stderr)
        if exc.result is not None:
            _report(exc.result, workspace, transcript)
        return EXIT_ERROR
    except ConfigurationError as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if provider is not None:
            provider.shutdown()  # flushes the exporter before the outcome is printed
    _report(result, workspace, transcript)
    return EXIT_VERIFIED if result.verified else EXIT_UNVERIFIED


def _report(result: RunResult, workspace: Path | None, transcript: Path | None) -> None:
    status = "VERIFIED COMPLETE" if result.verified else "NOT VERIFIED"
    cost = "unknown" if result.usage.cost_usd is None else f"${result.usage.cost_usd:.4f}"
    print(f"{status}: {result.halt_reason.describe()}")
    print(
        f"  turns={result.turns} tool_calls={result.tool_calls} iterations={result.iterations} "
        f"tokens={result.usage.total_tokens} cost={cost} elapsed={result.elapsed:.2f}s"
    )
    if workspace is not None:
        print(f"  workspace: {workspace}")
    if transcript is not None:
        print(f"  transcript: {transcript}")


def otel_sink(spec: Spec, provider: Any) -> EventSink:
    """An `OtelSink` on `provider`, told the spec's requested models and provider."""
    from harness import OtelSink

    models: dict[str, str] = {}
    evaluator = spec.strategy.get("evaluator")
    for agent, table in (("builder", spec.model), ("evaluator", evaluator)):
        if isinstance(table, dict) and isinstance(table.get("model"), str):
            models[agent] = table["model"]
    kind = spec.model.get("type")
    return OtelSink(
        provider,
        request_model=models,
        provider_name=kind if kind in ("openai", "anthropic") else None,
    )
