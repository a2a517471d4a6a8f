"""A PNG decoder for tests, on the standard library (zlib, struct): 8-bit RGB/RGBA, not
interlaced, which is what Chromium writes for a screenshot."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from attrs import frozen

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # colour type: RGB, RGBA


@frozen
class Image:
    width: int
    height: int
    channels: int
    rows: tuple[bytes, ...]  # unfiltered scanlines

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        at = x * self.channels
        r, g, b = self.rows[y][at : at + 3]
        return r, g, b

    def colours(
        self, step: int = 1, left: int = 0, right: int | None = None
    ) -> dict[tuple[int, int, int], int]:
        """How many pixels (every `step`-th each way, between columns `left` and `right`)
        have each colour."""
        counts: dict[tuple[int, int, int], int] = {}
        stop = self.width if right is None else right
        for y in range(0, self.height, step):
            for x in range(left, stop, step):
                colour = self.pixel(x, y)
                counts[colour] = counts.get(colour, 0) + 1
        return counts


def read_png(path: Path) -> Image:
    data = path.read_bytes()
    assert data[:8] == SIGNATURE, f"{path} is not a PNG"
    at, idat = 8, bytearray()
    width = height = depth = colour = interlace = -1
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"{path}: bad CRC in {kind!r}"
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        at += 12 + length
    assert depth == 8, f"bit depth {depth}"
    assert colour in CHANNELS, f"colour type {colour}"
    assert interlace == 0, "interlaced"
    channels = CHANNELS[colour]
    raw = zlib.decompress(bytes(idat))
    stride = width * channels
    assert len(raw) == height * (stride + 1), "the image data has the wrong length"
    rows: list[bytes] = []
    previous = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = _unfilter(
            raw[start], bytearray(raw[start + 1 : start + 1 + stride]), previous, channels
        )
        rows.append(row)
        previous = row
    return Image(width, height, channels, tuple(rows))


def _unfilter(kind: int, row: bytearray, above: bytes, bpp: int) -> bytes:
    if kind == 0:
        return bytes(row)
    for i in range(len(row)):
        left = row[i - bpp] if i >= bpp else 0
        up = above[i]
        if kind == 1:
            row[i] = (row[i] + left) & 0xFF
        elif kind == 2:
            row[i] = (row[i] + up) & 0xFF
        elif kind == 3:
            row[i] = (row[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            corner = above[i - bpp] if i >= bpp else 0
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
            row[i] = (row[i] + pred) & 0xFF
        else:
            raise AssertionError(f"unknown PNG filter {kind}")
    return bytes(row)
