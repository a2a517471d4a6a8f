"""`harness init [FOLDER]`: a starter spec to copy, which runs as written.

It writes ``harness.toml`` (every line commented: what to change for a real model, a test
suite, a budget), an empty ``workspace/`` and ``script.jsonl``, a scripted model that writes
the file the check asks for: ``harness run harness.toml`` verifies offline, and the comments
say how to point it at a real provider. Nothing is overwritten: an existing file is an error
(exit 2) naming it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SPEC_NAME = "harness.toml"
SCRIPT_NAME = "script.jsonl"

STARTER = """\
# A starter spec (`harness init`). Run it: harness run harness.toml
# Every key is in the spec reference (docs/spec-reference.md); paths are relative to this file.

# The task, as the agent reads it (or prompt_file = "TASK.md").
prompt = "Write hello.txt containing the word hello."

# The folder the agent works in. `workspace_template = "workspace"` instead works in a fresh
# temporary copy of it each run, and leaves this one as it is.
workspace = "workspace"

# The agent's tools: the built-in file tools. A [tools] table with shell = true adds a shell.
tools = ["read_file", "list_files", "write_file"]

# Every run records its events in a new file in runs/ beside this file (`harness view` draws
# it). Uncomment to name the file instead, or write transcript = false to record nothing.
# transcript = "runs/hello.jsonl"

# The model. This one is scripted (script.jsonl), so the starter runs offline and for free.
# For a real model, replace the table, e.g.:
#   [model]
#   type = "anthropic"              # reads ANTHROPIC_API_KEY
#   model = "claude-sonnet-4-5"
# or type = "openai" with model = "gpt-4.1" (OPENAI_API_KEY); see docs/providers.md.
[model]
type = "fixture"
path = "script.jsonl"

# Hard limits: the run halts at the first one reached, verified or not.
[budget]
max_turns = 20
max_wall_time = 600
# max_cost_usd = 1.0

# What "done" means: the run ends verified only when every check passes. The agent's claim
# of done is not trusted.
[[checks]]
type = "files"
paths = ["hello.txt"]

# A test suite instead (or as well): with baseline = true, tests that already fail before
# the first turn do not block, so name the tests the task is about in must_pass.
# [[checks]]
# type = "test_suite"
# command = ["python", "-m", "pytest", "-q", "-rA"]
# baseline = true
# must_pass = ["tests/test_hello.py::test_greets"]
"""

_SCRIPT = [
    {
        "text": "I'll write the file.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "hello.txt", "content": "hello\n"}}
        ],
    },
    {"text": "hello.txt is written."},
]


def handle(args: argparse.Namespace) -> int:
    folder: Path = args.folder
    spec, script, workspace = folder / SPEC_NAME, folder / SCRIPT_NAME, folder / "workspace"
    for path in (spec, script):
        if path.exists():
            print(f"harness: {path} exists; init writes nothing over a file", file=sys.stderr)
            return 2
    try:
        workspace.mkdir(parents=True, exist_ok=True)
        script.write_text("".join(json.dumps(row) + "\n" for row in _SCRIPT), encoding="utf-8")
        spec.write_text(STARTER, encoding="utf-8")
    except OSError as exc:
        print(f"harness: cannot write the starter in {folder}: {exc.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {spec} (the spec, every line commented), {script} and {workspace}/")
    print(f"run it: harness run {spec}")
    return 0
