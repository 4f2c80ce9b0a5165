"""The one reader of ELF objects: sections, symbols, relocations, functions and their code.

Every check that looks at an assembled object (the object screen, the instruction-set check,
the clobber analysis, the explanation of what a candidate changed) reads it through
:func:`read_object`. pyelftools reads the ELF structure, capstone decodes the instructions,
and each object file is parsed once per process: the result is remembered, keyed on the
file's path, size, modification time and inode, and every check shares it. The key is
confirmed by the content's digest before a remembered result is used, so a file rewritten
within the clock's granularity (same size, same inode) is never answered with the parse of
its predecessor -- the objects read here are hostile candidates.

What is parsed is computed lazily (a check that needs only the symbols never disassembles)
and at most once per object. Malformed input raises :class:`sgcc.errors.SgccError`, never
a pyelftools or capstone exception.

Module import stays cheap: capstone and pyelftools are imported inside the functions.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from sgcc.errors import SgccError

__all__ = ["Decoded", "FunctionSymbol", "ObjectFile", "Reloc", "disassemble", "loaded_digest", "read_object",
           "shared_object_name"]

#: Symbol types that mark code: functions and indirect functions (gas may write the latter
#: as STT_LOOS, the value STT_GNU_IFUNC shares).
FUNCTION_TYPES = frozenset({"STT_FUNC", "STT_LOOS", "STT_GNU_IFUNC"})
SHF_EXECINSTR = 0x4

#: Parsed objects kept per process. A few suffice: the baseline, which every candidate of a
#: program is checked against, and the candidates being checked by the engine's workers.
MEMO_SIZE = 16


@dataclass
class Decoded:
    """One executable section, linearly disassembled (capstone, Intel syntax, details on)."""

    name: str
    index: int
    size: int
    insns: list = field(default_factory=list)  # capstone CsInsn, addresses are section offsets
    undecodable: int | None = None  # offset of the first byte capstone could not decode
    data: bytes = b""
    addrs: list[int] = field(default_factory=list)  # instruction start offsets, ascending


_COLD = re.compile(r"^(.*)\.cold(?:\.\d+)?$")

# x86-64 relocation types the proofs tell apart.
R_64, R_PC32, R_GOT32, R_PLT32, R_GOTPCREL, R_32, R_32S, R_PC64 = 1, 2, 3, 4, 9, 10, 11, 24
R_GOTPCRELX, R_REX_GOTPCRELX = 41, 42
GOT_RELOCS = frozenset({R_GOT32, R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX})
PC_RELOCS = frozenset({R_PC32, R_PLT32, R_PC64})
ABS_RELOCS = frozenset({R_64, R_32, R_32S})


class Reloc:
    """One relocation, decoded: the section it patches, where, its type, symbol index and
    addend (:attr:`ObjectFile.relocs`)."""

    __slots__ = ("section", "offset", "type", "symbol", "addend")

    def __init__(self, section: int, offset: int, rtype: int, symbol: int, addend: int):
        self.section, self.offset, self.type, self.symbol, self.addend = section, offset, rtype, symbol, addend

    def __repr__(self) -> str:
        return f"Reloc({self.section}, {self.offset:#x}, type {self.type}, sym {self.symbol}, {self.addend:+})"


@dataclass(frozen=True)
class FunctionSymbol:
    """A defined symbol of one of :data:`FUNCTION_TYPES` in a section."""

    name: str
    shndx: int
    value: int
    size: int
    type: str


def disassemble(data: bytes, base: int, syntax: str = "intel") -> list:
    """Decode ``data`` (at address ``base``) until the first byte that does not decode;
    capstone instructions with details, in ``"intel"`` or ``"att"`` syntax."""
    import capstone

    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    if syntax == "att":
        md.syntax = capstone.CS_OPT_SYNTAX_ATT
    md.detail = True
    return list(md.disasm(data, base))


class ObjectFile:
    """One parsed x86-64 ELF object; build it with :func:`read_object`."""

    def __init__(self, path: Path, raw: bytes, digest: bytes | None = None):
        import io

        from elftools.elf.elffile import ELFFile

        self.path = Path(path)
        self.raw = raw
        self.digest = digest if digest is not None else hashlib.sha256(raw).digest()
        self._lock = threading.Lock()
        self._insns: dict[tuple, list] = {}
        try:
            self.elf = ELFFile(io.BytesIO(raw))
            if self.elf.elfclass != 64 or self.elf["e_machine"] != "EM_X86_64":
                raise SgccError(f"{self.path.name} is not an x86-64 ELF object")
        except SgccError:
            raise
        except Exception as exc:  # pyelftools raises assorted errors on corrupt input
            raise self._invalid(exc) from exc

    def __repr__(self) -> str:
        return f"ObjectFile({str(self.path)!r})"

    def _invalid(self, exc: Exception) -> SgccError:
        return SgccError(f"{self.path.name} is not a valid ELF object", cause=exc)

    # -- structure ---------------------------------------------------------------------------

    @cached_property
    def relocatable(self) -> bool:
        """Whether this is a relocatable object (``ET_REL``), what the assembler writes."""
        return self.elf["e_type"] == "ET_REL"

    @cached_property
    def sections(self) -> list:
        """pyelftools sections, by index (the null section included)."""
        try:
            return list(self.elf.iter_sections())
        except Exception as exc:  # corrupt input
            raise self._invalid(exc) from exc

    @cached_property
    def symbols(self) -> list:
        """The symbol table's pyelftools symbols, by index (index 0 included); [] without one."""
        from elftools.elf.sections import SymbolTableSection

        try:
            symbols: list = []
            for sec in self.sections:
                if isinstance(sec, SymbolTableSection) and sec["sh_type"] == "SHT_SYMTAB":
                    symbols = list(sec.iter_symbols())
            return symbols
        except Exception as exc:  # corrupt input
            raise self._invalid(exc) from exc

    @cached_property
    def _raw_relocations(self) -> list[tuple[int, list[tuple[int, int, int, int]]]]:
        """Per relocation section: (index of the section it patches as ``sh_info`` says,
        possibly out of range in a corrupt file, [(offset, type, symbol index, addend)]).
        Read through :attr:`relocs`, the one decoded model."""
        from elftools.elf.relocation import RelocationSection

        try:
            out = []
            for sec in self.sections:
                if isinstance(sec, RelocationSection):
                    rela = sec.is_RELA()
                    out.append((sec["sh_info"], [
                        (r["r_offset"], r["r_info_type"], r["r_info_sym"], r["r_addend"] if rela else 0)
                        for r in sec.iter_relocations()
                    ]))
            return out
        except Exception as exc:  # corrupt input
            raise self._invalid(exc) from exc


    @cached_property
    def functions(self) -> list[FunctionSymbol]:
        """Every defined function symbol (:data:`FUNCTION_TYPES`, in a section), any size."""
        out = []
        for sym in self.symbols:
            kind = sym["st_info"]["type"]
            if kind in FUNCTION_TYPES and isinstance(sym["st_shndx"], int):
                out.append(FunctionSymbol(sym.name, sym["st_shndx"], sym["st_value"], sym["st_size"], kind))
        return out

    # -- code --------------------------------------------------------------------------------

    @cached_property
    def code(self) -> list[Decoded]:
        """Every executable section with contents, disassembled once from its start."""
        try:
            out = []
            for idx, sec in enumerate(self.sections):
                if not sec["sh_flags"] & SHF_EXECINSTR or sec["sh_type"] == "SHT_NOBITS":
                    continue
                data = sec.data()
                dec = Decoded(name=sec.name, index=idx, size=len(data), data=data)
                end = 0
                for insn in disassemble(data, 0):
                    dec.insns.append(insn)
                    dec.addrs.append(insn.address)
                    end = insn.address + insn.size
                if end < len(data):
                    dec.undecodable = end
                out.append(dec)
            return out
        except SgccError:
            raise
        except Exception as exc:  # corrupt input
            raise self._invalid(exc) from exc

    @cached_property
    def _code_by_index(self) -> dict[int, Decoded]:
        return {d.index: d for d in self.code}

    def decoded(self, shndx: int) -> Decoded | None:
        """The disassembly of executable section ``shndx``, or None."""
        return self._code_by_index.get(shndx)

    @cached_property
    def extents(self) -> dict[str, tuple[int, int, int]]:
        """The one model of where functions lie: name -> (section, start, end) for every
        named ``STT_FUNC`` symbol in a code section. The end is the symbol's size or, for a
        symbol without one (hand-written assembly without ``.size``), the next symbol of the
        section or its end. The first symbol of a name wins."""
        code = {d.index: d.size for d in self.code}
        starts: dict[int, list[int]] = {}
        for sym in self.symbols:
            shndx = sym["st_shndx"]
            if isinstance(shndx, int) and shndx in code:
                starts.setdefault(shndx, []).append(sym["st_value"])
        for values in starts.values():
            values.sort()
        out: dict[str, tuple[int, int, int]] = {}
        for fn in self.functions:
            if fn.type != "STT_FUNC" or not fn.name or fn.shndx not in code:
                continue
            if fn.size:
                end = fn.value + fn.size
            else:
                later = starts[fn.shndx]
                k = bisect.bisect_right(later, fn.value)
                end = later[k] if k < len(later) else code[fn.shndx]
            out.setdefault(fn.name, (fn.shndx, fn.value, end))
        return out

    @cached_property
    def _function_index(self) -> dict[int, tuple[list[int], list[tuple[int, int, int, str]]]]:
        index: dict[int, tuple[list[int], list[tuple[int, int, int, str]]]] = {}
        for fn in sorted((s, a, b, n) for n, (s, a, b) in self.extents.items()):
            starts, fns = index.setdefault(fn[0], ([], []))
            starts.append(fn[1])
            fns.append(fn)
        return index

    def function_at(self, shndx: int, offset: int) -> str | None:
        """The function (:attr:`extents`) covering ``offset`` in section ``shndx``; where
        extents overlap (aliases, a symbol inside another), the one that starts last."""
        entry = self._function_index.get(shndx)
        if entry is None:
            return None
        starts, fns = entry
        i = bisect.bisect_right(starts, offset) - 1
        # Functions do not nest in gcc output; a few steps back covers aliases and odd sizes.
        for j in range(i, max(i - 16, -1), -1):
            if fns[j][1] <= offset < fns[j][2]:
                return fns[j][3]
        return None

    def group_of(self, name: str) -> str:
        """A function and its ``.cold`` parts (``f.cold``, ``f.cold.1``) are one unit of
        control flow: the name of the function ``name`` belongs to."""
        m = _COLD.match(name)
        return m.group(1) if m and m.group(1) in self.extents else name

    # -- relocations, decoded ---------------------------------------------------------------

    @cached_property
    def relocs(self) -> list[Reloc]:
        """Every relocation of a section that exists, decoded once (:class:`Reloc`)."""
        out: list[Reloc] = []
        for target, relocs in self._raw_relocations:
            if not 0 < target < len(self.sections):
                raise SgccError(f"{self.path.name}: relocation section for a missing section")
            out.extend(Reloc(target, *r) for r in relocs)
        return out

    @cached_property
    def _relocs_by_section(self) -> dict[int, list[Reloc]]:
        out: dict[int, list[Reloc]] = {}
        for r in self.relocs:
            out.setdefault(r.section, []).append(r)
        return out

    def relocs_in(self, shndx: int) -> list[Reloc]:
        """Every relocation that patches section ``shndx``, in file order."""
        return self._relocs_by_section.get(shndx, [])

    def reloc_name(self, r: Reloc) -> str:
        """What relocation ``r`` names, as ``readelf -r`` shows it: its symbol's name, a
        section symbol's section name, or "" when it has no symbol."""
        sym = self.symbols[r.symbol] if 0 < r.symbol < len(self.symbols) else None
        if sym is None:
            return ""
        if sym["st_info"]["type"] == "STT_SECTION":
            shndx = sym["st_shndx"]
            return self.sections[shndx].name if isinstance(shndx, int) and 0 < shndx < len(self.sections) else "?"
        return sym.name

    @cached_property
    def _named_places(self) -> dict[tuple[int, int], str]:
        places: dict[tuple[int, int], str] = {}
        for sym in self.symbols:
            if sym.name and sym["st_info"]["type"] not in ("STT_SECTION", "STT_FILE") \
                    and isinstance(sym["st_shndx"], int):
                places.setdefault((sym["st_shndx"], sym["st_value"]), sym.name)
        return places

    def reloc_place(self, r: Reloc) -> tuple:
        """What relocation ``r`` points at, independent of the layout of code and constants:
        ``("symbol", name, addend)``; ``("section", index, offset)`` for a place no symbol
        names; ``("absolute", addend)`` with no symbol. gas writes a reference to a local
        function or static as "section symbol + offset", an offset that moves whenever an
        earlier function changes size: such a place is named by the symbol defined there."""
        sym = self.symbols[r.symbol] if 0 < r.symbol < len(self.symbols) else None
        if sym is None:
            return ("absolute", r.addend)
        shndx = sym["st_shndx"]
        if sym["st_info"]["type"] != "STT_SECTION" or not isinstance(shndx, int):
            return ("symbol", sym.name, r.addend)
        offset = sym["st_value"] + r.addend
        named = self._named_places.get((shndx, offset))
        return ("symbol", named, 0) if named else ("section", shndx, offset)

    @cached_property
    def _reloc_sites(self) -> dict[int, tuple[list[int], dict[int, Reloc]]]:
        sites: dict[int, tuple[list[int], dict[int, Reloc]]] = {}
        for r in self.relocs:
            offsets, by = sites.setdefault(r.section, ([], {}))
            if r.offset not in by:
                offsets.append(r.offset)
                by[r.offset] = r
        for offsets, _by in sites.values():
            offsets.sort()
        return sites

    def reloc_in(self, shndx: int, start: int, end: int) -> Reloc | None:
        """The first relocation that patches bytes ``[start, end)`` of section ``shndx``
        (an instruction's), or None."""
        entry = self._reloc_sites.get(shndx)
        if entry is None:
            return None
        offsets, by = entry
        k = bisect.bisect_left(offsets, start)
        return by[offsets[k]] if k < len(offsets) and offsets[k] < end else None

    def target(self, r: Reloc, place_end: int | None = None) -> tuple[str, Any]:
        """Where relocation ``r`` points: ``("code", (section, offset))``, ``("external",
        name)``, ``("data", (section, offset))`` or ``("absolute", value)``.

        ``place_end`` is the end of the instruction holding a PC-relative field: the CPU adds
        the field to it, so the target is ``S + A + (end - P)``."""
        sym = self.symbols[r.symbol] if 0 < r.symbol < len(self.symbols) else None
        if sym is None:
            return ("absolute", r.addend)
        shndx = sym["st_shndx"]
        value = sym["st_value"] + r.addend
        if r.type in PC_RELOCS and place_end is not None:
            value += place_end - r.offset
        if shndx == "SHN_UNDEF":
            return ("external", sym.name)
        if not isinstance(shndx, int):
            return ("absolute", value)
        if self.decoded(shndx) is not None:
            return ("code", (shndx, value))
        return ("data", (shndx, value))

    def insns(self, shndx: int, start: int, end: int, syntax: str = "intel") -> list:
        """The instructions decoded from ``start`` in executable section ``shndx``, up to
        ``end`` (or the section's end) or the first bytes that do not decode there; [] for a
        section that is not code. Remembered per range; in Intel syntax the section's linear
        disassembly is reused when it reaches ``start`` and ends exactly at ``end``."""
        key = (shndx, start, end, syntax)
        with self._lock:
            found = self._insns.get(key)
        if found is not None:
            return found
        dec = self.decoded(shndx)
        if dec is None:
            return []
        stop = min(end, len(dec.data))
        out = None
        if syntax == "intel" and start < stop:
            k = bisect.bisect_left(dec.addrs, start)
            if k < len(dec.addrs) and dec.addrs[k] == start:
                j = k
                while j < len(dec.insns) and dec.insns[j].address + dec.insns[j].size <= stop:
                    j += 1
                if j > k and dec.insns[j - 1].address + dec.insns[j - 1].size == stop:
                    out = dec.insns[k:j]
        if out is None:
            try:
                out = disassemble(dec.data[start:stop], start, syntax) if start < stop else []
            except Exception as exc:  # corrupt input
                raise self._invalid(exc) from exc
        with self._lock:
            self._insns[key] = out
        return out


