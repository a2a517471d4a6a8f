"""Usage over time as an inline SVG: tokens per turn as bars, cumulative cost as a line.

Each bar links to its turn on the page and carries a tooltip (an SVG ``<title>``), so the
chart needs no script. A turn whose price is unknown makes the cost from there on unknown,
and the line stops there, as the run's own totals do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._markup import Html, cost, tag, tokens
from ._records import TurnPoint

WIDTH, HEIGHT = 960, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 72, 24, 40
MAX_DOTS = 60  # beyond this many turns, the cost line has no dot per turn


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least `value`."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5):
        if step * power >= value * (1 - 1e-9):
            return step * power
    return 10 * power


def axis(largest: float, divisions: int = 4, *, exactly: bool = False) -> list[float]:
    """Round tick values from 0 to at least `largest`, at most `divisions` steps (`exactly`
    that many, to line up with another axis)."""
    step = nice_ceiling(largest / divisions) if largest > 0 else 1.0
    count = divisions if exactly else max(1, math.ceil(largest / step - 1e-9))
    return [round(step * i, 12) for i in range(count + 1)]


def label_step(count: int) -> int:
    """Label every turn up to 12, else every 1, 2 or 5 times a power of ten turns (at most
    about 12 labels)."""
    if count <= 12:
        return 1
    power = int(10 ** math.floor(math.log10(count / 12)))
    for factor in (1, 2, 5, 10):
        if count / (factor * power) <= 12:
            return factor * power
    return 10 * power  # pragma: no cover - 10 * power always leaves at most 12


def _fmt_axis(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


def has_usage(turns: Sequence[TurnPoint]) -> bool:
    """Whether any finished model call reported tokens or a cost: else a chart would be empty."""
    return any(t.usage is not None and (t.usage.total_tokens or t.usage.cost_usd) for t in turns)


def usage_chart(turns: Sequence[TurnPoint], anchor: str) -> Html:
    """The chart for one run's turns; `anchor` prefixes the ids of the turns it links to."""
    measured = [t for t in turns if t.usage is not None]
    if not measured:
        return tag("p", {"class": "empty"}, "No model call finished, so there is no usage yet.")
    if not has_usage(turns):
        return tag(
            "p",
            {"class": "empty"},
            f"The {len(measured)} model call(s) reported no tokens and no cost (a scripted "
            "fixture without usage, or a command-line agent), so there is nothing to chart.",
        )
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    token_ticks = axis(max(t.usage.total_tokens for t in measured if t.usage))
    top_tokens = token_ticks[-1]
    slot = plot_w / len(turns)
    bar = max(1.0, min(slot * 0.72, 48.0))
    agents = list(dict.fromkeys(t.agent for t in turns))

    def y_tokens(value: float) -> float:
        return TOP + plot_h - plot_h * value / top_tokens

    parts: list[Html] = []
    for value in token_ticks:  # gridlines and the token axis
        y = y_tokens(value)
        parts.append(
            tag(
                "line", {"class": "grid", "x1": LEFT, "x2": LEFT + plot_w, "y1": _n(y), "y2": _n(y)}
            )
        )
        parts.append(
            tag(
                "text",
                {"class": "axis", "x": LEFT - 8, "y": _n(y + 4), "text-anchor": "end"},
                _fmt_axis(value),
            )
        )
    parts.append(tag("text", {"class": "axis-title", "x": 12, "y": TOP - 8}, "tokens"))

    cumulative: list[tuple[float, float]] = []  # (x, cost so far) while the cost is known
    spent: float | None = 0.0
    unknown_from: int | None = None
    previous: tuple[str, int] | None = None
    step = label_step(len(turns))
    for index, turn in enumerate(turns):
        x = LEFT + slot * index + slot / 2
        session = (turn.agent, turn.iteration)
        if previous is not None and session != previous:
            edge = _n(LEFT + slot * index)
            parts.append(
                tag(
                    "line",
                    {
                        "class": "session-edge",
                        "x1": edge,
                        "x2": edge,
                        "y1": TOP,
                        "y2": TOP + plot_h,
                    },
                )
            )
        previous = session
        if index == 0 or turn.number % step == 0:
            parts.append(
                tag(
                    "text",
                    {"class": "axis", "x": _n(x), "y": TOP + plot_h + 16, "text-anchor": "middle"},
                    str(turn.number),
                )
            )
        usage = turn.usage
        if usage is None:
            continue
        if spent is not None:
            spent = None if usage.cost_usd is None else spent + usage.cost_usd
            if spent is None:
                unknown_from = turn.number
            else:
                cumulative.append((x, spent))
        colour = f"agent-{agents.index(turn.agent) % 4}"
        y_in = y_tokens(usage.input_tokens)
        y_all = y_tokens(usage.total_tokens)
        tip = (
            f"turn {turn.number}: {turn.agent}, session {turn.iteration}, turn {turn.turn}\n"
            f"{tokens(usage.input_tokens)} in, {tokens(usage.output_tokens)} out"
            f"{f', {tokens(usage.cached_tokens)} cached' if usage.cached_tokens else ''}; "
            f"cost {cost(usage.cost_usd)}"
        )
        left = _n(x - bar / 2)
        parts.append(
            tag(
                "a",
                {"href": f"#{anchor}-t{turn.number}", "class": "bar"},
                tag("title", None, tip),
                tag(
                    "rect",
                    {
                        "class": f"in {colour}",
                        "x": left,
                        "y": _n(y_in),
                        "width": _n(bar),
                        "height": _n(TOP + plot_h - y_in),
                    },
                ),
                tag(
                    "rect",
                    {
                        "class": f"out {colour}",
                        "x": left,
                        "y": _n(y_all),
                        "width": _n(bar),
                        "height": _n(y_in - y_all),
                    },
                ),
            )
        )

    parts.append(
        tag(
            "line",
            {
                "class": "baseline",
                "x1": LEFT,
                "x2": LEFT + plot_w,
                "y1": TOP + plot_h,
                "y2": TOP + plot_h,
            },
        )
    )
    parts.append(
        tag(
            "text",
            {
                "class": "axis-title",
                "x": LEFT + plot_w / 2,
                "y": HEIGHT - 6,
                "text-anchor": "middle",
            },
            "turn",
        )
    )
    divisions = len(token_ticks) - 1
    parts.extend(_cost_line(cumulative, plot_w, plot_h, unknown_from, divisions))
    label = f"Tokens per turn and cumulative cost over {len(turns)} turns"
    return tag(
        "svg",
        {
            "class": "chart",
            "viewBox": f"0 0 {WIDTH} {HEIGHT}",
            "role": "img",
            "aria-label": label,
            "xmlns": "http://www.w3.org/2000/svg",
        },
        tag("title", None, label),
        parts,
    )


