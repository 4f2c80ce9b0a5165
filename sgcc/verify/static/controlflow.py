"""Control-flow validation of an assembled candidate, in the manner of Native Client's validator.

The text screen and the object checks say what a candidate *contains*; this module proves
where its code can *go*. Tests cannot show that: a candidate can reach any libc function
through a computed address (printf's GOT slot plus an offset, then ``push``/``ret``) with no
new import, no system-call bytes and no visible call, and behave perfectly under test.

Every function of the candidate object (a whole translation unit with candidate units in
it) is disassembled and walked as a control-flow graph. It may transfer control only

* within itself (its ``.cold`` part included), to instruction starts;
* by direct call or jump to a function entry of the same unit, or to an external function
  the baseline unit already calls, in the same form (through the PLT or directly);
* through jump tables whose every entry lies on an instruction of the function that jumps
  through them, and only where gcc's function has an indirect jump too;
* by indirect call only where gcc's function (or, for a private copy, gcc's unit) has one;
* by ``ret``, or a tail jump, only where a stack-height analysis proves the stack pointer
  is back at its entry height (so the return address is the caller's).

It may not write (or read) the return-address slot, take the address of a function or a
label that gcc's unit does not take (GOT loads, ``lea sym(%rip)`` of code, code addresses
in data), fall off the end of a function except after a call to a function that does not
return, or have code outside ``.text*`` or in a writable section. Whatever the analysis
cannot prove is refused. gcc's own code must always pass: the test suite runs the validator
over every object of the corpus under every flag set.
"""

from __future__ import annotations

import bisect
from pathlib import Path

from sgcc.errors import SgccError
from sgcc.verify.static.codemodel import (
    GOT_RELOCS,
    PC_RELOCS,
    R_PLT32,
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHF_WRITE,
    Baseline,
    Unit,
    at,
    branch_kind,
    covering,
)
from sgcc.verify.static.infoflow import Facts, Flow
from sgcc.verify.static.names import DEFAULT_ALLOWED_EXTERNALS
from sgcc.verify.static.stackframe import Frame, registers, step

#: Most instructions one function may have before the analysis gives up (and refuses).
MAX_INSNS = 200_000


class Problem:
    """One broken rule: ``rule`` is a short name, ``text`` says where and what."""

    __slots__ = ("rule", "text")

    def __init__(self, rule: str, text: str):
        self.rule, self.text = rule, text

    def __str__(self) -> str:
        return f"{self.rule}: {self.text}"

    def __repr__(self) -> str:
        return f"Problem({self.rule!r}, {self.text!r})"


# --------------------------------------------------------------------------------- the proof

