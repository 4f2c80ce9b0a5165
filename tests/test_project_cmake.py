"""Project mode on a CMake project with ctest (issue 39), with real cmake, ctest, gcc, valgrind
and the isolated runner: tests/projects/cmakeshared, whose tests are scripts CTest names by
absolute path (a shell script, and a Python one run by an interpreter outside the system's
directories), and whose shared library has the system zlib's name (libz.so.1), so that only
the build's RPATH makes its program load the project's copy.

Before, the box showed each copy at its own path: ctest's generated files named the original
tree, so "gcc's build fails the project's own tests"; a copy's build ran CMake's makefiles,
which cd into the original tree; the programs loaded whichever libz.so.1 the loader found;
and the PGO profile, made at another path, did not match CMake's absolute source names."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from sgcc import proc

pytestmark = pytest.mark.slow  # configures, builds, profiles, tests and times a CMake project

PROJECT = Path(__file__).parent / "projects" / "cmakeshared"
SYSTEM_LIBZ = Path("/lib/x86_64-linux-gnu/libz.so.1")

needs_cmake = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ctest")), reason="needs cmake")

# adler32 as zlib writes it (the remainders deferred over 5552 bytes): about twice as fast as
# the project's; with 65520 for 65521 it is wrong beyond the first 65520 of a sum.
FAST = """#define NMAX 5552
unsigned long adler32(unsigned long adler, const unsigned char *buf, unsigned int len)
{
    unsigned long a = adler & 0xffff, b = (adler >> 16) & 0xffff;
    while (len > 0) {
        unsigned int n = len < NMAX ? len : NMAX;
        len -= n;
        while (n--) {
            a += *buf++;
            b += a;
        }
        a %= BASE;
        b %= BASE;
    }
    return (b << 16) | a;
}
"""


def _candidates(work: Path, sgcc_exe: str) -> Path:
    """Replay candidates for adler32: right (zlib's way) and wrong (the wrong modulus)."""
    out = work / "cands" / "adler32"
    out.mkdir(parents=True)
    for name, base in (("right", "65521u"), ("wrong", "65520u")):
        src = work / f"{name}.c"
        src.write_text(f"#define BASE {base}\n{FAST}")
        assert proc.run(["gcc", "-O2", "-fPIC", "-S", str(src), "-o", str(work / f"{name}.s")], timeout=60).ok
        r = proc.run([sgcc_exe, "functions", str(work / f"{name}.s"), "--show", "adler32"], timeout=60)
        assert r.ok, r.stderr.decode()
        (out / f"{name}.s").write_bytes(r.stdout)
    return out.parent


def _tree(work: Path, configure: str = "", test: str = "ctest --test-dir build", configured: bool = False) -> Path:
    """The bundled project with an sgcc.toml. ``configured``: as docs/project-mode.md shows it, the
    build directory configured first by the user with the compiler CMake finds (so CMake links
    with that compiler, not sgcc: the build command names sgcc the linker's launcher too) and
    cleaned, not removed; otherwise configured afresh by every build."""
    tree = work / "cmakeshared"
    shutil.copytree(PROJECT, tree)
    # The tests' interpreter: this one (a virtual environment's, outside the system's directories).
    launchers = "-DCMAKE_C_COMPILER_LAUNCHER={sgcc}" + (" -DCMAKE_C_LINKER_LAUNCHER={sgcc}" if configured else "")
    (tree / "sgcc.toml").write_text(
        "[project]\n"
        f'build = "cmake -S . -B build {launchers} -DPYTHON={sys.executable} {configure}'
        ' && cmake --build build"\n'
        + ('clean = "cmake --build build --target clean"\n' if configured else 'clean = "cmake -E rm -rf build"\n')
        + f'test = "{test}"\n'
        'bench = ["./build/sum 300000"]\n')
    if configured:
        env = {k: v for k, v in os.environ.items() if k != "CC"}
        r = proc.run(["cmake", "-S", ".", "-B", "build", f"-DPYTHON={sys.executable}", *configure.split()],
                     cwd=tree, env=env, timeout=300)
        assert r.ok, r.stderr.decode()[-2000:]
    return tree


def _env(work: Path) -> dict:
    env = dict(os.environ, SGCC_CACHE_DIR=str(work / "cache"))
    env.pop("CC", None)
    return env


@pytest.fixture(scope="module")
def optimized(tmp_path_factory, sgcc_exe):
    work = tmp_path_factory.mktemp("cmakeshared")
    cands = _candidates(work, sgcc_exe)
    tree = _tree(work, configured=True)
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--generators", "replay,pgo", "--footprint", "waived",
                  "--candidates",
                  str(cands), "--budget", "4m", "--timing-rounds", "8", "--report", str(work / "r.json")],
                 env=_env(work), timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-4000:]
    return tree, json.loads((work / "r.json").read_text()), r.stderr.decode()


