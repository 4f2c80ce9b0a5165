#!/usr/bin/env python3
"""Do -g and -g0 builds get the same per-function candidates? (real gcc, no timing)

For each C source given, compile it with ``FLAGS`` (default ``-O2``) with ``-g0`` and with
``-g``, and again with each variant's flags added (``-funroll-loops``, ``-fno-tree-vectorize``),
then ask the transplant (:mod:`sgcc.candidates.transplant`) for every function's unit of the
variant. Prints, per source, variant and ``-g`` setting: units, transplants offered, refusals
that name labels referenced from outside the unit; then whether the offered sets are equal.

    python bench/g_parity.py lvm.c lapi.c --flags "-std=c99 -DLUA_USE_LINUX -O2" --cwd /path/to/lua

Before issue 26 every function of a -g build was refused ("labels of gcc's F are referenced
from outside it (..., e.g. debug information)"); see docs/project-mode.md for the figures.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import tempfile
from pathlib import Path

from sgcc.candidates.transplant.build import transplant
from sgcc.candidates.transplant.side import Side

VARIANTS = (["-funroll-loops"], ["-fno-tree-vectorize"])


def _side(src: str, flags: list[str], where: Path, name: str, cwd: str | None) -> Side:
    s, o = where / f"{name}.s", where / f"{name}.o"
    subprocess.run(["gcc", *flags, "-S", "-o", str(s), src], check=True, cwd=cwd)
    subprocess.run(["gcc", "-c", str(s), "-o", str(o)], check=True)
    return Side(s.read_text(errors="surrogateescape"), obj=o)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--flags", default="-O2", help="the baseline's flags (default -O2)")
    ap.add_argument("--cwd", default=None, help="directory the sources are compiled in")
    args = ap.parse_args()
    flags = shlex.split(args.flags)
    same_everywhere = True
    with tempfile.TemporaryDirectory(prefix="sgcc-g-parity-") as tmp:
        where = Path(tmp)
        for src in args.sources:
            for var in VARIANTS:
                offered = {}
                for g in ("-g0", "-g"):
                    base = _side(src, [*flags, g], where, "base", args.cwd)
                    side = _side(src, [*flags, g, *var], where, "var", args.cwd)
                    results = {u.name: transplant(base, side, u.name, "t") for u in base.asm.units}
                    offered[g] = {n for n, t in results.items() if t.text is not None}
                    outside = sum(1 for t in results.values() if t.text is None and "outside" in t.reason)
                    print(f"{src} {' '.join(var)} {g}: {len(results)} units, {len(offered[g])} offered, "
                          f"{outside} refused for labels referenced from outside")
                same = offered["-g0"] == offered["-g"]
                same_everywhere &= same
                print(f"  same candidates with -g and -g0: {same}"
                      + ("" if same else f" (only -g0: {sorted(offered['-g0'] - offered['-g'])[:5]})"))
    return 0 if same_everywhere else 1


if __name__ == "__main__":
    raise SystemExit(main())
