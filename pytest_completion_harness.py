"""The pytest plugin of completion-harness, registered through the ``pytest11`` entry point.

Fixtures build a harness whose model replays a JSONL fixture; helpers assert how a run halted
and which events it emitted; ``pytest --harness-record`` runs the tests that name a real model
against it and saves each passing run as the fixture the next run replays::

    async def test_fixes_the_bug(harness_fixture, tmp_path):
        harness = harness_fixture(
            "fixtures/fix_bug.jsonl",               # relative to this test file
            record=lambda: OpenAIClient("gpt-4.1"),  # used only with --harness-record
            tools=workspace_tools(),
            policy=TerminationPolicy(completion_check=TestSuiteCheck("pytest -q")),
            workspace=tmp_path,
        )
        result = await harness.run("Fix the failing test.")
        assert_halted(result, Completed)
        assert_events(result, ["turn.started", "tool.called", "check.passed", "run.halted"])

It lives outside the ``harness`` package on purpose: pytest imports every installed plugin at
start-up, so this module imports nothing but pytest until a test asks for one of its fixtures.
See docs/pytest-plugin.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness import HaltReason, Harness, ModelClient, RunResult
    from harness.events import Event, ListSink

__all__ = ["assert_events", "assert_halted"]

_RECORD_OPTION = "--harness-record"
_RECORDINGS = pytest.StashKey[list[str]]()
_OUTCOME = pytest.StashKey[bool]()

# Events of the runs built by `harness_fixture`, by run id, while their test runs.
_RUN_EVENTS: dict[str, list[Event]] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("completion-harness")
    group.addoption(
        _RECORD_OPTION,
        action="store_true",
        default=False,
        help="run tests that give harness_fixture/harness_model a real model (record=...) "
        "against it, and save each passing run as the JSONL fixture it then replays",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RECORDINGS] = []


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_OUTCOME] = report.passed
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = config.stash.get(_RECORDINGS, [])
    if lines:
        terminalreporter.write_sep("-", "harness fixtures recorded")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def harness_recording(request: pytest.FixtureRequest) -> bool:
    """True when the session runs with ``--harness-record``."""
    return bool(request.config.getoption(_RECORD_OPTION))


class _Models:
    """The models of one test: each replays a fixture (relative to the test file) or, with
    ``--harness-record`` and a `record` factory, records the real model beside it."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self.recording = bool(request.config.getoption(_RECORD_OPTION))
        self._pending: list[tuple[Path, Path]] = []

    def records(self, record: Callable[[], ModelClient] | None) -> bool:
        return self.recording and record is not None

    def make(
        self, path: str | os.PathLike[str], *, record: Callable[[], ModelClient] | None = None
    ) -> ModelClient:
        target = Path(self._request.path).parent / path
        if record is not None and self.recording:
            from harness import RecordingModelClient

            scratch = target.with_name(target.name + ".recording")
            self._pending.append((scratch, target))
            return RecordingModelClient(record(), scratch)
        from harness import ScriptedModelClient

        return ScriptedModelClient.from_jsonl(target)

    def finish(self) -> None:
        """Move each recording over its fixture if the test passed; otherwise keep it beside."""
        if self._pending:
            _finish_recordings(self._request, self._pending)


@pytest.fixture
def harness_model(request: pytest.FixtureRequest) -> Iterator[Callable[..., ModelClient]]:
    """A factory: ``harness_model(path, record=None)`` is a `ScriptedModelClient` replaying
    `path` (relative to the test file), or, with ``--harness-record`` and a `record` factory,
    a `RecordingModelClient` around ``record()`` writing beside it. The recording replaces the
    fixture only when the test passes (and the recording loads as a fixture)."""
    models = _Models(request)
    yield models.make
    models.finish()


