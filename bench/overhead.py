#!/usr/bin/env python3
"""Wall-time overhead of sgcc over plain gcc, as ratios measured in one run.

Three situations, each timed against the same gcc command, interleaved in random order:

* eligible:     ``-O3 -c`` of a typical translation unit (sgcc runs gcc -S, then assembles);
* pass-through: ``-O1 -c`` of the same unit (sgcc classifies, then execs gcc);
* disabled:     ``SGCC_DISABLE=1`` (sgcc resolves the compiler and execs it);
* cache miss:   ``-O3 -c`` with the verdict cache on and no entry for the unit;
* cache hit:    ``-O3 -c`` with a cache entry whose winner replaces one function (the unit
  parser runs, the winner is substituted, the result assembled): what every later build of
  an optimized project pays.

Two translation units by default: ``examples/wordstats/src/count.c`` (small: gcc -O3 takes
~40 ms, so Python's own start-up dominates) and a *typical* one generated here (a few hundred
lines of ordinary C with the usual headers, ~150-250 ms under gcc -O3; the issue's target
of <= 1.3x wall time for a cache hit is about this one).

Usage: ``python bench/overhead.py [--rounds N] [--source FILE.c ...]``. Prints, per unit and
situation, the median wall time of gcc and of sgcc, their ratio with a bootstrap 95%
interval, and the absolute extra milliseconds.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import proc  # noqa: E402

DEFAULT_SOURCE = ROOT / "examples" / "wordstats" / "src" / "count.c"

_TEMPLATES = [
    """static int cmp_{n}(const void *a, const void *b) {{
    const struct rec_{n} *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return strcmp(x->name, y->name);
}}
struct rec_{n} {{ long key; char name[24]; double w; }};
""",
    """long sum_{n}(const int *v, size_t n) {{
    long s = 0;
    for (size_t i = 0; i < n; i++) s += (long)v[i] * (long)(i % {m} + 1);
    return s;
}}
""",
    """double poly_{n}(const double *c, int k, double x) {{
    double r = 0.0;
    for (int i = k - 1; i >= 0; i--) r = r * x + c[i];
    return r / (1.0 + fabs(x) * {m});
}}
""",
    """int parse_{n}(const char *s, int *out, int max) {{
    int count = 0;
    while (*s && count < max) {{
        while (*s && !isdigit((unsigned char)*s) && *s != '-') s++;
        if (!*s) break;
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) {{ s++; continue; }}
        out[count++] = (int)(v % {m});
        s = end;
    }}
    return count;
}}
""",
    """void format_{n}(char *buf, size_t len, const char *tag, int v) {{
    switch (v % 5) {{
    case 0: snprintf(buf, len, "%s:zero:%d", tag, v); break;
    case 1: snprintf(buf, len, "%s:one:%x", tag, v); break;
    case 2: snprintf(buf, len, "%s/%d/%d", tag, v, v * {m}); break;
    case 3: snprintf(buf, len, "[%s] %08d", tag, v); break;
    default: snprintf(buf, len, "%s=%d", tag, -v); break;
    }}
}}
""",
    """unsigned hash_{n}(const unsigned char *p, size_t n) {{
    unsigned h = 2166136261u ^ {m}u;
    for (size_t i = 0; i < n; i++) {{ h ^= p[i]; h *= 16777619u; }}
    return h ^ (h >> 15);
}}
""",
    """struct node_{n} {{ struct node_{n} *next; int v; }};
