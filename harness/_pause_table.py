"""`PAUSE`: the schema of a spec's ``[pause]`` table, which `PauseSettings.from_config` reads.

Apart from `_pause` so that a run configured in Python does not build the schema.
"""

from __future__ import annotations

from ._limits import DEFAULT_MAX_PAUSE, DEFAULT_WAIT
from ._schema import Key, Schema

PAUSE = Schema(
    "a pause table",
    [
        Key(
            "max_pause",
            "number",
            "The longest single wait for a usage limit, in seconds; a longer one halts the run "
            "(`UsageLimitReached`). 0 never pauses.",
            default=DEFAULT_MAX_PAUSE,
        ),
        Key(
            "default_wait",
            "number",
            "Seconds to wait when the limit's reset time cannot be read.",
            default=DEFAULT_WAIT,
        ),
        Key(
            "jitter",
            "number",
            "Up to this many seconds added after the reset (the same for the same run).",
            default=30.0,
        ),
        Key(
            "counts_toward_wall_time",
            "boolean",
            "Whether time spent paused uses up `max_wall_time`.",
            default=False,
        ),
    ],
    heading="pause",
    help="How a run waits out a usage limit: it pauses until the reset, then runs the same "
    "turn again, charged to no budget.",
)


__all__ = ["PAUSE"]