def _finish_recordings(request: pytest.FixtureRequest, pending: list[tuple[Path, Path]]) -> None:
    """Move each recording over its fixture if the test passed; otherwise keep it beside."""
    from harness import FixtureError, ScriptedModelClient

    passed = request.node.stash.get(_OUTCOME, False)
    notes = request.config.stash.setdefault(_RECORDINGS, [])
    for scratch, target in pending:
        if not scratch.exists():
            continue
        if not passed:
            notes.append(f"{request.node.nodeid}: failed; the recording is kept at {scratch}")
            continue
        try:
            ScriptedModelClient.from_jsonl(scratch)
        except FixtureError as exc:
            notes.append(f"{request.node.nodeid}: the recording does not load ({exc}); kept")
            continue
        os.replace(scratch, target)
        notes.append(f"{request.node.nodeid}: recorded {target}")


@pytest.fixture
def harness_fixture(request: pytest.FixtureRequest) -> Iterator[Callable[..., Harness]]:
    """A factory: ``harness_fixture(path, *, record=None, spec=None, realtime=False,
    **harness_options)`` is a `Harness` whose model is ``harness_model(path, record=record)``.

    With ``spec`` (a run spec's path, relative to the test file) the harness is the spec's
    (`Spec.harness`: its tools, policy, strategy, workspace, ...), and the keywords replace
    the spec's ``policy``, ``strategy``, ``workspace``, ``sinks``, ``transcript`` or ``clock``;
    the spec needs no ``[model]`` or prompt (the fixture is the model, the test gives the task).
    Without one, every keyword goes to `Harness` (``tools``, ``policy``, ``strategy``,
    ``workspace``, ...), and without a ``policy`` the run has no budget and the agent's claim
    of done is accepted (`AlwaysComplete`). A replay runs on a `FastForwardClock`, so the
    fixture's recorded delays take no time, unless ``realtime=True`` (the system clock, at the
    recorded pace), a ``clock`` is given, or the test records. The harness keeps its runs'
    events for `assert_events`."""
    # It asks for no other fixture: each one a test requests costs pytest a setup and a
    # teardown, a good part of a replay's time in a suite of thousands.
    from harness import Harness

    models = _Models(request)
    runs: list[_RunLog] = []

    def make(
        path: str | os.PathLike[str],
        *,
        record: Callable[[], ModelClient] | None = None,
        spec: str | os.PathLike[str] | None = None,
        realtime: bool = False,
        **options: Any,
    ) -> Harness:
        if "clock" not in options and not realtime and not models.records(record):
            # Recorded delays take no time; wall-time budgets count them, so the replay halts
            # where the recording did, and real work (tools, checks) keeps real deadlines.
            from harness.testing import FastForwardClock

            options["clock"] = FastForwardClock()
        elif "clock" not in options and realtime:
            from harness.extend import SystemClock  # a replay's default is to fast-forward

            options["clock"] = SystemClock()
        log = _RunLog()
        runs.append(log)
        options["sinks"] = [*options.get("sinks", ()), log]
        model = models.make(path, record=record)
        if spec is not None:
            from strategies import load_spec

            loaded = load_spec(Path(request.path).parent / spec, purpose="checks")
            return loaded.harness(model=model, **options)
        if "policy" not in options:
            from checks import AlwaysComplete
            from termination import TerminationPolicy

            options["policy"] = TerminationPolicy(completion_check=AlwaysComplete())
        return Harness(model=model, **options)

    yield make
    models.finish()
    for log in runs:
        for run_id in log.run_ids:
            _RUN_EVENTS.pop(run_id, None)


class _RunLog:
    """A sink that files each run's events under its run id."""

    def __init__(self) -> None:
        self.run_ids: list[str] = []
        self._current: list[Event] | None = None

    def emit(self, event: Event) -> None:
        run_id = getattr(event, "run_id", None)
        if event.name == "run.started" and isinstance(run_id, str):
            self.run_ids.append(run_id)
            self._current = _RUN_EVENTS[run_id] = []
        if self._current is not None:
            self._current.append(event)


def assert_halted(result: RunResult, kind: type[HaltReason], /, **fields: Any) -> HaltReason:
    """Assert the run halted with a `kind` whose `fields` have these values; return it.

    ``assert_halted(result, BudgetExceeded, limit="max_turns")``
    """
    __tracebackhide__ = True
    reason = result.halt_reason
    if not isinstance(reason, kind):
        raise AssertionError(
            f"the run halted with {type(reason).__name__} ({reason.describe()}), "
            f"not {kind.__name__}"
        )
    data = reason.to_dict()
    for name, expected in fields.items():
        if name not in data:
            known = ", ".join(k for k in data if k != "type") or "none"
            raise AssertionError(f"{kind.__name__} has no field {name!r} (fields: {known})")
        if data[name] != expected:
            raise AssertionError(
                f"{kind.__name__}.{name} is {data[name]!r}, expected {expected!r} "
                f"({reason.describe()})"
            )
    return reason