def test_an_instrumented_link_that_bypasses_sgcc_is_named_with_both_launchers():
    # cmark: the C linker's launcher was there; api_test, a C++ program linking the C library,
    # linked with c++ and failed on gcov's symbols. The note named only the C launcher.
    from sgcc.project import pgo

    out = ("/usr/bin/ld: ../src/libcmark.a(blocks.c.o): undefined reference to `__gcov_merge_add'\n"
           "gmake[2]: *** [api_test/CMakeFiles/api_test.dir/build.make:130: api_test/api_test] Error 1\n"
           "gmake[1]: *** [CMakeFiles/Makefile2:989: api_test/CMakeFiles/api_test.dir/all] Error 2\n"
           "gmake: *** [Makefile:146: all] Error 2\n")
    why = pgo.links_bypass(out)
    assert why.startswith("the build's links of api_test/api_test do not run through sgcc"), why
    assert "-DCMAKE_C_LINKER_LAUNCHER={sgcc}" in why and "-DCMAKE_CXX_LINKER_LAUNCHER={sgcc}" in why, why
    assert pgo.links_bypass("ld: undefined reference to `__gcov_init'").startswith("the build's links do not")


@needs_cmake
def test_ctest_runs_in_the_box_where_the_build_put_the_project(optimized):
    tree, report, stderr = optimized
    assert report["placed"]["at"] == str(tree.resolve()), report["placed"]
    # The interpreter CTestTestfile.cmake names, outside /usr: shown read-only with its installation.
    assert any(str(Path(sys.prefix)) in t for t in report["placed"]["tools"]), report["placed"]
    assert "where the build put the project" in stderr
    # The whole project's profile, made by a copy built and run at the project's path, fits
    # CMake's absolute source names: every compile the workload ran has its profile. (The build
    # directory was configured by the user with cc, so the instrumented links take
    # -fprofile-generate only through the linker's launcher; without it they fail on gcov's
    # symbols and the error says why: pgo.LINKS_BYPASS.)
    assert report["pgo"]["profiles"] == 3 and not report["pgo"]["error"], report["pgo"]
    pgo = next(e for e in report["whole_project"]["field"] if e["name"] == "PGO everywhere")
    assert pgo["compiles"] == 3 and pgo["compiles_changed"] >= 1 and pgo.get("tests_passed"), pgo


