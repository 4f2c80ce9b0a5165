"""What users and build systems throw at sgcc's entry points (issue 16), each case written as
the attack first: outputs that are not plain files, gcc flags that look like sgcc's options,
bad values, unbounded inputs. Every case runs the real ``sgcc`` program and, where gcc has an
answer, compares with the real gcc run the same way.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path

import pytest

from sgcc import proc

SOURCE = "int twice(int x) { return 2 * x; }\n"

PROGRAM = r"""#include <stdio.h>
int main(void) {
    int x;
    if (scanf("%d", &x) != 1) return 1;
#ifdef noisy
    printf("noisy %d\n", noisy);
#endif
    printf("%d\n", x * 2);
    return 0;
}
"""


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") or k in
           ("SGCC_CACHE_DIR", "SGCC_CONFIG", "SGCC_TIMING_LOCK")}
    env.update(extra)
    return env


def _run(argv, cwd, timeout=120, **env):
    return proc.run(argv, cwd=cwd, env=_env(**env), timeout=timeout)


def _no_traceback(result) -> None:
    assert b"Traceback" not in result.stderr, result.stderr.decode(errors="replace")


def _state(path: Path) -> tuple:
    """What a name is after a compile: its type, where it links, and its bytes."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISCHR(st.st_mode):
        return ("chr", st.st_rdev)
    return ("file", st.st_nlink, path.read_bytes())


# ----------------------------------------------------------------- outputs that are not plain files
#
# Every case forces sgcc's own two-step path (SGCC_RECORD makes it compile to assembly even
# with nothing in the cache to substitute); straight to gcc would prove nothing. None of them
# names the machine's own device files as root: the bug these tests guard against replaced
# /dev/null and /dev/stdout with regular files.

def _two_step(tmp_path: Path) -> dict:
    (tmp_path / "record").mkdir(exist_ok=True)
    return {"SGCC_RECORD": str(tmp_path / "record" / "compiles.jsonl")}


def _twin_dirs(tmp_path: Path) -> tuple[Path, Path]:
    dirs = []
    for name in ("gcc", "sgcc"):
        d = tmp_path / name
        d.mkdir()
        (d / "t.c").write_text(SOURCE)
        dirs.append(d)
    return dirs[0], dirs[1]


def test_output_through_a_symlink_is_what_gcc_makes(tmp_path, sgcc_exe):
    """gcc writes the object through the link; sgcc once wrote its assembly there and
    replaced the link by a regular file."""
    results = {}
    for d, argv0 in zip(_twin_dirs(tmp_path), ("gcc", sgcc_exe)):
        (d / "target.o").write_bytes(b"old")
        (d / "X").symlink_to("target.o")
        r = _run([argv0, "-O2", "-c", "t.c", "-o", "X"], d, **_two_step(tmp_path))
        results[argv0] = (r.returncode, r.stderr, _state(d / "X"), _state(d / "target.o"))
    assert (tmp_path / "record" / "compiles.jsonl").exists(), "sgcc did not take its own path"
    assert results[sgcc_exe] == results["gcc"]


