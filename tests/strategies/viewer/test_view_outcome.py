"""The viewer's outcome banner for a run that ended unverified: it shows the last reason the
check gave; a run whose calls reported no usage gets a sentence, not an empty chart; and the
page reads on a phone-width screen (headless Chromium, where installed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _dom import parse
from _png import read_png

from strategies._cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PANEL = (255, 255, 255)  # a summary card (viewer.css, light scheme)
WARN_BG = (255, 246, 220)  # the "Not verified" banner

SPEC = """
prompt = "make done.txt"
workspace = "ws"
transcript = "run.jsonl"
[budget]
max_turns = 2
[model]
type = "fixture"
path = "script.jsonl"
[[checks]]
type = "files"
paths = ["done.txt"]
"""


def _page(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    """Run the spec on `lines` (the check fails, then the turn budget runs out), view it."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (tmp_path / "spec.toml").write_text(SPEC)
    assert main(["run", str(tmp_path / "spec.toml"), "-q"]) == 1
    page = tmp_path / "page.html"
    assert main(["view", str(tmp_path / "run.jsonl"), "-o", str(page)]) == 0
    return page


USAGE = {"input_tokens": 900, "output_tokens": 40, "cost_usd": 0.002}


def test_an_unverified_banner_shows_the_last_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The budget halted the run, but the banner also says why the work was not done: the
    check's last reason, with the line it came from."""
    page = _page(tmp_path, [{"text": "done", "usage": USAGE}, {"text": "done!", "usage": USAGE}])
    capsys.readouterr()
    banner = parse(page.read_text()).find("div", "outcome")
    assert "unverified" in banner.classes
    text = banner.text()
    assert "budget exceeded: max_turns used 2 of 2" in text
    reason = banner.find("div", "last-reason").text()
    assert reason.startswith("Last reason (completion check failed, line ")
    assert "missing 1 of 1: done.txt" in reason
    assert parse(page.read_text()).find_all("svg", "chart")


def test_a_reason_the_halt_already_gives_is_not_repeated(tmp_path: Path) -> None:
    """A halt that carries the last reason itself (a Ralph run that ran out of iterations)
    shows it once."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n')
    (tmp_path / "spec.toml").write_text(
        SPEC.replace("[budget]\nmax_turns = 2", '[strategy]\ntype = "ralph"\nmax_iterations = 1')
    )
    assert main(["run", str(tmp_path / "spec.toml"), "-q"]) == 1
    page = tmp_path / "page.html"
    assert main(["view", str(tmp_path / "run.jsonl"), "-o", str(page)]) == 0
    banner = parse(page.read_text()).find("div", "outcome")
    assert "done.txt" in banner.text()
    assert not banner.find_all("div", "last-reason")


def test_calls_without_usage_draw_no_empty_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = _page(tmp_path, [{"text": "done"}, {"text": "done!"}])
    capsys.readouterr()
    dom = parse(page.read_text())
    assert not dom.find_all("svg", "chart")
    assert not dom.find_all("p", "legend")
    usage = dom.find("section", "usage").text()
    assert "The 2 model call(s) reported no tokens and no cost" in usage


def _white_runs(row: list[tuple[int, int, int]], longer_than: int = 40) -> int:
    """How many stretches of card white, each wider than `longer_than` pixels, a row has."""
    runs, length = 0, 0
    for pixel in [*row, (0, 0, 0)]:
        if pixel == PANEL:
            length += 1
            continue
        runs += length > longer_than
        length = 0
    return runs


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_the_page_reads_on_a_phone_width_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At 390 px the banner fits the screen with a margin, and the summary packs its cards
    three to a row (the desktop grid would leave two, and push the timeline further down)."""
    page = _page(tmp_path, [{"text": "done", "usage": USAGE}, {"text": "done!", "usage": USAGE}])
    capsys.readouterr()
    shot = tmp_path / "phone.png"
    assert CHROMIUM is not None
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=390,700",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    image = read_png(shot)
    rows = [[image.pixel(x, y) for x in range(image.width)] for y in range(image.height)]
    banner = [y for y, row in enumerate(rows) if row.count(WARN_BG) > 200]
    assert banner, "no Not-verified banner on the first screen"
    for y in banner:
        xs = [x for x, pixel in enumerate(rows[y]) if pixel == WARN_BG]
        assert xs[0] >= 4
        assert xs[-1] <= image.width - 5
    below = rows[banner[-1] + 1 : banner[-1] + 200]
    assert max(_white_runs(row) for row in below) == 3
