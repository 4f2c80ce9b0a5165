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
    relocs = o.relocations_in(main.shndx)
    assert any(o.symbols[symidx].name == "printf" for _off, _t, symidx, _a in relocs)


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
