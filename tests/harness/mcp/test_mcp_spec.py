"""``[[mcp]]`` in a spec: each table becomes an `MCPServer`, mistakes are `SpecError`s naming
the file, the table's index and the key, and ``harness run`` starts the server, records its
calls with ``--record`` and replays them with ``--replay`` without it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from _mcp_support import SDK_SERVER

from harness import MCPServer
from strategies import SpecError, load_spec
from strategies._cli import main

BASE = f"""
prompt = "add 2 and 3"
workspace = "ws"
[model]
type = "fixture"
path = "script.jsonl"
[[checks]]
type = "files"
paths = ["done.txt"]
[[mcp]]
name = "calc"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SDK_SERVER))}]
tools = ["add"]
startup_timeout = 60
"""
SCRIPT = [
    {"text": "", "tool_calls": [{"id": "c1", "name": "calc__add", "arguments": {"a": 2, "b": 3}}]},
    {
        "text": "",
        "tool_calls": [
            {"id": "c2", "name": "write_file", "arguments": {"path": "done.txt", "content": "5"}}
        ],
        "expect": {"last_message_contains": "5"},
    },
    {"text": "done"},
]


def _spec(tmp_path: Path, body: str = BASE) -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SCRIPT))
    spec = tmp_path / "spec.toml"
    spec.write_text(body)
    return spec


def test_mcp_tables_become_servers(tmp_path: Path) -> None:
    body = BASE + '[[mcp]]\nname = "web"\nurl = "http://127.0.0.1:9/mcp"\ntimeout = 5\n'
    body += 'headers = { Authorization = "Bearer x" }\n'
    spec = load_spec(_spec(tmp_path, body))
    calc, web = spec.mcp
    assert calc == MCPServer.stdio(
        "calc", sys.executable, args=[str(SDK_SERVER)], tools=["add"], startup_timeout=60
    )
    assert web.url == "http://127.0.0.1:9/mcp"
    assert web.timeout == 5
    assert dict(web.headers) == {"Authorization": "Bearer x"}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('name = "x"\ncommand = "a"\nurl = "http://h/"', r"mcp\[1\]: give exactly one of"),
        ('name = "x"', r"mcp\[1\]: give exactly one of"),
        ('name = "x"\ncommand = "a"\ncolour = 1', r"mcp\[1\].*colour"),
        ('name = "x"\ncommand = "a"\ntimeout = "soon"', r"mcp\[1\]\.timeout must be a number"),
        ('name = "x"\nurl = 3', r"mcp\[1\]\.url must be a string"),
        ('command = "a"', r"mcp\[1\].*name"),
        ('name = "x"\ncommand = "a"\nheaders = { A = "b" }', r"mcp\[1\]\.headers: only an HTTP"),
        ('name = "x"\nurl = "http://h/"\nenv = { A = "b" }', r"mcp\[1\]\.env: only a stdio"),
        ('name = "x y"\ncommand = "a"', r"mcp\[1\]: an MCP server's 'name' must match"),
        ('name = "calc"\ncommand = "a"', r"mcp\[1\]\.name: two MCP servers are named 'calc'"),
    ],
)
def test_a_bad_mcp_table_names_the_file_the_table_and_the_key(
    tmp_path: Path, table: str, message: str
) -> None:
    spec = _spec(tmp_path, BASE + "[[mcp]]\n" + table + "\n")
    with pytest.raises(SpecError, match=message) as caught:
        load_spec(spec).harness()
    assert str(spec) in str(caught.value)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_harness_run_uses_the_server_records_it_and_replays_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    spec = _spec(tmp_path)
    recording = tmp_path / "rec.jsonl"
    args = ["run", str(spec), "-q", "--backend", backend]
    assert main([*args, "--record", str(recording)]) == 0
    assert capsys.readouterr().out.startswith("VERIFIED COMPLETE")
    assert '"mcp_call"' in recording.read_text()
    (tmp_path / "ws" / "done.txt").unlink()
    # The server is gone: the replay must not need it.
    spec.write_text(BASE.replace(json.dumps(str(SDK_SERVER)), '"/nonexistent/server.py"'))
    assert main([*args, "--replay", str(recording)]) == 0
    assert capsys.readouterr().out.startswith("VERIFIED COMPLETE")


def test_the_mcp_demo_is_verified(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """fixtures/mcp: a wrong project is an error result, the right one is written and checked
    (``python3`` in the demo's spec is this interpreter, which has the extra)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    demo = Path(__file__).resolve().parents[3] / "fixtures" / "mcp" / "spec.toml"
    assert main(["run", str(demo), "-q"]) == 0
    assert capsys.readouterr().out.startswith("VERIFIED COMPLETE")
