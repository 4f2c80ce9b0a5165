"""Explaining what a candidate changed in a function, in the papers' categories.

The papers (SuperCoder, "analysis of learned transformations") sort what their model
changed in gcc's code into code layout and instruction scheduling (98.5% of problems),
register allocation (16%), control flow (1.5%) and instruction selection (1%).
:func:`classify` puts one function's change into the same categories, from the machine
code, not the text: the function's bytes are read by symbol from the baseline object and
the candidate object the engine assembled (:mod:`sgcc.asm.obj`, which the object checks
have usually read already), disassembled (capstone, AT&T syntax), and normalised before
anything is compared:

* padding is dropped: every ``nop`` form (``nopl``, ``nopw %cs:...``, ``xchg %ax,%ax``);
* branch targets inside the function become block labels (``B3``: the fourth basic block
  in address order, blocks led by the entry, every branch target and every instruction after
  a jump or return), so moving code changes no operand;
* fields the linker fills in (any instruction a relocation touches) lose their numbers and
  keep only the relocation's symbol (``call @printf``, ``movq ?(%rip) @.rodata``): where a
  constant lands is layout, which symbol is called is not;
* a direct branch out of the function with no relocation names the symbol it lands in.

Each instruction then has an *exact* form (mnemonic and normalised operands), a *shape*
(the exact form with every register but ``%rsp``/``%rip`` replaced by a placeholder of the
same width) and its *operation* (the mnemonic; a ``call`` with its target). Branches are
``jmp``, the conditional jumps, ``loop``/``jrcxz`` and ``ret``; a ``call`` is an operation,
not a branch (it returns to the next instruction).

The rules, applied in this order (a function may fall in several categories):

1. *nothing*: same exact sequence, same bytes, same place in its section → ``[]``;
2. ``layout``: same exact sequence (only addresses, padding, encodings or the function's
   alignment differ) → ``["layout"]`` and nothing else;
3. ``control flow``: the number of basic blocks or the multiset of branch kinds (which
   conditional jumps, jumps, returns, indirect jumps) differs;
4. ``instruction selection``: the multiset of operations of the non-branch instructions
   differs, or (without a control-flow change) operations are the same but operands other
   than registers differ (immediates, addressing modes, which constant is loaded);
5. without a control-flow or instruction-selection change, the shapes are the same multiset:
   when the exact forms are the same multiset too, the instructions were only reordered:
   ``scheduling``; otherwise registers differ: ``register allocation`` (a renaming,
   consistent or not), plus ``scheduling`` when the shapes are in another order as well.

So a pure reordering is ``scheduling``; a consistent renaming is ``register allocation``; a
reordering that also renames is both; a loop replaced by a straight-line sequence is
``control flow`` and ``instruction selection``. The order of the returned list is always
:data:`CATEGORIES` order. Anything that cannot be analysed (no such symbol, an object that
does not parse, bytes capstone does not decode) is reported as ``["unknown"]`` by the
``*_or_unknown`` helpers the engine uses: explaining must never fail a run.

This module uses capstone and pyelftools: it is for the engine and tools, never for the
drop-in compile path.
"""

from __future__ import annotations

import bisect
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sgcc.asm.obj import ObjectFile, disassemble, read_object

CATEGORIES = ("layout", "scheduling", "register allocation", "control flow", "instruction selection")
UNKNOWN = "unknown"

__all__ = ["CATEGORIES", "UNKNOWN", "Code", "classify", "classify_objects", "function_code",
           "code_from_bytes", "code_from_asm", "explain_objects", "merge", "renaming"]


# --------------------------------------------------------------------------- registers

def _register_families() -> dict[str, tuple[str, str]]:
    """register name -> (family, width) for the registers a compiler allocates."""
    table: dict[str, tuple[str, str]] = {}
    for x in "abcd":
        for name, width in ((f"r{x}x", "q"), (f"e{x}x", "d"), (f"{x}x", "w"), (f"{x}l", "b"), (f"{x}h", "h")):
            table[name] = (x, width)
    for x in ("si", "di", "bp"):
        for name, width in ((f"r{x}", "q"), (f"e{x}", "d"), (x, "w"), (f"{x}l", "b")):
            table[name] = (x, width)
    for n in range(8, 16):
        for name, width in ((f"r{n}", "q"), (f"r{n}d", "d"), (f"r{n}w", "w"), (f"r{n}b", "b")):
            table[name] = (f"r{n}", width)
    for n in range(32):
        for kind in ("x", "y", "z"):
            table[f"{kind}mm{n}"] = (f"v{n}", kind)
    for n in range(8):
        table[f"mm{n}"] = (f"mm{n}", "m")
        table[f"k{n}"] = (f"k{n}", "k")
    return table


