"""Where a project's workload spends its instructions, per *compile*, not per function name.

The workload (the bench commands, or the test command) runs under ``valgrind
--tool=callgrind --trace-children=yes`` in a copy of the built tree: every process of it
writes a profile whose cost lines name the object file executing (``ob=``: a program or a
shared library of the tree) and the function. A function is attributed to a recorded
compile only when that compile's object file is *in* the executing binary: every function
symbol the object defines appears in the binary's symbol table with the same size (and an LTO
partition, only in the program its own link made: partitions of two programs linked from one
library can be alike). So
``test/example.c``'s ``main`` is never charged for ``minigzip``'s, and a program the workload
never runs gets nothing. A function two different sources could have provided (both linked
in, same name and size) is ambiguous and not searched; code in stripped binaries cannot be
attributed and is not searched either.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc import proc
from sgcc.engine.profile import parse_costs

if TYPE_CHECKING:
    from sgcc.project.record import Compile
    from sgcc.verify.box.sandbox import Sandbox

#: Wall seconds the profiled workload may take (valgrind runs it 20-100x slower).
PROFILE_TIMEOUT = 1800.0


@dataclass
class Attribution:
    """Instructions per source, function and binary, from profiling a workload."""

    total: int = 0  # every instruction of every process (shells, make, libc included)
    project: int = 0  # instructions attributed to a recorded compile
    # source path -> function -> instructions
    by_source: dict[str, dict[str, int]] = field(default_factory=dict)
    # source path -> {compile key: [binaries (relative to the tree) it ran in]}
    seen_in: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    ambiguous: dict[str, int] = field(default_factory=dict)  # "binary:function" -> instructions

    def executed(self, source: str, function: str) -> bool:
        return self.by_source.get(source, {}).get(function, 0) > 0


_NM_LINE = re.compile(r"^[0-9a-fA-F]+ ([0-9a-fA-F]+) ([tTwW]) (\S+)$")


def text_symbols(path: str | os.PathLike) -> dict[str, set[int]] | None:
    """Function symbols defined in an object, program or library: name -> their sizes (a
    program holds one local ``call`` per source that has one: wren's LTO partitions each
    keep their own). None when it cannot be read or has no symbol table (stripped)."""
    r = proc.run(["nm", "--defined-only", "-S", str(path)], timeout=120, capture_limit=64 << 20)
    if not r.ok:
        return None
    symbols: dict[str, set[int]] = {}
    for line in r.stdout.decode(errors="replace").splitlines():
        m = _NM_LINE.match(line.strip())
        if m:
            symbols.setdefault(m.group(3), set()).add(int(m.group(1), 16))
    return symbols or None


def attribute(costs: dict[tuple[str, str], int], tree: Path, compiles: list[Compile], objects_root: Path,
              seen_at: Path | None = None) -> Attribution:
    """Charge each ``(object file, function)`` cost to the recorded compile whose object is
    linked into that object file (see the module docstring). ``compiles`` are
    :class:`sgcc.project.record.Compile`; their object files are read under ``objects_root``
    (the tree they were built in), the executing binaries under ``tree`` (the profiled copy),
    which the profiled run saw at ``seen_at`` (the project's path, :mod:`sgcc.project.place`;
    None: at its own)."""
    out = Attribution(total=sum(costs.values()))
    tree = tree.resolve()
    seen_root = Path(seen_at) if seen_at is not None else tree
    objects: list[tuple[Compile, dict[str, set[int]]]] = []
    for c in compiles:
        if c.output is None or not c.output.is_file():
            continue
        syms = text_symbols(c.output)
        if syms:
            objects.append((c, syms))
    binaries: dict[str, list[tuple[Compile, dict[str, set[int]]]] | None] = {}
    for (ob, fn), ir in costs.items():
        if not ob:
            continue
        try:
            rel = os.path.relpath(os.path.realpath(tree / Path(os.path.normpath(ob)).relative_to(seen_root)), tree)
        except ValueError:
            continue  # the C library, the shell, make: not the project's code
        if rel.startswith(".."):
            continue
        if rel not in binaries:
            syms = text_symbols(tree / rel)
            binaries[rel] = None if syms is None else [
                (c, osyms) for c, osyms in objects
                if (c.linked_into is None or c.linked_into == rel)
                and all(sizes <= syms.get(name, set()) for name, sizes in osyms.items())]
        linked = binaries[rel]
        if not linked:
            continue
        providers = [c for c, osyms in linked if fn in osyms]
        sources = {str(c.source) for c in providers}
        if len(sources) != 1:
            if len(sources) > 1:
                out.ambiguous[f"{rel}:{fn}"] = out.ambiguous.get(f"{rel}:{fn}", 0) + ir
            continue
        source = sources.pop()
        out.project += ir
        fns = out.by_source.setdefault(source, {})
        fns[fn] = fns.get(fn, 0) + ir
        seen = out.seen_in.setdefault(source, {})
        for c in providers:
            seen.setdefault(c.key, set()).add(rel)
    return out


def profile(sandbox: Sandbox, launcher: Path, out_dir: Path, *, timeout: float = PROFILE_TIMEOUT,
            partial: bool = False) -> dict[tuple[str, str], int] | None:
    """Run ``launcher`` (a workload script working in a tree, which the sandbox shows it:
    :func:`sgcc.project.workload.expose`) under callgrind, following every child process, in
    ``sandbox``; the summed costs of all its processes, or None when valgrind is missing or
    the run failed.

    With ``partial``, callgrind writes its counts every :data:`DUMP_EVERY_BB` basic blocks
    (each dump holds what ran since the last), so a run stopped at ``timeout`` still gives
    what it had executed by then (an under-approximation: every function in it did run);
    the result then has ``PARTIAL`` set (see :func:`was_partial`)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(out_dir, 0o777)  # the box may run as nobody
    extra = [f"--dump-every-bb={DUMP_EVERY_BB}"] if partial else []
    r = sandbox.run(launcher, b"", prefix=[valgrind, "--tool=callgrind", "--quiet", "--trace-children=yes",
                                           f"--callgrind-out-file={out_dir}/cg.%p", "--compress-strings=no",
                                           "--compress-pos=no", "--dump-instr=no", *extra],
                    timeout=timeout, memory=16 << 30, writable=[out_dir])
    cut = r.timed_out and partial
    if (r.timed_out and not partial) or (r.returncode != 0 and not cut):
        return None
    costs: dict[tuple[str, str], int] = {}
    for f in sorted(out_dir.glob("cg.*")):
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        for k, v in parse_costs(text).items():
            costs[k] = costs.get(k, 0) + v
    if cut and costs:
        costs[PARTIAL] = 0
    return costs or None


#: Basic blocks between two dumps of a profile that may be cut short (a few seconds of callgrind).
DUMP_EVERY_BB = 20_000_000
#: Key present in a profile's costs when its run was stopped at the time limit.
PARTIAL = ("", "<cut at the time limit>")


def was_partial(costs: dict | None) -> bool:
    """Whether :func:`profile` stopped the run at its time limit."""
    return costs is not None and PARTIAL in costs
