"""Reading a file whose path someone else chose: whole, bounded, whatever size it says it has."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.extend import (
    FileRefused,
    parse_json,
    read_json_file,
    read_regular_file,
    read_text_file,
)


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


def test_a_fifo_is_refused_at_once_never_waited_on(tmp_path: Path) -> None:
    """A FIFO planted where a record belongs has no writer: opening it must not block."""
    fifo = tmp_path / "verdicts.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="not a regular file"):
        read_text_file(fifo, what="record")


def test_a_link_to_a_device_is_refused_before_anything_is_read() -> None:
    with pytest.raises(FileRefused, match="not a regular file"):
        read_json_file("/dev/zero")


def test_a_folder_is_named_as_a_folder(tmp_path: Path) -> None:
    with pytest.raises(FileRefused, match="is a folder"):
        read_text_file(tmp_path)


def test_a_link_is_refused_where_links_are_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    link = tmp_path / "state.json"
    link.symlink_to(target)
    assert read_json_file(link) == {}
    with pytest.raises(FileRefused, match="symbolic link"):
        read_json_file(link, follow_links=False)


def test_bytes_that_are_not_utf8_are_named_with_their_offset(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(FileRefused, match=r"not UTF-8 \(byte 0xff at offset 7\)"):
        read_json_file(path, what="cache entry")


def test_json_that_is_not_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{\n  "hooks": [,]\n}')
    with pytest.raises(FileRefused, match=r"not valid JSON: .*\(line 2, column 13\)") as caught:
        read_json_file(path, what="settings file")
    assert str(caught.value).startswith(f"the settings file '{path}'")


def test_json_nested_past_the_bound_is_an_error_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(FileRefused, match="nested deeper than"):
        read_json_file(path)
    with pytest.raises(ValueError, match="nested deeper than"):
        parse_json("{" + '"a":{' * 150 + "}" * 151)
