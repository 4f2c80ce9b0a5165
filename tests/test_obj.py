"""Tests for sgcc.asm.obj, the one object reader: real gcc objects, parsed once per process,
never answered from a stale parse."""

from __future__ import annotations

import os
import shutil

import pytest

from sgcc.asm import obj
from sgcc.errors import SgccError
from sgcc.proc import run

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

SOURCE = r"""
#include <stdio.h>
static int table[4] = {1, 2, 3, 4};
__attribute__((noinline)) int pick(int i) { return table[i & 3]; }
__attribute__((noinline)) int twice(int x) { return pick(x) * 2; }
int main(void) { printf("%d\n", twice(5)); return 0; }
"""


@pytest.fixture
def built(tmp_path):
    src = tmp_path / "p.c"
    src.write_text(SOURCE)
    o = tmp_path / "p.o"
    run(["gcc", "-O2", "-c", "-o", o, src], timeout=120, check=True)
    return o


def test_structure_symbols_relocations_and_code(built):
    o = obj.read_object(built)
    assert o.relocatable
    names = {f.name for f in o.functions}
    assert {"pick", "twice", "main"} <= names
    text = next(d for d in o.code if d.name.startswith(".text"))
    assert text.undecodable is None and text.addrs == [i.address for i in text.insns]
    twice = next(f for f in o.functions if f.name == "twice")
    assert o.function_at(twice.shndx, twice.value) == "twice"
    assert o.function_at(twice.shndx, twice.value + twice.size - 1) == "twice"
    # main calls printf through a relocation in its own section.
    main = next(f for f in o.functions if f.name == "main")
    relocs = o.relocs_in(main.shndx)
    assert any(o.reloc_name(r) == "printf" for r in relocs)


def test_function_instructions_match_a_fresh_decode(built):
    o = obj.read_object(built)
    for f in o.functions:
        data = o.sections[f.shndx].data()[f.value:f.value + f.size]
        for syntax in ("intel", "att"):
            got = [(i.address, i.mnemonic, i.op_str) for i in o.insns(f.shndx, f.value, f.value + f.size, syntax)]
            fresh = [(i.address, i.mnemonic, i.op_str) for i in obj.disassemble(data, f.value, syntax)]
            assert got == fresh, (f.name, syntax)
    f = next(f for f in o.functions if f.name == "twice")
    linear = o.decoded(f.shndx).insns
    assert all(any(i is j for j in linear) for i in o.insns(f.shndx, f.value, f.value + f.size))


def test_parsed_once_while_unchanged(built):
    first = obj.read_object(built)
    assert obj.read_object(built) is first
    assert obj.read_object(str(built)) is first
    assert obj.read_object(built, remember=False) is not first


def test_rewritten_file_is_parsed_again_even_with_the_same_stat(built):
    """Same path, size, inode and modification time, other bytes: a new parse."""
    first = obj.read_object(built)
    st = os.stat(built)
    raw = built.read_bytes()
    assert b"GCC: (" in raw  # gcc's .comment: other bytes of the same length, still an object
    data = raw.replace(b"GCC: (", b"GCC: [", 1)
    with open(built, "r+b") as fh:  # in place: the inode stays
        fh.write(data)
    os.utime(built, ns=(st.st_atime_ns, st.st_mtime_ns))
    st2 = os.stat(built)
    assert (st2.st_size, st2.st_mtime_ns, st2.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    second = obj.read_object(built)
    assert second is not first and second.raw == data


def test_bad_input_is_an_sgcc_error(tmp_path):
    with pytest.raises(SgccError, match="cannot read object"):
        obj.read_object(tmp_path / "missing.o")
    junk = tmp_path / "junk.o"
    junk.write_bytes(b"not an object at all")
    with pytest.raises(SgccError, match="not a valid ELF object"):
        obj.read_object(junk)
    half = tmp_path / "half.o"
    half.write_bytes(b"\x7fELF" + b"\x00" * 40)
    with pytest.raises(SgccError):
        o = obj.read_object(half)
        o.code  # noqa: B018 - parsing is lazy: the error may come with the first use


def _readelf_relocs(path) -> list[tuple]:
    """(patched section, offset, type name, symbol or section name, addend) per line of
    ``readelf -rW``."""
    import re

    out, section = [], None
    text = run(["readelf", "-rW", str(path)], check=True).stdout.decode()
    for line in text.splitlines():
        head = re.match(r"Relocation section '\.rela?(\S*)'", line)
        if head:
            section = head.group(1)
            continue
        m = re.match(r"^([0-9a-f]{16})\s+[0-9a-f]{16}\s+(R_X86_64_\w+)\s+[0-9a-f]{16}\s+(.*?)\s*([+-])\s*([0-9a-f]+)$",
                     line)
        if m:
            addend = int(m.group(5), 16) * (-1 if m.group(4) == "-" else 1)
            out.append((section, int(m.group(1), 16), m.group(2), m.group(3), addend))
            continue
        m = re.match(r"^([0-9a-f]{16})\s+[0-9a-f]{16}\s+(R_X86_64_\w+)\s+([0-9a-f]+)$", line)
        if m:  # no symbol: the addend alone
            out.append((section, int(m.group(1), 16), m.group(2), "", int(m.group(3), 16)))
    return out


#: readelf's names of the relocation types gcc's x86-64 objects use.
_R_NAMES = {1: "R_X86_64_64", 2: "R_X86_64_PC32", 3: "R_X86_64_GOT32", 4: "R_X86_64_PLT32",
            9: "R_X86_64_GOTPCREL", 10: "R_X86_64_32", 11: "R_X86_64_32S", 19: "R_X86_64_TLSGD", 20: "R_X86_64_TLSLD",
            21: "R_X86_64_DTPOFF32", 22: "R_X86_64_GOTTPOFF", 23: "R_X86_64_TPOFF32", 24: "R_X86_64_PC64",
            41: "R_X86_64_GOTPCRELX", 42: "R_X86_64_REX_GOTPCRELX"}


def test_relocations_match_readelf_on_the_corpus(tmp_path):
    """The one relocation model (every proof, the object check, explain and the emulator
    read it) against binutils: every relocation of every corpus object, at -O2 and at -O3
    with -g (debug sections relocate too) and -fpic (GOT and PLT forms)."""
    from tests import screen_corpus

    checked = 0
    for src in screen_corpus.programs():
        for k, flags in enumerate((["-O2"], ["-O3", "-g", "-fpic"])):
            o = tmp_path / f"{src.stem}-{k}.o"
            if not run(["gcc", *flags, "-c", "-o", str(o), str(src)], timeout=120).ok:
                continue
            ob = obj.read_object(o)
            mine = [(ob.sections[r.section].name, r.offset, _R_NAMES.get(r.type, str(r.type)), ob.reloc_name(r),
                     r.addend) for r in ob.relocs]
            assert mine == _readelf_relocs(o), o.name
            checked += len(mine)
    assert checked > 1000
