"""`harness run` at the edges of its process, attacked from outside as a real process: standard
streams closed, a second signal while it stops, an OpenTelemetry collector that never answers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import ConfigurationError
from strategies._cli._telemetry import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    shutdown_provider,
    shutdown_timeout,
)

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 60  # seconds a command under test may take before the test calls it hung


def _harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "strategies", *args]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _done_spec(tmp_path: Path) -> Path:
    """A spec whose scripted agent says done and whose check passes at once."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "done.txt").write_text("done\n")
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n')
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "work"\nworkspace = "ws"\n[model]\ntype = "fixture"\npath = "script.jsonl"\n'
        '[[checks]]\ntype = "files"\npaths = ["done.txt"]\n'
    )
    return spec


# -- standard streams closed


def _run_with_closed(fd: int, command: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run `command` with descriptor `fd` closed (as ``2>&-`` does in a shell)."""

    def close() -> None:
        os.close(fd)

    return subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=_env(),
        timeout=TIMEOUT,
        preexec_fn=close,
        check=False,
    )


def test_with_stderr_closed_the_json_outcome_is_still_printed(tmp_path: Path) -> None:
    """``harness run --json 2>&-``: the outcome's JSON is on stdout, whole and alone (the
    lines for a person, which had nowhere to go, do not spill into it), exit 0."""
    done = _run_with_closed(2, _harness("run", str(_done_spec(tmp_path)), "--json"))
    assert done.returncode == 0
    outcome = json.loads(done.stdout)
    assert (outcome["exit_code"], outcome["verified"]) == (0, True)


def test_with_stdout_closed_the_run_ends_without_a_traceback(tmp_path: Path) -> None:
    """``harness run --json >&-``: the run's exit code, the lines for a person on stderr, and
    no traceback."""
    done = _run_with_closed(1, _harness("run", str(_done_spec(tmp_path)), "--json"))
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    assert b"VERIFIED COMPLETE" in done.stderr


def test_a_closed_stderr_is_not_taken_by_the_transcript(tmp_path: Path) -> None:
    """With descriptor 2 closed, the transcript file opened later must not get its number:
    nothing written to "stderr" may land in the transcript, which stays valid JSONL."""
    transcript = tmp_path / "run.jsonl"
    command = _harness("run", str(_done_spec(tmp_path)), "-v", "--transcript", str(transcript))
    done = _run_with_closed(2, command)
    assert done.returncode == 0
    events = [json.loads(line)["event"] for line in transcript.read_text().splitlines()]
    assert events[0] == "run.started"
    assert events[-1] == "run.halted"


# -- a collector that accepts and never answers


class SilentCollector:
    """A loopback TCP server that accepts every connection and never answers."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self._connections: list[socket.socket] = []
        self._accepted = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.getsockname()[1]}"

    def wait_connected(self, timeout: float = TIMEOUT) -> bool:
        """True once a client has connected (an exporter trying to send its spans)."""
        return self._accepted.wait(timeout)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._connections.append(connection)
            self._accepted.set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for connection in self._connections:
            connection.close()
        self._server.close()


@pytest.fixture
def collector() -> Iterator[SilentCollector]:
    pytest.importorskip("opentelemetry.sdk")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    server = SilentCollector()
    try:
        yield server
    finally:
        server.close()


def _otlp_env(collector: SilentCollector, **extra: str) -> dict[str, str]:
    return _env(
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
        # Spans are sent only at the end (the shutdown), never in the middle of the run.
        OTEL_BSP_SCHEDULE_DELAY="600000",
        **extra,
    )