def validate(candidate: Unit, baseline: Baseline, untrusted=frozenset(), *, record: dict | None = None
             ) -> list[Problem]:
    """Every broken rule in ``candidate`` (empty: proven), at most a few per rule.

    ``untrusted``: the functions an untrusted generator wrote (or True: every function),
    whose groups are also held to the information-flow rule (:mod:`sgcc.verify.static.infoflow`)
    against what gcc's same function reads. ``record`` (a dict): walk every group in record
    mode instead and fill it with each group's :class:`~sgcc.verify.static.infoflow.Facts` (used on
    gcc's own object, once per baseline)."""
    problems: list[Problem] = []
    unit = candidate
    base_unit = baseline.unit

    def add(rule: str, text: str) -> None:
        if sum(p.rule == rule for p in problems) < 5:
            problems.append(Problem(rule, text))

    # -- sections ---------------------------------------------------------------------------
    for sec in unit.sections:
        flags = sec["sh_flags"]
        if flags & SHF_EXECINSTR and flags & SHF_WRITE:
            add("section", f"{sec.name} is both writable and executable")
        elif flags & SHF_EXECINSTR and not (sec.name == ".text" or sec.name.startswith(".text.")):
            add("section", f"code in {sec.name}, outside .text*")
    for code in unit.code.values():
        if code.undecodable is not None:
            add("decode", f"bytes at {code.name}+{code.undecodable:#x} do not decode as instructions")
    if problems:
        return problems

    base_groups = {base_unit.group_of(n) for n in base_unit.functions}

    def construct_in_base(group: str, kinds: set[str]) -> bool:
        # A private copy (a renamed clone a variant brought along) has no namesake in gcc's
        # unit: then gcc's unit as a whole is the reference.
        return group in kinds if group in base_groups else bool(kinds)

    # -- data that points into code: jump tables and function pointers ----------------------
    table_targets: dict[str, set[tuple[int, int]]] = {}  # group -> code places reached through tables
    table_starts: dict[int, list[int]] = {}  # data section -> offsets code refers to (table bases)
    table_users: dict[tuple[int, int], set[str]] = {}  # (data section, table base) -> groups referring to it
    for shndx, code in unit.code.items():
        for r in unit.relocs_at.get(shndx, []):
            insn = covering(code, r.offset)
            where, what = unit.target(r, insn.address + insn.size if insn is not None else None)
            if where == "data":
                table_starts.setdefault(what[0], []).append(what[1])
                fn = unit.function_at(shndx, r.offset)
                table_users.setdefault(what, set()).add(unit.group_of(fn) if fn is not None else "?")
    for offsets in table_starts.values():
        offsets.sort()
    writable_tables = _writable_label_tables(base_unit)
    for r in unit.relocs:
        sec = unit.sections[r.section]
        if r.section in unit.code or not sec["sh_flags"] & SHF_ALLOC or sec.name == ".eh_frame":
            continue  # code is walked below; debug and unwind info never run
        where, what = unit.target(r)
        if where == "external" and what not in baseline.taken and _is_function(base_unit, what, baseline):
            add("address", f"{sec.name}+{r.offset:#x} holds the address of {what}, which gcc's unit does not take")
        if where != "code":
            continue  # data pointing at data: the object checks cover which symbols exist
        shndx, off = what
        # The table an entry belongs to: the nearest place at or before it that code refers to.
        starts = table_starts.get(r.section, [])
        k = bisect.bisect_right(starts, r.offset) - 1
        if r.type in PC_RELOCS:
            # A PC-relative table entry (.long .L5-.L4) holds target - table base.
            if k < 0:
                add("table", f"a PC-relative code reference in {sec.name}+{r.offset:#x} belongs to no table")
                continue
            off = off - (r.offset - starts[k])
        users = table_users.get((r.section, starts[k]), set()) if k >= 0 else set()
        fn = unit.function_at(shndx, off)
        name = unit.code_name((shndx, off))
        if fn is not None and unit.functions[fn][1] == off and (fn in baseline.taken or name in baseline.taken
                                                                 or not construct_in_base(fn, baseline.taken)):
            continue  # a function pointer in data, as gcc's unit has (or gcc's unit takes some)
        if fn is None or at(unit.code[shndx], off) is None:
            add("table", f"{sec.name}+{r.offset:#x} points into {name}, not at an instruction")
            continue
        group = unit.group_of(fn)
        # A label table (a switch's, a computed goto's) belongs to the one function that jumps
        # through it: every entry inside that function, no other function refers to it, and
        # nothing may rewrite it (read-only, or RELRO: .data.rel.ro is read-only once relocated),
        # unless gcc's own function keeps its table writable too.
        if not users:
            # Reached through a pointer in data, by any function: no one function's walk covers it.
            add("table", f"{sec.name}+{r.offset:#x} points into {name} from a table no code refers to")
            continue
        if len(users) > 1:
            add("table", f"the table at {sec.name}+{starts[k]:#x} is used by {', '.join(sorted(users))}: "
                         "a label table may belong to one function only")
            continue
        if group not in users:
            add("table", f"{sec.name}+{r.offset:#x} points into {name}, outside {next(iter(users))}, "
                         "the function that uses the table")
            continue
        if sec["sh_flags"] & SHF_WRITE and not sec.name.startswith(".data.rel.ro") and \
                not construct_in_base(group, writable_tables):
            add("table", f"{sec.name}+{r.offset:#x}: {group}'s label table is in a writable section, "
                         "gcc's is read-only")
            continue
        table_targets.setdefault(group, set()).add((shndx, off))

    # -- every function group, walked from its entry ------------------------------------------
    groups: dict[str, list[str]] = {}
    for name in unit.functions:
        groups.setdefault(unit.group_of(name), []).append(name)
    entries = {(s, a): n for n, (s, a, _b) in unit.functions.items()}
    for group, members in sorted(groups.items()):
        flow = None
        if record is not None:
            flow = record[group] = Flow(None)
        elif untrusted is True or any(m in untrusted for m in members) or group in untrusted:
            facts = flow_facts(baseline).get(group) if group in base_groups else None
            flow = Flow(facts.facts if facts is not None else Facts.permissive())
        Walk(unit, baseline, group, members, entries, table_targets.get(group, set()), construct_in_base,
             add, flow).run()
        _hidden_system_calls(unit, baseline, group, members, add)
    return problems