Expected = str | type | tuple[str | type, Mapping[str, Any]]


def assert_events(
    source: RunResult | ListSink | Iterable[Event] | str | os.PathLike[str],
    expected: Sequence[Expected],
    *,
    exact: bool = False,
) -> None:
    """Assert the run's events include `expected` in this order (other events may come
    between), or are exactly those with ``exact=True``.

    `source` is a result of a harness built by `harness_fixture`, a `ListSink`, the events
    themselves, or a JSONL transcript. Each expected item is an event name
    (``"check.failed"``), an event class (`CheckFailed`), or either with fields that must
    match: ``("check.failed", {"reason": "answer.txt does not exist"})``. A failure numbers
    the expected items and the run's events from 1, as the docs do.
    """
    __tracebackhide__ = True
    events = _events_of(source)
    names = [row["event"] for row in events]
    if exact and len(events) != len(expected):
        raise AssertionError(
            f"expected exactly {len(expected)} events, the run emitted {len(events)}: {names}"
        )
    position = 0
    for number, item in enumerate(expected, start=1):
        found = next(
            (i for i in range(position, len(events)) if _matches(events[i], item)),
            None,
        )
        if found is None or (exact and found != position):
            # Counted from 1, like the item: event 1 is the run's first.
            where = f"at position {position + 1}" if exact else f"among events {position + 1} on"
            raise AssertionError(
                f"expected {_describe(item)} (item {number} of the expected list) {where}; "
                f"the run's events are {names}"
            )
        position = found + 1


def _events_of(source: object) -> list[dict[str, Any]]:
    from harness import RunResult
    from harness.events import Event, ListSink, TranscriptReader

    if isinstance(source, RunResult):
        kept = _RUN_EVENTS.get(source.run_id)
        if kept is None:
            raise AssertionError(
                "this result's events were not kept: build the harness with harness_fixture, "
                "or pass a ListSink or the transcript instead"
            )
        return [_row(e) for e in kept]
    if isinstance(source, ListSink):
        return [_row(e) for e in source.events]
    if isinstance(source, str | os.PathLike):
        return [_row(e) for _, e in TranscriptReader(Path(source))]
    items = list(source)  # type: ignore[call-overload]
    if not all(isinstance(e, Event) for e in items):
        raise TypeError("assert_events takes a RunResult, a ListSink, events or a transcript")
    return [_row(e) for e in items]


def _row(event: Event) -> dict[str, Any]:
    names = _fields(type(event))
    if names is None:  # a name this harness does not know: as it was written
        return event.to_dict()
    row = {name: getattr(event, name) for name in names}
    row["event"] = event.name
    return row


_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _fields(kind: type) -> tuple[str, ...] | None:
    """The attrs fields of an event class, looked up once per class; None for an
    `UnknownEvent`, whose fields are those of its line."""
    if kind not in _FIELDS:
        import attrs

        from harness.events import UnknownEvent

        unknown = issubclass(kind, UnknownEvent)
        _FIELDS[kind] = None if unknown else tuple(f.name for f in attrs.fields(kind))
    return _FIELDS[kind]


def _matches(row: Mapping[str, Any], item: Expected) -> bool:
    kind, fields = item if isinstance(item, tuple) else (item, {})
    name = kind if isinstance(kind, str) else getattr(kind, "name", None)
    if row["event"] != name:
        return False
    return all(name in row and _plain(row[name]) == _plain(v) for name, v in fields.items())


def _plain(value: object) -> object:
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


def _describe(item: Expected) -> str:
    kind, fields = item if isinstance(item, tuple) else (item, {})
    name = kind if isinstance(kind, str) else getattr(kind, "name", repr(kind))
    return repr(name) + (f" with {dict(fields)}" if fields else "")
