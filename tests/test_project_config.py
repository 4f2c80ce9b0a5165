"""`sgcc optimize --project`: the configuration is checked before anything is built, and
executed code is attributed to the compile whose object is linked into the program that ran
it (real make, gcc, nm; no search)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sgcc import proc
from sgcc.engine.profile import parse_costs
from sgcc.project import attribute
from sgcc.project.record import Compile

# A Makefile whose build leaves a mark: a refused configuration must not get that far.
MAKEFILE = "all:\n\ttouch built-mark\nclean:\n\ttrue\n"


def _env(tmp_path: Path) -> dict:
    env = dict(os.environ, SGCC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CC", None)
    return env


def _optimize(sgcc_exe, tmp_path, *args, cwd=None):
    return proc.run([sgcc_exe, "optimize", "--project", str(tmp_path / "p"), "--generators", "variants", *args],
                    cwd=cwd or tmp_path, env=_env(tmp_path), timeout=120)


def _project(tmp_path: Path, toml: str | None = None) -> Path:
    p = tmp_path / "p"
    p.mkdir()
    (p / "Makefile").write_text(MAKEFILE)
    if toml is not None:
        (p / "sgcc.toml").write_text(toml)
    return p


def _refused(r, message: bytes, project: Path) -> None:
    assert r.returncode == 1, r.stderr
    assert message in r.stderr, r.stderr
    assert r.stderr.count(b"sgcc: error:") == 1 and b"Traceback" not in r.stderr
    assert not (project / "built-mark").exists()  # refused before building


def test_a_test_command_that_does_not_exist_is_refused_before_building(tmp_path, sgcc_exe):
    p = _project(tmp_path, '[project]\ntest = "no-such-test-runner-xyz --all"\n')
    _refused(_optimize(sgcc_exe, tmp_path), b"no-such-test-runner-xyz is not found on PATH", p)


def test_a_bench_command_that_does_not_exist_is_refused_before_building(tmp_path, sgcc_exe):
    p = _project(tmp_path)
    r = _optimize(sgcc_exe, tmp_path, "--test", "make check", "--bench", "no-such-bench-xyz < big.in")
    _refused(r, b"no-such-bench-xyz is not found on PATH", p)


def test_a_workload_needs_the_test_command(tmp_path, sgcc_exe):
    p = _project(tmp_path, '[project]\nbench = ["./prog"]\n')
    _refused(_optimize(sgcc_exe, tmp_path), b"bench is set but test is not", p)


def test_unknown_and_mistyped_settings_are_refused(tmp_path, sgcc_exe):
    p = _project(tmp_path, '[project]\ntest = "make check"\nbench = "./prog"\ntest_timeout = -1\n')
    _refused(_optimize(sgcc_exe, tmp_path), b"test_timeout must be a positive number", p)
    (p / "sgcc.toml").write_text('[project]\ntest = "make check"\nbenchmark = ["./prog"]\n')
    _refused(_optimize(sgcc_exe, tmp_path), b"unknown [project] setting(s): benchmark", p)
    (p / "sgcc.toml").write_text('[project]\ntest = "make check"\nbench_is_test = "yes"\n')
    _refused(_optimize(sgcc_exe, tmp_path), b'bench_is_test must be true, false or "auto"', p)
    (p / "sgcc.toml").write_text('[project]\ntest = "make check"\nlto = "no"\n')
    _refused(_optimize(sgcc_exe, tmp_path), b"lto must be true or false", p)
    (p / "sgcc.toml").write_text('[project]\ntest = "make check"\nprofile_timeout = -5\n')
    _refused(_optimize(sgcc_exe, tmp_path), b"profile_timeout must be a number of seconds", p)


def test_tests_on_the_command_line_are_relative_to_the_current_directory(tmp_path, sgcc_exe):
    p = _project(tmp_path, '[project]\nbinary = "prog"\n')
    (p / "mytests").mkdir()  # in the project, not where the command runs
    here = tmp_path / "elsewhere"
    here.mkdir()
    r = _optimize(sgcc_exe, tmp_path, "--tests", "mytests", cwd=here)
    _refused(r, str(here / "mytests").encode() + b" does not exist", p)
    (here / "mytests").mkdir()
    r = _optimize(sgcc_exe, tmp_path, "--tests", "mytests", cwd=here)
    # Accepted: the build runs (and compiles nothing through sgcc, which is the next error).
    assert r.returncode == 1 and b"compiled nothing through sgcc" in r.stderr, r.stderr
    assert (p / "built-mark").exists()


TWO_MAINS = {
    "a.c": "#include <stdio.h>\nint helper_a(int x) { return x * 3; }\n"
           "int main(void) { printf(\"%d\\n\", helper_a(14)); return 0; }\n",
    "b.c": "#include <stdio.h>\nint main(int argc, char **argv) { (void)argv; printf(\"%d\\n\", argc * 7); return 0; }\n",
    "lib.c": "int shared_fn(int x) { return x + 1; }\n",
}


def test_a_function_is_charged_to_the_object_linked_into_the_program_that_ran_it(tmp_path, real_gcc):
    for name, text in TWO_MAINS.items():
        (tmp_path / name).write_text(text)
    compiles = []
    for name in TWO_MAINS:
        obj = tmp_path / name.replace(".c", ".o")
        assert proc.run([real_gcc, "-O2", "-c", name, "-o", obj.name], cwd=tmp_path, timeout=60).ok
        compiles.append(Compile(key=name, source=tmp_path / name, cwd=tmp_path, args=[], asm_path=tmp_path / "x.s",
                                output=obj))
    assert proc.run([real_gcc, "a.o", "lib.o", "-o", "prog_a"], cwd=tmp_path, timeout=60).ok
    assert proc.run([real_gcc, "b.o", "-o", "prog_b"], cwd=tmp_path, timeout=60).ok
    # What callgrind says of a run of prog_a (and of the C library, which is not the project's).
    costs = {(str(tmp_path / "prog_a"), "main"): 100, (str(tmp_path / "prog_a"), "helper_a"): 30,
             ("/usr/lib/x86_64-linux-gnu/libc.so.6", "printf"): 500}
    found = attribute.attribute(costs, tmp_path, compiles, tmp_path)
    assert found.by_source == {str(tmp_path / "a.c"): {"main": 100, "helper_a": 30}}
    assert found.seen_in == {str(tmp_path / "a.c"): {"a.c": {"prog_a"}}}
    assert found.project == 130 and found.total == 630
    # prog_b's main is b.c's, never a.c's: the same name in another program is another function.
    found = attribute.attribute({(str(tmp_path / "prog_b"), "main"): 50}, tmp_path, compiles, tmp_path)
    assert list(found.by_source) == [str(tmp_path / "b.c")]
    # A stripped program cannot be attributed: nothing in it is searched.
    assert proc.run(["strip", "prog_a"], cwd=tmp_path, timeout=60).ok
    assert attribute.attribute(costs, tmp_path, compiles, tmp_path).by_source == {}


def test_two_statics_of_one_name_in_a_program_each_leave_their_object_attributable(tmp_path, real_gcc):
    # wren: two sources (two LTO partitions) each keep a static `call`; the program holds both,
    # with their own sizes, and each object is still found in it. And a compile marked as an LTO
    # partition of one program is charged to that program only.
    sources = {"p.c": "static int call(int x) { return x * 7 + 1; }\nint pf(int x) { return call(x) + call(x + 1); }\n",
               "q.c": "static int call(int x) { return x > 3 ? x * x - 9 : x + 100; }\n"
                      "int qf(int x) { return call(x) - call(x * 2); }\n",
               "m.c": "int pf(int); int qf(int);\nint main(int c, char **v) { (void)v; return pf(c) + qf(c); }\n"}
    compiles = []
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
        obj = tmp_path / name.replace(".c", ".o")
        # -O0 and noinline semantics: both `call`s stay out of line, with different sizes.
        assert proc.run([real_gcc, "-O0", "-c", name, "-o", obj.name], cwd=tmp_path, timeout=60).ok
        compiles.append(Compile(key=name, source=tmp_path / name, cwd=tmp_path, args=[], asm_path=tmp_path / "x.s",
                                output=obj))
    assert proc.run([real_gcc, "m.o", "p.o", "q.o", "-o", "prog"], cwd=tmp_path, timeout=60).ok
    assert len(attribute.text_symbols(tmp_path / "prog")["call"]) == 2
    costs = {(str(tmp_path / "prog"), "pf"): 10, (str(tmp_path / "prog"), "qf"): 20}
    found = attribute.attribute(costs, tmp_path, compiles, tmp_path)
    assert found.by_source == {str(tmp_path / "p.c"): {"pf": 10}, str(tmp_path / "q.c"): {"qf": 20}}
    compiles[1].linked_into = "another-program"
    found = attribute.attribute(costs, tmp_path, compiles, tmp_path)
    assert found.by_source == {str(tmp_path / "p.c"): {"pf": 10}}
    compiles[1].linked_into = "prog"
    assert attribute.attribute(costs, tmp_path, compiles, tmp_path).by_source == \
        {str(tmp_path / "p.c"): {"pf": 10}, str(tmp_path / "q.c"): {"qf": 20}}


def test_callgrind_costs_are_read_per_object_file():
    text = ("events: Ir\nob=/t/prog\nfl=???\nfn=main\n1 10\ncob=/lib/libc.so.6\ncfn=printf\ncalls=1 0\n1 400\n"
            "2 5\nob=/lib/libc.so.6\nfn=printf\n1 400\nob=/t/libz.so.1\nfn=deflate\n3 70\n")
    assert parse_costs(text) == {("/t/prog", "main"): 15, ("/lib/libc.so.6", "printf"): 400,
                                           ("/t/libz.so.1", "deflate"): 70}


def test_a_launcher_sees_its_own_tree_and_no_other(tmp_path, request):
    """The isolated runner exposes a candidate's tree to that candidate's runs only: another
    candidate's tree (or gcc's, which it is timed against) is out of its reach."""
    from sgcc.project import workload
    from sgcc.verify.box.sandbox import Sandbox

    # Like the project's work directory: reachable by the box's user (pytest's is not).
    trees = Path(tempfile.mkdtemp(prefix="sgcc-test-trees-"))
    request.addfinalizer(lambda: shutil.rmtree(trees, ignore_errors=True))
    os.chmod(trees, 0o755)
    mine = workload.copy_tree(_make_tree(tmp_path / "src-a", b"mine\n"), trees / "a")
    other = workload.copy_tree(_make_tree(tmp_path / "src-b", b"other\n"), trees / "b")

    def expose(binary):
        tree = workload.tree_of(binary)
        return [tree] if tree is not None else []

    with Sandbox(timeout=30, expose=expose) as sb:
        reads_own = workload.launcher(mine, "own", ["cat data"])
        assert sb.run(reads_own, b"").stdout == b"mine\n"
        reads_other = workload.launcher(mine, "other", [f"cat {other}/data"])
        r = sb.run(reads_other, b"")
        assert r.returncode != 0 and b"other" not in r.stdout
        ok, why = workload.run_tests(sb, mine, "test -f data && echo written > out.txt", 30)
        assert ok, why
        assert (mine / "out.txt").read_text() == "written\n"
        ok, why = workload.run_tests(sb, mine, "exit 3", 30)
        assert not ok and "exit status 3" in why


def _make_tree(path: Path, data: bytes) -> Path:
    path.mkdir()
    (path / "data").write_bytes(data)
    return path


def test_a_workload_that_fails_on_gccs_build_is_a_clear_error(tmp_path, sgcc_exe):
    p = tmp_path / "p"
    p.mkdir()
    (p / "prog.c").write_text("int main(void) { return 0; }\n")
    (p / "Makefile").write_text("CC ?= gcc\nprog: prog.c\n\t$(CC) -O2 -o prog prog.c\nclean:\n\trm -f prog\n")
    r = _optimize(sgcc_exe, tmp_path, "--test", "./prog", "--bench", "./prog && exit 4")
    assert r.returncode == 1, r.stderr
    assert b"the workload fails on gcc's build: exit status 4" in r.stderr and b"Traceback" not in r.stderr
    assert r.stderr.count(b"sgcc: error:") == 1