def _writable_label_tables(unit: Unit) -> set[str]:
    """Function groups of gcc's object whose label tables (code addresses inside the
    function, not its entry) lie in a writable section other than RELRO's."""
    groups: set[str] = set()
    for r in unit.relocs:
        sec = unit.sections[r.section]
        if r.section in unit.code or not sec["sh_flags"] & SHF_ALLOC or not sec["sh_flags"] & SHF_WRITE \
                or sec.name.startswith(".data.rel.ro"):
            continue
        where, what = unit.target(r)
        if where == "code":
            fn = unit.function_at(*what)
            if fn is not None and unit.functions[fn][1] != what[1]:
                groups.add(unit.group_of(fn))
    return groups


#: Encodings of kernel entries, which may hide inside other instructions' bytes.
GADGETS = {b"\x0f\x05": "syscall", b"\x0f\x34": "sysenter", b"\xcd\x80": "int 0x80"}


def _gadgets(unit: Unit, members) -> int:
    count = 0
    for name in members:
        shndx, start, end = unit.functions[name]
        data = unit.code[shndx].data[start:end]
        count += sum(data.count(p) for p in GADGETS)
    return count


def _hidden_system_calls(unit: Unit, baseline: Baseline, group: str, members, add) -> None:
    """Kernel-entry bytes inside other instructions are unreachable when every transfer goes
    to an instruction start, which the walk proves for direct branches and tables. A
    register-indirect jump or call computes its target at run time, so a function that has
    one may not carry such bytes beyond what gcc's own function carries."""
    indirect = False
    for name in members:
        shndx, start, end = unit.functions[name]
        dec = unit.code[shndx]
        k = bisect.bisect_left(dec.addrs, start)
        while k < len(dec.insns) and dec.insns[k].address < end:
            if branch_kind(dec.insns[k]) in ("indirect-jump", "indirect-call"):
                indirect = True
                break
            k += 1
        if indirect:
            break
    if not indirect:
        return
    base = baseline.unit
    base_members = [n for n in base.functions if base.group_of(n) == group]
    allowed = _gadgets(base, base_members) if base_members else 0
    found = _gadgets(unit, members)
    if found > allowed:
        add("hidden", f"{group} jumps through registers and its bytes hide the encoding of a system call "
                      f"({found} such byte pairs, gcc's function has {allowed})")


