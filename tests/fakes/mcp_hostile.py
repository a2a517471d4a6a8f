"""Hand-written stdio MCP servers that misbehave, for tests: ``python mcp_hostile.py MODE``.

They answer ``initialize`` and ``tools/list`` as the protocol says (one tool, ``poke``) unless
the mode breaks that:

- ``exit``: writes to stderr and exits 3 before reading anything;
- ``hang-init``: reads and never answers;
- ``garbage``: answers ``initialize`` with a line that is not JSON;
- ``garbage-call``: starts properly, then answers ``tools/call`` with a line that is not JSON;
- ``hang-call``: starts properly, then never answers ``tools/call``;
- ``crash-call``: starts properly, then exits 7 on ``tools/call``, after a word on stderr;
- ``stubborn``: starts properly, ignores SIGTERM and never exits when its stdin closes;
  writes its pid to the file named by ``HOSTILE_PIDFILE``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main(mode: str) -> int:
    if mode == "exit":
        sys.stderr.write("cannot open the database\n")
        return 3
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open(os.environ["HOSTILE_PIDFILE"], "w") as handle:
            handle.write(str(os.getpid()))
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None or mode == "hang-init":
            continue
        if method == "initialize":
            if mode == "garbage":
                sys.stdout.write("Starting server... \x1b[32mok\x1b[0m\n")
                sys.stdout.flush()
                continue
            version = message["params"]["protocolVersion"]
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0"},
            }
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "tools/list":
            tool = {"name": "poke", "description": "Poke it.", "inputSchema": {"type": "object"}}
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [tool]}})
        elif method == "tools/call":
            if mode == "hang-call":
                continue
            if mode == "garbage-call":
                sys.stdout.write("<html>502 Bad Gateway</html>\n")
                sys.stdout.flush()
                continue
            if mode == "crash-call":
                sys.stderr.write("segmentation fault (pretend)\n")
                sys.stderr.flush()
                os._exit(7)
            content = [{"type": "text", "text": "poked"}]
            send({"jsonrpc": "2.0", "id": ident, "result": {"content": content}})
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            send({"jsonrpc": "2.0", "id": ident, "error": error})
    if mode == "stubborn":
        while True:
            time.sleep(60)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
