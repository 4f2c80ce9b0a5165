#!/usr/bin/env python3
"""Which functions the SMT tier decides (docs/proof.md, "Part three"), and what it costs.

For each program (examples/programs and bench/heldout by default, or the C files / program
directories given, e.g. PolyBench kernels): compile with gcc -O3 -c and prove every function
of gcc's object against itself with :func:`sgcc.verify.function.smt.prove`. gcc against itself is the
tier's coverage independent of any candidate: a function it cannot decide here it cannot
decide for any candidate either. Prints per function: the verdict ("proven equivalent",
"equivalent up to bound k", "equivalent assuming ...", "not decided (why)"), the paths and the
seconds; then a summary per tier. A refutation of gcc's own code is an error (exit status 1).
Optional candidates: ``--candidate FUNC=FILE.s`` proves that candidate against gcc's FUNC of
the single program given.

Usage: python bench/smt_coverage.py [--bound K] [--seconds S] [--json FILE] [--flags F] [PATH ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.asm.obj import read_object  # noqa: E402
from sgcc.verify.function import smt  # noqa: E402


def sources(paths: list[Path]) -> list[Path]:
    out = []
    for d in paths:
        if d.is_file():
            out.append(d)
        elif (d / f"{d.name}.c").is_file():
            out.append(d / f"{d.name}.c")
        else:
            out += sorted(p / f"{p.name}.c" for p in d.iterdir() if (p / f"{p.name}.c").is_file())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--bound", type=int, default=smt.DEFAULT_BOUND)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--flags", default="", help="extra gcc flags (e.g. -I for PolyBench's utilities)")
    ap.add_argument("--candidate", action="append", default=[], help="FUNC=FILE.s: prove it against gcc's FUNC")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    paths = args.paths or [ROOT / "examples" / "programs", ROOT / "bench" / "heldout"]
    rows, tiers, bad = [], Counter(), 0
    with tempfile.TemporaryDirectory() as tmp:
        for src in sources(paths):
            obj = Path(tmp) / (src.stem + ".o")
            r = subprocess.run(["gcc", "-O3", "-c", str(src), "-o", str(obj), *args.flags.split()],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{src.stem}: gcc failed: {r.stderr.strip()[:200]}")
                continue
            text = src.read_text(errors="replace")
            pairs = [(f.name, obj) for f in read_object(obj).functions if f.size]
            for spec in args.candidate:
                fn, path = spec.split("=", 1)
                cobj = Path(tmp) / (Path(path).stem + ".cand.o")
                subprocess.run(["gcc", "-c", path, "-o", str(cobj)], check=True)
                pairs = [(fn, cobj, Path(path).name)]
            for pair in pairs:
                name, cand = pair[0], pair[1]
                v = smt.prove(obj, cand, name, text, bound=args.bound, seconds=args.seconds)
                tier = {"proven": "proven" if not v.assumptions else "proven assuming",
                        "bounded": f"bounded k={v.bound}", "refuted": "refuted",
                        "undecided": "not decided"}[v.status]
                tiers[tier] += 1
                if v.status == "refuted" and cand == obj:
                    bad += 1
                label = f"{src.stem}:{name}" + (f" [{pair[2]}]" if len(pair) > 2 else "")
                detail = v.render_counterexample() if v.status == "refuted" else v.level()
                print(f"{label:40s} {v.seconds:7.2f}s paths={v.paths[0]}/{v.paths[1]}  {detail}", flush=True)
                rows.append({"program": src.stem, "function": name, **v.to_dict()})
    total = sum(tiers.values())
    print(f"\n{total} functions: " + ", ".join(f"{k}: {n}" for k, n in sorted(tiers.items())))
    secs = sorted(r["seconds"] for r in rows)
    if secs:
        print(f"seconds per function: median {secs[len(secs) // 2]:.2f}, max {secs[-1]:.2f}, total {sum(secs):.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if bad:
        print(f"error: gcc's own code refuted against itself {bad} times")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