class Walk:
    """One function group followed from its entry, carrying the stack state, to a fixed
    point: where two paths meet with different states, the differing part becomes UNKNOWN
    (and a ``ret`` that needs it is refused). With ``flow`` (an untrusted candidate's group,
    :class:`sgcc.verify.static.infoflow.Flow`) every instruction is held to the information-flow
    rule too, and calls to externals to those gcc's same function calls."""

    def __init__(self, unit: Unit, baseline: Baseline, group: str, members: list[str], entries,
                 table_targets, construct_in_base, add, flow=None):
        self.unit, self.baseline, self.group, self.entries = unit, baseline, group, entries
        self.construct_in_base, self.add, self.flow = construct_in_base, add, flow
        self.ranges: dict[int, list[tuple[int, int]]] = {}
        for name in members:
            shndx, start, end = unit.functions[name]
            self.ranges.setdefault(shndx, []).append((start, end))
        self.base_names = set(baseline.unit.functions)
        self.entry_name = group if group in unit.functions else members[0]
        self.state: dict[tuple[int, int], Frame] = {}
        self.work: list[tuple[tuple[int, int], Frame]] = []
        self.jump_states: set[Frame] = set()  # stack states at this group's indirect jumps
        self.targets = set(table_targets)  # places its tables (and its own label addresses) reach

    # -- the graph ------------------------------------------------------------------------

    def inside(self, place) -> bool:
        shndx, off = place
        return any(a <= off < b for a, b in self.ranges.get(shndx, []))

    def reach(self, place, st) -> None:
        self.work.append((place, st))

    def add_target(self, place) -> None:
        if place not in self.targets:
            self.targets.add(place)
            for st in self.jump_states:
                self.reach(place, st)

    def fall(self, place, end, st, text, where, after_call) -> None:
        nxt = (place[0], end)
        if self.inside(nxt):
            self.reach(nxt, st)
        elif after_call is None:
            self.add("fall-through", f"`{text}` at {where} falls off the end of {self.group}")
        else:
            self.add("fall-through", f"{self.group} falls off its end after calling {after_call}, which returns")

    def leaves(self, st: Frame, text: str, where: str, what: str, tail: bool) -> None:
        """A ``ret`` or tail jump: the stack must be back at its entry height (and, for
        untrusted code, the caller's registers restored)."""
        if not st.returns_safely():
            if what == "ret":
                self.add("ret", f"`{text}` at {where} with the stack {st.height()}, not proven to return to its caller")
            else:
                self.add("ret", f"{what} `{text}` at {where} with the stack {st.height()}")
        if self.flow is not None:
            self.flow.at_exit(st, text, where, self.add, tail)

    # -- the walk -------------------------------------------------------------------------

    def run(self) -> None:
        unit = self.unit
        X = registers().X
        shndx0, start0, _ = unit.functions[self.entry_name]
        self.reach((shndx0, start0), self.flow.entry() if self.flow is not None else Frame.entry())
        steps = 0
        while self.work:
            place, st = self.work.pop()
            seen = self.state.get(place)
            if seen is not None:
                merged = seen.merge(st)
                if merged == seen:
                    continue
                st = merged
            self.state[place] = st
            steps += 1
            if steps > MAX_INSNS:
                self.add("size", f"{self.group} is too large to analyse")
                return
            shndx, off = place
            code = unit.code[shndx]
            k = at(code, off)
            if k is None:
                self.add("branch", f"{unit.code_name(place)} is reached but is not the start of an instruction")
                continue
            insn = code.insns[k]
            where = unit.code_name(place)
            text = f"{insn.mnemonic} {insn.op_str}".strip()
            kind = branch_kind(insn)
            end = off + insn.size
            after = step(st, insn, where, self.add, self.flow)
            reloc = unit.reloc_in(shndx, off, end)
            if self.flow is not None and kind is None:
                after = self._code_value(after, insn, reloc, shndx, end)

            if kind not in ("call", "jump", "cond"):
                if reloc is not None:
                    self.reference(*unit.target(reloc, end), reloc, text, where)
                else:
                    for op in insn.operands:
                        if op.type == X.X86_OP_MEM and op.mem.base == X.X86_REG_RIP:
                            # Resolved by the assembler: a place in this very section.
                            self.reference("code", (shndx, end + op.mem.disp), None, text, where)

            if X.X86_GRP_INT in insn.groups or X.X86_GRP_PRIVILEGE in insn.groups:
                # System calls, traps into the kernel, privileged instructions: no C function has them.
                self.add("instruction", f"`{text}` at {where} enters the kernel")
            elif kind is None:
                self.fall(place, end, after, text, where, None)
            elif kind == "stop":
                pass
            elif kind == "ret":
                self.leaves(st, text, where, "ret", False)
            elif kind in ("indirect-jump", "indirect-call"):
                self.indirect(place, insn, kind, end, after, st, text, where)
            else:
                self.direct(place, insn, kind, reloc, end, after, st, text, where)

    def _code_value(self, after: Frame, insn, reloc, shndx: int, end: int) -> Frame:
        """``lea f(%rip), %reg`` or a GOT load of ``f`` where ``f`` is a function (of the unit,
        or an external): ``%reg`` holds f's address, which the information-flow rule follows
        to the routines that call back (``callback``)."""
        R = registers()
        X = R.X
        ops = insn.operands
        if len(ops) != 2 or ops[0].type != X.X86_OP_REG or ops[0].reg not in R.full \
                or ops[1].type != X.X86_OP_MEM or ops[1].mem.base != X.X86_REG_RIP:
            return after
        m = insn.mnemonic
        got = reloc is not None and reloc.type in GOT_RELOCS and m in ("mov", "movq")
        if not (m in ("lea", "leaq") or got):
            return after
        # Without a relocation, the assembler resolved a place in this very section.
        kind, what = self.unit.target(reloc, end) if reloc is not None else ("code", (shndx, end + ops[1].mem.disp))
        if kind == "external":
            name = str(what)
        elif kind == "code" and not got:
            fn = self.unit.function_at(*what)
            if fn is None or self.unit.functions[fn][1] != what[1]:
                return after
            name = fn
        else:
            return after
        from sgcc.verify.static.infoflow import code_value

        regs = list(after.regs)
        regs[R.gpr[ops[0].reg]] = code_value(name)
        return Frame(tuple(regs), after.slots, after.flow)

    def reference(self, dest_kind, what, reloc, text, where) -> None:
        """A non-branch operand that names a place: only addresses gcc's code takes too."""
        unit, baseline, group, add = self.unit, self.baseline, self.group, self.add
        if reloc is not None and reloc.type in GOT_RELOCS:
            sym = unit.symbol(reloc.symbol)
            name = sym.name if sym is not None else "?"
            if name not in baseline.got and name != "_GLOBAL_OFFSET_TABLE_":
                add("address", f"`{text}` at {where} loads {name}'s address from the GOT, which gcc's code "
                               "does not")
            return
        if dest_kind == "external":
            if reloc is not None and reloc.type in PC_RELOCS and what not in baseline.taken:
                add("address", f"`{text}` at {where} takes the address of {what}, which gcc's code does not")
            return
        if dest_kind != "code":
            return
        label = unit.code_name(what)
        fn = unit.function_at(*what)
        if fn is not None and unit.group_of(fn) == group and unit.functions[fn][1] != what[1]:
            # The address of its own label: a computed goto, as in gcc's function.
            if not self.construct_in_base(group, baseline.label_taken):
                add("address", f"`{text}` at {where} takes the address of its own code ({label})")
            elif at(unit.code[what[0]], what[1]) is None:
                add("address", f"`{text}` at {where} refers into the middle of an instruction")
            else:
                self.add_target(what)
            return
        if fn is not None and unit.functions[fn][1] == what[1]:
            if fn in baseline.taken or label in baseline.taken:
                return
            if fn not in self.base_names and self.construct_in_base(group, baseline.taken):
                return  # a private copy's address, where gcc's code takes function addresses
        add("address", f"`{text}` at {where} takes the address of {label}, which gcc's code does not")

    def indirect(self, place, insn, kind, end, after, st, text, where) -> None:
        """A call or jump through a register or memory: only where gcc's function has one."""
        kinds = self.baseline.indirect_jump if kind == "indirect-jump" else self.baseline.indirect_call
        if not self.construct_in_base(self.group, kinds):
            self.add("indirect", f"`{text}` at {where}: gcc's code has no {kind.replace('-', ' ')} here")
        elif kind == "indirect-call":
            if self.flow is not None:
                after = self.flow.after_external_call(after, st, None)
            self.fall(place, end, after, text, where, "a function pointer")
        elif after not in self.jump_states:
            # A switch through a table, a computed goto, or a tail call through a pointer
            # (then the stack must be at its entry height, as for any tail jump).
            self.jump_states.add(after)
            for target in sorted(self.targets):
                self.reach(target, after)
            if not self.targets:
                self.leaves(st, text, where, "indirect tail jump", True)

    def direct(self, place, insn, kind, reloc, end, after, st, text, where) -> None:
        """A direct call, jump or conditional jump: its target from the relocation, or from
        the displacement the assembler resolved."""
        unit, baseline, add = self.unit, self.baseline, self.add
        X = registers().X
        if reloc is not None:
            tkind, what = unit.target(reloc, end)
        else:
            imm = next((op.imm for op in insn.operands if op.type == X.X86_OP_IMM), None)
            if imm is None:
                add("branch", f"`{text}` at {where} has no target")
                return
            tkind, what = "code", (place[0], imm)
        if tkind == "external":
            form = "plt" if reloc.type == R_PLT32 else "direct"
            # gcc itself may call the block and string routines where its -O3 code did not (a
            # memset instead of inline stores): the same ones the object check lets a candidate import.
            # An untrusted candidate may call only what gcc's *same* function calls, itself or
            # through the unit's functions it calls (codemodel.Baseline.reached).
            calls = baseline.calls
            if self.flow is not None and self.group in self.base_names:
                calls = baseline.reached_calls(self.group)
            if (what, form) not in calls and what not in DEFAULT_ALLOWED_EXTERNALS:
                mine = " function" if calls is not baseline.calls else ""
                add("call", f"`{text}` at {where} reaches {what} ({form}), which gcc's{mine} code does not call so")
            elif kind == "call":
                if self.flow is not None:
                    self.flow.callbacks(st, what, lambda rule, msg: add(rule, f"`{text}` at {where} {msg}"))
                    after = self.flow.after_external_call(after, st, what)
                if what not in baseline.noreturn:
                    self.fall(place, end, after, text, where, what)
            elif kind == "jump":
                if self.flow is not None:
                    self.flow.callbacks(st, what, lambda rule, msg: add(rule, f"`{text}` at {where} {msg}"))
                self.leaves(st, text, where, "tail jump", True)
            else:
                self.leaves(st, text, where, "conditional tail jump", True)
                self.fall(place, end, after, text, where, None)
            return
        if tkind != "code":
            add("branch", f"`{text}` at {where} transfers control to {tkind} data")
            return
        callee = self.entries.get(what)
        if callee is not None and self.flow is not None and not self.inside(what):
            # Untrusted code calls only the unit's functions gcc's same function reaches (and
            # private copies it brought, which are walked and held to the rule themselves).
            target = unit.group_of(callee)
            names = unit.aliases(callee)
            if names & self.base_names and self.group in self.base_names \
                    and not names & baseline.reached_local_calls(self.group):
                add("call", f"`{text}` at {where} reaches {target}, which gcc's function does not call")
        if kind == "call" and callee is not None:
            if callee not in baseline.noreturn and not _never_returns(unit, baseline, callee):
                self.fall(place, end, after, text, where, callee)
            return
        if self.inside(what):
            if kind == "call":
                add("call", f"`{text}` at {where} calls into its own body")
                return
            if kind == "cond" and self.flow is not None:
                # Each edge carries what the branch's compare proves on it (index ranges).
                self.reach(what, self.flow.branch(after, insn, True))
                self.fall(place, end, self.flow.branch(after, insn, False), text, where, None)
                return
            self.reach(what, after)
            if kind == "cond":
                self.fall(place, end, after, text, where, None)
            return
        if callee is None:
            add("branch", f"`{text}` at {where} reaches {unit.code_name(what)}, inside another function")
            return
        self.leaves(st, text, where, "tail jump" if kind == "jump" else "conditional tail jump", True)
        if kind == "cond":
            self.fall(place, end, after, text, where, None)


