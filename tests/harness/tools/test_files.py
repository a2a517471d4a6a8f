"""Reading a file whose path someone else chose: whole, bounded, whatever size it says it has."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness._fs._files import FileRefused, read_regular_file


def test_a_file_larger_than_one_read_comes_back_whole(tmp_path: Path) -> None:
    data = os.urandom(3 * (1 << 20) + 17)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert read_regular_file(path, limit=len(data)) == data


def test_a_file_that_says_it_is_empty_is_still_read_to_its_end() -> None:
    """Files in /proc report a size of 0 and hold text."""
    text = read_regular_file("/proc/self/status", limit=1 << 20).decode()
    assert text.startswith("Name:")
    assert "Pid:" in text


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"x" * 100)
    assert read_regular_file(path, limit=100) == b"x" * 100
    with pytest.raises(FileRefused, match="larger than"):
        read_regular_file(path, limit=99)