_MEMO: OrderedDict[tuple, ObjectFile] = OrderedDict()
_MEMO_LOCK = threading.Lock()


def read_object(path: str | os.PathLike, *, remember: bool = True) -> ObjectFile:
    """The parsed object at ``path``, parsed once per process while the file is unchanged.

    ``remember=False`` parses without keeping the result (a temporary file read once).
    Raises :class:`SgccError` when the file cannot be read or is not an x86-64 ELF object.
    """
    p = Path(path)
    try:
        st = os.stat(p)
        raw = p.read_bytes()
    except OSError as exc:
        raise SgccError(f"cannot read object {path}", cause=exc) from exc
    if not remember:
        return ObjectFile(p, raw)
    key = (os.path.abspath(p), st.st_size, st.st_mtime_ns, st.st_ino)
    digest = hashlib.sha256(raw).digest()
    with _MEMO_LOCK:
        found = _MEMO.get(key)
        if found is not None and found.digest == digest:
            _MEMO.move_to_end(key)
            return found
    obj = ObjectFile(p, raw, digest)
    with _MEMO_LOCK:
        _MEMO[key] = obj
        _MEMO.move_to_end(key)
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
    return obj


# -- linked programs and libraries (whole files, not the objects the checks above read) -----

SHF_ALLOC = 0x2


