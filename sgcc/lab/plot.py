"""A tiny line-chart PNG writer (standard library only: zlib and struct).

No plotting library is installed where sgcc runs, and ``sgcc bench --curves DIR`` wants
pictures: :func:`line_chart` draws axes with ticks, one polyline per series with square
markers, a title, axis labels and a legend, in a 3x5 bitmap font scaled 2x, and returns PNG
bytes (8-bit RGB, filter 0 on every row).
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib

# 3x5 glyphs, rows top to bottom, "1" = ink.
_FONT = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001010010010",
    "8": "111101111101111", "9": "111101111001111", ".": "000000000000010", "-": "000000111000000",
    ":": "000010000010000", "%": "101001010100101", "(": "010100100100010", ")": "010001001001010",
    "/": "001001010100100", "=": "000111000111000", "+": "000010111010000", ",": "000000000010100",
    "_": "000000000000111", "*": "101010101000000",
    "A": "010101111101101", "B": "110101110101110", "C": "011100100100011", "D": "110101101101110",
    "E": "111100110100111", "F": "111100110100100", "G": "011100101101011", "H": "101101111101101",
    "I": "111010010010111", "J": "001001001101010", "K": "101101110101101", "L": "100100100100111",
    "M": "101111111101101", "N": "110101101101101", "O": "010101101101010", "P": "110101110100100",
    "Q": "010101101110011", "R": "110101110101101", "S": "011100010001110", "T": "111010010010010",
    "U": "101101101101111", "V": "101101101101010", "W": "101101111111101", "X": "101101010101101",
    "Y": "101101010010010", "Z": "111001010100111", " ": "000000000000000",
}
PALETTE = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14), (148, 103, 189), (140, 86, 75)]
SCALE = 2  # font pixels per glyph dot


class Canvas:
    """An RGB raster with a few drawing primitives."""

    def __init__(self, width: int, height: int, background=(255, 255, 255)):
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def set(self, x: int, y: int, color) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            i = 3 * (y * self.width + x)
            self.pixels[i:i + 3] = bytes(color)

    def rect(self, x0: int, y0: int, x1: int, y1: int, color) -> None:
        for y in range(max(0, y0), min(self.height, y1 + 1)):
            for x in range(max(0, x0), min(self.width, x1 + 1)):
                self.set(x, y, color)

    def line(self, x0: float, y0: float, x1: float, y1: float, color, thickness: int = 1) -> None:
        steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        r = thickness // 2
        for k in range(steps + 1):
            t = k / steps
            x, y = round(x0 + (x1 - x0) * t), round(y0 + (y1 - y0) * t)
            self.rect(x - r, y - r, x + r, y + r, color) if r else self.set(x, y, color)

    def text(self, x: int, y: int, s: str, color=(0, 0, 0), scale: int = SCALE) -> None:
        for ch in s.upper():
            glyph = _FONT.get(ch, _FONT["*"])
            for row in range(5):
                for col in range(3):
                    if glyph[row * 3 + col] == "1":
                        self.rect(x + col * scale, y + row * scale, x + col * scale + scale - 1,
                                  y + row * scale + scale - 1, color)
            x += 4 * scale

    def png(self) -> bytes:
        raw = b"".join(b"\x00" + bytes(self.pixels[3 * y * self.width:3 * (y + 1) * self.width])
                       for y in range(self.height))

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        ihdr = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def text_width(s: str, scale: int = SCALE) -> int:
    return 4 * scale * len(s) - scale if s else 0


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    out = [round(start, 10)]
    while out[-1] < hi - step * 1e-9:
        out.append(round(out[-1] + step, 10))
    return out


def _fmt(v: float) -> str:
    if abs(v - round(v)) < 1e-9:
        return str(int(round(v)))
    return f"{v:.3f}".rstrip("0").rstrip(".")


def line_chart(series: dict[str, list[tuple[float, float]]], *, title: str = "", xlabel: str = "",
               ylabel: str = "", width: int = 480, height: int = 320, xticks: list[float] | None = None) -> bytes:
    """PNG bytes of a line chart: ``series`` maps a legend name to its (x, y) points."""
    c = Canvas(width, height)
    left, right, top, bottom = 60, 16, 30, 44
    pts = [p for s in series.values() for p in s]
    xs = [p[0] for p in pts] or [0.0, 1.0]
    ys = [p[1] for p in pts] or [0.0, 1.0]
    x_lo, x_hi = min(xs), max(xs)
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    yt = _ticks(min(ys), max(ys))
    y_lo, y_hi = yt[0], yt[-1]
    if y_hi == y_lo:
        y_hi = y_lo + 1
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * pw

    def py(y: float) -> float:
        return top + ph - (y - y_lo) / (y_hi - y_lo) * ph

    black, grey = (0, 0, 0), (220, 220, 220)
    for v in yt:
        row = round(py(v))
        c.line(left, row, left + pw, row, grey)
        c.line(left - 4, row, left, row, black)
        label = _fmt(v)
        c.text(left - 6 - text_width(label), row - 5, label)
    for v in (xticks if xticks is not None else _ticks(x_lo, x_hi)):
        if x_lo <= v <= x_hi:
            col = round(px(v))
            c.line(col, top + ph, col, top + ph + 4, black)
            label = _fmt(v)
            c.text(col - text_width(label) // 2, top + ph + 7, label)
    c.line(left, top, left, top + ph, black)
    c.line(left, top + ph, left + pw, top + ph, black)
    c.text(left, 8, title)
    c.text(left + pw // 2 - text_width(xlabel) // 2, height - 14, xlabel)
    c.text(4, 8 + 14, ylabel[:7]) if ylabel else None
    ly = top + 4
    for k, (name, points) in enumerate(series.items()):
        color = PALETTE[k % len(PALETTE)]
        ordered = sorted(points)
        for (x0, y0), (x1, y1) in itertools.pairwise(ordered):
            c.line(px(x0), py(y0), px(x1), py(y1), color, thickness=2)
        for x, y in ordered:
            c.rect(round(px(x)) - 2, round(py(y)) - 2, round(px(x)) + 2, round(py(y)) + 2, color)
        lx = left + pw - text_width(name) - 24
        c.rect(lx, ly + 2, lx + 12, ly + 7, color)
        c.text(lx + 16, ly, name, color)
        ly += 14
    return c.png()
