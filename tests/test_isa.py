"""Instruction-set policy: what flags promise (real gcc) and what code needs (real capstone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgcc import proc
from sgcc.errors import SgccError
from sgcc.verify.static import insnfeatures, isa


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def decode(hexbytes: str):
    import capstone

    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    insns = list(md.disasm(bytes.fromhex(hexbytes), 0))
    assert len(insns) == 1 and insns[0].size == len(hexbytes) // 2
    return insns[0]


def compile_obj(tmp_path: Path, source: str, *flags: str) -> Path:
    (tmp_path / "u.c").write_text(source)
    obj = tmp_path / f"u{len(list(tmp_path.iterdir()))}.o"
    proc.run(["gcc", "-O3", "-c", *flags, "u.c", "-o", str(obj)], cwd=tmp_path, timeout=60, check=True)
    return obj


# ---------------------------------------------------------------------------------------------
# What the flags promise


def test_default_target_is_baseline_x86_64():
    t = isa.target_from_flags("gcc", [])
    assert t.name == "x86-64" and not t.host
    assert {"sse", "sse2"} <= t.features
    assert not {"popcnt", "avx", "avx2", "sse4.2", "lzcnt", "bmi"} & t.features


def test_single_feature_flag_adds_it():
    t = isa.target_from_flags("gcc", ["-mpopcnt"])
    assert "popcnt" in t.features and "avx" not in t.features
    assert "popcnt" in t.name


def test_march_haswell():
    t = isa.target_from_flags("gcc", ["-march=haswell"])
    assert {"avx", "avx2", "bmi", "bmi2", "fma", "lzcnt", "popcnt", "movbe", "sse4.2", "cx16"} <= t.features
    assert "avx512f" not in t.features
    assert t.name == "haswell"


def test_mno_removes_from_native():
    native = isa.native_target("gcc")
    if "sse4.2" not in native.features:
        pytest.skip("this CPU has no SSE4.2")
    t = isa.target_from_flags("gcc", ["-mno-sse4.2", "-march=native"])
    assert "sse4.2" not in t.features
    assert "sse4.1" in t.features
    assert t.host  # still this machine's target


def test_native_target_matches_cpu():
    t = isa.native_target("gcc")
    assert t.name == "native" and t.host
    flags = cpu_flags()
    for cpu, feature in [("popcnt", "popcnt"), ("avx2", "avx2"), ("avx512f", "avx512f"), ("bmi2", "bmi2")]:
        if cpu in flags:
            assert feature in t.features


def test_only_isa_flags_reach_the_probe_and_results_are_cached():
    a = isa.target_from_flags("gcc", ["-O3", "-o", "x", "-DX=1", "@/etc/passwd", "-include", "y.h", "-mpopcnt"])
    b = isa.target_from_flags("gcc", ["-mpopcnt"])
    assert a is b


def test_non_x86_64_flags_and_bad_flags_raise():
    with pytest.raises(SgccError):
        isa.target_from_flags("gcc", ["-m32"])
    with pytest.raises(SgccError):
        isa.target_from_flags("gcc", ["-mno-such-isa-flag"])


# ---------------------------------------------------------------------------------------------
# What an instruction needs


@pytest.mark.parametrize("hexbytes,needs", [
    ("4801d8", set()),                          # add %rbx, %rax
    ("0f0b", set()),                            # ud2
    ("f30f1efa", set()),                        # endbr64 (a nop on old CPUs)
    ("660f58c8", {"sse2"}),                     # addpd
    ("f30fb8c0", {"popcnt"}),                   # popcnt
    ("f30fbdc8", {"lzcnt"}),                    # lzcnt: bsr (a different answer) on old CPUs
    ("f30fbcc8", {"bmi"}),                      # tzcnt == rep bsf
    ("0f38f007", {"movbe"}),
    ("f20f38f0c8", {"sse4.2"}),                 # crc32
    ("660f3838c1", {"sse4.1"}),                 # pminsb
    ("660f3800c8", {"ssse3"}),                  # pshufb
    ("c4e2f3f5d0", {"bmi2"}),                   # pdep
    ("c4e2f0f2d0", {"bmi"}),                    # andn
    ("66480f38f6c8", {"adx"}),                  # adcx
    ("0fc7f0", {"rdrnd"}),                      # rdrand
    ("480fc70f", {"cx16"}),                     # cmpxchg16b
    ("c5fe7f00", {"avx"}),                      # vmovdqu %ymm0, (%rax)
    ("c5f5fed0", {"avx2"}),                     # vpaddd ymm
    ("c4e2f1b9d0", {"fma"}),                    # vfmadd231sd (no capstone group)
    ("c4e27913c8", {"f16c"}),                   # vcvtph2ps
    ("62f17548fed0", {"avx512f"}),              # vpaddd zmm
    ("62b17508fed0", {"avx512f", "avx512vl"}),  # vpaddd with xmm16
    ("62f3754825d000", {"avx512f"}),            # vpternlogd zmm (no capstone group)
    ("62f27d4855c8", {"avx512f", "avx512vpopcntdq"}),
    ("62f17f487f00", {"avx512f", "avx512bw"}),  # vmovdqu8 zmm
])
def test_required_features(hexbytes, needs):
    assert insnfeatures.required_features(decode(hexbytes)) == needs


# ---------------------------------------------------------------------------------------------
# Whole objects


def test_unsupported_names_instruction_place_and_target(tmp_path):
    obj = compile_obj(tmp_path, "int f(unsigned long x) { return __builtin_popcountl(x); }\n", "-mpopcnt")
    msgs = isa.unsupported(obj, isa.target_from_flags("gcc", []))
    assert msgs and msgs[0].startswith("popcnt at .text+0x")
    assert "in f" in msgs[0] and "needs popcnt" in msgs[0] and "x86-64" in msgs[0]
    assert isa.unsupported(obj, isa.target_from_flags("gcc", ["-mpopcnt"])) == []


def test_gcc_default_output_is_within_default_target(tmp_path):
    src = r"""
    #include <string.h>
    double dot(const double *a, const double *b, int n) { double s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s; }
    void cp(char *d, const char *s, unsigned long n) { memcpy(d, s, n); }
    long sum(const int *a, int n) { long s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
    """
    obj = compile_obj(tmp_path, src)
    assert isa.unsupported(obj, isa.target_from_flags("gcc", [])) == []
    wide = compile_obj(tmp_path, src, "-march=x86-64-v4")
    assert isa.unsupported(wide, isa.target_from_flags("gcc", ["-march=x86-64-v4"])) == []
    assert isa.unsupported(wide, isa.target_from_flags("gcc", [])) != []


def test_function_may_keep_what_gcc_used_for_it(tmp_path):
    # gcc's own code for a function may be wider than the flags (target attributes) or use
    # bytes that decode as a newer instruction (rep bsf == tzcnt): the same function in a
    # candidate may use the same features, other functions may not.
    src = """
    __attribute__((target("popcnt"))) int pc(unsigned x) { return __builtin_popcount(x); }
    int ctz(unsigned x) { return __builtin_ctz(x); }
    int plain(int x) { return x + 1; }
    """
    obj = compile_obj(tmp_path, src)
    default = isa.target_from_flags("gcc", [])
    alone = isa.unsupported(obj, default)
    assert any(m.startswith("popcnt") and "in pc" in m for m in alone)
    assert any(m.startswith("tzcnt") and "in ctz" in m for m in alone)
    assert not any("in plain" in m for m in alone)
    assert isa.unsupported(obj, default, baseline=obj) == []
