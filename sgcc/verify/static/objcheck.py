"""The object checks: an assembled candidate against gcc's baseline object.

No new external symbols (beyond a few memory/string routines), no new or changed sections
(other than more code or read-only constants), no relocation types or targets the baseline
lacks, no forbidden instructions however they were spelled (raw ``.byte`` included), every
byte of executable sections decodable, and every instruction within the instruction set the
target promises (:mod:`sgcc.verify.static.isa`). Both objects are read once, through
:mod:`sgcc.asm.obj`, and the later checks (clobbers, explain) share what was read.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from sgcc.asm.obj import ObjectFile, read_object
from sgcc.errors import SgccError
from sgcc.stages import Stage
from sgcc.verify.static import insnfeatures, writable
from sgcc.verify.static import isa as isamod
from sgcc.verify.static.names import DEFAULT_ALLOWED_EXTERNALS
from sgcc.verify.verdict import Verdict

_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 0x1, 0x2, 0x4
_SHF_GROUP, _SHF_TLS, _SHF_LINK_ORDER = 0x200, 0x400, 0x80
_SHF_COMPARED = _SHF_WRITE | _SHF_ALLOC | _SHF_EXECINSTR | _SHF_GROUP | _SHF_TLS | _SHF_LINK_ORDER

_R_NAMES = {
    0: "R_X86_64_NONE", 1: "R_X86_64_64", 2: "R_X86_64_PC32", 3: "R_X86_64_GOT32",
    4: "R_X86_64_PLT32", 9: "R_X86_64_GOTPCREL", 10: "R_X86_64_32", 11: "R_X86_64_32S",
    19: "R_X86_64_TLSGD", 20: "R_X86_64_TLSLD", 21: "R_X86_64_DTPOFF32",
    22: "R_X86_64_GOTTPOFF", 23: "R_X86_64_TPOFF32", 24: "R_X86_64_PC64",
    25: "R_X86_64_GOTOFF64", 26: "R_X86_64_GOTPC32", 37: "R_X86_64_IRELATIVE",
    41: "R_X86_64_GOTPCRELX", 42: "R_X86_64_REX_GOTPCRELX",
}
_R_64, _R_PC32, _R_PLT32, _R_32, _R_32S, _R_PC64 = 1, 2, 4, 10, 11, 24
#: Relocation types ordinary code uses to reach its own data, functions and imports.
_CODE_RELOCS = frozenset({1, 2, 4, 9, 10, 11, 24, 41, 42})
_PC_RELOCS = frozenset({_R_PC32, _R_PLT32, _R_PC64})
_ABS_RELOCS = frozenset({_R_64, _R_32, _R_32S})

#: Sections whose *content* runs code around main: if the baseline has them, the candidate's
#: must be identical (same size and relocations).
_STARTUP_SECTION = re.compile(r"^\.(init_array|fini_array|preinit_array|ctors|dtors|init|fini)(\.|$)")

#: Byte sequences that are system calls wherever execution lands: checked at every offset of
#: executable sections, not just at instruction boundaries, so a jump into the middle of an
#: instruction cannot reach one the linear disassembly did not see.

_FORBIDDEN_NAMES = {
    **dict.fromkeys(["syscall", "sysenter", "int", "int1", "int3", "into"], "system call or trap"),
    **dict.fromkeys(
        "sysexit sysexitq sysret sysretq iret iretd iretq hlt in out insb insw insd outsb outsw "
        "outsd cli sti clts lgdt lidt lldt ltr lmsw sgdt sidt sldt str smsw invd wbinvd wbnoinvd "
        "invlpg invlpga invpcid invept invvpid rdmsr wrmsr rdpmc swapgs rsm monitor mwait "
        "monitorx mwaitx umonitor umwait tpause clac stac xsetbv xsaves xsaves64 xrstors "
        "xrstors64 getsec skinit stgi clgi encls enclu enclv pconfig lar lsl verr verw wrpkru "
        "rdfsbase rdgsbase wrfsbase wrgsbase wrssd wrssq wrussd wrussq rstorssp saveprevssp "
        "setssbsy clrssbsy incsspd incsspq ptwrite xcryptcbc xcryptcfb xcryptctr xcryptecb "
        "xcryptofb xsha1 xsha256 xstore montmul".split(),
        "privileged, I/O or system-state instruction"),
    **dict.fromkeys("ljmp lcall retf retfq lds les lfs lgs lss".split(), "far transfer or segment load"),
    **dict.fromkeys("rdtsc rdtscp rdrand rdseed rdpid rdpru".split(),
                    "nondeterministic: tests could not vouch for it"),
}
_FORBIDDEN_GROUPS = {"INT": "system call or trap", "IRET": "privileged, I/O or system-state instruction",
                     "PRIVILEGE": "privileged, I/O or system-state instruction",
                     "VM": "privileged, I/O or system-state instruction",
                     "SGX": "privileged, I/O or system-state instruction"}
_SEGMENT_REGS = frozenset({"cs", "ds", "es", "fs", "gs", "ss"})


#: _forbidden by instruction bytes (a function of the encoding alone, like
#: insnfeatures.required_features; a candidate repeats most of its baseline's instructions).
_FORBIDDEN_BY_BYTES: dict[bytes, tuple[str, str] | None] = {}


def _forbidden(insn) -> tuple[str, str] | None:
    """(key, why) if a decoded instruction is not accepted; the key is what a baseline
    function must also contain for the candidate's version of it to be allowed."""
    key = bytes(insn.bytes)
    if key in _FORBIDDEN_BY_BYTES:
        return _FORBIDDEN_BY_BYTES[key]
    found = _decide_forbidden(insn)
    if len(_FORBIDDEN_BY_BYTES) >= 1 << 16:
        _FORBIDDEN_BY_BYTES.clear()
    _FORBIDDEN_BY_BYTES[key] = found
    return found