_FAMILIES = _register_families()
_REG_RE = re.compile(r"%([a-z][a-z0-9]*)")
_NUM_RE = re.compile(r"(?<![%\w])-?(?:0x[0-9a-f]+|\d+)")
_BRANCH_MNEMONICS = re.compile(r"^(?:j[a-z]+|loop[a-z]*|jrcxz|jecxz|ret[a-z]*|iret[a-z]*|ud2)$")


# --------------------------------------------------------------------------- the code

@dataclass
class Insn:
    """One normalised instruction (see the module docstring)."""

    mnemonic: str
    exact: str
    shape: str
    operation: str
    branch: bool
    regs: list[str] = field(default_factory=list)  # families, in operand order


@dataclass
class Code:
    """A function's machine code, disassembled and normalised."""

    name: str
    raw: bytes
    offset: int  # where it starts in its section
    insns: list[Insn]
    blocks: int
    padding: int  # bytes of nops dropped

    @property
    def exact(self) -> list[str]:
        return [i.exact for i in self.insns]


def _is_nop(insn) -> bool:
    from capstone import x86

    if insn.id == x86.X86_INS_NOP:
        return True
    # 66 90 (xchg %ax,%ax) is a nop; 87 c0 (xchg %eax,%eax) zero-extends rax in 64-bit mode
    # and gas never emits it as padding, so only the 16-bit form counts.
    return insn.id == x86.X86_INS_XCHG and insn.op_str.replace(" ", "") == "%ax,%ax"


def _disassemble(data: bytes, base: int, insns: list | None = None):
    """AT&T disassembly of all of ``data`` (``insns``: already decoded from ``base``)."""
    if insns is None:
        insns = disassemble(data, base, "att")
    decoded = sum(i.size for i in insns)
    if decoded != len(data):
        raise ValueError(f"capstone decoded {decoded} of {len(data)} bytes")
    return insns


def _build(name: str, data: bytes, base: int, relocs: dict[int, str] | None = None,
           symbols: list[tuple[int, int, str]] | None = None, insns: list | None = None) -> Code:
    """Normalise ``data`` (the function's bytes at section offset ``base``).

    ``relocs``: section offset -> symbol of each relocation in the function; ``symbols``:
    (start, size, name) of the functions of the same section, for branches out of it;
    ``insns``: ``data`` already disassembled (AT&T syntax)."""
    import capstone

    relocs = relocs or {}
    raw = _disassemble(data, base, insns)
    end = base + len(data)
    reloc_at = sorted(relocs)

    def relocation(insn) -> str | None:
        for off in reloc_at:
            if insn.address <= off < insn.address + insn.size:
                return relocs[off]
        return None

    def is_branch(insn) -> bool:
        return bool(_BRANCH_MNEMONICS.match(insn.mnemonic)) or insn.group(capstone.CS_GRP_JUMP) or \
            insn.group(capstone.CS_GRP_RET)

    def direct_target(insn) -> int | None:
        op = insn.op_str.strip()
        if op.startswith("*") or not op:
            return None
        try:
            return int(op, 16)
        except ValueError:
            return None

    # Basic blocks: leaders are the entry, branch targets and what follows a branch.
    leaders = {base}
    for insn in raw:
        if is_branch(insn):
            leaders.add(insn.address + insn.size)
            target = None if relocation(insn) else direct_target(insn)
            if target is not None and base <= target < end:
                leaders.add(target)
    kept = [i for i in raw if not _is_nop(i)]
    padding = sum(i.size for i in raw if _is_nop(i))
    # A leader that is padding leads the block of the next real instruction.
    addresses = [i.address for i in kept]
    block_of_leader: dict[int, int] = {}
    starts = set()
    for leader in leaders:
        k = bisect.bisect_left(addresses, leader)
        if k < len(kept):
            starts.add(kept[k].address)
    block_at: dict[int, int] = {}
    block = -1
    for i in kept:
        if i.address in starts:
            block += 1
        block_at[i.address] = max(block, 0)
    for leader in leaders:
        k = bisect.bisect_left(addresses, leader)
        if k < len(kept):
            block_of_leader[leader] = block_at[kept[k].address]

    def outside(target: int) -> str:
        for start, size, sym in symbols or ():
            if start <= target < start + max(size, 1):
                return f"@{sym}"
        return "@?"

    normalised: list[Insn] = []
    for i in kept:
        mnemonic = i.mnemonic
        op = i.op_str.strip()
        sym = relocation(i)
        branch = is_branch(i)
        call = i.group(capstone.CS_GRP_CALL)
        if sym is not None:
            op = _NUM_RE.sub("?", op) + f" @{sym}"
        elif branch or call:
            target = direct_target(i)
            if target is not None:
                if base <= target < end and not call:
                    op = f"B{block_of_leader.get(target, -1)}"
                else:
                    op = outside(target)
        regs = _REG_RE.findall(op)
        shape = _REG_RE.sub(lambda m: _placeholder(m.group(1)), op)
        exact = f"{mnemonic} {op}".strip()
        operation = f"{mnemonic} {op}" if call and not op.startswith("*") else mnemonic
        normalised.append(Insn(mnemonic, exact, f"{mnemonic} {shape}".strip(), operation, branch,
                          [_FAMILIES[r][0] for r in regs if r in _FAMILIES and r not in ("rsp", "esp")]))
    return Code(name, bytes(data), base, normalised, blocks=block + 1, padding=padding)