def _never_returns(unit: Unit, baseline: Baseline, name: str) -> bool:
    """Whether ``name``, a private copy the candidate brought (no namesake in gcc's unit), can
    never return to a caller: no ``ret`` and no indirect jump anywhere in its group, and no
    jump that leaves the group (a tail call could return for it). A variant's copy of an
    assert's ``f.part.0`` is such a function; falling off its own end is refused when its
    group is walked, so a copy that merely lacks a ``ret`` proves nothing here. Functions gcc
    has keep gcc's verdict (``baseline.noreturn``)."""
    group = unit.group_of(name)
    if group in baseline.unit.functions or name in baseline.unit.functions:
        return False
    spans = [unit.functions[n] for n in unit.functions if unit.group_of(n) == group]

    def inside(shndx: int, off: int) -> bool:
        return any(s == shndx and a <= off < b for s, a, b in spans)

    X = registers().X
    for shndx, start, end in spans:
        dec = unit.code[shndx]
        k = bisect.bisect_left(dec.addrs, start)
        while k < len(dec.insns) and dec.insns[k].address < end:
            insn = dec.insns[k]
            kind = branch_kind(insn)
            if kind in ("ret", "indirect-jump"):
                return False
            if kind in ("jump", "cond"):
                reloc = unit.reloc_by_site.get((shndx, insn.address + insn.size - 4))
                imm = next((op.imm for op in insn.operands if op.type == X.X86_OP_IMM), None)
                if reloc is not None or imm is None or not inside(shndx, imm):
                    return False
            k += 1
    return True