def _elf(path: str | os.PathLike):
    """(the open file, its ELFFile), or None when ``path`` is no ELF file."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    if f.read(4) != b"\x7fELF":
        f.close()
        return None
    f.seek(0)
    from elftools.elf.elffile import ELFFile

    try:
        return f, ELFFile(f)
    except Exception:  # noqa: BLE001 - malformed: not an ELF file we can read
        f.close()
        return None


def shared_object_name(path: str | os.PathLike) -> str | None:
    """The ``DT_SONAME`` of a shared library (what programs that link it name, and the loader
    looks for), or None: no ELF shared object, or none with a name."""
    opened = _elf(path)
    if opened is None:
        return None
    f, elf = opened
    try:
        if elf.header["e_type"] != "ET_DYN":
            return None
        dyn = elf.get_section_by_name(".dynamic")
        for tag in dyn.iter_tags() if dyn is not None else ():
            if tag.entry.d_tag == "DT_SONAME":
                return str(tag.soname)
        return None
    except Exception:  # noqa: BLE001 - malformed
        return None
    finally:
        f.close()


def loaded_digest(path: str | os.PathLike) -> str | None:
    """SHA-256 of what the loader maps of a program or library: the name, type, flags and
    contents of every ``SHF_ALLOC`` section, in order (debug information, symbol tables and
    the producer string left out, and the build ID, which the linker computes over them
    too). Two builds with the same digest run the same code on the same data. None for a
    file that is no ELF file."""
    opened = _elf(path)
    if opened is None:
        return None
    f, elf = opened
    h = hashlib.sha256()
    try:
        for sec in elf.iter_sections():
            if not sec["sh_flags"] & SHF_ALLOC or sec.name == ".note.gnu.build-id":
                continue
            h.update(f"{sec.name}\0{sec['sh_type']}\0{sec['sh_flags']}\0{sec['sh_addr']}\0".encode())
            if sec["sh_type"] != "SHT_NOBITS":
                h.update(sec.data())
        return h.hexdigest()
    except Exception:  # noqa: BLE001 - malformed
        return None
    finally:
        f.close()
