"""Where a board keeps its state, and reading it without running the board.

`harness board status` runs here: it imports sqlite3, the schema and the records, and no
`harness` (nor anyio, the spec, the checks): a look at a board of 10,000 tasks is a fresh
process of a few tens of milliseconds, most of it Python's own start-up.
"""

from __future__ import annotations

from pathlib import Path

from ._records import BoardReader
from ._schema import connect

BOARD_FILE = "board.toml"
TASKS_FOLDER = "tasks"
STATE_FOLDER = ".board"
DATABASE = "board.db"


def board_state(folder: str | Path, state: str | Path | None = None) -> Path:
    """Where the board in `folder` keeps its state: `state`, or ``folder/.board``."""
    return Path(state) if state is not None else Path(folder) / STATE_FOLDER


def existing_database(state: Path) -> Path:
    """The database in the state folder `state`; `BoardConfigError` when the board never ran."""
    path = state / DATABASE
    if not path.is_file():
        from ._errors import BoardConfigError

        raise BoardConfigError(
            f"{path}: no board database (has the board run yet? `harness board run` makes it; "
            f"the folder needs a {BOARD_FILE} and a {TASKS_FOLDER}/ folder)"
        )
    return path


class BoardView(BoardReader):
    """A board's database opened to read it only (it may be in a read-only folder), while a
    board runs on it or after; closed by `close` or at the end of a ``with`` block."""

    def __init__(self, state: Path) -> None:
        self.path = existing_database(state)
        self._db = connect(self.path, read_only=True)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> BoardView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def one_line(text: object, width: int = 200) -> str:
    """`text` on one line of at most `width` characters: its first and last lines, which
    for a check's reason are the headline and the end of the output."""
    lines = [" ".join(line.split()) for line in str(text or "").splitlines() if line.strip()]
    line = lines[0] if len(lines) < 2 else f"{lines[0]} … {lines[-1]}"
    return line if len(line) <= width else line[: width - 1] + "…"
