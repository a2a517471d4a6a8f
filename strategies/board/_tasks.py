"""Board tasks: one TOML file each, a run spec plus the task's own keys.

A task file is what `harness run` reads (budget, strategy, checks, sensors, feedback, policy,
tools, workspace, ...) with ``body`` for the prompt and these keys of its own::

    id = "api"                    # letters, digits, '_', '-', '.'; unique on the board
    title = "Build the API"       # optional; default: the id
    role = "backend"              # which agents may take it
    priority = 10                 # optional, default 0; higher runs first
    depends_on = ["schema"]       # optional; ids that must be complete first
    body = "Implement ..."        # the prompt

The model is not the task's: it comes from the agent that takes the task (``board.toml``), so
``model``, ``prompt``, ``prompt_file`` and ``transcript`` are refused. Everything is checked
when the board loads, before anything runs: every problem of every file is reported at once,
each naming the file and the key, and so are a dependency on an unknown id and a cycle.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import field, frozen

from harness import ConfigurationError
from harness.extend import FileRefused, read_regular_file

from .._spec import SPEC, Spec, spec_from_table
from ._errors import BoardConfigError

# The largest task file (or board.toml) read: far above any real one.
MAX_TASK_BYTES = 1024 * 1024
TASK_KEYS = ("id", "title", "role", "priority", "depends_on", "body")
REFUSED_KEYS = {
    "model": "the model comes from the agent that takes the task (board.toml [[agents]])",
    "prompt": "a task's prompt is its 'body'",
    "prompt_file": "a task's prompt is its 'body'",
    "transcript": "the board writes one transcript per attempt in its state folder",
}
SPEC_KEYS = tuple(sorted(set(SPEC.names) - set(REFUSED_KEYS)))
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@frozen
class BoardTask:
    """One task: what to do, who may do it, when, and the run spec that checks it."""

    id: str
    title: str
    role: str
    priority: int
    depends_on: tuple[str, ...]
    body: str
    path: Path
    digest: str
    """sha256 of the file's bytes when it was loaded."""
    table: Mapping[str, Any] = field(eq=False, repr=False)
    """The spec keys of the file (no task keys), from which each attempt builds its run."""
    spec: Spec = field(eq=False, repr=False)
    """The validated spec (with no model: the agent that takes the task brings it)."""

    @classmethod
    def from_table(
        cls, data: Mapping[str, Any], path: str | Path, *, digest: str = ""
    ) -> BoardTask:
        """Validate a parsed task file; `path` is where it came from (errors name it)."""
        file = Path(path)
        where = str(file)
        for key, why in REFUSED_KEYS.items():
            if key in data:
                raise BoardConfigError(f"{where}: {key!r} does not belong in a task file: {why}")
        allowed = set(TASK_KEYS) | set(SPEC_KEYS)
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise BoardConfigError(
                f"{where}: unknown key {unknown[0]!r} "
                f"(a task has {list(TASK_KEYS)} and a run spec's {list(SPEC_KEYS)})"
            )
        task_id = _text(data, "id", where, required=True)
        if not _ID.fullmatch(task_id):
            raise BoardConfigError(
                f"{where}: id must be 1-64 letters, digits, '_', '-' or '.', starting with a "
                f"letter or digit (got {task_id!r})"
            )
        role = _text(data, "role", where, required=True)
        title = _text(data, "title", where) or task_id
        body = _text(data, "body", where, required=True)
        priority = data.get("priority", 0)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise BoardConfigError(f"{where}: priority must be an int (got {priority!r})")
        depends = data.get("depends_on", [])
        if not isinstance(depends, list) or not all(isinstance(d, str) and d for d in depends):
            raise BoardConfigError(
                f"{where}: depends_on must be a list of task ids (got {depends!r})"
            )
        if task_id in depends:
            raise BoardConfigError(f"{where}: depends_on names the task itself ({task_id!r})")
        if len(set(depends)) != len(depends):
            raise BoardConfigError(f"{where}: depends_on names a task twice ({depends!r})")
        table = {k: v for k, v in data.items() if k not in TASK_KEYS}
        try:
            spec = spec_from_table({**table, "prompt": body}, file, purpose="task")
        except ConfigurationError as exc:
            raise BoardConfigError(str(exc)) from None
        return cls(
            id=task_id,
            title=title,
            role=role,
            priority=priority,
            depends_on=tuple(depends),
            body=body,
            path=file,
            digest=digest,
            table=table,
            spec=spec,
        )