def _decide_forbidden(insn) -> tuple[str, str] | None:
    from capstone import x86_const

    name = insn.insn_name() or insn.mnemonic
    if name in _FORBIDDEN_NAMES:
        return name, _FORBIDDEN_NAMES[name]
    for op in insn.operands:
        if op.type == x86_const.X86_OP_REG and insn.reg_name(op.reg) in _SEGMENT_REGS:
            return "segment-register", "reads or writes a segment register"
    names = insnfeatures.group_names()
    for g in insn.groups:
        why = _FORBIDDEN_GROUPS.get(names.get(g, ""))
        if why:
            return name, why
    if name.startswith("vm") and insnfeatures.encoding(insn) == "legacy":  # not vmovdqu & co
        return name, "virtualization instruction"
    return None


def _load(path: Path) -> ObjectFile:
    """The relocatable object at ``path`` (what the assembler wrote), or SgccError."""
    obj = read_object(path)
    try:
        if not obj.relocatable:
            raise SgccError(f"{Path(path).name} is not a relocatable object")
    except SgccError:
        raise
    except Exception as exc:  # pyelftools raises assorted errors on corrupt input
        raise SgccError(f"{Path(path).name} is not a valid ELF object", cause=exc) from exc
    return obj


def _section_key(sec) -> tuple:
    return (sec.name, sec["sh_type"], sec["sh_flags"] & _SHF_COMPARED)


def _content_sections(obj: ObjectFile):
    for sec in obj.sections:
        if sec["sh_type"] not in ("SHT_NULL", "SHT_SYMTAB", "SHT_STRTAB", "SHT_RELA", "SHT_REL"):
            yield sec


def _relocations(obj: ObjectFile):
    """(relocated section's index, section, [:class:`~sgcc.asm.obj.Reloc`]), from the one
    relocation model of :mod:`sgcc.asm.obj`."""
    by_section: dict[int, list] = {}
    for r in obj.relocs:
        by_section.setdefault(r.section, []).append(r)
    for target, relocs in by_section.items():
        yield target, obj.sections[target], relocs


def _symbol_info(sym) -> tuple[str, str, str, object]:
    return sym.name, sym["st_info"]["bind"], sym["st_info"]["type"], sym["st_shndx"]


#: Undefined symbols the assembler itself creates: gas references the GOT's symbol for any
#: ``@GOTPCREL`` operand. It names the linker's table, not a new capability.
_ASSEMBLER_UNDEFINED = frozenset({"_GLOBAL_OFFSET_TABLE_"})


