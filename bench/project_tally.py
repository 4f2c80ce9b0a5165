"""A project run's candidates per stage and generator, and the best timed gain per function,
from the JSON report of ``sgcc optimize --project ... --report R.json`` (issue 26 asks for
both per project).

    python bench/project_tally.py R.json

Prints, per searched source, a table of generators by the stage each candidate reached
(``skipped`` counts offers refused before building, ``budget`` those the budget cut), then
per function the best speedup a timed candidate showed (its generator, its interval, and
whether it was accepted), and the whole-project candidates with their fate.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path


def stage_of(c: dict) -> str:
    """A candidate's stage, with the budget's cuts apart from the other stops."""
    if "budget" in (c.get("reason") or ""):
        return "budget"
    return c.get("stage") or "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", type=Path)
    args = ap.parse_args(argv)
    try:
        r = json.loads(args.report.read_text())
    except (OSError, ValueError) as exc:
        print(f"project_tally: error: {args.report}: {exc}", file=sys.stderr)
        return 2
    w = r.get("whole_project") or {}
    for e in w.get("field", []):
        t = e.get("timing") or e.get("race")
        shown = f"{t['speedup']:.3f}x [{t['low']:.3f}, {t['high']:.3f}] ({t.get('rounds')} rounds" \
                f"{', confirmed' if e.get('timing') else ', race'})" if t else "not timed"
        print(f"whole project: {e['name']}: {shown}{'; ' + e['why'] if e.get('why') else ''}")
    if w:
        print(f"whole project adopted: {w.get('variant') if w.get('adopted') else 'none'}")
    for u in r.get("units", []):
        cands = [c for c in (u.get("report") or {}).get("candidates", [])]
        stages = sorted({stage_of(c) for c in cands})
        by = collections.defaultdict(collections.Counter)
        for c in cands:
            by[c.get("generator", "?")][stage_of(c)] += 1
        print(f"\n{u['source']}: {u.get('tally', '')}")
        print(f"  {'generator':<10} " + " ".join(f"{s:>9}" for s in stages))
        for g, counts in sorted(by.items()):
            print(f"  {g:<10} " + " ".join(f"{counts.get(s, 0):>9}" for s in stages))
        best: dict[str, dict] = {}
        for c in cands:
            if c.get("speedup") is None:
                continue
            b = best.get(c["function"])
            if b is None or c["speedup"] > b["speedup"]:
                best[c["function"]] = c
        for fn, c in sorted(best.items(), key=lambda kv: -kv[1]["speedup"]):
            print(f"  {fn}: best timed {c['speedup']:.3f}x [{c['ci_low']:.3f}, {c['ci_high']:.3f}] "
                  f"({c['generator']}: {c.get('origin', '')}; {c.get('rounds')} rounds, {c['stage']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