struct node_{n} *insert_{n}(struct node_{n} *head, int v) {{
    struct node_{n} *nd = malloc(sizeof *nd);
    if (!nd) return head;
    nd->v = v;
    struct node_{n} **pp = &head;
    while (*pp && (*pp)->v < v) pp = &(*pp)->next;
    nd->next = *pp; *pp = nd;
    return head;
}}
""",
    """void matmul_{n}(const float *a, const float *b, float *c, int n) {{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {{
            float s = 0;
            for (int k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s + {m};
        }}
}}
""",
]


def typical_source(functions: int = 48) -> str:
    """A deterministic, ordinary-looking C translation unit of ``functions`` functions."""
    parts = ["#include <ctype.h>\n#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
             "#include <string.h>\n\n"]
    for n in range(functions):
        t = _TEMPLATES[n % len(_TEMPLATES)]
        if n % len(_TEMPLATES) == 0:
            # the struct must precede the comparator that uses it
            head, _, rest = t.partition("}}\n")
            t = rest + head + "}}\n"
        parts.append(t.format(n=n, m=n % 7 + 2))
    return "\n".join(parts)


def _time(argv: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    result = proc.run(argv, env=env, cwd=cwd, timeout=120)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(argv)}\n{result.stderr.decode()}")
    return elapsed


def _interval(ratios: list[float], rng: random.Random, n: int = 2000) -> tuple[float, float]:
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--source", type=Path, action="append", default=[],
                        help="translation unit(s) to compile (default: count.c and a generated typical one)")
    parser.add_argument("--sgcc", default=shutil.which("sgcc") or str(Path(sys.executable).parent / "sgcc"))
    args = parser.parse_args()
    gcc = shutil.which("gcc")
    rng = random.Random(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_")}
    with tempfile.TemporaryDirectory(prefix="sgcc-overhead-") as tmp:
        units = []
        for source in args.source or [DEFAULT_SOURCE]:
            src = Path(tmp) / source.name
            shutil.copy(source, src)
            label = source.relative_to(ROOT) if source.is_relative_to(ROOT) else source
            units.append((str(label), src, ["-I", str(source.parent)]))
        if not args.source:
            typical = Path(tmp) / "typical.c"
            typical.write_text(typical_source())
            lines = typical.read_text().count("\n")
            units.append((f"typical (generated, {lines} lines)", typical, []))
        print(f"{args.rounds} interleaved rounds, wall time, sgcc = {args.sgcc}")
        for label, src, include in units:
            _bench_unit(label, src, include, gcc, args, env, rng, tmp)


def _make_hit(gcc: str, sgcc: str, flags: list[str], src: Path, cache_dir: Path, env: dict, tmp: str) -> None:
    """A cache entry for ``src`` whose winner is one of its functions with a comment added
    (so the hit path substitutes and assembles real text)."""
    from sgcc.asm.units import AsmFile
    from sgcc.cache import keys
    from sgcc.cache import store as cache
    from sgcc.cache.entry import Applied, Entry

    s_file = Path(tmp) / "probe.s"
    base = [f for f in flags if f not in ("-c", "-o", "x.o", src.name)]
    r = proc.run([gcc, *base, "-S", src.name, "-o", str(s_file)], env=env, cwd=tmp, timeout=120)
    assert r.ok, r.stderr.decode()
    asm = s_file.read_text()
    unit = max(AsmFile.parse(asm).units, key=lambda u: u.lines)
    ctx = keys.context(gcc, base, "flags")
    key = keys.entry_key(ctx, keys.tu_digest(asm))
    cache.Store(cache_dir).update(key, lambda old: Entry(applied=Applied(
        {unit.name: unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n# cached\n", 1)})))


def _bench_unit(label, src, include, gcc, args, env, rng, tmp) -> None:
    flags = ["-O3", *include, "-c", src.name, "-o", "x.o"]
    cache_on = Path(tmp) / f"cache-{src.stem}"
    off = {**env, "SGCC_CACHE": "0"}
    _make_hit(gcc, args.sgcc, flags, src, cache_on, env, tmp)
    situations = {
        "eligible, cache off": (flags, off),
        "cache miss": (flags, {**env, "SGCC_CACHE_DIR": str(Path(tmp) / f"empty-{src.stem}")}),
        "cache hit (substitutes)": (flags, {**env, "SGCC_CACHE_DIR": str(cache_on)}),
        "pass-through -O1 -c": (["-O1", *flags[1:]], off),
        "disabled (SGCC_DISABLE=1)": (flags, {**env, "SGCC_DISABLE": "1"}),
    }
    print(f"\nunit: {label}")
    print(f"{'situation':28} {'gcc ms':>8} {'sgcc ms':>8} {'ratio':>7} {'95% CI':>15} {'extra ms':>9}")
    for name, (sflags, senv) in situations.items():
        gflags = sflags
        for _ in range(3):  # warm the page cache and gcc's files
            _time([gcc, *gflags], env, tmp)
            _time([args.sgcc, *sflags], senv, tmp)
        g, s = [], []
        for _ in range(args.rounds):
            pair = [("g", [gcc, *gflags], env), ("s", [args.sgcc, *sflags], senv)]
            rng.shuffle(pair)
            for tag, argv, e in pair:
                (g if tag == "g" else s).append(_time(argv, e, tmp))
        ratios = [b / a for a, b in zip(g, s)]
        lo, hi = _interval(ratios, rng)
        gm, sm = statistics.median(g) * 1000, statistics.median(s) * 1000
        print(f"{name:28} {gm:8.1f} {sm:8.1f} {statistics.median(ratios):7.2f} "
              f"{f'[{lo:.2f}, {hi:.2f}]':>15} {sm - gm:9.1f}", flush=True)


if __name__ == "__main__":
    main()