def test_a_collector_that_never_answers_delays_the_exit_by_the_bound_at_most(
    tmp_path: Path, collector: SilentCollector
) -> None:
    """The exporter's own requests would wait two minutes (OTEL_EXPORTER_OTLP_TIMEOUT); the
    command waits HARNESS_OTEL_SHUTDOWN_TIMEOUT for it, then says so, prints its outcome and
    exits with the run's code."""
    env = _otlp_env(
        collector, OTEL_EXPORTER_OTLP_TIMEOUT="120", HARNESS_OTEL_SHUTDOWN_TIMEOUT="0.5"
    )
    done = subprocess.run(
        _harness("run", str(_done_spec(tmp_path)), "--otel", "--json"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,  # the exporter alone would hold the process for 120 s
        check=False,
    )
    assert collector.wait_connected(0)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verified"] is True
    assert (
        "harness: the OpenTelemetry exporter did not finish within 0.5s (a collector down or "
        "not answering?)" in done.stderr
    )
    assert "Traceback" not in done.stderr


def test_the_shutdown_bound_is_read_from_the_environment() -> None:
    """Unset: the documented default; a number of seconds >= 0; anything else is refused."""
    assert shutdown_timeout({}) == DEFAULT_SHUTDOWN_TIMEOUT == 2.0
    assert shutdown_timeout({"HARNESS_OTEL_SHUTDOWN_TIMEOUT": " 0.25 "}) == 0.25
    assert shutdown_timeout({"HARNESS_OTEL_SHUTDOWN_TIMEOUT": "0"}) == 0
    for bad in ("-1", "soon", "nan", "inf"):
        with pytest.raises(ConfigurationError, match="HARNESS_OTEL_SHUTDOWN_TIMEOUT must be"):
            shutdown_timeout({"HARNESS_OTEL_SHUTDOWN_TIMEOUT": bad})


def test_shutdown_provider_returns_when_the_shutdown_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A shutdown that finishes is waited for; one that hangs is left behind after the bound."""
    release = threading.Event()

    class Provider:
        def __init__(self, hangs: bool) -> None:
            self.hangs = hangs
            self.shut = False

        def shutdown(self) -> None:
            if self.hangs:
                release.wait()
            self.shut = True

    quick = Provider(hangs=False)
    assert shutdown_provider(quick, timeout=TIMEOUT)
    assert quick.shut
    assert capsys.readouterr().err == ""
    stuck = Provider(hangs=True)
    try:
        assert not shutdown_provider(stuck, timeout=0.01)
        assert not stuck.shut
        assert "did not finish within 0.01s" in capsys.readouterr().err
    finally:
        release.set()


# -- a second signal while the run stops

# A completion check that blocks until the test's signal stops the run.
BLOCKING_CHECK = """
import pathlib, sys, time
pathlib.Path(sys.argv[1]).write_text("started")
time.sleep(1000)
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_second_signal_while_the_outcome_is_printed_kills_the_command(
    tmp_path: Path, collector: SilentCollector, backend: str, signum: signal.Signals
) -> None:
    """The first signal stops the run; the exporter then flushes to a collector that never
    answers, and a second signal arrives meanwhile: it means "now", and the command dies by
    it (its default action) instead of waiting for the flush."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "check.py").write_text(BLOCKING_CHECK)
    started = tmp_path / "started"
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n')
    spec = tmp_path / "spec.toml"
    check = json.dumps([sys.executable, str(tmp_path / "check.py"), str(started)])
    spec.write_text(
        'prompt = "work"\nworkspace = "ws"\n[model]\ntype = "fixture"\npath = "script.jsonl"\n'
        f'[[checks]]\ntype = "command"\ncommand = {check}\n'
    )
    env = _otlp_env(collector, HARNESS_OTEL_SHUTDOWN_TIMEOUT="3")
    command = _harness("run", str(spec), "--otel", "--json", "--backend", backend)
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not started.exists():
            assert child.poll() is None, "the command ended before its check started"
            assert time.monotonic() < deadline, "the check never started"
            time.sleep(0.02)  # polling for the file, not waiting for an effect
        child.send_signal(signum)
        assert collector.wait_connected(), "the exporter never tried to send the spans"
        child.send_signal(signal.SIGTERM)  # while the exporter waits for its answer
        _, stderr = child.communicate(timeout=TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == -signal.SIGTERM, stderr.decode()


# -- the first hour's small traps (issue 30)


def test_errors_are_named_by_their_public_module_in_a_traceback() -> None:
    """`harness.FixtureError`, as a user imports it, not `harness._errors.FixtureError`; and
    they still pickle."""
    import pickle
    import traceback

    from harness import ConfigurationError, FixtureError, ModelError
    from harness.testing import FixtureAssertionError

    for error in (FixtureError("x"), ConfigurationError("x"), ModelError("x", kind="auth")):
        line = traceback.format_exception_only(error)[-1]
        assert line.startswith(f"harness.{type(error).__name__}: x"), line
    assert FixtureAssertionError.__module__ == "harness.testing"
    assert isinstance(pickle.loads(pickle.dumps(FixtureError("x"))), FixtureError)


def test_one_rejection_is_one_claim() -> None:
    from harness import RejectionLimit

    assert RejectionLimit(1, "no").describe().startswith("the completion check rejected 1 claim ")
    assert "rejected 2 claims of done" in RejectionLimit(2, "no").describe()


def test_hook_install_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A person runs `hook install`: a bad option exits 2 as every command's does (only the
    hooks an agent runs turn it into 1, which does not block the agent's stop)."""
    from strategies._cli import main

    with pytest.raises(SystemExit) as raised:
        main(["hook", "install", "--no-such-option"])
    assert raised.value.code == 2
    assert main(["hook", "claude-stop", "--no-such-option"]) == 1
    capsys.readouterr()


def test_an_empty_hook_stdin_says_so() -> None:
    """Run by hand with nothing on stdin, a hook says the payload is empty (not "got
    NoneType")."""
    from strategies._cli._hooks._agents import _object
    from strategies._cli._hooks._core import HookPayloadError

    with pytest.raises(HookPayloadError, match="the payload on stdin is empty"):
        _object(None)
    with pytest.raises(HookPayloadError, match=r"must be a JSON object \(got an array\)"):
        _object([])
