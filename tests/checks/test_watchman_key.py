"""The baseline cache's key where watchman watches the workspace: a warm key asks watchman what
changed instead of looking at each file, and any change, or a watch that restarted, computes
the content again.

Against the real watchman (the Debian/Ubuntu package; `.ci/run` installs it where it can);
skipped where it is not installed. Each test watches its own temporary folder and removes the
watch at the end; a running watchman is used as it is, and one is started when none runs.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import checks._baseline_cache as cache_module
from checks._baseline_cache import workspace_content

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        shutil.which("watchman") is None,
        reason="watchman is not installed here, so the key's use of it is not proven",
    ),
]


def _watchman(*command: object) -> dict[str, Any]:
    done = subprocess.run(
        ["watchman", "-j"], input=json.dumps(list(command)), capture_output=True, text=True
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    assert "error" not in answer, answer
    return answer


@contextmanager
def watching(root: Path) -> Iterator[Path]:
    """`root` watched by watchman for as long as the block runs."""
    _watchman("watch", str(root))
    try:
        yield root
    finally:
        _watchman("watch-del", str(root))


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Path]:
    root = (tmp_path / "ws").resolve()
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("VALUE = 1\n")
    (root / "test_calc.py").write_text("def test_value(): pass\n")
    with watching(root):
        yield root


class Computed:
    """Counts the contents computed by looking at the files."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.times = 0
        real = cache_module.files_digest

        def counted(*args: Any) -> str:
            self.times += 1
            return real(*args)

        monkeypatch.setattr(cache_module, "files_digest", counted)


async def test_a_warm_key_asks_watchman_and_a_change_computes_it_again(
    watched: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    computed = Computed(monkeypatch)
    index = tmp_path / "cache"
    first = await workspace_content(watched, index)
    assert await workspace_content(watched, index) == first
    assert computed.times == 1  # the second is watchman's word
    (watched / "src" / "calc.py").write_text("VALUE = 2\n")  # the same size
    changed = await workspace_content(watched, index)
    assert changed != first
    assert computed.times == 2
    (watched / "node_modules").mkdir()
    (watched / "node_modules" / "dep.js").write_text("x")  # left out of the content
    (watched / "empty").mkdir()  # a folder is no content
    assert await workspace_content(watched, index) == changed
    assert computed.times == 2
    (watched / "src" / "calc.py").unlink()
    assert await workspace_content(watched, index) not in (first, changed)
    assert computed.times == 3
    assert cache_module.files_digest(watched, None) == (
        await workspace_content(watched, index)
    ).removeprefix("files:")


async def test_a_folder_removed_whole_is_seen(
    watched: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    computed = Computed(monkeypatch)
    index = tmp_path / "cache"
    first = await workspace_content(watched, index)
    shutil.rmtree(watched / "src")
    assert await workspace_content(watched, index) != first
    assert computed.times == 2


async def test_a_watch_that_restarted_is_not_trusted(
    watched: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the watch is removed and made again, watchman's old clock means nothing to it (a
    fresh instance): the content is computed again."""
    computed = Computed(monkeypatch)
    index = tmp_path / "cache"
    first = await workspace_content(watched, index)
    _watchman("watch-del", str(watched))
    (watched / "src" / "calc.py").write_text("VALUE = 3\n")  # unseen by any watch
    _watchman("watch", str(watched))
    assert await workspace_content(watched, index) != first
    assert computed.times == 2


async def test_a_remembered_content_of_another_folder_is_ignored(
    watched: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    computed = Computed(monkeypatch)
    index = tmp_path / "cache"
    first = await workspace_content(watched, index)
    (remembered,) = (index / "watched").iterdir()
    entry = json.loads(remembered.read_text())
    remembered.write_text(json.dumps({**entry, "workspace": "/elsewhere", "content": "files:x"}))
    with caplog.at_level(logging.WARNING):
        assert await workspace_content(watched, index) == first
    assert computed.times == 2
    assert "it is not this folder's" in caplog.text


async def test_an_unwatched_folder_is_looked_at_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    computed = Computed(monkeypatch)
    root = tmp_path / "plain"
    root.mkdir()
    (root / "a.py").write_text("")
    index = tmp_path / "cache"
    assert await workspace_content(root, index) == await workspace_content(root, index)
    assert computed.times == 2
    assert not (index / "watched").exists()


async def test_a_watch_that_ignores_a_folder_of_the_content_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``.watchmanconfig`` that ignores ``build/`` (not a folder the key leaves out): a change
    there would go unreported, so the content is computed each time."""
    computed = Computed(monkeypatch)
    root = (tmp_path / "ws").resolve()
    (root / "build").mkdir(parents=True)
    (root / "build" / "out.py").write_text("x = 1\n")
    (root / ".watchmanconfig").write_text('{"ignore_dirs": ["build", "node_modules"]}')
    index = tmp_path / "cache"
    with watching(root):
        first = await workspace_content(root, index)
        (root / "build" / "out.py").write_text("x = 2\n")
        assert await workspace_content(root, index) != first
    assert computed.times == 2