def _is_function(base_unit: Unit, name: str, baseline: Baseline) -> bool:
    """Whether gcc's unit knows ``name`` as code: it calls it, or defines it as a function."""
    return (name, "plt") in baseline.calls or (name, "direct") in baseline.calls or name in base_unit.functions


# --------------------------------------------------------------------------------- entry point

_BASELINES: dict[tuple, Baseline] = {}


def flow_facts(baseline: Baseline) -> dict:
    """Per function group of gcc's unit, what it reads (:class:`sgcc.verify.static.infoflow.Flow`
    after a walk in record mode): the bound the information-flow rule holds an untrusted
    candidate of the same name to. Walked once per baseline, on first need (kept on it)."""
    if baseline.flow_record is None:
        record: dict = {}
        validate(baseline.unit, baseline, record=record)
        # A stack address passed to a call by a function gcc's reaches counts as gcc's.
        passes = {g for g, flow in record.items() if flow.facts.stack_to_calls}
        for g, flow in record.items():
            if passes & baseline.reached(g):
                flow.facts.stack_to_calls = True
        baseline.flow_record = record
    return baseline.flow_record


def verdict(candidate_obj: Path, baseline_obj: Path, untrusted=frozenset()):
    """The proof as a stage verdict (:data:`sgcc.stages.Stage.CONTROL`): the first broken rule
    as the reason, up to 20 as the detail. An object the reader cannot parse is refused.
    ``untrusted``: as for :func:`validate`."""
    from sgcc.stages import Stage
    from sgcc.verify.verdict import Verdict

    try:
        problems = check(candidate_obj, baseline_obj, untrusted)
    except SgccError as exc:
        return Verdict(False, Stage.CONTROL, exc.message)
    if problems:
        return Verdict(False, Stage.CONTROL, str(problems[0]), "\n".join(str(p) for p in problems[:20]))
    return Verdict(True, Stage.CONTROL)


def check(candidate_obj: Path, baseline_obj: Path, untrusted=frozenset()) -> list[Problem]:
    """Validate the control flow of ``candidate_obj`` against gcc's ``baseline_obj`` (and,
    for the functions in ``untrusted``, the information flow: :func:`validate`)."""
    st = Path(baseline_obj).stat()
    key = (str(baseline_obj), st.st_size, st.st_mtime_ns, st.st_ino)
    base = _BASELINES.get(key)
    if base is None:
        base = Baseline(Unit(Path(baseline_obj)))
        if len(_BASELINES) > 16:
            _BASELINES.pop(next(iter(_BASELINES)))
        _BASELINES[key] = base
    return validate(Unit(Path(candidate_obj)), base, untrusted)
