"""A fake OpenCode, for tests: ``run --format json PROMPT`` appends a step to steps.txt in its
folder and prints the JSONL events OpenCode's ``run`` command writes: a first step that calls
a tool (``step_start``, ``tool_use``, ``step_finish`` with reason ``tool-calls``), then a step
that answers (``step_start``, ``text``, ``step_finish`` with reason ``stop``), each finish with
its ``tokens``.

``FAKE_MODE``: ``ok`` (default), or ``error`` (an ``error`` event, as for a provider failure).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
from typing import Any

SESSION = "ses_44f9562d4ffeWq3v8RkV1u2x"


def event(kind: str, **data: Any) -> None:
    print(json.dumps({"type": kind, "timestamp": 1768191337567, "sessionID": SESSION, **data}))


def finish(reason: str, inputs: int, output: int) -> None:
    tokens = {
        "input": inputs,
        "output": output,
        "reasoning": 10,
        "cache": {"read": 100, "write": 20},
    }
    event(
        "step_finish",
        part={"type": "step-finish", "reason": reason, "cost": 0.0012, "tokens": tokens},
    )


def main(argv: list[str]) -> int:
    if os.environ.get("FAKE_MODE") == "error":
        error = {"name": "ProviderAuthError", "data": {"message": "No API key for provider"}}
        event("error", error=error)
        return 1
    prompt = argv[-1]
    steps = pathlib.Path("steps.txt")
    done = len(steps.read_text().splitlines()) if steps.exists() else 0
    with steps.open("a") as f:
        f.write(f"step {done + 1}\n")
    event("step_start", part={"type": "step-start", "snapshot": "4b825dc6"})
    event("text", part={"type": "text", "text": "Let me write the step."})
    state = {"status": "completed", "input": {"filePath": "steps.txt"}, "output": "ok"}
    event("tool_use", part={"type": "tool", "tool": "write", "callID": "c1", "state": state})
    finish("tool-calls", 500, 50)
    event("step_start", part={"type": "step-start", "snapshot": "9c1d2e3f"})
    answer = f"Wrote step {done + 1} ({len(prompt)} characters of prompt)."
    event("text", part={"type": "text", "text": answer})
    finish("stop", 700, 40)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
