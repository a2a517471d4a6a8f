"""A fake Cursor agent in print mode, for tests: it takes the prompt as its last argument,
appends a step to steps.txt in its folder, and prints what Cursor's output-format reference
documents for ``--output-format json`` (one ``result`` object) or ``stream-json`` (``system``,
``user``, ``assistant``, ``tool_call`` and ``result`` events).

``FAKE_MODE``: ``ok`` (default), or ``error`` (a message on stderr, exit 1 and no JSON, as the
reference documents for a failure).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

SESSION = "c6b62c6f-7ead-4fd6-9922-e952131177ff"


def main(argv: list[str]) -> int:
    if os.environ.get("FAKE_MODE") == "error":
        print("Error: You have been logged out. Run cursor-agent login.", file=sys.stderr)
        return 1
    form = argv[argv.index("--output-format") + 1] if "--output-format" in argv else "text"
    prompt = argv[-1]
    steps = pathlib.Path("steps.txt")
    done = len(steps.read_text().splitlines()) if steps.exists() else 0
    with steps.open("a") as f:
        f.write(f"step {done + 1}\n")
    answer = f"Wrote step {done + 1} ({len(prompt)} characters of prompt)."
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1234,
        "duration_api_ms": 1234,
        "result": answer,
        "session_id": SESSION,
        "request_id": "10e11780-df2f-45dc-a1ff-4540af32e9c0",
    }
    if form == "json":
        print(json.dumps(result))
    elif form == "stream-json":
        call = {"writeToolCall": {"args": {"path": "steps.txt", "fileText": f"step {done + 1}"}}}
        events = [
            {
                "type": "system",
                "subtype": "init",
                "apiKeySource": "login",
                "cwd": os.getcwd(),
                "session_id": SESSION,
                "model": "Claude 4 Sonnet",
                "permissionMode": "default",
            },
            {
                "type": "user",
                "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
                "session_id": SESSION,
            },
            {
                "type": "tool_call",
                "subtype": "started",
                "call_id": "c1",
                "tool_call": call,
                "session_id": SESSION,
            },
            {
                "type": "tool_call",
                "subtype": "completed",
                "call_id": "c1",
                "tool_call": call,
                "session_id": SESSION,
            },
            {
                "type": "assistant",
                "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]},
                "session_id": SESSION,
            },
            result,
        ]
        for event in events:
            print(json.dumps(event), flush=True)
    else:
        print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