def load_task(path: str | Path) -> BoardTask:
    """Read and validate one task file (a regular file of at most `MAX_TASK_BYTES`: a FIFO or
    a device in the task folder is refused, never waited on or read without end)."""
    file = Path(path)
    raw = read_board_file(file, what="task file")
    data = parse_toml(raw, file)
    return BoardTask.from_table(data, file, digest=hashlib.sha256(raw).hexdigest())


def read_board_file(file: Path, *, what: str, missing: str | None = None) -> bytes:
    """A board's file (a task file, ``board.toml``), bounded: `BoardConfigError` naming it
    when it cannot be read (`missing` is the message for a file that is not there), is not a
    regular file or is over `MAX_TASK_BYTES`."""
    try:
        return read_regular_file(file, limit=MAX_TASK_BYTES, what=what)
    except FileNotFoundError:
        if missing is None:
            raise BoardConfigError(f"{file}: cannot read the {what}: no such file") from None
        raise BoardConfigError(f"{file}: {missing}") from None
    except OSError as exc:
        raise BoardConfigError(f"{file}: cannot read the {what}: {exc.strerror}") from None
    except FileRefused as exc:
        raise BoardConfigError(f"{file}: the {what} {exc.reason}") from None


def parse_toml(raw: bytes, file: Path) -> dict[str, Any]:
    """`raw` read as TOML; `BoardConfigError` naming `file` when it is not UTF-8, not TOML, or
    nested too deeply to read."""
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BoardConfigError(f"{file}: not UTF-8 text ({exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise BoardConfigError(f"{file}: not valid TOML: {exc}") from None
    except RecursionError:
        raise BoardConfigError(f"{file}: arrays or tables nested too deeply to read") from None


def load_tasks(folder: str | Path) -> tuple[BoardTask, ...]:
    """Every ``*.toml`` in `folder`, validated, ordered by id; refuses unknown dependencies
    and cycles. All problems are reported together, one line each."""
    root = Path(folder)
    if not root.is_dir():
        raise BoardConfigError(f"{root}: the task folder does not exist")
    problems: list[str] = []
    tasks: list[BoardTask] = []
    for file in sorted(root.glob("*.toml")):
        try:
            tasks.append(load_task(file))
        except BoardConfigError as exc:
            problems.append(str(exc))
    if not tasks and not problems:
        raise BoardConfigError(f"{root}: no task files (*.toml) in the folder")
    problems += check_graph(tasks)
    if problems:
        raise BoardConfigError("\n".join(problems))
    return tuple(sorted(tasks, key=lambda t: t.id))


def check_graph(tasks: Sequence[BoardTask]) -> list[str]:
    """What is wrong with the tasks as a set: a duplicate id, a dependency on an unknown id,
    a cycle (named with its files)."""
    problems: list[str] = []
    by_id: dict[str, BoardTask] = {}
    for task in tasks:
        if task.id in by_id:
            problems.append(
                f"{task.path}: id {task.id!r} is already the id of {by_id[task.id].path}"
            )
            continue
        by_id[task.id] = task
    for task in by_id.values():
        problems += [
            f"{task.path}: depends_on names {dep!r}, which is no task's id"
            for dep in task.depends_on
            if dep not in by_id
        ]
    cycle = find_cycle({t.id: [d for d in t.depends_on if d in by_id] for t in by_id.values()})
    if cycle is not None:
        files = ", ".join(str(by_id[i].path) for i in cycle[:-1])
        problems.append(f"dependency cycle: {' -> '.join(cycle)} ({files})")
    return problems


def find_cycle(edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One cycle of the graph as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for start in sorted(edges):
        if state.get(start):
            continue
        path = [start]
        state[start] = 1
        stack = [iter(sorted(edges[start]))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(edges[nxt])))
    return None


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    if key not in data:
        if required:
            raise BoardConfigError(f"{where}: {key!r} is required")
        return ""
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise BoardConfigError(f"{where}: {key} must be a non-empty string (got {value!r})")
    return value
