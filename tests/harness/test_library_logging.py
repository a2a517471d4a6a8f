"""Library manners: called from Python, the harness prints nothing until the application
configures logging (stdlib `logging` or structlog); the command line still logs to stderr."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from strategies._cli import main

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"

# A run with debug events, the INFO `run.halted` and a WARNING (`sink.failed`, from a sink that
# raises), in a fresh interpreter; SETUP is the application's own logging set-up, if any.
PROGRAM = """
import anyio, sys
from harness import Harness, ScriptedModelClient
from harness.testing import FakeClock
from termination import TerminationPolicy
from checks import AlwaysComplete

SETUP

class Broken:
    def emit(self, event):
        raise OSError(5, "Input/output error")

async def main():
    harness = Harness(
        model=ScriptedModelClient.from_responses([{"text": "done"}]),
        policy=TerminationPolicy(completion_check=AlwaysComplete()),
        clock=FakeClock(),
        sinks=[Broken()] * BROKEN,
    )
    result = await harness.run("say done")
    assert result.verified and len(getattr(result, "sink_failures", ())) == BROKEN, result

anyio.run(main)
"""


def run_program(setup: str, *, broken: int = 1) -> subprocess.CompletedProcess[str]:
    program = PROGRAM.replace("SETUP", setup).replace("BROKEN", str(broken))
    return subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@pytest.mark.parametrize("broken", [0, 1])
def test_the_library_is_silent_when_the_application_configured_no_logging(broken: int) -> None:
    """No line on stdout or stderr, not the debug events, nor the INFO `run.halted`, nor (with
    a sink that raises) the WARNING: the application has not asked."""
    done = run_program("", broken=broken)
    assert (done.stdout, done.stderr) == ("", "")


def test_stdlib_logging_turns_the_events_on() -> None:
    """``logging.basicConfig`` is enough: each event is one logfmt line on the ``harness``
    logger, at the event's level."""
    done = run_program(
        "import logging\n"
        "logging.basicConfig(level=logging.DEBUG, format='%(name)s %(levelname)s %(message)s')"
    )
    err = done.stderr.splitlines()
    assert done.stdout == ""
    assert any(line.startswith("harness DEBUG event=turn.started run_id=") for line in err)
    assert any(line.startswith("harness WARNING event=sink.failed run_id=") for line in err)
    (halted,) = [line for line in err if "event=run.halted" in line]
    assert halted.startswith("harness INFO event=run.halted run_id=")
    assert 'reason="{\\"type\\": \\"Completed\\"' in halted


def test_a_structlog_configuration_is_used_when_the_application_made_one() -> None:
    """An application that configured structlog gets the events through it, as before."""
    done = run_program(
        "import logging, structlog\n"
        "structlog.configure(processors=[structlog.processors.JSONRenderer()],"
        " wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),"
        " logger_factory=structlog.PrintLoggerFactory(sys.stderr))"
    )
    err = done.stderr.splitlines()
    assert done.stdout == ""
    assert [line.split('"event": ')[1].split('"')[1] for line in err] == [
        "sink.failed",
        "run.halted",
    ]


@pytest.fixture
def unconfigured_structlog() -> Iterator[None]:
    """structlog as a fresh process has it, restored to what it was after the test."""
    configured, saved = structlog.is_configured(), structlog.get_config()
    structlog.reset_defaults()
    yield
    if configured:
        structlog.configure(**saved)
    else:
        structlog.reset_defaults()


@pytest.mark.usefixtures("unconfigured_structlog")
def test_the_command_line_logs_to_stderr_and_then_leaves_structlog_unconfigured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``harness run -v`` logs every event on stderr as before; afterwards structlog is
    unconfigured again, so a library run later in the same process stays silent."""
    code = main(["run", str(DEMO / "ralph.toml"), "-v", "--transcript", str(tmp_path / "t.jsonl")])
    err = capsys.readouterr().err
    assert code == 0
    assert "turn.started" in err
    assert "run.halted" in err
    assert not structlog.is_configured()
