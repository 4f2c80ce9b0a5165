"""sgcc as a drop-in: every output, exit status and diagnostic must be gcc's own.

Each case runs a gcc command line twice in the same directory path (so debug info and
dependency files see the same paths): once with the real gcc, once through sgcc, and
compares exit status, stdout, stderr and every file the command left behind, byte for byte.
The SGCC_LOGFILE line proves which path sgcc took (intercepted or passed through).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from sgcc import proc

FIXTURES = Path(__file__).parent / "dropin_src"

E, P = "eligible", "pass-through"
# (id, argv, expected sgcc path)
CASES = [
    ("object-default-name", "-O3 -c a.c", E),
    ("object-with-o", "-O3 -c a.c -o out/a.o", E),
    ("O2", "-O2 -c a.c -o a2.o", E),
    ("Ofast-float", "-Ofast -c fp.c", E),
    ("debug-g", "-O3 -g -c a.c", E),
    ("debug-g3-o", "-O3 -g3 -c a.c -o x.o", E),
    ("mmd-mp", "-O3 -MMD -MP -c a.c -o out/a.o", E),
    ("md-default", "-O3 -MD -c a.c", E),
    ("md-mf-mt", "-O3 -MD -MF deps.dep -MT custom_target -c a.c -o y.o", E),
    ("mmd-mq-dollar", "-O3 -MMD -MQ $weird -c a.c -o dollar.o", E),
    ("warnings", "-O3 -Wall -c warn.c", E),
    ("werror-fails", "-O3 -Wall -Werror -c warn.c", E),
    ("syntax-error", "-O3 -c broken.c", E),
    ("two-sources", "-O3 -c a.c b.c", E),
    ("two-sources-o-error", "-O3 -c a.c b.c -o both.o", P),
    ("link-two", "-O3 usesb.c b.c -lm -o prog", E),
    ("link-a-out", "-O3 a.c", E),
    ("link-error", "-O3 undefined.c -o never", E),
    ("link-object-and-source", "-O3 b.o usesb.c -lm -o prog2", E),
    ("asm-default", "-O3 -S a.c", E),
    ("asm-o", "-O3 -S a.c -o out.s", E),
    ("preprocess", "-O3 -E a.c", P),
    ("deps-only", "-O3 -M a.c", P),
    ("O0", "-O0 -c a.c", P),
    ("O1", "-O1 -c a.c", P),
    ("no-opt", "-c a.c", P),
    ("Os", "-Os -c a.c", P),
    ("lto", "-O3 -flto -c a.c", P),
    ("explicit-lang", "-O3 -x c -c lang.txt -o lang.o", E),
    ("response-file", "@resp.txt", E),
    ("version", "--version", P),
    ("missing-source", "-O3 -c missing.c", E),
    ("save-temps", "-O3 -save-temps -c a.c", P),
    ("fpic", "-O3 -fPIC -c a.c -o pic.o", E),
    ("march-native", "-O3 -march=native -c fp.c", E),
    ("defines-includes", "-O3 -DSCALE_BIAS=9.5 -Iinc -c a.c -o d.o", E),
    ("missing-output-dir", "-O3 -c a.c -o nodir/a.o", E),
    ("pipe", "-O3 -pipe -c a.c", E),
    ("std-pedantic", "-O3 -std=c99 -pedantic -Wall -c warn.c", E),
    ("output-stdout", "-O3 -S a.c -o -", P),
    ("syntax-only", "-O3 -fsyntax-only a.c", P),
    ("wa-option", "-O3 -Wa,--noexecstack -c a.c", E),
    ("no-args", "", P),
    ("unknown-option", "-O3 --no-such-option -c a.c", P),
    ("unknown-short-option", "-O3 -fno-such-flag -c a.c", E),
    ("assembly-input", "-O3 -c out.s", P),
    ("dump-aux-file", "-O3 -fstack-usage -c a.c", P),
    ("shared-lib", "-O3 -fPIC -shared b.c -o libb.so", P),
    # `sgcc -h` alone is sgcc's help (test_h_alone_is_sgccs_help); with anything else, gcc's.
    ("h-with-input", "-h a.c", P),
    ("h-last", "-O3 -c a.c -h", E),
]

#: Links among CASES: in a recorded build each goes through sgcc.dropin.ltrans.route.
RECORDED_LINKS = frozenset({"no-args", "shared-lib", "h-with-input"})

TMPNAME = re.compile(rb"/tmp/cc[A-Za-z0-9]+\.[a-z]+")


def _prepare(work: Path) -> None:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(FIXTURES, work)
    (work / "out").mkdir()
    # An object some link cases take as input.
    proc.run(["gcc", "-O3", "-c", "b.c", "-o", "b.o"], cwd=work, check=True)
    (work / "out.s").write_bytes(proc.run(["gcc", "-O3", "-S", "a.c", "-o", "-"], cwd=work, check=True).stdout)


def _snapshot(work: Path, result: proc.Result) -> dict:
    files = {}
    for path in sorted(work.rglob("*")):
        if path.is_file():
            files[str(path.relative_to(work))] = path.read_bytes()
    return {
        "returncode": result.returncode,
        "stdout": result.stdout,
        "stderr": TMPNAME.sub(b"TMP", result.stderr),
        "files": files,
    }


def _run_both(tmp_path: Path, args: list[str], sgcc_argv: list[str], env: dict) -> tuple[dict, dict, str]:
    work = tmp_path / "work"
    _prepare(work)
    gcc = _snapshot(work, proc.run(["gcc", *args], cwd=work, timeout=120))
    # Some gcc outputs differ from run to run by gcc's own design (LTO objects carry a
    # random seed): learn which by running gcc twice, and compare those by presence only.
    _prepare(work)
    again = _snapshot(work, proc.run(["gcc", *args], cwd=work, timeout=120))
    gcc["unstable"] = {n for n, d in gcc["files"].items() if again["files"].get(n) != d}
    _prepare(work)
    log = tmp_path / "sgcc.log"
    log.unlink(missing_ok=True)
    env = {**env, "SGCC_LOGFILE": str(log)}
    ours = _snapshot(work, proc.run([*sgcc_argv, *args], cwd=work, env=env, timeout=120))
    return gcc, ours, log.read_text() if log.exists() else ""


def _assert_same(gcc: dict, ours: dict) -> None:
    assert ours["returncode"] == gcc["returncode"]
    assert ours["stdout"] == gcc["stdout"]
    assert ours["stderr"] == gcc["stderr"]
    assert sorted(ours["files"]) == sorted(gcc["files"])
    for name, data in gcc["files"].items():
        if name in gcc["unstable"]:
            continue
        assert ours["files"][name] == data, f"{name} differs"


def _base_env() -> dict:
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("SGCC_") and key not in ("SGCC_CACHE_DIR", "SGCC_CONFIG"):
            del env[key]  # (the session's private cache and configuration stay: see conftest)
    return env


@pytest.mark.parametrize("path", ["direct", "two-step"])
@pytest.mark.parametrize("case_id,argline,expected", CASES, ids=[c[0] for c in CASES])
def test_plain_use_matches_gcc(tmp_path, sgcc_exe, case_id, argline, expected, path):
    """Both ways an eligible compile can go: straight to gcc (nothing to substitute: the empty
    cache) and sgcc's own two steps (forced here as `sgcc optimize --project` forces them, by
    recording the compiles)."""
    args = argline.split()
    env = _base_env()
    if path == "two-step":
        env["SGCC_RECORD"] = str(tmp_path / "record" / "compiles.jsonl")
        (tmp_path / "record").mkdir()
    gcc, ours, log = _run_both(tmp_path, args, [sgcc_exe], env)
    if expected == E:
        assert not gcc["unstable"], "an eligible compile must be deterministic to be byte-identical"
    _assert_same(gcc, ours)
    if path == "two-step" and case_id in RECORDED_LINKS:
        # A recorded project build runs every link with sgcc's assembler in place (its objects
        # may hold LTO's language); its result is still gcc's (above), failures included.
        assert re.match(r"\[\d+\] link \(LTO partitions recorded, if any\): routing", log), log
        return
    assert re.match(rf"\[\d+\] {expected}", log), log
    if expected == E:
        direct = "nothing to substitute" in log
        assert direct == (path == "direct"), log


PREFIX_CASES = ["object-with-o", "mmd-mp", "warnings", "syntax-error", "link-two", "debug-g", "preprocess"]


@pytest.mark.parametrize("case_id", PREFIX_CASES)
@pytest.mark.parametrize("compiler", ["gcc", "/usr/bin/cc"])
def test_prefix_use_matches_gcc(tmp_path, sgcc_exe, case_id, compiler):
    _, argline, expected = next(c for c in CASES if c[0] == case_id)
    gcc, ours, log = _run_both(tmp_path, argline.split(), [sgcc_exe, compiler], _base_env())
    _assert_same(gcc, ours)
    assert f"] {expected}" in log and (" prefix " in log or expected == P)


@pytest.mark.parametrize("case_id", PREFIX_CASES)
def test_masquerade_matches_gcc(tmp_path, masquerade_bin, case_id):
    _, argline, expected = next(c for c in CASES if c[0] == case_id)
    env = _base_env()
    env["PATH"] = f"{masquerade_bin}{os.pathsep}{env['PATH']}"
    gcc, ours, log = _run_both(tmp_path, argline.split(), ["gcc"], env)
    _assert_same(gcc, ours)
    assert f"] {expected}" in log and (" masquerade " in log or expected == P)
    assert "/usr/bin/gcc" in log or os.path.realpath("/usr/bin/gcc") in log


def test_h_alone_is_sgccs_help(tmp_path, sgcc_exe, masquerade_bin):
    """`sgcc -h`, listed by sgcc's help, went to gcc ("missing argument to '-h'", issue 28).
    gcc gives `-h` alone no meaning, so sgcc takes that one command line; prefix use and
    masquerading stay gcc's, as does every other command line with -h (CASES)."""
    r = proc.run([sgcc_exe, "-h"], cwd=tmp_path, env=_base_env(), timeout=60)
    out = r.stdout.decode()
    assert r.returncode == 0 and r.stderr == b"" and out.startswith("Usage: sgcc ")
    assert "optimize" in out and "sgcc --help` is gcc's help" in out
    gcc, ours, _ = _run_both(tmp_path, ["-h"], [sgcc_exe, "gcc"], _base_env())
    _assert_same(gcc, ours)
    assert b"missing argument to" in ours["stderr"]
    env = _base_env()
    env["PATH"] = f"{masquerade_bin}{os.pathsep}{env['PATH']}"
    gcc, ours, _ = _run_both(tmp_path, ["-h"], ["gcc"], env)
    _assert_same(gcc, ours)


