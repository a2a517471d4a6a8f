"""The board's own configuration: ``board.toml`` beside the ``tasks/`` folder.

::

    [board]                              # optional
    workspace_template = "workspace"     # copied once into the state folder, shared by the
                                         # tasks that name no workspace of their own
    # workspace = "work"                 # or an existing folder, used in place
    max_attempts = 3                     # attempts of a task that a transient model failure
                                         # (rate limit, 5xx, timeout, lost worker) ends
    heartbeat = 5.0                      # seconds between lease renewals of running attempts
    lease = 30.0                         # a Ray attempt silent this long is taken as dead
    poll = 1.0                           # how often idle agents look for tasks retried by hand
    synchronous = "normal"               # or "full": fsync every event (survives power loss)
    isolation = "shared"                 # or "worktree": each attempt on a git repository
                                         # works in its own worktree and branch (docs/board.md)

    [[agents]]                           # one entry per kind of agent; --agents N makes a pool
    role = "backend"                     # of N, taking the entries in turn
    name = "coder"                       # optional; default: the role
    account = "team-claude"              # optional; the quota it draws on (default: its name):
                                         # a usage limit pauses every agent of the account
    model = { type = "fixture", path = "scripts/{task}.jsonl" }

    [[notify]]                           # optional, several allowed: a webhook or a command
    webhook = "https://example.com/hook" # told when the board ends, a task needs review, an
                                         # account pauses or resumes (see docs/notifications.md)

    [ray]                                # optional, for --engine ray
    address = "auto"                     # default: $RAY_ADDRESS, else a local instance
    num_cpus = 1                         # CPUs a task attempt asks Ray for

A model table is what a spec's ``[model]`` is. In its strings ``{task}``, ``{attempt}``,
``{agent}`` and ``{role}`` are replaced for each attempt (a scripted agent gets each task's
own fixture); relative paths are relative to ``board.toml``'s folder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from attrs import field, frozen

from harness import ConfigurationError, ModelClient, Notifier
from harness.extend import check_positive, notifiers_from_config

from ._errors import BoardConfigError
from ._state import BOARD_FILE
from ._tasks import parse_toml, read_board_file

_SECTIONS = {"board", "agents", "ray", "notify"}
_BOARD_KEYS = {
    "workspace",
    "workspace_template",
    "max_attempts",
    "heartbeat",
    "lease",
    "poll",
    "synchronous",
    "isolation",
}
_AGENT_KEYS = {"role", "name", "model", "account"}
_RAY_KEYS = {"address", "num_cpus"}


@frozen
class AttemptInfo:
    """Who runs what: handed to an agent's model factory for each attempt."""

    task: str
    attempt: int
    agent: str
    role: str


ModelSource = Mapping[str, Any] | Callable[[AttemptInfo], ModelClient]


@frozen
class Agent:
    """A kind of agent: the role whose tasks it takes and the model it works with.

    `model` is a model table (as in a spec's ``[model]``; placeholders are filled per attempt,
    relative paths are relative to `base`) or a callable that builds a client for an attempt.
    `account` names the quota its model draws on (default: the agent's name): when one of its
    attempts meets a usage limit, the board pauses every attempt on the account.
    """

    role: str
    model: ModelSource = field(eq=False)
    name: str = ""
    base: Path | None = None
    account: str = ""

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.role, str) or not self.role.strip():
            raise ConfigurationError(f"'role' must be a non-empty string (got {self.role!r})")
        if not (callable(self.model) or isinstance(self.model, Mapping)):
            raise ConfigurationError(
                f"'model' must be a model table or a callable (got {self.model!r})"
            )
        if not self.name:
            object.__setattr__(self, "name", self.role)
        if not isinstance(self.account, str):
            raise ConfigurationError(f"'account' must be a string (got {self.account!r})")
        if not self.account.strip():
            object.__setattr__(self, "account", self.name)

    def model_for(self, info: AttemptInfo) -> ModelSource:
        """The model table with its placeholders filled in, or the factory itself."""
        if callable(self.model):
            return self.model
        values = {
            "task": info.task,
            "attempt": str(info.attempt),
            "agent": info.agent,
            "role": info.role,
        }
        filled: dict[str, Any] = _fill(dict(self.model), values)
        return filled


@frozen
class Seat:
    """One agent of the pool: its name on the board and the kind it is."""

    name: str
    agent: Agent


def pool(agents: Sequence[Agent], size: int | None = None) -> tuple[Seat, ...]:
    """`size` seats (default: one per agent), taking the agents in turn: with agents
    [backend, docs] and size 3, backend-1, docs-1, backend-2."""
    if not agents:
        raise ConfigurationError("a board needs at least one agent")
    count = len(agents) if size is None else size
    check_positive("agents", count, integer=True)
    seen: dict[str, int] = {}
    seats = []
    for k in range(count):
        agent = agents[k % len(agents)]
        seen[agent.name] = seen.get(agent.name, 0) + 1
        seats.append(Seat(f"{agent.name}-{seen[agent.name]}", agent))
    return tuple(seats)