def _ok_undefined(base: ObjectFile, allowed_new: frozenset[str]) -> set[str]:
    """Names a candidate's object may leave undefined: what gcc's leaves undefined or makes
    global (the linker resolves those as before), and the allowed new externals. Not gcc's
    local functions and data: a local gcc's object defines and the candidate's does not is
    a reference nothing will resolve (the link fails: a broken build, not a slower one)."""
    names = set(allowed_new) | _ASSEMBLER_UNDEFINED
    for sym in base.symbols:
        name, bind, _type, shndx = _symbol_info(sym)
        if not name:
            continue
        if shndx == "SHN_UNDEF" or bind in ("STB_GLOBAL", "STB_WEAK", "STB_LOOS"):
            names.add(name)
    return names


def _where(sec_name: str, offset: int, fn: str | None) -> str:
    return f"{sec_name}+{offset:#x}" + (f" in {fn}" if fn else "")


def check_object(
    candidate_obj: Path,
    baseline_obj: Path,
    *,
    isa: isamod.Target,
    allowed_new_externals: frozenset[str] = DEFAULT_ALLOWED_EXTERNALS,
) -> Verdict:
    """Screen an assembled candidate against gcc's object (stage ``"check"``).

    Refuses: new undefined symbols (except ``allowed_new_externals``), new global
    definitions or changed bindings, indirect functions, sections the baseline lacks (by
    name, type and flags; only new ``.text*`` code and ``.rodata*`` read-only data sections
    are let through) or a missing ``.note.GNU-stack``, changed constructor/destructor
    tables, writable data that is not gcc's byte for byte (:mod:`sgcc.verify.static.writable`),
    relocation types the baseline does not use beyond ordinary code ones, relocations
    against absolute addresses, executable bytes that do not decode, forbidden instructions
    (system calls, privileged, I/O, far transfers, segment registers, nondeterministic ones)
    unless the same baseline function has them, ``syscall`` bytes hidden inside other
    instructions, branches and references into the middle of an instruction or out of their
    section, and instructions the ``isa`` target (an :class:`sgcc.verify.static.isa.Target`) does not promise.
    ``reason`` names the first problem, ``detail`` lists up to 20.
    """
    try:
        cand = _load(Path(candidate_obj))
        base = _load(Path(baseline_obj))
        problems = _object_problems(cand, base, isa, frozenset(allowed_new_externals))
    except SgccError as exc:
        return Verdict(False, Stage.CHECK, exc.message)
    except Exception as exc:  # noqa: BLE001 - a malformed object that pyelftools/capstone choke on is refused
        return Verdict(False, Stage.CHECK, f"the object could not be analysed ({type(exc).__name__})")
    if problems:
        return Verdict(False, Stage.CHECK, problems[0], "\n".join(problems[:20]))
    return Verdict(True, Stage.CHECK)


