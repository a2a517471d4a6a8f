"""`harness run` against hostile output: a file-size limit on the transcript and the recording,
a closed stdout and stderr, a reader that leaves (``| head -1``), bad output paths, and trio
missing. Each runs the real command in a subprocess."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from strategies._cli import main

BACKENDS = ["asyncio", "trio"]
LIMIT = 6000  # bytes any file of the command may grow to (RLIMIT_FSIZE)
WORDS = "lorem ipsum " * 125  # 1,500 characters a turn


def spec(tmp_path: Path, *, turns: int = 6, delay: float = 0.0, extra: str = "") -> Path:
    """A run of `turns` model calls that writes `a` and is verified (exit 0)."""
    (tmp_path / "ws").mkdir(exist_ok=True)
    rows: list[dict[str, Any]] = [
        {"text": f"look {i}: {WORDS}", "tool_calls": [{"name": "list_files", "arguments": {}}]}
        for i in range(turns - 2)
    ]
    if delay:
        rows[0]["delay"] = delay
    rows.append(
        {
            "text": "write",
            "tool_calls": [{"name": "write_file", "arguments": {"path": "a", "content": "xy"}}],
        }
    )
    rows.append({"text": "done"})
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / "spec.toml"
    path.write_text(
        f"""{extra}
prompt = "write xy to a"
workspace = "ws"
tools = ["list_files", "write_file"]
[model]
type = "fixture"
path = "script.jsonl"
[[checks]]
type = "files"
paths = ["a"]
"""
    )
    return path


def harness(*args: str | Path, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "strategies", *map(str, args)],
        timeout=120,
        check=False,
        **kwargs,
    )


def run_spec(
    tmp_path: Path, backend: str, *args: str | Path, **kwargs: Any
) -> subprocess.CompletedProcess[bytes]:
    """`harness run` on the `spec` in `tmp_path`, on `backend`."""
    return harness("run", spec(tmp_path), "--backend", backend, *args, **kwargs)


def limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def whole_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of `path` is whole and valid JSON (UTF-8), the last one ends in a newline."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), data[-80:]
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_transcript_over_the_file_size_limit_stops_at_a_whole_line(
    tmp_path: Path, backend: str
) -> None:
    """The transcript hits RLIMIT_FSIZE mid-line: it is cut back to its last whole line, the
    failure is reported once, and the run goes on to its verified result and exit 0."""
    transcript = tmp_path / "run.jsonl"
    done = run_spec(
        tmp_path,
        backend,
        "--transcript",
        transcript,
        capture_output=True,
        preexec_fn=limit_file_size,
    )
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert done.stdout.decode().startswith("VERIFIED COMPLETE")
    assert "Traceback" not in err
    rows = whole_lines(transcript)
    assert rows[-1]["event"] != "run.halted"
    assert transcript.stat().st_size < LIMIT
    assert err.count("event=sink.failed") + err.count("sink.failed") >= 1
    assert f"JsonlTranscript({str(transcript)!r}) stopped at" in done.stdout.decode()
    assert "File too large" in done.stdout.decode()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_recording_over_the_file_size_limit_halts_at_a_whole_line(
    tmp_path: Path, backend: str
) -> None:
    """The recording hits RLIMIT_FSIZE: the run halts with `ModelFailed("recording")` (exit 1,
    a result and no traceback), and the recording keeps only whole lines."""
    recording = tmp_path / "rec.jsonl"
    done = run_spec(
        tmp_path,
        backend,
        "--record",
        recording,
        "--json",
        capture_output=True,
        preexec_fn=limit_file_size,
    )
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "Traceback" not in err
    outcome = json.loads(done.stdout)
    assert outcome["halt"]["type"] == "ModelFailed"
    assert outcome["halt"]["kind"] == "recording"
    assert "File too large" in outcome["halt"]["message"]
    rows = whole_lines(recording)
    assert 0 < len(rows) < 6
    assert recording.stat().st_size < LIMIT


def closed_pipe() -> int:
    """The write end of a pipe whose reader has already gone."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_closed_stdout_and_stderr_do_not_end_the_run(tmp_path: Path, backend: str) -> None:
    """Every line for a person and every log line (``-v``) meets EPIPE: the run still finishes,
    the transcript ends with `run.halted`, and the exit code is the run's."""
    transcript = tmp_path / "run.jsonl"
    gone = closed_pipe()
    try:
        done = run_spec(
            tmp_path, backend, "-v", "--transcript", transcript, stdout=gone, stderr=gone
        )
    finally:
        os.close(gone)
    assert done.returncode == 0
    rows = whole_lines(transcript)
    assert rows[-1]["event"] == "run.halted"
    assert rows[-1]["verified"] is True