@frozen(kw_only=True)
class BoardSettings:
    """The ``[board]`` table."""

    workspace: Path | None = None
    workspace_template: Path | None = None
    max_attempts: int = 3
    heartbeat: float = 5.0
    lease: float = 30.0
    poll: float = 1.0
    synchronous: Literal["normal", "full"] = "normal"
    isolation: Literal["shared", "worktree"] = "shared"

    def __attrs_post_init__(self) -> None:
        if self.workspace is not None and self.workspace_template is not None:
            raise ConfigurationError("give 'workspace' or 'workspace_template', not both")
        check_positive("max_attempts", self.max_attempts, integer=True)
        check_positive("heartbeat", self.heartbeat)
        check_positive("lease", self.lease)
        check_positive("poll", self.poll)
        if self.lease <= self.heartbeat:
            raise ConfigurationError(
                f"'lease' ({self.lease:g}) must be longer than 'heartbeat' ({self.heartbeat:g})"
            )
        if self.synchronous not in ("normal", "full"):
            raise ConfigurationError(
                f"'synchronous' must be 'normal' or 'full' (got {self.synchronous!r})"
            )
        if self.isolation not in ("shared", "worktree"):
            raise ConfigurationError(
                f"'isolation' must be 'shared' or 'worktree' (got {self.isolation!r})"
            )
        if self.isolation == "worktree" and self.workspace_template is not None:
            raise ConfigurationError(
                "isolation = 'worktree' works in an existing git repository: give "
                "'workspace', not 'workspace_template'"
            )


@frozen
class RaySettings:
    """The ``[ray]`` table."""

    address: str | None = None
    num_cpus: float = 1.0


@frozen
class BoardConfig:
    """``board.toml``, read and checked."""

    path: Path
    settings: BoardSettings
    agents: tuple[Agent, ...]
    ray: RaySettings
    notify: tuple[Notifier, ...] = ()
    """The ``[[notify]]`` notifiers: `Board.from_folder` adds them to the board's sinks."""


def load_config(folder: str | Path) -> BoardConfig:
    """Read ``board.toml`` in `folder`; errors name the file and the key."""
    file = Path(folder) / BOARD_FILE
    missing = "no such file (it lists the board's [[agents]]: role and model)"
    data = parse_toml(read_board_file(file, what="board file", missing=missing), file)
    where = str(file)
    _known(data, _SECTIONS, where, "")
    base = file.parent
    board = _table(data.get("board", {}), f"{where}: board")
    _known(board, _BOARD_KEYS, where, "board.")
    options = dict(board)
    for key in ("workspace", "workspace_template"):
        if key in options:
            options[key] = _folder(options[key], base, f"{where}: board.{key}")
    try:
        settings = BoardSettings(**options)
    except ConfigurationError as exc:
        raise BoardConfigError(f"{where}: board: {exc}") from None
    entries = data.get("agents")
    if not isinstance(entries, list) or not entries:
        raise BoardConfigError(
            f"{where}: at least one [[agents]] table is required (role = ..., model = {{...}})"
        )
    agents = []
    for i, entry in enumerate(entries):
        at = f"{where}: agents[{i}]"
        table = _table(entry, at)
        _known(table, _AGENT_KEYS, where, f"agents[{i}].")
        model = table.get("model")
        if not isinstance(model, dict):
            raise BoardConfigError(f'{at}.model must be a model table (type = "...", ...)')
        try:
            agent = Agent(
                role=table.get("role", ""),
                model=model,
                name=table.get("name", ""),
                base=base,
                account=table.get("account", ""),
            )
        except ConfigurationError as exc:
            raise BoardConfigError(f"{at}: {exc}") from None
        agents.append(agent)
    ray = _table(data.get("ray", {}), f"{where}: ray")
    _known(ray, _RAY_KEYS, where, "ray.")
    address = ray.get("address")
    if address is not None and (not isinstance(address, str) or not address):
        raise BoardConfigError(f"{where}: ray.address must be a string (got {address!r})")
    cpus = ray.get("num_cpus", 1.0)
    if isinstance(cpus, bool) or not isinstance(cpus, int | float) or cpus < 0:
        raise BoardConfigError(f"{where}: ray.num_cpus must be a number >= 0 (got {cpus!r})")
    try:
        notify = notifiers_from_config(data["notify"], "notify") if "notify" in data else ()
    except ConfigurationError as exc:
        raise BoardConfigError(f"{where}: {exc}") from None
    return BoardConfig(
        file, settings, tuple(agents), RaySettings(address, float(cpus)), notify=notify
    )


def _fill(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for key, text in values.items():
            value = value.replace("{" + key + "}", text)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


def _known(table: Mapping[str, Any], allowed: set[str], where: str, prefix: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise BoardConfigError(
            f"{where}: {prefix}{unknown[0]} is not a setting here (expected some of "
            f"{sorted(allowed)})"
        )


def _table(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BoardConfigError(f"{where} must be a table (got {type(value).__name__})")
    return value


def _folder(value: object, base: Path, where: str) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise BoardConfigError(f"{where} must be a non-empty string (got {value!r})")
    path = (base / value).resolve()
    if not path.is_dir():
        raise BoardConfigError(f"{where}: {str(path)!r} is not an existing folder")
    return path
