#!/usr/bin/env python3
"""gcc's own functions held to the information-flow rule against themselves.

Every function of every corpus program (the examples and ``tests/asm_corpus``), compiled at
eight flag sets, is checked as the only untrusted function of gcc's object against that same
object (``controlflow.check(o, o, {name})``): what an untrusted candidate identical to gcc's
code would meet. Prints each refused function with its rules and the counts. Run it on two
checkouts to compare rule changes (same gcc, same objects).

Measured (issue 24's red team): 1035 functions, 142 refused before the red team's rules
and the same 142 after them (the refusals are main-like shapes: stack arrays indexed by a
register, pointer walks, alloca, varargs, stack addresses passed to calls).

    python bench/flow_corpus.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import proc  # noqa: E402
from sgcc.asm.obj import read_object  # noqa: E402
from sgcc.verify.static import controlflow  # noqa: E402
from tests import screen_corpus  # noqa: E402

FLAG_SETS = [["-O3"], ["-O2"], ["-O3", "-march=native"], ["-O3", "-fno-omit-frame-pointer"], ["-Os"],
             ["-O3", "-funroll-loops", "-march=native"], ["-O2", "-fstack-protector-all"],
             ["-O3", "-march=native", "-fstack-protector-strong", "-fno-omit-frame-pointer"]]


def main() -> int:
    total = refused = 0
    with tempfile.TemporaryDirectory(prefix="sgcc-flow-corpus-") as tmp:
        for src in screen_corpus.programs():
            for i, flags in enumerate(FLAG_SETS):
                o = Path(tmp) / f"{src.stem}-{i}.o"
                if not proc.run(["gcc", *flags, "-c", str(src), "-o", str(o)], timeout=120).ok:
                    continue
                for name in sorted({f.name for f in read_object(o).functions}):
                    problems = controlflow.check(o, o, frozenset({name}))
                    total += 1
                    if problems:
                        refused += 1
                        print(f"{src.stem} {' '.join(flags)} {name}: {sorted({p.rule for p in problems})}")
    print(f"{total} functions of gcc's, {refused} refused by the information-flow rule against themselves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
