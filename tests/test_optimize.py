"""The engine end to end: real gcc, real assembler, real sandboxed runs, real timing.

Every hostile candidate must stop at the right stage, quickly, with nothing read, written
or run that should not be; the shipped program must always pass every test. Timing is only
asserted where the effect is large (popcnt against a bit loop, several times faster), never
for small gains.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.candidates.replay import ReplayGenerator
from sgcc.engine import Request, optimize
from tests.conftest import EXAMPLES, TIMING_SAMPLE_SECONDS

POPCOUNT = EXAMPLES / "programs" / "popcount"
FAST = dict(timing_rounds=8, min_sample=TIMING_SAMPLE_SECONDS)


def _request(tmp_path, cand_dir, **kw) -> Request:
    params = dict(source=POPCOUNT / "popcount.c", flags=["-O3"], tests=POPCOUNT / "tests",
                  output=tmp_path / "out", generators=[ReplayGenerator(cand_dir)], seed=1, **FAST)
    params.update(kw)
    return Request(**params)


def _baseline_unit(tmp_path: Path, name: str = "count_bits") -> str:
    asm = proc.run(["gcc", "-O3", "-S", "-o", "-", str(POPCOUNT / "popcount.c")], check=True).stdout.decode()
    return AsmFile.parse(asm).unit(name).text


def _passes_tests(binary: Path) -> bool:
    for t in sorted((POPCOUNT / "tests").glob("*.in")):
        r = proc.run([str(binary)], stdin=t.read_bytes(), timeout=30)
        if r.returncode != 0 or r.stdout != t.with_suffix(".out").read_bytes():
            return False
    return True


def _by_origin(report) -> dict[str, object]:
    return {Path(c.origin).stem: c for c in report.candidates}


@pytest.mark.slow
def test_popcnt_accepted_only_under_native_isa(tmp_path):
    native = POPCOUNT / "candidates-native"
    report = optimize(_request(tmp_path, native, isa="native"))
    (cand,) = report.candidates
    assert cand.stage == "accepted", cand.reason
    assert cand.ci_low > 1.03 and report.final is not None and report.final["low"] > 1.03
    assert report.shipped == [cand.id]
    assert _passes_tests(tmp_path / "out")

    report = optimize(_request(tmp_path, native))  # the flags' target: plain x86-64
    (cand,) = report.candidates
    assert cand.stage == "check"
    assert "popcnt" in cand.reason and "--isa native" in cand.reason
    # Nothing proven: the output is exactly gcc -O3's program.
    ref = tmp_path / "ref"
    proc.run(["gcc", "-O3", str(POPCOUNT / "popcount.c"), "-o", str(ref)], check=True)
    assert (tmp_path / "out").read_bytes() == ref.read_bytes()


def _hostile(tmp_path: Path) -> dict[str, str]:
    """Variants of gcc's own count_bits unit, each hostile in one way."""
    unit = _baseline_unit(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-TOKEN-1234\n")
    body_start = unit.index("count_bits:\n") + len("count_bits:\n")

    def inject(lines: str) -> str:
        return unit[:body_start] + lines + unit[body_start:]

    return {
        "incbin": inject(f'\t.incbin "{secret}"\n'),
        "include": inject(f'\t.include "{secret}"\n'),
        "system": inject("\tcall\tsystem@PLT\n"),
        "syscall_bytes": inject("\t.byte 0x0f, 0x05\n"),
        "huge_fill": inject("\t.fill 1000000000, 1, 0x90\n"),
        "rept": inject("\t.rept 100000000\n\tnop\n\t.endr\n"),
        "init_array": unit + "\t.section\t.init_array,\"aw\"\n\t.align 8\n\t.quad\tcount_bits\n\t.text\n",
        "not_assembling": inject("\tmovq\t%rax, %nosuchreg\n"),
        "never_ends": inject(".Lspin:\n\tjmp\t.Lspin\n"),
        "segfault": inject("\tmovq\t$0, %rax\n\tmovq\t(%rax), %rax\n"),
        # The same instructions in different text: built and timed (an A-vs-A comparison);
        # a byte-identical unit would be skipped without a build.
        "identical": inject("\t# same instructions\n"),
        "byte_identical": unit,
    }


EXPECTED_STAGE = {
    "incbin": "screen", "include": "screen", "system": "check", "syscall_bytes": "check",
    "huge_fill": "screen", "rept": "screen", "init_array": "screen", "not_assembling": "assemble",
    "never_ends": "test", "segfault": "test", "identical": "time", "byte_identical": "skipped",
    "wrong_output": "test",
    "clobbers_r8": "check", "unknown_function": "screen",
}


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("hostile")
    cands = tmp_path / "cands"
    (cands / "count_bits").mkdir(parents=True)
    for name, text in _hostile(tmp_path).items():
        (cands / "count_bits" / f"{name}.s").write_text(text)
    for bad in ("wrong_output", "clobbers_r8"):
        (cands / "count_bits" / f"{bad}.s").write_text((POPCOUNT / "bad" / f"{bad}.s").read_text())
    (cands / "unknown_function.s").write_text("\t.text\nunknown_function:\n\tret\n")
    started = time.perf_counter()
    report = optimize(_request(tmp_path, cands, test_timeout=2.0, keep_temps=False))
    return report, time.perf_counter() - started, tmp_path


@pytest.mark.parametrize("name", sorted(EXPECTED_STAGE))
def test_hostile_candidate_stops_at_the_right_stage(hostile_report, name):
    report, _, _ = hostile_report
    cand = _by_origin(report)[name]
    assert cand.stage == EXPECTED_STAGE[name], (cand.stage, cand.reason)
    assert cand.reason


def test_hostile_run_ships_a_correct_program_and_leaks_nothing(hostile_report):
    report, elapsed, tmp_path = hostile_report
    assert not report.shipped
    assert _passes_tests(tmp_path / "out")
    text = report.to_json()
    assert "SECRET-TOKEN" not in text
    assert elapsed < 120
    by = _by_origin(report)
    # Whichever limit fires first (wall clock or CPU rlimit), it is reported as such.
    assert re.search(r"timed out|SIGXCPU|SIGKILL", by["never_ends"].reason), by["never_ends"].reason
    assert "SIGSEGV" in by["segfault"].reason
    assert "system" in by["system"].reason
    assert by["identical"].speedup is not None  # it was timed, and not accepted


def test_cli_optimize_writes_report_and_output(tmp_path, sgcc_exe):
    report_path = tmp_path / "r.json"
    out = tmp_path / "prog"
    cands = tmp_path / "cands" / "count_bits"
    cands.mkdir(parents=True)
    for bad in (POPCOUNT / "bad").glob("*.s"):
        (cands / bad.name).write_text(bad.read_text())
    r = proc.run([sgcc_exe, "optimize", str(POPCOUNT / "popcount.c"), "-O3", "--tests", str(POPCOUNT / "tests"),
                  "-o", str(out), "--candidates", str(cands.parent), "--generators", "replay", "--timing-rounds", "5",
                  "--report",
                  str(report_path)], timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    data = json.loads(report_path.read_text())
    assert data["paper"]["compiled"] is True and data["honest"]["speedup"] == 1.0
    assert len(data["candidates"]) == 2
    assert {c["stage"] for c in data["candidates"]} <= {"screen", "check", "test", "assemble"}
    assert b"shipped the baseline" in r.stderr
    assert _passes_tests(out)


def test_cli_optimize_reports_user_errors_once(tmp_path, sgcc_exe):
    r = proc.run([sgcc_exe, "optimize", str(tmp_path / "missing.c"), "--tests", str(POPCOUNT / "tests"),
                  "-o", str(tmp_path / "x")], timeout=60)
    assert r.returncode == 1
    assert r.stderr.count(b"sgcc: error:") == 1 and b"Traceback" not in r.stderr


def test_libraries_in_the_flags_link_after_the_program(tmp_path):
    # `sgcc optimize prog.c -O3 -lm`: -lm must follow the object when the engine links, or
    # Debian's default --as-needed drops libm and sqrt is undefined (as with gcc written
    # the other way round).
    src = tmp_path / "roots.c"
    src.write_text('#include <math.h>\n#include <stdio.h>\n'
                   '__attribute__((noinline)) double total(volatile double n) {\n'
                   '  double s = 0; for (double x = 1; x <= n; x++) s += sqrt(x * n); return s; }\n'
                   'int main(void) { double n; if (scanf("%lf", &n) != 1) return 1;\n'
                   '  printf("%.3f\\n", total(n)); return 0; }\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "a.in").write_text("1000\n")
    report = optimize(Request(source=src, flags=["-O3", "-lm"], tests=tmp_path / "tests",
                              output=tmp_path / "out", generators=[], seed=1, **FAST))
    assert report.honest["functions"] == []  # no generators: the baseline, built and linked
    r = proc.run([str(tmp_path / "out")], stdin=b"1000\n", timeout=30)
    assert r.returncode == 0 and r.stdout.strip()


def test_every_generator_implements_the_one_interface():
    """Each generator the registry can build is a Generator (the engine calls nothing else),
    and a generator without propose cannot be made at all."""
    from importlib import import_module

    from sgcc.candidates import Generator, registry

    for name, module in registry.MODULES.items():
        classes = [v for v in vars(import_module(module)).values()
                   if isinstance(v, type) and v.__name__.endswith("Generator") and v is not Generator
                   and v.__module__ == module]
        assert classes and all(issubclass(c, Generator) for c in classes), name
    assert issubclass(ReplayGenerator, Generator)

    class Silent(Generator):
        name = "silent"

    with pytest.raises(TypeError):
        Silent()


def test_engine_never_imports_the_lab():
    code = ("import sys, sgcc.engine, sgcc.engine.explain, sgcc.engine.profile; "
            "print(sorted(m for m in sys.modules if m.startswith('sgcc.lab')))")
    r = proc.run([sys.executable, "-c", code], timeout=60, check=True)
    assert r.stdout.decode().strip() == "[]"
