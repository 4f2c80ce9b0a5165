"""Writable data must be gcc's exactly: the object check's rule for ``.data``, ``.bss`` and
common symbols.

A candidate replaces code. The program's variables (their sizes, initial values, names and
what their pointers point at) are the baseline's, whatever the candidate: a per-function
candidate is joined with gcc's data as it is, and a whole-file candidate carries gcc's data
definitions in place of its own (:mod:`sgcc.candidates.transplant.wholefile`). So every
writable section of the candidate's object must match gcc's byte for byte, define the same
symbols at the same offsets with the same sizes and bindings, and relocate to the same
targets; common symbols must be the same. Otherwise a candidate could add a writable
global, change an initializer, or make one name alias another's storage.

Relocation targets are compared by what they name, not where it landed: a function by its
symbol (gas writes a local function as "section + offset", which moves when code changes
size), a string or constant in a mergeable section by its bytes (a candidate may add
constants in front of it). Anything else must be the same section and offset.

``.data.rel.ro`` (read-only once relocated) is not writable data here: gcc puts a
function's constant tables there, and the control-flow proof checks the code pointers in
it (:mod:`sgcc.verify.static.controlflow`).
"""

from __future__ import annotations

_SHF_WRITE, _SHF_MERGE, _SHF_STRINGS = 0x1, 0x10, 0x20
_TYPES = ("SHT_PROGBITS", "SHT_NOBITS")
#: Longest string compared for a target in a mergeable string section.
_MAX_STRING = 4096


def is_writable_data(sec) -> bool:
    """Whether ``sec`` holds the program's variables (writable, not RELRO)."""
    name = sec.name
    return bool(sec["sh_flags"] & _SHF_WRITE) and sec["sh_type"] in _TYPES and not (
        name == ".data.rel.ro" or name.startswith(".data.rel.ro."))


def _sections(obj) -> dict[str, list]:
    out: dict[str, list] = {}
    for sec in obj.sections:
        if is_writable_data(sec):
            out.setdefault(sec.name, []).append(sec)
    return out


def _symbols_in(obj, index: int) -> list[tuple]:
    return sorted((s.name, s["st_value"], s["st_size"], s["st_info"]["bind"], s["st_info"]["type"],
                   s["st_other"]["visibility"])
                  for s in obj.symbols
                  if s.name and s["st_shndx"] == index and s["st_info"]["type"] not in ("STT_SECTION", "STT_FILE"))


def _commons(obj) -> list[tuple]:
    return sorted((s.name, s["st_value"], s["st_size"], s["st_info"]["bind"]) for s in obj.symbols
                  if s.name and s["st_shndx"] == "SHN_COMMON")


def _target(obj, r) -> tuple:
    """What a relocation points at, independent of the layout of code and constants
    (:meth:`sgcc.asm.obj.ObjectFile.reloc_place`), a merged constant or string by its bytes."""
    place = obj.reloc_place(r)
    if place[0] != "section":
        return place
    shndx, offset = place[1], place[2]
    if not 0 < shndx < len(obj.sections):
        return ("section", "?", offset)
    sec = obj.sections[shndx]
    if sec["sh_flags"] & _SHF_MERGE and not sec["sh_flags"] & _SHF_WRITE and sec["sh_type"] == "SHT_PROGBITS":
        data = sec.data()
        if 0 <= offset < len(data):
            if sec["sh_flags"] & _SHF_STRINGS:
                end = data.find(b"\0", offset, offset + _MAX_STRING)
                if end >= 0:
                    return ("string", sec.name, data[offset:end])
            else:
                size = max(1, sec["sh_entsize"])
                return ("constant", sec.name, data[offset:offset + size])
    return ("section", sec.name, offset)


def _relocs(obj, index: int) -> list[tuple]:
    return sorted((r.offset, r.type, *_target(obj, r)) for r in obj.relocs_in(index))


def problems(cand, base) -> list[str]:
    """Why ``cand``'s writable data is not ``base``'s (both :class:`sgcc.asm.obj.ObjectFile`)."""
    out: list[str] = []
    cs, bs = _sections(cand), _sections(base)
    for name in sorted(set(cs) | set(bs)):
        c, b = cs.get(name, []), bs.get(name, [])
        if len(c) != len(b):
            out.append(f"writable section {name} is not gcc's (" +
                       ("added" if not b else "removed" if not c else "another number of them") + ")")
            continue
        for cs_, bs_ in zip(c, b):
            if (cs_["sh_type"], cs_["sh_size"], cs_["sh_flags"]) != (bs_["sh_type"], bs_["sh_size"], bs_["sh_flags"]):
                out.append(f"writable section {name} differs from gcc's in size or kind "
                           f"({cs_['sh_size']} bytes, gcc's {bs_['sh_size']})")
            elif cs_["sh_type"] == "SHT_PROGBITS" and cs_.data() != bs_.data():
                out.append(f"writable section {name} holds other initial values than gcc's")
            elif _symbols_in(cand, cand.sections.index(cs_)) != _symbols_in(base, base.sections.index(bs_)):
                out.append(f"writable section {name} defines other symbols than gcc's (names, offsets, "
                           "sizes or bindings)")
            elif _relocs(cand, cand.sections.index(cs_)) != _relocs(base, base.sections.index(bs_)):
                out.append(f"writable section {name} points at other things than gcc's")
    if _commons(cand) != _commons(base):
        out.append("common symbols differ from gcc's")
    return out