def _placeholder(reg: str) -> str:
    fam = _FAMILIES.get(reg)
    if fam is None or reg in ("rsp", "esp", "sp", "spl"):
        return f"%{reg}"
    return f"%R{fam[1]}"


# --------------------------------------------------------------------------- reading objects

def _section_relocs(obj: ObjectFile, section_index: int) -> dict[int, str]:
    """Section offset -> what the relocation there names (a symbol, or a section's name)."""
    return {r.offset: obj.reloc_name(r) or "?" for r in obj.relocs_in(section_index)}


def _function_symbols(obj: ObjectFile) -> dict[str, tuple[int, int, int]]:
    """name -> (section index, value, size) of the defined functions."""
    return {f.name: (f.shndx, f.value, f.size) for f in obj.functions if f.type == "STT_FUNC" and f.name}


def _code_in(obj: ObjectFile, name: str, functions: dict | None = None) -> Code:
    functions = functions if functions is not None else _function_symbols(obj)
    if name not in functions:
        raise KeyError(f"no function {name} in the object")
    shndx, value, size = functions[name]
    data = obj.sections[shndx].data()[value: value + size]
    if len(data) != size:
        raise ValueError(f"{name} lies outside its section")
    relocs = {off: sym for off, sym in _section_relocs(obj, shndx).items() if value <= off < value + size}
    neighbours = [(v, s, n) for n, (ix, v, s) in functions.items() if ix == shndx and n != name]
    insns = obj.insns(shndx, value, value + size, "att") if obj.decoded(shndx) is not None else None
    return _build(name, data, value, relocs, neighbours, insns)


def function_code(obj: str | Path, name: str) -> Code:
    """The normalised machine code of function ``name`` in the ELF object ``obj``."""
    return _code_in(read_object(obj), name)


def code_from_bytes(data: bytes, name: str = "?") -> Code:
    """Normalise raw machine code (no relocations known: every field is taken literally)."""
    return _build(name, bytes(data), 0)


def code_from_asm(text: str, name: str | None = None, *, gcc: str = "gcc", flags=()) -> Code:
    """Assemble AT&T text (trusted: gcc's output or a test's) and normalise function ``name``
    (default: the first function symbol the object defines)."""
    from sgcc import proc

    with tempfile.TemporaryDirectory(prefix="sgcc-explain-") as tmp:
        src, obj = Path(tmp) / "f.s", Path(tmp) / "f.o"
        src.write_text(text, encoding="utf-8", errors="surrogateescape")
        r = proc.run([gcc, *flags, "-c", "-x", "assembler", str(src), "-o", str(obj)], timeout=60)
        if not r.ok:
            raise ValueError(f"the text does not assemble: {r.stderr.decode(errors='replace')[-500:]}")
        parsed = read_object(obj, remember=False)
        functions = _function_symbols(parsed)
        if name is None:
            if not functions:
                raise ValueError("the text defines no function")
            name = min(functions, key=lambda n: (functions[n][0], functions[n][1]))
        return _code_in(parsed, name, functions)


def _as_code(value, name: str | None) -> Code:
    if isinstance(value, Code):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return code_from_bytes(bytes(value), name or "?")
    if isinstance(value, str):
        return code_from_asm(value, name)
    raise TypeError(f"cannot explain a {type(value).__name__}")