def test_disable_is_pure_pass_through(tmp_path, sgcc_exe):
    env = {**_base_env(), "SGCC_DISABLE": "1"}
    gcc, ours, log = _run_both(tmp_path, "-O3 -MMD -c a.c -o out/a.o".split(), [sgcc_exe], env)
    _assert_same(gcc, ours)
    assert "] disabled" in log


def test_masquerade_never_recurses_into_itself(tmp_path, masquerade_bin, sgcc_exe):
    """With only sgcc named gcc in PATH, sgcc says so instead of calling itself forever."""
    env = _base_env()
    env["PATH"] = str(masquerade_bin)
    result = proc.run([str(masquerade_bin / "gcc"), "-O3", "-c", "x.c"], env=env, cwd=tmp_path, timeout=30)
    assert result.returncode == 1
    assert b"sgcc: error:" in result.stderr and b"SGCC_COMPILER" in result.stderr


def test_recursion_through_a_wrapper_is_detected(tmp_path, sgcc_exe):
    """SGCC_COMPILER pointing at a script that runs sgcc again is caught, not looped."""
    wrapper = tmp_path / "mycc"
    wrapper.write_text(f"#!/bin/sh\nexec {sgcc_exe} \"$@\"\n")
    wrapper.chmod(0o755)
    (tmp_path / "x.c").write_text("int x(void){return 1;}\n")
    env = {**_base_env(), "SGCC_COMPILER": str(wrapper)}
    result = proc.run([sgcc_exe, "-O3", "-c", "x.c"], env=env, cwd=tmp_path, timeout=30)
    assert result.returncode == 1
    assert b"runs sgcc again" in result.stderr


