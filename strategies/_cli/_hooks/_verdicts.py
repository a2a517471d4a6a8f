"""`harness hook verdicts`: the stops the hooks recorded (`_ledger.VERDICTS`), newest last: one
line each (or its JSON), observed stops marked "would block", a stop whose checks could not run
marked ERROR, and one whose hook was killed before it completed its record KILLED."""

from __future__ import annotations

import argparse
import json
import sys
import time

from harness import ConfigurationError

from .._terminal import for_terminal
from ._core import default_state_dir, read_verdicts

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def handle_verdicts(args: argparse.Namespace) -> int:
    state = args.state_dir or default_state_dir()
    try:
        verdicts = read_verdicts(state)
    except ConfigurationError as exc:
        print(f"harness hook verdicts: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    shown = verdicts[-args.last :] if args.last > 0 else verdicts
    for verdict in shown:
        if args.json:
            print(json.dumps(verdict.to_json(), ensure_ascii=False))
            continue
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(verdict.at))
        what = verdict.describe()
        failed = ", ".join(name for name, _ in verdict.failed)
        line = f"{when} {verdict.agent:<8} {verdict.mode:<8} {what:<18} {verdict.session_id}"
        if failed:
            line += f"  failed: {failed}"
        if verdict.error:
            line += f"  error: {verdict.error}"
        if verdict.cwd:
            line += f"  (checked {verdict.root}, agent in {verdict.cwd})"
        print(for_terminal(line))
    if not args.json and not shown:
        print(f"harness hook verdicts: none recorded in {state}")
    return EXIT_OK
