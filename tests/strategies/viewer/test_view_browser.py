"""`harness view` in a real browser: headless Chromium (Debian's `chromium`, which `.ci/run`
installs) runs the page's script under its Content Security Policy, renders the turns, and
runs none of the transcript's hostile text."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from _dom import parse
from _png import read_png
from _view_support import (
    HOSTILE,
    HOSTILE_ATTR,
    HOSTILE_IMG,
    halted,
    self_verifying_transcript,
    started,
    tool,
    turn,
    write_events,
)

from strategies._cli import main
from strategies._viewer._timeline import GROUP

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"
)

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

# The page's colours (viewer.css, light scheme), as Chromium paints flat areas exactly.
GOOD_BG = (232, 246, 236)  # the "Verified complete" banner
BAD_BG = (253, 236, 236)  # a failed tool call
BUILDER = (59, 111, 216)  # the builder's input-token bars
EVALUATOR = (138, 79, 208)  # the evaluator's
Colour = tuple[int, int, int]


def chromium(tmp_path: Path, page: Path, *args: str, size: str = "1200,900") -> str:
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    done = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={size}",
            *args,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The page of a SelfVerifying run with a tool error and hostile text everywhere."""
    transcript = self_verifying_transcript(tmp_path)
    out = tmp_path / "run.html"
    assert main(["view", str(transcript), "-o", str(out)]) == 0
    capsys.readouterr()
    return out


def test_the_script_runs_builds_the_index_and_nothing_hostile_runs(
    tmp_path: Path, page: Path
) -> None:
    """After the page's script ran (allowed by its hash), the DOM has an index linking to
    every turn, the failed one marked; the transcript's script tags, handlers and
    attribute break-outs are text in the DOM, not elements, and changed nothing."""
    dom = parse(chromium(tmp_path, page, "--dump-dom"))
    html = dom.find("html")
    assert html.attrs.get("data-viewer") == "ready", "the page's script did not run"
    index = dom.find("nav", "index")
    assert "hidden" not in index.attrs
    links = index.find_all("a")
    turns = [a for a in links if (a.attrs.get("href") or "").startswith("#r1-t")]
    assert [a.attrs["href"] for a in turns] == [f"#r1-t{n}" for n in range(1, 10)]
    assert [a.text() for a in turns][:2] == ["turn 1", "turn 2"]
    assert "err" in turns[0].classes
    assert "err" not in turns[1].classes
    sessions = [h.text() for h in index.find_all("h5")]
    assert sessions == [
        "builder · session 1",
        "evaluator · session 2",
        "builder · session 1 (resumed)",
        "evaluator · session 3",
    ]
    assert dom.find("div", "controls").find_all("button")
    articles = dom.find_all("article", "turn")
    assert len(articles) == 9
    assert "Looking first." in articles[0].text()

    assert len(dom.find_all("script")) == 1
    assert dom.find_all("img") == []
    assert "pwned" not in dom.find("title").text()
    for node in dom.iter():
        assert not [a for a in node.attrs if a.startswith("on")], node
    written = articles[1].find("dl", "arguments").text()
    for needle in (HOSTILE, HOSTILE_IMG, HOSTILE_ATTR):
        assert needle in written


def test_a_long_run_lists_its_collapsed_groups_once_in_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In a run longer than a group, the script's index links each collapsed group once (the
    one with a failed call marked) instead of every turn inside it."""
    rows = [started()]
    for n in range(1, GROUP + 6):
        call = {"id": f"c{n}", "name": "run", "arguments": {}}
        rows += [*turn(n, f"step {n}", [call]), tool(n, call, "x", is_error=n == 3)]
    transcript = write_events(tmp_path / "long.jsonl", [*rows, halted(turns=GROUP + 5)])
    out = tmp_path / "long.html"
    assert main(["view", str(transcript), "-o", str(out)]) == 0
    capsys.readouterr()
    dom = parse(chromium(tmp_path, out, "--dump-dom"))
    assert dom.find("html").attrs.get("data-viewer") == "ready", "the page's script did not run"
    links = [a for a in dom.find("nav", "index").find_all("a") if "halt-link" not in a.classes]
    assert [(a.attrs["href"], a.text()) for a in links] == [
        ("#r1-g1", f"turns 1 to {GROUP}"),
        ("#r1-g2", f"turns {GROUP + 1} to {GROUP + 5}"),
    ]
    assert ["err" in a.classes for a in links] == [True, False]
    assert len(dom.find_all("article", "turn")) == GROUP + 5


def _count(colours: dict[tuple[int, int, int], int], match: Callable[[Colour], bool]) -> int:
    return sum(n for colour, n in colours.items() if match(colour))


def _near(colour: Colour, tolerance: int = 6) -> Callable[[Colour], bool]:
    return lambda pixel: all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True))


def _red_text(pixel: Colour) -> bool:
    r, g, b = pixel
    return r > 150 and g < 110 and b < 110


def test_the_screenshot_shows_the_run(tmp_path: Path, page: Path) -> None:
    """The first screen is a real, styled page: the green verified banner, the usage chart's
    bars for builder and evaluator turns, and the index the script built with the failed
    turn in red; a taller window shows the turn cards with the failed tool call."""
    shot = tmp_path / "shot.png"
    chromium(tmp_path, page, f"--screenshot={shot}")
    image = read_png(shot)
    assert (image.width, image.height) == (1200, 900)
    colours = image.colours(step=2)
    assert len(colours) > 50, "the screenshot is (nearly) one flat colour"
    assert max(colours.values()) < 0.9 * sum(colours.values())
    assert _count(colours, _near(GOOD_BG)) > 2_000
    assert _count(colours, _near(BUILDER)) > 500
    assert _count(colours, _near(EVALUATOR)) > 100
    index = image.colours(step=1, right=200)
    assert _count(index, _red_text) > 10, "no failed turn marked in the index"

    # Chromium's --screenshot cannot scroll, so a taller window shows the first turns.
    tall = tmp_path / "tall.png"
    chromium(tmp_path, page, f"--screenshot={tall}", size="1200,1400")
    image = read_png(tall)
    assert _count(image.colours(step=2, left=220), _near(BAD_BG)) > 1_000, "no failed call"