def test_sgcc_compiler_override(tmp_path, sgcc_exe, real_gcc):
    (tmp_path / "x.c").write_text("int x(void){return 1;}\n")
    log = tmp_path / "log"
    env = {**_base_env(), "SGCC_COMPILER": real_gcc, "SGCC_LOGFILE": str(log)}
    result = proc.run([sgcc_exe, "-O3", "-c", "x.c"], env=env, cwd=tmp_path, timeout=60)
    assert result.returncode == 0 and (tmp_path / "x.o").exists()
    assert real_gcc in log.read_text()


def test_command_words_do_not_shadow_gcc_when_masquerading(tmp_path, masquerade_bin):
    """As `gcc`, sgcc is gcc only: `gcc version` is gcc's (it fails: no such file)."""
    env = _base_env()
    env["PATH"] = f"{masquerade_bin}{os.pathsep}{env['PATH']}"
    ours = proc.run(["gcc", "version"], env=env, cwd=tmp_path, timeout=30)
    theirs = proc.run(["/usr/bin/gcc", "version"], env=_base_env(), cwd=tmp_path, timeout=30)
    assert ours.returncode == theirs.returncode != 0
    assert ours.stderr.replace(b"/usr/bin/", b"") == theirs.stderr.replace(b"/usr/bin/", b"")
