"""Notifiers tell a webhook or a command when a run or a board ends, in the background: one that
fails, answers 500 or hangs never holds up or ends the run, its failure is logged once and
never raised, and what is still queued at process exit gets a bounded flush."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _board_support import make_board, task_toml, writes

from harness import ConfigurationError, Harness, Notifier, RunStarted, ScriptedModelClient
from harness._sinks._notify import MAX_PENDING
from strategies import SpecError, load_spec
from strategies.board import Board, BoardConfigError, BoardEvent
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


class Hook:
    """A loopback webhook that records each POST; it answers `status`, or waits until
    `release` is set when `hang`."""

    def __init__(self, *, status: int = 204, hang: bool = False) -> None:
        self.posts: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.received = threading.Event()
        self.release = threading.Event()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                body = json.loads(self.rfile.read(length))
                hook.posts.append((dict(self.headers), body))
                hook.received.set()
                if hang:
                    hook.release.wait(30)
                    return
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    server = Hook()
    yield server
    server.close()


def _harness(*notifiers: Notifier) -> Harness:
    model = ScriptedModelClient.from_responses([{"text": "all done"}])
    return Harness(model=model, policy=TerminationPolicy(), sinks=notifiers)


def _python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code), *args]


def _failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "notify.failed" in r.getMessage()]


async def test_a_webhook_gets_the_run_end_with_its_reason_and_verified_flag(hook: Hook) -> None:
    """One POST when the run halts (not for the other events): the event's fields, a line of
    text and the configured headers."""
    notifier = Notifier.webhook(hook.url, headers={"Authorization": "Bearer t"})
    result = await _harness(notifier).run("say done")
    assert notifier.flush(10)
    assert result.verified
    [(headers, body)] = hook.posts
    assert headers["Authorization"] == "Bearer t"
    assert headers["Content-Type"] == "application/json"
    assert body["event"] == "run.halted"
    assert body["reason"]["type"] == "Completed"
    assert body["verified"] is True
    assert body["text"] == "run halted: Completed (verified)"
    assert notifier.statistics().sent == 1


async def test_a_hanging_webhook_does_not_hold_up_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The run returns while the POST is still unanswered; the delivery then times out and is
    logged once as a warning, never raised."""
    server = Hook(hang=True)
    try:
        notifier = Notifier.webhook(server.url, timeout=0.5)
        with caplog.at_level(logging.WARNING, logger="harness"):
            result = await _harness(notifier).run("say done")
            assert result.verified
            assert server.received.wait(10)
            assert notifier.statistics().pending == 1  # still in flight after the run ended
            assert notifier.flush(10)
        assert notifier.statistics().failed == 1
        [record] = _failures(caplog)
        assert "timed out" in record.getMessage()
    finally:
        server.close()


