"""The JSON-printing coding agents' default command lines and output allowance.

Apart from their clients (`_agent_clients`) so that the ``[model]`` table's schema, which
shows them as defaults, does not import the clients and the process runner: a spec loaded
for its checks alone (the stop hook, at every stop) still checks that table.
"""

GEMINI_ARGV = ("gemini", "--output-format", "json")
CURSOR_ARGV = ("cursor-agent", "-p", "--output-format", "json")
OPENCODE_ARGV = ("opencode", "run", "--format", "json")
JSON_MAX_OUTPUT = 4 * 1024 * 1024
"""Bytes of output kept by default: a whole pretty-printed object must fit, not just its tail."""