# --------------------------------------------------------------------------- the rules

def classify(before, after, name: str | None = None) -> list[str]:
    """What changed from ``before`` to ``after`` (each a :class:`Code`, raw machine code as
    ``bytes``, or assembly text as ``str``, of which function ``name`` or the first one is
    taken), as categories in :data:`CATEGORIES` order (``[]`` when nothing changed)."""
    a, b = _as_code(before, name), _as_code(after, name)
    if a.exact == b.exact:
        if a.raw == b.raw and a.offset == b.offset:
            return []
        return ["layout"]
    found: set[str] = set()
    branches_a = Counter(_branch_kind(i) for i in a.insns if i.branch)
    branches_b = Counter(_branch_kind(i) for i in b.insns if i.branch)
    control = a.blocks != b.blocks or branches_a != branches_b
    if control:
        found.add("control flow")
    plain_a = [i for i in a.insns if not i.branch]
    plain_b = [i for i in b.insns if not i.branch]
    if Counter(i.operation for i in plain_a) != Counter(i.operation for i in plain_b):
        found.add("instruction selection")
    elif not control:
        shapes_a, shapes_b = [i.shape for i in a.insns], [i.shape for i in b.insns]
        if Counter(shapes_a) != Counter(shapes_b):
            found.add("instruction selection")  # other immediates, addressing modes, constants
        else:
            if Counter(a.exact) == Counter(b.exact):
                found.add("scheduling")  # the same instructions in another order
            else:
                found.add("register allocation")
                if shapes_a != shapes_b:
                    found.add("scheduling")
    return [c for c in CATEGORIES if c in found] or ["layout"]


def _branch_kind(insn: Insn) -> str:
    if insn.exact.split(" ", 1)[-1].startswith("*"):
        return insn.mnemonic + " indirect"
    return insn.mnemonic


def renaming(before, after, name: str | None = None) -> dict[str, str] | None:
    """The consistent register renaming (family -> family) that turns ``before`` into
    ``after`` when they have the same shapes in the same order, else None."""
    a, b = _as_code(before, name), _as_code(after, name)
    if [i.shape for i in a.insns] != [i.shape for i in b.insns]:
        return None
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for x, y in zip(a.insns, b.insns):
        if len(x.regs) != len(y.regs):
            return None
        for r, s in zip(x.regs, y.regs):
            if forward.setdefault(r, s) != s or backward.setdefault(s, r) != r:
                return None
    return {k: v for k, v in forward.items() if k != v}


# --------------------------------------------------------------------------- for the engine

def classify_objects(base_obj: str | Path, cand_obj: str | Path, names) -> dict[str, list[str]]:
    """Per function name: its change from ``base_obj`` to ``cand_obj`` (``["unknown"]`` for
    any function that cannot be analysed). Never raises."""
    out: dict[str, list[str]] = {}
    try:
        ea, eb = read_object(base_obj), read_object(cand_obj)
        fa_syms, fb_syms = _function_symbols(ea), _function_symbols(eb)
        for name in names:
            try:
                out[name] = classify(_code_in(ea, name, fa_syms), _code_in(eb, name, fb_syms))
            except Exception:  # noqa: BLE001 - one function that cannot be read
                out[name] = [UNKNOWN]
    except Exception:  # noqa: BLE001 - explaining must never fail a run
        return {name: [UNKNOWN] for name in names}
    return out


def explain_objects(base_obj: str | Path, cand_obj: str | Path) -> dict[str, list[str]]:
    """Every function that changed between two objects of the same source (a whole-unit
    candidate: another compiler variant, profile guidance), with its categories. A function
    only one of them defines (inlined away, a new clone) counts as ``control flow``."""
    try:
        names_a = set(_function_symbols(read_object(base_obj)))
        names_b = set(_function_symbols(read_object(cand_obj)))
    except Exception:  # noqa: BLE001
        return {}
    out = {n: ch for n, ch in classify_objects(base_obj, cand_obj, sorted(names_a & names_b)).items() if ch}
    for n in sorted(names_a ^ names_b):
        out[n] = ["control flow"]
    return out


def merge(per_function: dict[str, list[str]]) -> list[str]:
    """The union of several functions' categories, in :data:`CATEGORIES` order."""
    found = {c for cats in per_function.values() for c in cats}
    return [c for c in (*CATEGORIES, UNKNOWN) if c in found]
