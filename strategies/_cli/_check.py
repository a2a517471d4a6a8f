"""`harness check SPEC.toml`: run only the spec's checks; exit 0 only when all pass.

Exit 1 when a check says the work is not done; 2, the configuration code, when the spec is
wrong or a check cannot run at all (its program is not found, or it could not start: exit
126 or 127, its runner's module missing). With ``-v``, a check that raised shows its
traceback. SIGTERM or SIGINT stops the checks (their process trees killed) and exits 128 + the
signal.
"""

from __future__ import annotations

import argparse
import sys

import anyio

from harness import ConfigurationError

from .._spec import load_spec
from ._checking import Checked, run_checks
from ._signals import SignalCancel
from ._terminal import for_terminal


def handle(args: argparse.Namespace) -> int:
    try:
        spec = load_spec(args.spec, purpose="checks")
    except ConfigurationError as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return 2
    for warning in spec.warnings:
        print(f"harness: warning: {for_terminal(warning)}", file=sys.stderr)
    workspace = args.workspace if args.workspace is not None else spec.workspace
    if workspace is None and spec.workspace_template is not None:
        workspace = spec.workspace_template
    if workspace is not None and not workspace.is_dir():
        print(f"harness: workspace {str(workspace)!r} is not a folder", file=sys.stderr)
        return 2

    try:
        spec.preflight(workspace.resolve() if workspace is not None else None)
    except ConfigurationError as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return 2
    watch = SignalCancel()

    async def go() -> Checked | None:
        return await watch.cancellable(lambda: run_checks(spec, workspace, final_text=args.answer))

    checked = anyio.run(go)
    if checked is None:
        return watch.report_stop("harness", "the checks were stopped")
    verdicts = checked.verdicts
    for verdict in verdicts:
        mark = "PASS" if verdict.passed else "FAIL"
        print(f"{mark}  {verdict.description}")
        if verdict.flaky:
            tests = ", ".join(verdict.flaky)
            print(f"      FLAKY (failed and passed on the same code): {for_terminal(tests)}")
        if verdict.reason is not None:
            for line in verdict.reason.splitlines():
                print(f"      {for_terminal(line)}")
        error = verdict.error
        if error is not None and error.traceback is not None:
            if not args.verbose:
                print("      (-v for the traceback)")
                continue
            for line in error.traceback.rstrip().splitlines():
                print(f"      {for_terminal(line)}")
    failed = sum(not v.passed for v in verdicts)
    flaky = sum(len(v.flaky) for v in verdicts)
    shaky = f", {flaky} flaky test{'s' if flaky != 1 else ''}" if flaky else ""
    print(f"{len(verdicts) - failed} passed, {failed} failed{shaky}")
    if any(v.error is not None and v.error.cannot_run for v in verdicts):
        print("harness: a check could not run: fix its command, not the work", file=sys.stderr)
        return 2
    return 0 if failed == 0 else 1