def _object_problems(cand: ObjectFile, base: ObjectFile, target: isamod.Target,
                     allowed_new: frozenset[str]) -> list[str]:
    problems: list[str] = []

    # -- sections -----------------------------------------------------------------------------
    base_keys = {_section_key(s) for s in _content_sections(base)}
    base_by_name = {s.name: s for s in _content_sections(base)}
    for sec in _content_sections(cand):
        if _section_key(sec) not in base_keys and not _plain_new_section(sec, base_by_name):
            if sec.name in base_by_name:
                problems.append(f"section {sec.name} differs from gcc's (type or flags)")
            else:
                problems.append(f"adds section {sec.name}, which gcc's object does not have")
    cand_names = {s.name for s in _content_sections(cand)}
    if ".note.GNU-stack" in base_by_name and ".note.GNU-stack" not in cand_names:
        problems.append("lacks the .note.GNU-stack marker (the program would get an executable stack)")

    # -- the program's variables are gcc's ---------------------------------------------------------
    problems += writable.problems(cand, base)

    # -- symbols ------------------------------------------------------------------------------
    ok_undef = _ok_undefined(base, allowed_new)
    base_globals = {}
    for sym in base.symbols:
        name, bind, stype, shndx = _symbol_info(sym)
        if name and shndx != "SHN_UNDEF" and bind != "STB_LOCAL":
            base_globals[name] = (bind, stype)
    for sym in cand.symbols:
        name, bind, stype, shndx = _symbol_info(sym)
        if not name:
            continue
        if shndx == "SHN_UNDEF":
            if name not in ok_undef:
                problems.append(f"references new external symbol {name!r}")
            continue
        if stype in ("STT_LOOS", "STT_GNU_IFUNC") and base_globals.get(name, (None, None))[1] != stype:
            problems.append(f"makes {name!r} an indirect function (ifunc)")
        if bind == "STB_LOCAL":
            continue
        if name not in base_globals:
            problems.append(f"defines new global symbol {name!r}")
        elif base_globals[name][0] != bind:
            problems.append(f"changes the binding of {name!r} ({base_globals[name][0]} -> {bind})")

    # -- startup tables must be gcc's exactly ----------------------------------------------------
    base_relocs = {t.name: r for _, t, r in _relocations(base)}
    cand_relocs = {t.name: r for _, t, r in _relocations(cand)}
    for sec in _content_sections(cand):
        if _STARTUP_SECTION.match(sec.name):
            b = base_by_name.get(sec.name)
            if b is None:
                continue  # already reported as new
            same_targets = _reloc_sig(cand, cand_relocs.get(sec.name, [])) == _reloc_sig(
                base, base_relocs.get(sec.name, [])
            )
            if sec["sh_size"] != b["sh_size"] or not same_targets:
                problems.append(f"changes the startup table {sec.name}")

    # -- relocations ----------------------------------------------------------------------------
    base_types = {r.type for r in base.relocs}
    decoded = {d.index: d for d in cand.code}
    starts = {d.index: set(d.addrs) for d in cand.code}
    reloc_sites: dict[int, list[int]] = {}
    for tidx, tsec, relocs in _relocations(cand):
        for r in relocs:
            offset, rtype, symidx, addend = r.offset, r.type, r.symbol, r.addend
            reloc_sites.setdefault(tidx, []).append(offset)
            tname = _R_NAMES.get(rtype, f"type {rtype}")
            if rtype not in _CODE_RELOCS and rtype not in base_types:
                problems.append(
                    f"uses relocation {tname} at {tsec.name}+{offset:#x}, which gcc's object does not"
                )
                continue
            if symidx == 0 or symidx >= len(cand.symbols):
                problems.append(f"relocation at {tsec.name}+{offset:#x} has no symbol (an absolute address)")
                continue
            sym = cand.symbols[symidx]
            shndx = sym["st_shndx"]
            if shndx == "SHN_ABS":
                problems.append(f"relocation at {tsec.name}+{offset:#x} refers to an absolute address")
                continue
            if not isinstance(shndx, int) or shndx not in decoded:
                continue
            # A reference into code: it must land on an instruction the disassembly saw.
            if not tsec["sh_flags"] & _SHF_ALLOC:
                continue  # debug info points one past a function's end; it never runs
            value = sym["st_value"] + addend
            if rtype in _ABS_RELOCS:
                dest = value
            elif rtype in _PC_RELOCS and tidx in decoded:
                insn = _insn_covering(decoded[tidx], offset)
                if insn is None:
                    continue
                dest = value + (insn.address + insn.size - offset)
            else:
                continue
            if dest not in starts[shndx]:
                problems.append(
                    f"refers to {decoded[shndx].name}+{dest:#x} from {tsec.name}+{offset:#x}, "
                    "which is not the start of an instruction"
                )

    # -- code ---------------------------------------------------------------------------------
    base_forbidden: dict[str | None, set[str]] = {}
    for sec in base.code:
        for insn in sec.insns:
            f = _forbidden(insn)
            if f:
                base_forbidden.setdefault(base.function_at(sec.index, insn.address), set()).add(f[0])
    for sec in cand.code:
        if sec.undecodable is not None:
            problems.append(
                f"bytes at {sec.name}+{sec.undecodable:#x} do not decode as instructions "
                "(data or hidden bytes in code)"
            )
        sites = sorted(reloc_sites.get(sec.index, []))
        for insn in sec.insns:
            fn = cand.function_at(sec.index, insn.address)
            f = _forbidden(insn)
            if f and f[0] not in base_forbidden.get(fn, set()):
                name = insn.insn_name() or insn.mnemonic
                problems.append(f"uses {name} at {_where(sec.name, insn.address, fn)}: {f[1]}")
            dest = _unrelocated_target(insn, sites)
            if dest is not None and dest not in starts[sec.index]:
                if 0 <= dest < sec.size:
                    problems.append(
                        f"{insn.mnemonic} at {_where(sec.name, insn.address, fn)} targets "
                        f"{sec.name}+{dest:#x}, the middle of an instruction"
                    )
                else:
                    problems.append(
                        f"{insn.mnemonic} at {_where(sec.name, insn.address, fn)} reaches outside "
                        f"{sec.name} without a relocation"
                    )
    # Kernel-entry bytes hidden inside other instructions are the control-flow proof's concern
    # (sgcc.verify.static.controlflow): counting raw bytes here refused gcc's own code (a vmulpd whose
    # bytes include 0f 05), and such bytes run only if a jump lands inside an instruction.

    # -- instruction set ----------------------------------------------------------------------
    for item in isamod.unsupported_items(cand, target, base):
        name, where, missing = item
        hint = "" if target.host else " (use --isa native to allow)"
        problems.append(
            f"uses {name} at {where}, which needs {', '.join(missing)}: the target "
            f"{target.name} does not promise it{hint}"
        )
    return problems


