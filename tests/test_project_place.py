"""The tree where the build put it, and the libraries it built (issue 39), piece by piece with
real processes: a copy shown (box) and built (mount namespace) at the project's path, the
tools a CTest file names, and the dynamic loader's trace read for a system copy standing in."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.project import libraries, place, workload

SYSTEM_LIBZ = Path("/lib/x86_64-linux-gnu/libz.so.1")


@pytest.fixture
def trees(request):
    """A directory the box's user can reach (pytest's own is not), holding the "project" and
    its copy: the project's data says "original", the copy's "copy"."""
    d = Path(tempfile.mkdtemp(prefix="sgcc-test-place-"))
    request.addfinalizer(lambda: shutil.rmtree(d, ignore_errors=True))
    os.chmod(d, 0o755)
    for name in ("project", "copy"):
        (d / name).mkdir()
        (d / name / "data").write_text("original\n" if name == "project" else "copy\n")
    workload.hand_over(d / "copy")
    return d / "project", d / "copy"


def test_a_copy_is_tested_and_built_where_the_build_put_the_project(trees):
    project, copy = trees
    from sgcc.verify.box.sandbox import Sandbox

    if not proc.placing_available():
        pytest.skip("no mount namespaces here")
    with Sandbox(timeout=30, expose=workload.expose) as sb:
        if not sb.isolated:
            pytest.skip("no box here")
        script = workload.launcher(copy, "t", ["pwd", "cat data", "echo ran > written"],
                                   workload.Where(project.resolve()))
        r = sb.run(script, b"")
        assert r.ok, r.stderr
        # At the project's path the run sees (and writes) the copy; the project itself is hidden.
        assert r.stdout.decode().split() == [str(project.resolve()), "copy"]
        assert (copy / "written").is_file() and not (project / "written").exists()
    # A build of the copy likewise, in a mount namespace over the rest of the host.
    b = proc.run(["/bin/sh", "-c", "cat data && echo built > out"], cwd=project, place=(copy, project), timeout=30)
    assert b.ok and b.stdout == b"copy\n", b.stderr
    assert (copy / "out").read_text() == "built\n" and not (project / "out").exists()
    assert (project / "data").read_text() == "original\n"


def test_the_tools_a_ctest_file_names_are_shown_with_their_installation(tmp_path):
    root = tmp_path / "proj"
    (root / "build").mkdir(parents=True)
    (root / "build" / "CTestTestfile.cmake").write_text(
        f'add_test(py "{sys.executable}" "{root}/tests/t.py" "{root}/build/prog")\n'
        'add_test(sh "/bin/sh" "-c" "true")\n')
    found = place.named_tools(root, root)
    targets = {str(t) for _, t in found}
    assert not any(t.startswith(str(root)) or t.startswith("/bin") for t in targets), found
    if sys.prefix != sys.base_prefix:  # a virtual environment: its pyvenv.cfg must be readable
        assert str(Path(sys.prefix)) in targets, found
    real = os.path.realpath(sys.executable)
    if not real.startswith(("/usr/", "/bin/")):
        assert any(t == str(Path(real).parent.parent) or real.startswith(t + "/") for t in targets), found
    assert os.path.expanduser("~") not in targets


def _lib_and_program(tmp: Path, rpath: bool) -> tuple[Path, Path]:
    """A library named libz.so.1 (the system zlib's name) in tree/build, and a program
    using it, linked with or without an RPATH to it."""
    tree = tmp / "tree"
    build = tree / "build"
    build.mkdir(parents=True)
    (tmp / "l.c").write_text('const char *zlibVersion(void) { return "mine"; }\n')
    (tmp / "m.c").write_text('#include <stdio.h>\nconst char *zlibVersion(void);\n'
                             'int main(void) { puts(zlibVersion()); return 0; }\n')
    assert proc.run(["gcc", "-O2", "-shared", "-fPIC", "-Wl,-soname,libz.so.1", "-o", str(build / "libz.so.1.0"),
                     str(tmp / "l.c")], timeout=60).ok
    os.symlink("libz.so.1.0", build / "libz.so.1")
    link = ["gcc", "-O2", "-o", str(build / "prog"), str(tmp / "m.c"), str(build / "libz.so.1")]
    assert proc.run(link + ([f"-Wl,-rpath,{build}"] if rpath else []), timeout=60).ok
    return tree, build / "prog"


def _traced(program: Path, trace: Path, *argv: str) -> proc.Result:
    env = dict(os.environ, LD_DEBUG="libs,files", LD_DEBUG_OUTPUT=str(trace / workload.TRACE_NAME))
    return proc.run([str(program), *argv], env=env, cwd=program.parent.parent, timeout=60)


@pytest.mark.skipif(not SYSTEM_LIBZ.exists(), reason="needs the system's zlib as the stand-in")
def test_the_loader_s_trace_shows_a_system_copy_standing_in(tmp_path):
    tree, prog = _lib_and_program(tmp_path, rpath=False)
    made = libraries.built(tree, 0)
    assert made == {"libz.so.1": "build/libz.so.1.0"}
    trace = libraries.trace_dir(tmp_path / "trace")
    r = _traced(prog, trace)
    # The system's zlib answers: the program works, and ran code the build did not make.
    assert r.ok and r.stdout != b"mine\n", r.stdout
    with pytest.raises(Exception) as err:
        libraries.check(trace, made, tree, "the test command")
    assert "loads libz.so.1 from /" in str(err.value) and "not the one the build made (build/libz.so.1.0)" in \
        str(err.value)


@pytest.mark.skipif(not SYSTEM_LIBZ.exists(), reason="needs the system's zlib")
def test_the_project_s_own_copy_passes_and_system_programs_may_load_theirs(tmp_path):
    tree, prog = _lib_and_program(tmp_path, rpath=True)
    made = libraries.built(tree, 0)
    trace = libraries.trace_dir(tmp_path / "trace")
    assert _traced(prog, trace).stdout == b"mine\n"
    # A system program of the same run (python loads the system's libz.so.1) is its own business.
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python:
        _traced(Path(python), trace, "-c", "import zlib")
    assert libraries.check(trace, made, tree, "the test command") == {"libz.so.1": ["build/libz.so.1"]}
    # No trace at all: nothing can be ensured.
    with pytest.raises(Exception, match="cannot tell which shared libraries"):
        libraries.check(libraries.trace_dir(tmp_path / "empty"), made, tree, "the workload")


def test_a_run_cannot_change_a_tool_it_is_shown(trees):
    """The attack: a candidate's test run writes into the interpreter installation its CTest
    file names (shown so the tests can run it), to change what later runs, or the host,
    execute. The tool is shown read-only: every write fails although its permissions would
    let anyone write (mode 0777), and nothing of the tool changes."""
    project, copy = trees
    from sgcc.verify.box.sandbox import Sandbox

    tool = project.parent / "tool"
    (tool / "bin").mkdir(parents=True)
    (tool / "bin" / "python").write_text("#!/bin/sh\necho tool\n")
    os.chmod(tool / "bin" / "python", 0o777)
    for d in (tool, tool / "bin"):
        os.chmod(d, 0o777)
    with Sandbox(timeout=30, expose=workload.expose) as sb:
        if not sb.isolated:
            pytest.skip("no box here")
        script = workload.launcher(copy, "t", [
            f"{tool}/bin/python",
            f"echo planted > {tool}/planted || echo refused-new",
            f"echo 'echo pwned' > {tool}/bin/python || echo refused-overwrite",
            f"rm -f {tool}/bin/python; test -e {tool}/bin/python && echo refused-remove"],
            workload.Where(None, ((tool, tool),)))
        r = sb.run(script, b"")
    out = r.stdout.decode()
    assert "tool" in out.split()[0:1], (out, r.stderr)  # the run saw the tool and ran it
    assert "refused-new" in out and "refused-overwrite" in out and "refused-remove" in out, (out, r.stderr)
    assert not (tool / "planted").exists()
    assert (tool / "bin" / "python").read_text() == "#!/bin/sh\necho tool\n"
