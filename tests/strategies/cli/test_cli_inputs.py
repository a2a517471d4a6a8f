"""What the command line reads from outside, attacked: the stop hook's stdin (an endless
stream, a FIFO whose writer never closes it, a payload too large or nested too deeply) and
`harness view`'s transcript (a FIFO, a device). Each is an error naming what is wrong, never a
hang or a memory blow-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from strategies._cli._hooks._stop import MAX_PAYLOAD_BYTES, HookPayloadError, read_payload

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 60


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (512 * 1024 * 1024, 512 * 1024 * 1024))


def _hook(tmp_path: Path, stdin: int) -> subprocess.CompletedProcess[str]:
    (tmp_path / "ws").mkdir(exist_ok=True)
    spec = tmp_path / "checks.toml"
    spec.write_text('[[checks]]\ntype = "files"\npaths = ["done.txt"]\n')
    argv = [sys.executable, "-m", "strategies", "hook", "claude-stop", "--spec", str(spec)]
    return subprocess.run(
        [*argv, "--state-dir", str(tmp_path / "state")],
        stdin=stdin,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=TIMEOUT,
        preexec_fn=_limit_memory,  # a regression fails with MemoryError, not the machine
        check=False,
    )


def test_an_endless_stdin_is_refused_after_the_bound(tmp_path: Path) -> None:
    """/dev/zero on stdin: read up to the bound, then refused."""
    with open("/dev/zero", "rb") as zero:
        done = _hook(tmp_path, zero.fileno())
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"harness hook: the payload on stdin is larger than {MAX_PAYLOAD_BYTES:,} bytes\n"
    )


def test_a_payload_nested_too_deeply_is_a_broken_payload(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with deep.open("rb") as payload:
        done = _hook(tmp_path, payload.fileno())
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "harness hook: the payload on stdin is JSON nested too deeply to read\n"
    assert "Traceback" not in done.stderr


def test_a_stdin_that_never_ends_is_given_up_after_the_timeout(tmp_path: Path) -> None:
    """A pipe whose writer sent half a payload and never closed it."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b'{"session_id": "s1", ')
        with os.fdopen(read_end, "r") as stream, pytest.raises(HookPayloadError) as caught:
            read_payload(stream, timeout=0.2)
    finally:
        os.close(write_end)
    assert str(caught.value) == (
        "the payload on stdin did not end within 0.2s (stdin must be closed after the payload)"
    )


def test_a_payload_within_the_bounds_is_read(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, json.dumps({"session_id": "s1"}).encode())
    os.close(write_end)
    with os.fdopen(read_end, "r") as stream:
        assert read_payload(stream, timeout=TIMEOUT) == {"session_id": "s1"}
    path = tmp_path / "empty"
    path.write_bytes(b"")
    with path.open() as stream:
        assert read_payload(stream) is None
    path.write_text('{"a": 1}')
    with path.open() as stream, pytest.raises(HookPayloadError, match="larger than 4 bytes"):
        read_payload(stream, limit=4)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_harness_view_refuses_a_fifo_or_a_device_as_the_transcript(
    tmp_path: Path, kind: str
) -> None:
    """`harness view` given a FIFO with no writer or /dev/zero: an error naming it, exit 2."""
    path = tmp_path / "t.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    done = subprocess.run(
        [sys.executable, "-m", "strategies", "view", str(path), "-o", str(tmp_path / "t.html")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=TIMEOUT,
        preexec_fn=_limit_memory,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"harness: {path}: cannot read the transcript: it is not a regular file\n"
    )