def test_json_reaches_stdout_when_stderr_is_closed(tmp_path: Path) -> None:
    """``--json`` still prints its object on an open stdout while stderr is a closed pipe."""
    gone = closed_pipe()
    try:
        done = harness("run", spec(tmp_path), "--json", "-v", stdout=subprocess.PIPE, stderr=gone)
    finally:
        os.close(gone)
    assert done.returncode == 0
    outcome = json.loads(done.stdout)
    assert outcome["verified"] is True
    assert outcome["exit_code"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_harness_run_piped_into_head_exits_with_the_runs_code(tmp_path: Path, backend: str) -> None:
    """``harness run ... 2>&1 | head -1`` in a real shell: head leaves after the first line,
    while the model is still thinking; the run finishes and exits with its own code (0)."""
    transcript = tmp_path / "run.jsonl"
    command = (
        f"{sys.executable} -m strategies run {spec(tmp_path, delay=0.5)} "
        f"--transcript {transcript} --backend {backend} --realtime 2>&1 | head -1; "
        'echo "status=${PIPESTATUS[0]}"'
    )
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=120, check=True
    )
    first, status = done.stdout.splitlines()
    assert "started" in first
    assert status == "status=0", done.stderr
    assert done.stderr == ""
    assert whole_lines(transcript)[-1]["event"] == "run.halted"


@pytest.mark.parametrize("where", ["a folder", "under a file"])
@pytest.mark.parametrize("option", ["--transcript", "--record", "spec"])
def test_an_output_path_that_cannot_be_a_file_is_refused_before_anything_is_made(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    option: str,
) -> None:
    """A transcript or recording path that is a folder, or lies under a file: a ``harness:``
    message naming the path, exit 2, and no workspace copied nor recording emptied."""
    (tmp_path / "template").mkdir()
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    (tmp_path / "file").write_text("not a folder")
    bad = tmp_path / "folder" if where == "a folder" else tmp_path / "file" / "run.jsonl"
    if where == "a folder":
        bad.mkdir()
    recording = tmp_path / "keep.jsonl"
    recording.write_text("kept\n")
    extra = 'workspace_template = "template"'
    args: list[str] = []
    if option == "spec":
        extra += f"\ntranscript = {json.dumps(str(bad))}"
        args += ["--record", str(recording)]
    elif option == "--transcript":
        args += ["--transcript", str(bad), "--record", str(recording)]
    else:
        args += ["--record", str(bad)]
    path = spec(tmp_path, extra=extra)
    path.write_text(path.read_text().replace('workspace = "ws"\n', ""))
    code = main(["run", str(path), *args])
    out, err = capsys.readouterr()
    assert code == 2
    what = "recording" if option == "--record" else "transcript"
    assert err.startswith(f"harness: the {what} {str(bad)!r}")
    assert ("is a folder" if where == "a folder" else "is a file, not a folder") in err
    assert out == ""
    assert list(temp.iterdir()) == []
    assert recording.read_text() == "kept\n"


TRIO_BLOCKED = """
import sys
from importlib.abc import MetaPathFinder

class NoTrio(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "trio" or name.startswith("trio."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTrio())
from strategies._cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_backend_trio_without_trio_names_the_extra(tmp_path: Path) -> None:
    """With trio unimportable, ``--backend trio`` is a ``harness:`` error naming the extra to
    install (exit 2), before the run starts."""
    transcript = tmp_path / "run.jsonl"
    command: list[str | Path] = [sys.executable, "-c", TRIO_BLOCKED, "run", spec(tmp_path)]
    done = subprocess.run(
        [*command, "--backend", "trio", "--transcript", transcript],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("harness: --backend trio needs trio")
    assert "pip install 'completion-harness[trio]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not transcript.exists()
    # The same command on asyncio is unaffected by the blocker.
    done = subprocess.run(
        [sys.executable, "-c", TRIO_BLOCKED, "run", spec(tmp_path), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_safe_stream_drops_writes_once_its_reader_has_gone() -> None:
    """The first EPIPE marks the stream gone and points its descriptor at /dev/null (so the
    interpreter's last flush cannot fail); nothing raises, later writes are dropped."""
    from strategies._cli._streams import SafeStream

    write = closed_pipe()
    raw = os.fdopen(write, "w", encoding="ascii")
    stream = SafeStream(raw)
    try:
        assert stream.write("one line\n") == len("one line\n")  # buffered
        stream.flush()
        assert stream.gone
        assert os.readlink(f"/proc/self/fd/{write}") == os.devnull
        assert stream.write("more\n") == len("more\n")
    finally:
        raw.close()


def test_a_safe_stream_writes_lone_surrogates_as_escapes(tmp_path: Path) -> None:
    """Text the stream's encoding cannot hold (a lone surrogate) is written escaped."""
    from strategies._cli._streams import SafeStream

    with (tmp_path / "out.txt").open("w", encoding="utf-8") as raw:
        stream = SafeStream(raw)
        stream.write("missing: caf\udce9.txt\n")
        stream.flush()
        assert not stream.gone
    assert (tmp_path / "out.txt").read_text() == "missing: caf\\udce9.txt\n"
