"""Where gcc inlined a function's calls: what a "not searched" or "no function named" means.

A function the tests run can still look untested: gcc inlined its call into ``main``, so
the tests run its code inside ``main``'s unit, and the function's own unit (kept for callers
outside the file) never runs; a static function inlined everywhere has no unit at all. The
reader of a report needs to be told where its code went. gcc says so itself:
``-fopt-info-inline`` prints ``FILE:LINE:COL: optimized:  Inlining work/22 into main/23.``
for each call it inlines (one more ``gcc -S`` to /dev/null with the user's flags, which the
option does not change), and an inlining into a function that is itself inlined elsewhere
is followed to the units that hold the code.
"""

from __future__ import annotations

import re
from pathlib import Path

from sgcc import proc

_INLINED = re.compile(r"^(?P<where>.+?:\d+):\d+: optimized:\s+Inlining (?P<callee>[^/\s]+)/\d+ into "
                      r"(?P<caller>[^/\s]+)/\d+", re.M)


def parse(text: str) -> dict[str, list[tuple[str, str]]]:
    """``{callee: [(caller, "file:line"), ...]}`` from gcc's ``-fopt-info-inline`` output."""
    found: dict[str, list[tuple[str, str]]] = {}
    for m in _INLINED.finditer(text):
        sites = found.setdefault(m["callee"], [])
        site = (m["caller"], m["where"])
        if site not in sites:
            sites.append(site)
    return found


def destinations(sites: dict[str, list[tuple[str, str]]], units: set[str]) -> dict[str, list[tuple[str, str]]]:
    """Per inlined function, the function units that hold its code, with the call site that
    brought it there: an inlining into a function that has no unit of its own (inlined in
    turn) is followed to where that one went."""
    out: dict[str, list[tuple[str, str]]] = {}
    for callee in sites:
        seen: set[str] = {callee}
        todo = list(sites[callee])
        held: list[tuple[str, str]] = []
        while todo:
            caller, where = todo.pop(0)
            if caller in units:
                if (caller, where) not in held:
                    held.append((caller, where))
            elif caller not in seen:
                seen.add(caller)
                todo += [(c, where) for c, _ in sites.get(caller, [])]
        if held:
            out[callee] = held
    return out


def inlined_into(compiler: str, flags: list[str], source: Path, units: set[str]) -> dict[str, list[tuple[str, str]]]:
    """Where gcc, with ``flags``, inlined the calls of each function of ``source``: the units
    (of ``units``) that hold their code, with the call sites. Empty when gcc cannot say
    (explaining must never fail a run)."""
    try:
        r = proc.run([compiler, *flags, "-fopt-info-inline", "-S", "-o", "/dev/null", str(source)], timeout=120)
    except Exception:  # noqa: BLE001 - an explanation, never a reason to stop
        return {}
    if not r.ok:
        return {}
    return destinations(parse(r.stderr.decode(errors="replace")), units)


def describe(name: str, held: list[tuple[str, str]]) -> str:
    """"gcc inlined its calls into main (prog.c:14)": where ``name``'s code went."""
    callers: dict[str, list[str]] = {}
    for caller, where in held:
        callers.setdefault(caller, []).append(where.rsplit("/", 1)[-1])
    return "gcc inlined its calls into " + ", ".join(f"{c} ({', '.join(w)})" for c, w in callers.items())


def for_program(request, program) -> dict[str, list[tuple[str, str]]]:
    """:func:`inlined_into` for the request's program, asked once per run (kept on the
    program). A project's translation unit (built by its own build, in its own directory)
    is not asked: empty."""
    if program.inlined is None:
        if program.link is not None or not Path(program.source).is_file():
            program.inlined = {}
        else:
            program.inlined = inlined_into(request.compiler, list(program.flags), Path(program.source),
                                           {u.name for u in program.asm.units})
    return program.inlined