def _cost_line(
    points: list[tuple[float, float]],
    plot_w: float,
    plot_h: float,
    unknown_from: int | None,
    divisions: int,
) -> list[Html]:
    x_axis = LEFT + plot_w + 8
    parts: list[Html] = [
        tag(
            "text",
            {"class": "axis-title cost", "x": WIDTH - 8, "y": TOP - 8, "text-anchor": "end"},
            "cost (cumulative)",
        )
    ]
    if not points:
        parts.append(tag("text", {"class": "axis cost", "x": x_axis, "y": TOP + 12}, "unknown"))
        return parts
    ticks = axis(max(c for _, c in points), divisions, exactly=True)
    top = ticks[-1]

    def y_cost(value: float) -> float:
        return TOP + plot_h - plot_h * value / top

    for value in ticks:
        parts.append(
            tag(
                "text",
                {"class": "axis cost", "x": x_axis, "y": _n(y_cost(value) + 4)},
                f"${value:g}",
            )
        )
    line = " ".join(f"{_n(x)},{_n(y_cost(c))}" for x, c in points)
    parts.append(tag("polyline", {"class": "cost-line", "points": line}))
    for x, c in points if len(points) <= MAX_DOTS else ():
        parts.append(
            tag(
                "circle",
                {"class": "cost-dot", "cx": _n(x), "cy": _n(y_cost(c)), "r": 2.5},
                tag("title", None, f"{cost(c)} so far"),
            )
        )
    if unknown_from is not None:
        x, c = points[-1]
        parts.append(
            tag(
                "text",
                {"class": "axis cost", "x": _n(x + 6), "y": _n(y_cost(c) - 6)},
                f"unknown from turn {unknown_from}",
            )
        )
    return parts


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")
