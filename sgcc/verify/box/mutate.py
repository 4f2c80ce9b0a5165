"""Generated differential inputs: the user's test inputs, mutated, to catch candidates that are
right only on the inputs they were shown.

A candidate that hard-codes the visible answers passes every visible test (the papers saw
their model learn exactly that). sgcc therefore derives new inputs from each test input,
runs gcc's own program on them twice (outside the candidate's reach), keeps the ones whose
output and exit status are deterministic, and requires every candidate to match gcc's
program on all of them. This module only makes the inputs; the engine records and compares.

Mutations keep the input's shape where they can, so the program reads them the way it reads
the originals instead of rejecting them at once:

* numbers perturbed in place (±1, doubled, halved, negated, zero, one, type boundaries),
  with the text around them untouched;
* sizes scaled: a leading count with that many records after it becomes half (first
  records kept) or double (records repeated), the count rewritten to match;
* lines dropped, duplicated or swapped;
* a few bytes flipped (the one mutation that may break the shape on purpose).

Everything is deterministic for a given seed.
"""

from __future__ import annotations

import random
import re

#: Mutants per program when the configuration does not say (``mutants`` setting): enough
#: that a program answering only its visible inputs fails several of them.
DEFAULT_COUNT = 16

#: Largest mutant kept, and the most a scaled-up input may grow to.
MAX_BYTES = 1 << 20

_NUMBER = re.compile(rb"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
_BOUNDARIES = (0, 1, -1, 2, 7, 127, 128, 255, 256, 1023, 1024, 32767, 32768, 65535, 65536, 2147483647,
               -2147483648, 4294967295, 10**9, 10**18)


def _format_like(original: bytes, value: float | int) -> bytes:
    """``value`` written the way ``original`` was (integer, decimals, exponent)."""
    text = original.decode("ascii")
    if re.fullmatch(r"-?\d+", text):
        return str(int(value)).encode()
    decimals = len(text.split(".")[1].split("e")[0].split("E")[0]) if "." in text else 0
    if "e" in text.lower():
        return f"{float(value):.{max(decimals, 1)}e}".encode()
    return f"{float(value):.{decimals}f}".encode()


def _perturb_value(text: bytes, rng: random.Random) -> bytes:
    is_int = re.fullmatch(rb"-?\d+", text) is not None
    v: float = int(text) if is_int else float(text)
    choice = rng.randrange(8)
    if choice == 0:
        new = v + 1
    elif choice == 1:
        new = v - 1
    elif choice == 2:
        new = v * 2
    elif choice == 3:
        new = v // 2 if is_int else v / 2
    elif choice == 4:
        new = -v
    elif choice == 5:
        new = rng.choice(_BOUNDARIES)
    elif choice == 6:
        new = v + rng.randint(-10, 10)
    else:
        new = 0 if v else 1
    return _format_like(text, new)


def perturb_numbers(data: bytes, rng: random.Random, share: float = 0.3) -> bytes | None:
    """Some of the numbers in ``data`` changed in place; None if it has none."""
    spans = [m.span() for m in _NUMBER.finditer(data)]
    if not spans:
        return None
    k = max(1, int(len(spans) * share * rng.random()))
    chosen = set(rng.sample(range(len(spans)), min(k, len(spans))))
    out, last = [], 0
    for i, (a, b) in enumerate(spans):
        out.append(data[last:a])
        out.append(_perturb_value(data[a:b], rng) if i in chosen else data[a:b])
        last = b
    out.append(data[last:])
    return b"".join(out)


def _records(data: bytes) -> tuple[bytes, int, list[bytes], bytes, bytes] | None:
    """(head before the count, the count, the records after it, separator, tail) when the
    input starts with a count N followed by N lines (or N whitespace-separated items)."""
    m = _NUMBER.search(data)
    if m is None or not re.fullmatch(rb"\d+", m.group()):
        return None
    n = int(m.group())
    if not 1 <= n <= 1_000_000:
        return None
    head, rest = data[: m.start()], data[m.end():]
    first_nl = rest.find(b"\n")
    if first_nl >= 0:
        # The rest of the count's line stays with it (other parameters on the same line).
        line_tail, body = rest[: first_nl + 1], rest[first_nl + 1:]
        lines = body.split(b"\n")
        trailing = b""
        if lines and lines[-1] == b"":
            lines.pop()
            trailing = b"\n"
        if len(lines) >= n:
            return head + m.group() + line_tail, n, lines[:n], b"\n", (b"\n".join(lines[n:]) + trailing
                                                                         if len(lines) > n else trailing)
        items = body.split()
        if len(items) >= n:
            return head + m.group() + line_tail, n, items[:n], b" ", b"\n"
        return None
    items = rest.split()
    if len(items) >= n:
        return head + m.group() + b" ", n, items[:n], b" ", b"\n"
    return None


def scale(data: bytes, factor: float, rng: random.Random) -> bytes | None:
    """The input with its leading count scaled by ``factor`` and its records to match."""
    found = _records(data)
    if found is None:
        return None
    head, n, records, sep, tail = found
    new_n = max(1, int(n * factor))
    if new_n == n:
        return None
    if new_n < n:
        kept = records[:new_n]
    else:
        kept = [records[i % n] for i in range(new_n)]
        rng.shuffle(kept)
    count_text = str(n).encode()
    at = head.rfind(count_text)
    head = head[:at] + str(new_n).encode() + head[at + len(count_text):]
    body = sep.join(kept)
    if sep == b"\n":
        return head + body + b"\n" + (tail if tail != b"\n" else b"")
    return head + body + tail


def edit_lines(data: bytes, rng: random.Random) -> bytes | None:
    """One line dropped, duplicated, or two lines swapped."""
    lines = data.split(b"\n")
    if len(lines) < 2:
        return None
    i = rng.randrange(len(lines))
    op = rng.randrange(3)
    if op == 0 and len(lines) > 2:
        del lines[i]
    elif op == 1:
        lines.insert(i, lines[i])
    else:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def flip_bytes(data: bytes, rng: random.Random) -> bytes | None:
    if not data:
        return None
    buf = bytearray(data)
    for _ in range(1 + rng.randrange(3)):
        i = rng.randrange(len(buf))
        if buf[i:i + 1].isdigit():
            buf[i] = ord(rng.choice("0123456789"))
        else:
            buf[i] ^= 1 << rng.randrange(7)
    return bytes(buf)


def mutants(inputs: list[bytes], count: int = DEFAULT_COUNT, *, seed: int = 0) -> list[bytes]:
    """Up to ``count`` distinct mutants of ``inputs`` (none equal to an original), spread over
    the inputs and the kinds of mutation, most shape-preserving first."""
    if count <= 0 or not inputs:
        return []
    rng = random.Random(f"sgcc-mutants-{seed}")
    originals = set(inputs)
    out: list[bytes] = []
    seen: set[bytes] = set(originals)
    kinds = [
        lambda d: perturb_numbers(d, rng),
        lambda d: scale(d, 0.5, rng),
        lambda d: perturb_numbers(d, rng, share=1.0),
        lambda d: scale(d, 2.0, rng),
        lambda d: edit_lines(d, rng),
        lambda d: perturb_numbers(d, rng, share=0.05),
        lambda d: flip_bytes(d, rng),
    ]
    attempts = 0
    while len(out) < count and attempts < count * 20:
        data = inputs[attempts % len(inputs)]
        kind = kinds[(attempts // len(inputs)) % len(kinds)]
        attempts += 1
        new = kind(data)
        if new is None or new in seen or len(new) > MAX_BYTES:
            continue
        seen.add(new)
        out.append(new)
    return out
