"""The pure-Python PNG line charts: a valid PNG whose pixels follow the data."""

import struct
import zlib

from sgcc.lab import plot


def decode(png: bytes):
    """(width, height, rows of RGB bytes) of an 8-bit RGB, filter-0 PNG, checking CRCs."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + data) & 0xFFFFFFFF
        chunks.append((kind, data))
        pos += 12 + length
    assert [k for k, _ in chunks][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    w, h, depth, ctype, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, ctype, comp, filt, inter) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(d for k, d in chunks if k == b"IDAT"))
    stride = 1 + 3 * w
    assert len(raw) == h * stride
    rows = [raw[y * stride:(y + 1) * stride] for y in range(h)]
    assert all(r[0] == 0 for r in rows)
    return w, h, [r[1:] for r in rows]


def test_png_header_and_pixels_follow_data():
    a = plot.line_chart({"avg": [(1, 1.0), (2, 1.1), (4, 1.2), (8, 1.3)]}, title="best of N", xlabel="N",
                        width=200, height=120)
    b = plot.line_chart({"avg": [(1, 1.0), (2, 1.3), (4, 1.1), (8, 1.2)]}, title="best of N", xlabel="N",
                        width=200, height=120)
    wa, ha, rows_a = decode(a)
    wb, hb, rows_b = decode(b)
    assert (wa, ha) == (wb, hb) == (200, 120)
    assert rows_a != rows_b  # other data, other pixels
    # The series was drawn in its colour.
    flat = b"".join(rows_a)
    color = bytes(plot.PALETTE[0])
    assert any(flat[i:i + 3] == color for i in range(0, len(flat), 3))
    # Deterministic.
    assert a == plot.line_chart({"avg": [(1, 1.0), (2, 1.1), (4, 1.2), (8, 1.3)]}, title="best of N",
                                xlabel="N", width=200, height=120)


def test_text_draws_ink():
    c = plot.Canvas(40, 20)
    c.text(1, 1, "1.5x")
    assert c.pixels != bytearray(b"\xff" * (40 * 20 * 3))
    blank = plot.Canvas(40, 20)
    blank.text(1, 1, " ")
    assert blank.pixels == bytearray(b"\xff" * (40 * 20 * 3))


def test_ticks_cover_range():
    t = plot._ticks(0.97, 1.31)
    assert t[0] <= 0.97 and t[-1] >= 1.31 and len(t) >= 3