@needs_cmake
def test_a_candidate_in_the_shared_library_is_tested_by_the_project_s_tests(optimized):
    tree, report, stderr = optimized
    unit = next(u for u in report["units"] if u["source"] == "src/adler.c")
    by_origin = {Path(c["origin"]).name: c for c in unit["report"]["candidates"] if c.get("origin")}
    wrong, right = by_origin["wrong.s"], by_origin["right.s"]
    # The wrong candidate, in libz.so.1, is caught by ctest: its library was the one loaded
    # (a system libz.so.1 standing in would have passed the checksums).
    assert wrong["reason"] == "the project's tests fail with it", wrong
    assert "checksums (Failed)" in wrong["detail"], wrong
    assert right["stage"] == "accepted", right
    assert report["libraries"]["built"] == {"libz.so.1": "build/libz.so.1.0"}, report["libraries"]
    assert report["libraries"]["loaded"] == {"libz.so.1": ["build/libz.so.1"]}, report["libraries"]
    assert report["final"] and report["final"]["tests_passed"] and report["final"]["low"] > 1.0, report["final"]
    assert proc.run(["ctest", "--test-dir", "build"], cwd=tree, timeout=120).ok


@needs_cmake
def test_functions_only_the_workload_runs_rest_on_the_workload(optimized):
    tree, report, stderr = optimized
    ev = report["evidence"]
    # The workload prints its checksum, which every run must print as gcc's build did.
    assert ev["workload_is_test"] and "prints 9 bytes" in ev["why"], ev
    assert [o["function"] for o in ev["workload_only"]] == ["fill"], ev
    gen = next(u for u in report["units"] if u["source"] == "src/gen.c")
    assert gen["evidence"] == {"fill": "workload"} and "tested by the workload alone" in gen["functions"][0], gen
    adler = next(u for u in report["units"] if u["source"] == "src/adler.c")
    assert adler["evidence"]["adler32"] == "tests", adler
    assert "rest on it alone (fill" in stderr


@needs_cmake
def test_the_pgo_reference_is_a_pgo_build_made_as_a_user_makes_it(optimized):
    tree, report, stderr = optimized
    ref = report["references"]["pgo_everywhere"]
    # The ordinary -fprofile-use build of the trained tree, and sgcc's PGO everywhere (its
    # compiles substituted by the drop-in): the same programs and library, byte for byte.
    assert ref.get("same_code_as_candidate") is True, ref
    assert "speedup" in ref and "as a user builds it" in stderr


@needs_cmake
@pytest.mark.skipif(not SYSTEM_LIBZ.exists(), reason="needs the system's zlib as the stand-in")
def test_a_system_copy_of_the_project_s_library_is_refused(tmp_path, sgcc_exe):
    """Built without an RPATH, the program loads the system's libz.so.1: the checksums still
    pass (zlib computes them too), so only the loader's trace shows the tests ran code sgcc
    did not build."""
    os.chmod(tmp_path, 0o755)
    tree = _tree(tmp_path, configure="-DCMAKE_SKIP_BUILD_RPATH=ON", test="ctest --test-dir build -R checksums")
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--generators", "variants", "--budget", "2m"],
                 env=_env(tmp_path), timeout=600)
    err = r.stderr.decode()
    assert r.returncode == 1, err[-3000:]
    assert f"loads libz.so.1 from {SYSTEM_LIBZ.parent}" in err or "loads libz.so.1 from /usr/lib" in err, err
    assert "not the one the build made (build/libz.so.1.0)" in err and "Traceback" not in err
    assert err.count("sgcc: error:") == 1


@needs_cmake
def test_a_failing_test_command_s_whole_output_is_kept(tmp_path, sgcc_exe):
    """ctest says only which tests failed and that their output is in LastTest.log, a file of
    the copy the tests ran in: the log sgcc keeps has both."""
    tree = _tree(tmp_path)
    (tree / "tests" / "words.adler").write_text("00000000\n")
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--generators", "variants", "--budget", "2m"],
                 env=_env(tmp_path), timeout=600)
    err = r.stderr.decode()
    assert r.returncode == 1 and "gcc's build fails the project's own tests" in err, err[-3000:]
    log = Path(err.split("files it names from the tree it ran in: ", 1)[1].split(")", 1)[0])
    text = log.read_text()
    assert "The following tests FAILED" in text and "LastTest.log (from the copy of the tree" in text, text
    assert "FAIL " in text and "words.txt" in text  # checksums.sh's own message, from LastTest.log