def test_output_with_a_hard_link_is_what_gcc_makes(tmp_path, sgcc_exe):
    results = {}
    for d, argv0 in zip(_twin_dirs(tmp_path), ("gcc", sgcc_exe)):
        (d / "other").write_bytes(b"precious")
        os.link(d / "other", d / "X")
        r = _run([argv0, "-O2", "-c", "t.c", "-o", "X"], d, **_two_step(tmp_path))
        other = (d / "other").read_bytes()
        assert b".text" not in other and b"twice:" not in other, "assembly text reached the other name"
        results[argv0] = (r.returncode, r.stderr, _state(d / "X"), _state(d / "other"))
    assert results[sgcc_exe] == results["gcc"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_output_to_a_device_node_keeps_the_device(tmp_path, sgcc_exe):
    """`-o /dev/null` is a common configure probe: as root, sgcc once replaced the device by a
    regular file. A private null device stands in for /dev/null here."""
    d = tmp_path / "w"
    d.mkdir()
    (d / "t.c").write_text(SOURCE)
    node = d / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    r = _run([sgcc_exe, "-O2", "-c", "t.c", "-o", str(node)], d, **_two_step(tmp_path))
    assert r.returncode == 0 and r.stderr == b""
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def _nobody_can_run(exe: str) -> bool:
    r = proc.run(["/bin/sh", "-c", f'exec "{exe}" version'], drop_privileges=True, timeout=60)
    return r.returncode == 0


def test_output_to_dev_null_is_silent_like_gcc(tmp_path, sgcc_exe):
    """As an ordinary user, `-o /dev/null` once printed an "internal error" warning (sgcc
    could not unlink the device). Run unprivileged when the tests run as root, so that a
    regression cannot touch the machine's /dev/null."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="sgcc-devnull-"))
    try:
        d.chmod(0o777)
        (d / "t.c").write_text(SOURCE)
        (d / "t.c").chmod(0o644)
        env = _env(SGCC_RECORD=str(d / "compiles.jsonl"), SGCC_CACHE_DIR=str(d / "cache"), HOME=str(d))
        drop = os.geteuid() == 0
        if drop and not _nobody_can_run(sgcc_exe):
            pytest.skip("as root, sgcc's interpreter is not reachable by an unprivileged user here; "
                        "the private device node test covers root")
        ours = proc.run([sgcc_exe, "-O2", "-c", "t.c", "-o", "/dev/null"], cwd=d, env=env, timeout=120,
                        drop_privileges=drop)
        theirs = proc.run(["gcc", "-O2", "-c", "t.c", "-o", "/dev/null"], cwd=d, env=env, timeout=120,
                          drop_privileges=drop)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
        assert ours.returncode == 0
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_to_standard_output_is_the_object(tmp_path, sgcc_exe):
    """`-o /dev/stdout` printed the assembly text instead of the object. A private link to
    /proc/self/fd/1 stands in for /dev/stdout, and standard output is a file (gcc's own
    assembler fails on a pipe, and removes the name it could not write: never the real one)."""
    (tmp_path / "t.c").write_text(SOURCE)
    results = []
    for argv0, name in ((sgcc_exe, "ours"), ("gcc", "theirs")):
        link = tmp_path / f"stdout-{name}"
        link.symlink_to("/proc/self/fd/1")
        env = _env(**_two_step(tmp_path))
        r = proc.run(["/bin/sh", "-c", f'exec "{argv0}" -O2 -c t.c -o "{link}" > {name}.o'], cwd=tmp_path,
                     env=env, timeout=120)
        results.append((r.returncode, r.stderr, link.is_symlink(), (tmp_path / f"{name}.o").read_bytes()))
    assert results[0] == results[1]
    assert results[0][3][:4] == b"\x7fELF"


def test_output_into_a_read_only_directory_fails_as_gcc_does(tmp_path, sgcc_exe):
    results = {}
    for d, argv0 in zip(_twin_dirs(tmp_path), ("gcc", sgcc_exe)):
        ro = d / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        try:
            r = _run([argv0, "-O2", "-c", "t.c", "-o", "ro/t.o"], d, **_two_step(tmp_path))
        finally:
            ro.chmod(0o755)
        results[argv0] = (r.returncode == 0, sorted(p.name for p in ro.iterdir()))
        _no_traceback(r)
    assert results[sgcc_exe] == results["gcc"]


def test_missing_tmpdir_still_compiles_like_gcc(tmp_path, sgcc_exe):
    (tmp_path / "t.c").write_text(SOURCE)
    r = _run([sgcc_exe, "-O3", "-c", "t.c", "-o", "ours.o"], tmp_path, TMPDIR="/nonexistent/dir")
    _no_traceback(r)
    assert r.returncode == 0
    g = _run(["gcc", "-O3", "-c", "t.c", "-o", "theirs.o"], tmp_path, TMPDIR="/nonexistent/dir")
    assert g.returncode == 0
    assert (tmp_path / "ours.o").read_bytes() == (tmp_path / "theirs.o").read_bytes()


# ----------------------------------------------------------------- sgcc optimize passes gcc flags verbatim

def _logging_compiler(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "gcc-argv.log"
    wrapper = tmp_path / "loggcc"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {log}\nprintf "%s\\n" "--END--" >> {log}\n'
                       f'exec gcc "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def _optimize_project(tmp_path: Path) -> Path:
    d = tmp_path / "prog"
    (d / "tests").mkdir(parents=True)
    (d / "t.c").write_text(PROGRAM)
    (d / "tests" / "a.in").write_text("21\n")
    return d


FLAG_SHAPES = [
    ["-march=x86-64-v2"], ["-ffast-math"], ["-Wshadow"], ["-pthread"], ["-I/usr/include/x"],
    ["-funroll-loops"], ["-fno-inline"], ["-Dnoisy=1"], ["-DX"], ["-UY"], ["-Iinc"],
    ["-lm"], ["-Wl,--as-needed"], ["--param", "max-unroll-times=4"], ["-fno-tree-vectorize"],
    ["-mtune=generic"], ["-g"], ["-std=gnu11"], ["-fPIE"], ["-w"], ["-Wall", "-Wextra"],
    ["-fstack-protector-strong"], ["-mno-red-zone"], ["-fvisibility=hidden"], ["-include", "stdio.h"],
    ["-fno-strict-aliasing"], ["-s"], ["-pipe"], ["-fverbose-asm"],
]


def test_optimize_passes_every_gcc_flag_verbatim(tmp_path, sgcc_exe):
    """click once split unknown single-dash flags into letters: -Dnoisy=1 became -Dn, and
    anything with an h printed the help and exited 0. gcc must receive exactly the flags."""
    d = _optimize_project(tmp_path)
    (d / "tests" / "a.out").write_text("not what it prints\n")  # stop right after the baseline build
    (d / "inc").mkdir()
    wrapper, log = _logging_compiler(tmp_path)
    flags = [f for shape in FLAG_SHAPES for f in shape]
    r = _run([sgcc_exe, "optimize", "t.c", "--tests", "tests", "-o", "out", "-q", "--", "-O2", *flags], d,
             SGCC_COMPILER=str(wrapper), timeout=300)
    _no_traceback(r)
    assert r.returncode != 0 and b"sgcc: error:" in r.stderr  # the expected output is wrong
    calls = [c.strip("\n").split("\n") for c in log.read_text().split("--END--\n") if c.strip()]
    builds = [c for c in calls if "t.c" in c or any(a.endswith("t.c") for a in c)]
    assert builds, calls
    argv = builds[0]
    start = argv.index("-O2")
    assert argv[start:start + 1 + len(flags)] == ["-O2", *flags]


@pytest.mark.parametrize("spelling", ["before", "after-source"])
def test_optimize_defines_reach_the_program(tmp_path, sgcc_exe, spelling):
    """-Dnoisy=1 once reached gcc as -Dn: the program was built, tested and shipped without it."""
    d = _optimize_project(tmp_path)
    if spelling == "before":
        argv = [sgcc_exe, "optimize", "--tests", "tests", "-o", "out", "--generators", "layout", "--budget", "1",
                "-q", "t.c", "-O2", "-Dnoisy=1"]
    else:
        argv = [sgcc_exe, "optimize", "t.c", "-O2", "-Dnoisy=1", "--tests", "tests", "-o", "out",
                "--generators", "layout", "--budget", "1", "-q"]
    r = _run(argv, d, timeout=600)
    _no_traceback(r)
    assert r.returncode == 0, r.stderr
    run = proc.run([str(d / "out")], stdin=b"4\n", timeout=30)
    assert run.stdout == b"noisy 1\n8\n"


@pytest.mark.parametrize("flag", ["-march=x86-64-v2", "-Wshadow", "-pthread", "-I/usr/include/x", "-hfoo"])
def test_optimize_flags_with_an_h_are_not_a_help_request(tmp_path, sgcc_exe, flag):
    d = _optimize_project(tmp_path)
    (d / "tests" / "a.out").write_text("wrong\n")
    r = _run([sgcc_exe, "optimize", "t.c", "-O2", flag, "--tests", "tests", "-o", "out", "-q"], d, timeout=300)
    _no_traceback(r)
    assert b"Usage:" not in r.stdout
    assert r.returncode != 0 and b"sgcc: error:" in r.stderr


# ----------------------------------------------------------------- bad values are errors, never tracebacks

BAD_COMMANDS = [
    (["cache", "trim", "--max-size", "abc"], {}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out", "--jobs", "-1"], {}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out", "--timing-rounds", "0"], {}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out", "--timing-rounds", "1"], {}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out", "--report", "afile/r.json"], {}),
    (["optimize", "t.c", "--tests", "tests", "-o", "/proc/sgcc-out"], {}),
    (["functions", "t.s", "--extract", "afile"], {}),
    (["functions", "t.s", "--extract", "afile/sub"], {}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out"], {"SGCC_TEST_TIMEOUT": "nan"}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out"], {"SGCC_TEST_TIMEOUT": "inf"}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out"], {"SGCC_TEST_TIMEOUT": "1e300"}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out"], {"SGCC_JOBS": "-2"}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out"], {"SGCC_TIMING_ROUNDS": "0"}),
    (["optimize", "t.c", "--tests", "tests", "-o", "out"], {"SGCC_MIN_GAIN": "-5"}),
    (["config"], {"SGCC_CONFIG": "BADCONFIG"}),
    (["functions", "binary.s"], {}),
]


@pytest.mark.parametrize("args,env", BAD_COMMANDS, ids=[" ".join(a) + " " + " ".join(e) for a, e in BAD_COMMANDS])
def test_bad_input_is_an_error_line(tmp_path, sgcc_exe, args, env):
    d = _optimize_project(tmp_path)
    (d / "afile").write_text("a file where a directory is expected\n")
    proc.run(["gcc", "-O2", "-S", "t.c", "-o", "t.s"], cwd=d, check=True)
    (d / "binary.s").write_bytes(bytes(range(256)) * 4)
    (d / "BADCONFIG").write_bytes(b"[sgcc]\ncache = \xff\xfe\n")
    env = {k: (str(d / v) if v == "BADCONFIG" else v) for k, v in env.items()}
    r = _run([sgcc_exe, *args], d, timeout=120, **env)
    _no_traceback(r)
    assert r.returncode != 0, (r.stdout, r.stderr)
    assert r.stderr.startswith(b"sgcc: error:") or b"\nsgcc: error:" in r.stderr, r.stderr


def test_compiler_loop_through_sgcc_compiler_says_loop(tmp_path, sgcc_exe):
    """A `gcc` symlink to sgcc named by SGCC_COMPILER is a loop, not a missing gcc."""
    link = tmp_path / "bin" / "gcc"
    link.parent.mkdir()
    link.symlink_to(sgcc_exe)
    (tmp_path / "t.c").write_text(SOURCE)
    r = _run([sgcc_exe, "-O2", "-c", "t.c"], tmp_path, SGCC_COMPILER=str(link))
    assert r.returncode != 0
    assert b"sgcc: error:" in r.stderr
    assert b"install gcc" not in r.stderr
    assert b"sgcc itself" in r.stderr or b"runs sgcc again" in r.stderr or b"loop" in r.stderr


# ----------------------------------------------------------------- reads are bounded, never hang

def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_candidate_fifo_is_refused_not_read(tmp_path, sgcc_exe):
    d = _optimize_project(tmp_path)
    cands = d / "cands"
    cands.mkdir()
    _fifo(cands / "main.s")
    r = _run([sgcc_exe, "optimize", "t.c", "-O2", "--tests", "tests", "-o", "out", "--generators", "replay",
              "--candidates", "cands", "-q"], d, timeout=120)
    _no_traceback(r)
    assert r.returncode != 0 and b"sgcc: error:" in r.stderr and b"not a regular file" in r.stderr


def test_candidate_link_to_dev_zero_is_refused(tmp_path, sgcc_exe):
    d = _optimize_project(tmp_path)
    cands = d / "cands"
    cands.mkdir()
    (cands / "main.s").symlink_to("/dev/zero")
    r = _run([sgcc_exe, "optimize", "t.c", "-O2", "--tests", "tests", "-o", "out", "--generators", "replay",
              "--candidates", "cands", "-q"], d, timeout=120)
    _no_traceback(r)
    assert r.returncode != 0 and b"not a regular file" in r.stderr


@pytest.mark.parametrize("command", [["functions"], ["models"]])
def test_fifo_argument_is_refused(tmp_path, sgcc_exe, command):
    fifo = _fifo(tmp_path / "x.gguf" if command == ["models"] else tmp_path / "x.s")
    # Should sgcc open the FIFO for reading after all, a writer thread makes the test end
    # instead of hanging, and the assertion below fails.
    def unblock():
        try:
            fd = os.open(fifo, os.O_WRONLY)
            os.close(fd)
        except OSError:
            pass
    t = threading.Timer(20, unblock)
    t.start()
    try:
        r = _run([sgcc_exe, *command, str(fifo)], tmp_path, timeout=60)
    finally:
        t.cancel()
    _no_traceback(r)
    assert r.returncode != 0 and b"sgcc: error:" in r.stderr and b"not a regular file" in r.stderr


def test_overlay_on_dev_zero_is_bounded(tmp_path, sgcc_exe):
    (tmp_path / "t.c").write_text(SOURCE)
    r = _run([sgcc_exe, "-O2", "-c", "t.c", "-o", "ours.o"], tmp_path, timeout=60, SGCC_OVERLAY="/dev/zero")
    assert r.returncode == 0
    g = _run(["gcc", "-O2", "-c", "t.c", "-o", "theirs.o"], tmp_path)
    assert g.returncode == 0
    assert (tmp_path / "ours.o").read_bytes() == (tmp_path / "theirs.o").read_bytes()


def test_functions_on_non_utf8_input_is_an_error(tmp_path, sgcc_exe):
    (tmp_path / "bin.s").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)) * 8)
    r = _run([sgcc_exe, "functions", "bin.s"], tmp_path)
    _no_traceback(r)
    assert r.returncode != 0 and b"sgcc: error:" in r.stderr


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def _gcc_flag_shapes(count: int) -> list[str]:
    """Flags as gcc itself lists them (`gcc --help=CLASS`), without placeholders: a
    deterministic sample of -f, -fno-, -W and -m words."""
    words: set[str] = set()
    for cls in ("common", "optimizers", "target", "warnings"):
        out = proc.run(["gcc", f"--help={cls}"], timeout=60).stdout.decode(errors="replace")
        for line in out.splitlines():
            if line.startswith("  -"):
                word = line.split()[0]
                if word[:2] in ("-f", "-W", "-m") and not any(c in word for c in "<[") and not word.endswith("="):
                    words.add(word)
    ordered = sorted(words)
    step = max(1, len(ordered) // count)
    return ordered[::step][:count]


def test_optimize_passes_flags_from_gccs_own_help_verbatim(tmp_path, sgcc_exe):
    """The shapes gcc documents (-fno-..., -W...=..., -m...) reach gcc as they were written."""
    flags = _gcc_flag_shapes(60)
    assert len(flags) >= 40
    d = _optimize_project(tmp_path)
    (d / "tests" / "a.out").write_text("not what it prints\n")
    wrapper, log = _logging_compiler(tmp_path)
    r = _run([sgcc_exe, "optimize", "t.c", "--tests", "tests", "-o", "out", "-q", "-O2", *flags], d,
             SGCC_COMPILER=str(wrapper), timeout=300)
    _no_traceback(r)
    assert r.returncode != 0 and b"sgcc: error:" in r.stderr
    calls = [c.strip("\n").split("\n") for c in log.read_text().split("--END--\n") if c.strip()]
    first = next(c for c in calls if any(a.endswith("t.c") for a in c))
    start = first.index("-O2")
    assert first[start:start + 1 + len(flags)] == ["-O2", *flags]