async def test_a_webhook_answering_500_is_a_failure_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two failed deliveries: both counted, one warning."""
    server = Hook(status=500)
    try:
        notifier = Notifier.webhook(server.url)
        with caplog.at_level(logging.WARNING, logger="harness"):
            await _harness(notifier).run("say done")
            await _harness(notifier).run("say done again")
            assert notifier.flush(10)
        assert len(server.posts) == 2
        assert notifier.statistics().failed == 2
        [record] = _failures(caplog)
        assert "HTTP 500" in record.getMessage()
        assert "webhook http://127.0.0.1:" in record.getMessage()
        assert "/hook" not in record.getMessage()  # a webhook's path may be its secret
    finally:
        server.close()


async def test_a_command_gets_the_event_as_json_on_its_stdin(tmp_path: Path) -> None:
    out = tmp_path / "note.json"
    code = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_bytes(sys.stdin.buffer.read())"
    notifier = Notifier.command(_python(code, str(out)))
    await _harness(notifier).run("say done")
    assert notifier.flush(20)
    body = json.loads(out.read_text())
    assert body["event"] == "run.halted"
    assert body["verified"] is True
    assert notifier.statistics().sent == 1


async def test_a_hanging_command_is_killed_and_the_run_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notifier = Notifier.command(_python("import time; time.sleep(60)"), timeout=0.5)
    with caplog.at_level(logging.WARNING, logger="harness"):
        result = await _harness(notifier).run("say done")
        assert result.verified
        assert notifier.flush(20)
    assert notifier.statistics().failed == 1
    [record] = _failures(caplog)
    assert "killed" in record.getMessage()


def test_events_not_subscribed_to_are_not_sent(hook: Hook) -> None:
    notifier = Notifier.webhook(hook.url, on=["board.finished"])
    notifier.emit(RunStarted(0.0, "r", "t", "loop", None, "none"))
    assert notifier.flush(1)
    assert hook.posts == []
    assert notifier.statistics().sent == 0


def test_a_board_event_is_sent_with_its_task_and_message(hook: Hook) -> None:
    notifier = Notifier.webhook(hook.url)
    notifier.emit(BoardEvent(1, 0.0, "task.review", "needs a human", task="t1", attempt=1))
    assert notifier.flush(10)
    [(_, body)] = hook.posts
    assert body["event"] == "task.review"
    assert body["task"] == "t1"
    assert body["text"] == "task.review: task t1: needs a human"


async def test_a_board_toml_notify_hears_of_review_and_the_board_end(tmp_path: Path) -> None:
    """``[[notify]]`` in board.toml: the board's sinks get it; a task the check refuses until
    the budget runs out goes to review, and then the board ends."""
    out = tmp_path / "events.jsonl"
    code = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read() + chr(10))"
    command = json.dumps(_python(code, str(out)))
    make_board(
        tmp_path,
        {"t": task_toml("t", extra="[budget]\nmax_turns = 2")},
        {"t": [{"text": "done"}, {"text": "really done"}]},
        settings=f"\n[[notify]]\ncommand = {command}\n",
    )
    board = Board.from_folder(tmp_path)
    [notifier] = [s for s in board.sinks if isinstance(s, Notifier)]
    result = await board.run()
    assert result.status_of("t") == "review"
    assert notifier.flush(20)
    kinds = [json.loads(line)["event"] for line in out.read_text().splitlines()]
    assert kinds == ["task.review", "board.finished"]


def test_a_spec_notify_table_reaches_its_harness(tmp_path: Path, hook: Hook) -> None:
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text(
        textwrap.dedent(f"""
        prompt = "p"
        [[checks]]
        type = "always_complete"
        [[notify]]
        webhook = "{hook.url}"
        on = ["run.halted", "run.paused"]
        timeout = 2
        """)
    )
    spec = load_spec(spec_file, purpose="checks")
    [notifier] = spec.notify
    assert notifier.on == {"run.halted", "run.paused"}
    assert notifier.timeout == 2
    model = ScriptedModelClient.from_responses([])
    assert notifier in spec.harness(model=model).sinks


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('webhook = "https://x"\ncommand = ["a"]', "exactly one of 'webhook' and 'command'"),
        ("timeout = 1", "exactly one of 'webhook' and 'command'"),
        ('webhook = "ftp://x"', "http(s) URL"),
        ('webhook = "https://x"\non = ["run.ended"]', "'on' must name some of"),
        ('webhook = "https://x"\ntimeout = 0', "'timeout' must be a positive number"),
        ('command = ["a"]\nheaders = { A = "b" }', "only a webhook takes headers"),
        ("command = []", "non-empty list of strings"),
        ('webhok = "https://x"', "unknown key 'webhok'"),
    ],
)
def test_a_bad_notify_table_names_the_file_and_the_problem(
    tmp_path: Path, table: str, message: str
) -> None:
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text(
        f'prompt = "p"\n[[checks]]\ntype = "always_complete"\n[[notify]]\n{table}\n'
    )
    with pytest.raises(SpecError) as caught:
        load_spec(spec_file, purpose="checks")
    assert str(spec_file) in str(caught.value)
    assert "notify" in str(caught.value)
    assert message in str(caught.value)


def test_a_bad_board_notify_table_is_a_board_config_error(tmp_path: Path) -> None:
    make_board(tmp_path, {"t": task_toml("t")}, {"t": writes("t.txt")}, settings="")
    with (tmp_path / "board.toml").open("a") as f:
        f.write('\n[[notify]]\nwebhook = "nope"\n')
    with pytest.raises(BoardConfigError, match=r"board\.toml: notify\[0\]: .*http\(s\) URL"):
        Board.from_folder(tmp_path)


def test_python_constructors_refuse_bad_values() -> None:
    with pytest.raises(ConfigurationError, match="non-empty list of strings"):
        Notifier.command("notify-send hi")  # a str is a sequence of strings, but not a command
    with pytest.raises(ConfigurationError, match="'on' must name some of"):
        Notifier.webhook("http://127.0.0.1:9/x", on=[])


def test_what_is_queued_at_exit_is_delivered(tmp_path: Path) -> None:
    """A process that queues a notification and exits at once still delivers it (the exit
    flush), and a hanging one does not keep the process from exiting."""
    out = tmp_path / "note.json"
    writer = ["/bin/sh", "-c", 'cat > "$1"', "sh", str(out)]
    script = textwrap.dedent(f"""
        from harness import Notifier
        from strategies.board import BoardEvent
        event = BoardEvent(1, 0.0, "board.finished", "1 complete")
        Notifier.command({writer!r}).emit(event)
        Notifier.command({_python("import time; time.sleep(60)")!r}).emit(event)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=60, check=True)
    assert done.returncode == 0
    assert json.loads(out.read_text())["event"] == "board.finished"


def test_at_most_max_pending_notifications_wait_and_more_are_dropped() -> None:
    """While a hung webhook holds the worker, the 101st waiting notification is dropped and
    counted; once the server is gone, every queued one is settled."""
    server = Hook(hang=True)
    notifier = Notifier.webhook(server.url, timeout=5)
    event = BoardEvent(1, 0.0, "board.finished", "done")
    try:
        for _ in range(MAX_PENDING + 1):
            notifier.emit(event)
        assert notifier.statistics().dropped == 1
        assert notifier.statistics().pending == MAX_PENDING
    finally:
        server.close()
    assert notifier.flush(30)
    stats = notifier.statistics()
    assert stats.sent + stats.failed == MAX_PENDING


def test_every_event_a_notifier_accepts_is_one_something_emits() -> None:
    """The names in NOTIFY_EVENTS are the run's and the board's own, so `on` never names an
    event that cannot come."""
    from harness import RunHalted
    from harness.events import RunPaused, RunResumed
    from harness.extend import NOTIFY_EVENTS
    from strategies.board._events import KINDS

    emitted = {RunHalted.name, RunPaused.name, RunResumed.name, *KINDS}
    assert set(NOTIFY_EVENTS) <= emitted
