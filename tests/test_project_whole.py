"""The whole-project candidates' field (sgcc.project.whole): which variants each generator
offers, and what they are called in reports and cache entries. The builds, tests and race are
tested end to end in tests/test_project_pgo_baseline.py."""

from __future__ import annotations

from sgcc.project import whole


def test_the_field_follows_the_generators_and_the_isa_policy():
    assert whole.field(set(), "flags") == []
    assert whole.field({"pgo"}, "flags") == [whole.PGO]
    names = [v.name for v in whole.field({"pgo", "flags"}, "flags")]
    assert names[0] == "PGO everywhere"  # the largest lever measured: tried first, cut last
    assert "PGO everywhere + -O3" in names and "-O3 everywhere" in names
    assert not any("native" in n for n in names)  # isa = flags: no instruction the flags do not allow
    native = whole.field({"pgo", "flags"}, "native")
    assert any(v.flags[:1] == ("-O3",) and "-march=native" in v.flags for v in native)
    # -march=native brings FMA: contraction would change floating-point results.
    assert all("-ffp-contract=off" in v.flags for v in native if "-march=native" in v.flags)
    assert [v.name for v in whole.field({"flags"}, "flags")] == \
        ["-O3 everywhere", "-O2 everywhere", "-O3 -funroll-loops everywhere"]


def test_cache_entries_name_the_variant():
    assert whole.PGO.generator == "pgo-everywhere"
    assert whole.Variant(("-O3",), profile=True).generator == "pgo-everywhere -O3"
    assert whole.Variant(("-O3", "-funroll-loops")).generator == "flags-everywhere -O3 -funroll-loops"
