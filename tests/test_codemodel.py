"""The one model of the code every proof reads (sgcc.asm.obj: function extents, function_at,
``.cold`` grouping, relocations, instruction boundaries) against binutils on the corpus:
``readelf -sW`` for the symbols, ``readelf -rW`` for the relocations, ``objdump -d`` for
where instructions start and which function each one belongs to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.obj import read_object

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((Path(__file__).parent / "asm_corpus").glob("*.c")) + \
    sorted((ROOT / "examples" / "programs").glob("*/*.c"))
FLAG_SETS = [["-O2"], ["-O3", "-fPIC", "-freorder-blocks-and-partition"]]

_RELOC = re.compile(r"^([0-9a-f]+)\s+([0-9a-f]+)\s+(\S+)\s+(?:([0-9a-f]+)\s+(.*?)\s*)?([+-])\s*([0-9a-f]+)$")


def _objects(tmp: Path, flags: list[str]):
    for src in SOURCES:
        obj = tmp / f"{src.stem}.o"
        r = proc.run(["gcc", *flags, "-w", "-c", str(src), "-o", str(obj)], timeout=120)
        if r.ok:
            yield src, obj


def _out(argv: list[str]) -> str:
    return proc.run(argv, timeout=60, check=True).stdout.decode()


@pytest.mark.parametrize("flags", FLAG_SETS, ids=[" ".join(f) for f in FLAG_SETS])
def test_the_model_agrees_with_binutils(tmp_path, flags):
    checked = 0
    for src, path in _objects(tmp_path, flags):
        obj = read_object(path, remember=False)
        where = f"{src.name} {flags}"
        names = {i: sec.name for i, sec in enumerate(obj.sections)}
        by_name = {v: k for k, v in names.items()}

        # Function extents: every sized FUNC symbol, as readelf lists it.
        for line in _out(["readelf", "-sW", str(path)]).splitlines():
            f = line.split()
            if len(f) == 8 and f[3] == "FUNC" and f[6].isdigit():
                value, size, ndx, name = int(f[1], 16), int(f[2], 0), int(f[6]), f[7]
                if size:
                    assert obj.extents[name] == (ndx, value, value + size), (where, name)
                    for at in (value, value + size - 1):  # an alias may name the same extent
                        assert obj.extents[obj.function_at(ndx, at)] == obj.extents[name], (where, name)
                if ".cold" in name:
                    assert obj.group_of(name) == name.split(".cold")[0], (where, name)

        # Relocations: section, offset, type, symbol index and addend, as readelf decodes them.
        theirs, section = [], None
        for line in _out(["readelf", "-rW", str(path)]).splitlines():
            m = re.match(r"Relocation section '\.rela(\S+)'", line)
            if m:
                section = by_name[m.group(1)]
                continue
            m = _RELOC.match(line.strip())
            if m and section is not None:
                info = int(m.group(2), 16)
                addend = int(m.group(7), 16) * (-1 if m.group(6) == "-" else 1)
                theirs.append((section, int(m.group(1), 16), info & 0xFFFFFFFF, info >> 32, addend))
        ours = [(r.section, r.offset, r.type, r.symbol, r.addend) for r in obj.relocs]
        assert sorted(ours) == sorted(theirs), where
        for sec, off, _t, _s, _a in theirs:
            assert obj.reloc_in(sec, off, off + 1).offset == off

        # Instruction starts and the function each instruction lies in, as objdump sees them.
        section, fn = None, None
        starts: dict[int, list[int]] = {}
        for line in _out(["objdump", "-d", "-w", "--no-show-raw-insn", str(path)]).splitlines():
            m = re.match(r"Disassembly of section (\S+):", line)
            if m:
                section, fn = by_name[m.group(1)], None
                continue
            m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
            if m:
                fn = m.group(1)
                continue
            m = re.match(r"^\s+([0-9a-f]+):\t", line)
            if m and section is not None:
                addr = int(m.group(1), 16)
                starts.setdefault(section, []).append(addr)
                # objdump names padding after a function's end by that function; the model
                # ends it where its size says.
                if fn in obj.extents and addr < obj.extents[fn][2]:
                    got = obj.function_at(section, addr)
                    assert got is not None and obj.extents[got] == obj.extents[fn], (where, fn, hex(addr))
        assert starts and theirs, where  # the parsers read something: every object has code and calls
        for sec, addrs in starts.items():
            dec = obj.decoded(sec)
            assert dec is not None and dec.addrs == addrs, (where, names[sec])
        checked += 1
    assert checked >= 20
