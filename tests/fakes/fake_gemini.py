"""A fake Gemini CLI in headless mode, for tests: it reads the prompt, appends a step to
steps.txt in its folder, and prints what Gemini CLI's headless reference documents for
``--output-format json`` (one object: ``session_id``, ``response``, ``stats``, ``error``) or
``stream-json`` (``init``, ``message``, ``tool_use``, ``tool_result``, ``result`` events).

``FAKE_MODE``: ``ok`` (default), ``noise`` (warnings on stderr around the JSON), ``error`` (a
documented error object and exit code 41), ``plain`` (text, as without ``--output-format``).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

SESSION = "4b3f2a10-8c6e-4d2b-9f1a-7e5c3b2a1d09"
MODEL = "gemini-2.5-pro"


def main(argv: list[str]) -> int:
    mode = os.environ.get("FAKE_MODE", "ok")
    form = argv[argv.index("--output-format") + 1] if "--output-format" in argv else "text"
    prompt = argv[argv.index("-p") + 1] if "-p" in argv else sys.stdin.read()
    steps = pathlib.Path("steps.txt")
    done = len(steps.read_text().splitlines()) if steps.exists() else 0
    if mode == "error":
        error = {"type": "FatalAuthenticationError", "message": "Please sign in", "code": 41}
        print(json.dumps({"session_id": SESSION, "error": error}, indent=2))
        return 41
    with steps.open("a") as f:
        f.write(f"step {done + 1}\n")
    answer = f"Wrote step {done + 1} ({len(prompt)} characters of prompt)."
    if mode == "noise":
        print("Loaded cached credentials.", file=sys.stderr, flush=True)
    if form == "text" or mode == "plain":
        print(answer)
    elif form == "json":
        tokens = {
            "prompt": 1200,
            "candidates": 300,
            "total": 1600,
            "cached": 200,
            "thoughts": 100,
            "tool": 0,
        }
        stats = {
            "models": {
                MODEL: {
                    "api": {"totalRequests": 2, "totalErrors": 0, "totalLatencyMs": 5100},
                    "tokens": tokens,
                }
            },
            "tools": {"totalCalls": 1, "totalSuccess": 1, "totalFail": 0},
            "files": {"totalLinesAdded": 1, "totalLinesRemoved": 0},
        }
        print(json.dumps({"session_id": SESSION, "response": answer, "stats": stats}, indent=2))
    else:
        at = "2026-11-26T12:00:00.000Z"
        events = [
            {"type": "init", "timestamp": at, "session_id": SESSION, "model": MODEL},
            {"type": "message", "timestamp": at, "role": "user", "content": prompt},
            {
                "type": "tool_use",
                "timestamp": at,
                "tool_name": "write_file",
                "tool_id": "t1",
                "parameters": {"file_path": "steps.txt"},
            },
            {
                "type": "tool_result",
                "timestamp": at,
                "tool_id": "t1",
                "status": "success",
                "output": "ok",
            },
            {
                "type": "message",
                "timestamp": at,
                "role": "assistant",
                "content": answer[:5],
                "delta": True,
            },
            {
                "type": "message",
                "timestamp": at,
                "role": "assistant",
                "content": answer[5:],
                "delta": True,
            },
            {
                "type": "result",
                "timestamp": at,
                "status": "success",
                "stats": {
                    "total_tokens": 1500,
                    "input_tokens": 1200,
                    "output_tokens": 300,
                    "cached": 200,
                    "input": 1000,
                    "duration_ms": 5100,
                    "tool_calls": 1,
                },
            },
        ]
        for event in events:
            print(json.dumps(event), flush=True)
    if mode == "noise":
        print("[WARN] Skipping unreadable directory", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