def _plain_new_section(sec, base_by_name) -> bool:
    """A section gcc's object lacks that is still fine: more code or more read-only data.

    A candidate may move a cold path to ``.text.unlikely`` or need a constant pool
    (``.rodata.cst16``) the baseline did not. Such sections add no capability: code sections
    are disassembled and checked like the rest, read-only data cannot run. Everything else
    (writable, TLS, grouped, other names) must match the baseline by type and flags.
    """
    if sec.name in base_by_name or sec["sh_type"] != "SHT_PROGBITS":
        return False
    flags = sec["sh_flags"] & _SHF_COMPARED
    if sec.name == ".text" or sec.name.startswith(".text."):
        return flags == _SHF_ALLOC | _SHF_EXECINSTR
    if sec.name == ".rodata" or sec.name.startswith(".rodata."):
        return flags == _SHF_ALLOC
    return False


def _reloc_sig(obj: ObjectFile, relocs) -> list:
    """What a table's relocations point at, independent of code layout.

    gas writes a reference to a local function as "section symbol + offset"; the offset moves
    whenever a candidate changes the size of an earlier function, so such targets are named
    by the symbol defined at that offset instead.
    """
    out = []
    for r in relocs:
        place = obj.reloc_place(r)
        if place[0] == "section":  # by name: section indexes differ between the two objects
            place = ("section", obj.sections[place[1]].name, place[2])
        out.append((r.offset, r.type, *place))
    return sorted(out)


def _insn_covering(dec, offset: int):
    k = bisect.bisect_right(dec.addrs, offset) - 1
    if k >= 0 and dec.insns[k].address <= offset < dec.insns[k].address + dec.insns[k].size:
        return dec.insns[k]
    return None


def _unrelocated_target(insn, sites: list[int]) -> int | None:
    """The section offset a direct branch or RIP-relative operand reaches, if no relocation
    patches the instruction (with one, the relocation check covers it)."""
    from capstone import x86_const

    lo = bisect.bisect_left(sites, insn.address)
    if lo < len(sites) and sites[lo] < insn.address + insn.size:
        return None
    names = {x86_const.X86_GRP_JUMP, x86_const.X86_GRP_CALL, x86_const.X86_GRP_BRANCH_RELATIVE}
    if names & set(insn.groups):
        if x86_const.X86_GRP_BRANCH_RELATIVE in insn.groups or insn.opcode[0] in (0xE8, 0xE9, 0xEB):
            for op in insn.operands:
                if op.type == x86_const.X86_OP_IMM:
                    return op.imm
    for op in insn.operands:
        if op.type == x86_const.X86_OP_MEM and op.mem.base == x86_const.X86_REG_RIP:
            return insn.address + insn.size + op.mem.disp
    return None
