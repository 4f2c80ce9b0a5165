"""Under ``--isa native`` the host's instruction-set extensions are offered one at a time, and
native code without FMA contraction is offered next to native code with it."""

from __future__ import annotations

import pytest

from sgcc import proc
from sgcc.candidates.variants import (
    ISA_EXTENSIONS,
    NATIVE,
    PORTABLE,
    VariantsGenerator,
    host_cpu_flags,
    isa_singles,
    needs_native,
)
from sgcc.engine import Request, optimize
from tests.conftest import TIMING_SAMPLE_SECONDS


def test_only_extensions_the_host_has_each_alone(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse4_2 popcnt avx avx2 bmi1 bmi2 avx512f avx512vl\n")
    flags = host_cpu_flags(str(info))
    assert {"avx2", "bmi2", "avx512f"} <= flags and "fma" not in flags
    singles = dict(isa_singles(flags))
    # fma is absent; avx512f needs vl, bw and dq, and this CPU lacks bw/dq.
    assert set(singles) == {"isa-avx2", "isa-bmi2", "isa-bmi1", "isa-popcnt", "isa-sse4_2"}
    assert singles["isa-bmi2"] == ["-mbmi2"]
    assert all(needs_native(f) for f in singles.values())
    assert isa_singles(host_cpu_flags(str(tmp_path / "missing"))) == []


def test_native_run_offers_singles_and_no_contraction_portable_does_not():
    gen = VariantsGenerator()
    host = isa_singles(host_cpu_flags())
    native = gen.chosen("native")
    assert native == NATIVE + PORTABLE + host
    assert ("native-nocontract", ["-march=native", "-ffp-contract=off"]) in native
    assert gen.chosen("flags") == PORTABLE
    # FMA comes alone, so a floating-point change from it cannot hide another extension's win.
    names = [n for n, _f in ISA_EXTENSIONS]
    assert "fma" in names and all("-mfma" not in f for n, f in ISA_EXTENSIONS if n != "fma")


FMA_PROGRAM = r"""
#include <stdio.h>
__attribute__((noinline)) double dot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s = a[i] * b[i] + s * 0.999999;
    return s;
}
int main(void) {
    int n; if (scanf("%d", &n) != 1 || n < 1 || n > 4096) return 1;
    double a[4096], b[4096];
    for (int i = 0; i < n; i++) { a[i] = 1.0 / (i + 3); b[i] = (i % 7) * 0.1 + 1e-9 * i; }
    printf("%.17g\n", dot(a, b, n));
    return 0;
}
"""


@pytest.mark.slow
@pytest.mark.skipif("fma" not in host_cpu_flags(), reason="the host has no FMA")
def test_native_without_contraction_survives_where_fma_fails(tmp_path):
    """The native variant contracts a*b+c into FMA and fails the tests; the same instructions
    without contraction pass them, so native code is still on offer for a floating-point
    function."""
    src = tmp_path / "fma.c"
    src.write_text(FMA_PROGRAM)
    tests = tmp_path / "tests"
    tests.mkdir()
    for k, n in enumerate((1, 17, 1000, 4096)):
        (tests / f"t{k}.in").write_text(f"{n}\n")
    sets = [s for s in NATIVE if s[0] in ("native", "native-nocontract")]
    report = optimize(Request(source=src, flags=["-O3"], tests=tests, output=tmp_path / "out", isa="native",
                              generators=[VariantsGenerator(sets)], timing_rounds=6, min_sample=TIMING_SAMPLE_SECONDS, seed=1,
                              test_timeout=5.0))
    dot = {c.meta.get("variant"): c for c in report.candidates if c.function == "dot" and c.id != "-"}
    assert dot["native"].stage == "test", (dot["native"].stage, dot["native"].reason)
    assert dot["native-nocontract"].stage in ("time", "accepted"), dot["native-nocontract"].reason
    ref = tmp_path / "ref"
    proc.run(["gcc", "-O3", str(src), "-o", str(ref)], check=True)
    for t in sorted(tests.glob("*.in")):
        want = proc.run([str(ref)], stdin=t.read_bytes(), timeout=60)
        got = proc.run([str(tmp_path / "out")], stdin=t.read_bytes(), timeout=60)
        assert got.stdout == want.stdout
