"""Hostile programs against the box (sgcc.verify.box.isolate), as the caller and as an unprivileged user.

Every scenario in ``isolation_scenarios.py`` runs twice: in this process (root in CI), and,
when this process is root, again as user nobody through that file's command line, which is
the ``CC=sgcc make`` case of an ordinary user. Run as an ordinary user, the first already is
that case and the second is skipped. Each asserts on an observable effect, next to a control
that shows the same program does reach the thing outside the box (so the test can fail).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.verify.box import isolate, isolation_level, seccomp, worlds

sys.path.insert(0, str(Path(__file__).parent))
import isolation_scenarios as sc

IS_ROOT = os.geteuid() == 0
BOXED = isolation_level.isolation_report().boxed
pytestmark = pytest.mark.skipif(not BOXED, reason="this kernel refuses the box: "
                                + isolation_level.isolation_report().problem)


@pytest.fixture(scope="module")
def bindir():
    # In /tmp, world-readable: user nobody runs these too (pytest's tmp dirs are 0700).
    d = Path(tempfile.mkdtemp(prefix="sgcc-iso-bins-"))
    os.chmod(d, 0o755)
    sc.build(d)
    yield d
    proc.run(["rm", "-rf", str(d)], timeout=60)


def _usable_by_others(path: str) -> bool:
    """Whether user nobody can execute ``path`` (every directory on the way searchable)."""
    real = Path(os.path.realpath(path))
    try:
        return bool(real.stat().st_mode & 0o001) and all(p.stat().st_mode & 0o001 for p in real.parents)
    except OSError:
        return False


def _interpreter_for_nobody() -> str:
    """This Python if nobody can run it, else the system's (the scenarios need only the stdlib)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if _usable_by_others(candidate):
            r = subprocess.run([candidate, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                               capture_output=True, text=True, timeout=60)
            if r.stdout.strip() == "True":
                return candidate
    pytest.skip("no Python 3.11 that user nobody can execute")


def _as_nobody(name: str, bindir: Path) -> dict:
    # The source tree on PYTHONPATH: the interpreter may not be the venv's (sgcc is stdlib-only here).
    src = str(Path(__file__).resolve().parent.parent)
    if not _usable_by_others(src):
        pytest.skip(f"user nobody cannot reach {src}")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "LANG": "C",
           "PYTHONPATH": src, "PYTHONDONTWRITEBYTECODE": "1"}

    def drop():
        os.setgroups([])
        os.setgid(proc.NOBODY)
        os.setuid(proc.NOBODY)

    r = subprocess.run([_interpreter_for_nobody(), str(Path(sc.__file__)), name, str(bindir)], env=env, cwd="/",
                       preexec_fn=drop, capture_output=True, timeout=240)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return json.loads(r.stdout)


@pytest.fixture(params=["caller", "nobody"])
def observe(request, bindir):
    """observe(scenario) -> what it observed, as this process's user or as nobody."""
    if request.param == "nobody" and not IS_ROOT:
        pytest.skip("already unprivileged: the 'caller' case is the unprivileged one")
    bins = {n: bindir / n for n in sc.PROGRAMS}
    if request.param == "caller":
        return lambda name: sc.SCENARIOS[name](bins)
    return lambda name: _as_nobody(name, bindir)


def test_fork_escape_fails_its_tests(observe):
    o = observe("fork_escape")
    # The work happens after the main process exited: its output does not count...
    assert o["stdout"] == "" and not o["passes"]
    # ...and the run did not wait for it (the child is killed when main exits).
    assert not o["timed_out"]


def test_cpu_of_detached_descendants_is_counted(observe):
    o = observe("detached_cpu")
    # The same loop, once in main and once in a setsid grandchild main never waits for: the
    # old runner counted ~0 s for the second; the box's init reaps and counts it.
    assert o["detached"] > 0.6 * o["solo"] > 0


def test_setsid_daemon_dies_with_the_run(observe):
    o = observe("daemon")
    assert o["stdout"] == "started\n" and o["late_marker"] is False
    # Control: waited for, the same daemon does write its marker (so the directory worked).
    assert o["control_stdout"] == "started\n" and o["control_marker"] is True


def test_wall_clock_timeout_kills_the_whole_run(observe):
    o = observe("timeout_kills_all")
    assert o["timed_out"] and o["size"] > 0  # the ticker did run...
    assert o["after"] == o["size"]  # ...and stopped with the run


def test_host_files_are_invisible(observe):
    o = observe("host_files")
    for key, marker in (("secret", "the secret"), ("expected", "expected answer"), ("source", "Hostile programs")):
        assert marker in o[key + "_direct"], key  # the control: readable outside the box
        assert o[key] == "errno 2\n", (key, o[key])
    # /etc/passwd is the box's own: no line of the host's beyond root (and the user).
    assert "root:x:0:0" in o["passwd"]
    host_only = [ln for ln in o["host_passwd_lines"] if not ln.startswith("root:") and ln in o["passwd_direct"]]
    assert host_only and not any(ln in o["passwd"] for ln in host_only)


def test_unix_sockets_of_the_host_are_unreachable(observe):
    o = observe("unix_socket")
    assert o["path_direct"] == "connected\n" and o["abstract_direct"] == "connected\n"
    assert o["path"].startswith("errno ") and o["abstract"].startswith("errno ")


def test_tmp_and_shm_are_private_fresh_and_capped(observe):
    o = observe("tmp_and_shm")
    expected = "/tmp fresh written\n/dev/shm fresh written\n"
    assert o["first"] == expected and o["second"] == expected
    assert o["left_on_host"] == []
    # /tmp, /dev/shm and home share one cap: 8 MB holds two 3 MB files, 64 MB all four.
    assert o["fitted"] == "2" and o["fitted_control"] == "4"


def test_memory_is_limited_for_the_whole_run(observe):
    o = observe("memory")
    # 3 x 60 MB: each process is under the 128 MB per-process limit, together they are not.
    assert o["control_stdout"] == "all held\n"
    assert o["stdout"] != "all held\n" and "memory" in o["notes"]


def test_other_processes_cannot_be_signalled(observe):
    o = observe("signals")
    assert o["direct"] == "killed\n" and o["direct_killed"]
    assert o["stdout"] == f"errno {3}\n" and o["victim_alive"]  # ESRCH: not in its pid namespace


def test_no_tells(observe):
    o = observe("tells")
    # Right only when HOME is unset, as it was in old test runs: recorded as what users get.
    assert o["tell"] == "what users get\n"
    first, *others = o["views"]
    assert all(v == first for v in others)  # one world: only the padding's length differs between runs
    world = o["worlds"][0]
    lines = dict(ln.split(" ", 1) for ln in first.splitlines() if not ln.startswith("env "))
    env = dict(ln[4:].split("=", 1) for ln in first.splitlines() if ln.startswith("env "))
    assert lines["uid"] == str(o["uid"]) and lines["argv0"] == world["argv0"]
    assert lines["cwd"] == env["PWD"] == world["cwd"] and env["HOME"] == world["home"]
    assert env["USER"] == world["user"] and int(lines["home_entries"]) <= 2  # the way to cwd and prog
    assert not any(k.startswith("SGCC") for k in env)
    assert lines["procs"] == "2"  # its init and itself: no other process of the host
    # No fixed fingerprint: the second world differs in argv[0], the working directory, HOME,
    # the variables; and nothing of the host's home or working directory shows.
    other = dict(ln.split(" ", 1) for ln in o["other"].splitlines() if not ln.startswith("env "))
    assert other["argv0"] != lines["argv0"] and other["cwd"] != lines["cwd"]
    assert o["other"].count("\nenv ") != first.count("\nenv ")
    # The host's own directories may show only where a world drew the same path from its pool
    # (root's home is /root in the box as on most hosts): never as a leak of where sgcc runs.
    drawn = {w["home"] for w in o["worlds"]} | {w["cwd"] for w in o["worlds"]}
    for view in (first, o["other"]):
        for host_path in (o["host_home"], o["host_cwd"]):
            assert host_path not in view.split() or host_path in drawn, (host_path, view)


def test_syscall_filter(observe):
    o = observe("syscalls")
    res = o["results"]
    for name in ("unshare", "mount", "ptrace", "bpf", "perf_event_open", "keyctl", "setns", "io_uring_setup",
                 "clone_newns"):
        assert res[name] == "1", (name, res[name])  # EPERM
    assert res["clone3"] == "38" and res["getppid"] == "0"  # ENOSYS (libc falls back to clone)
    assert o["int80"] == -signal.SIGSYS and o["int80_stdout"] == ""


def test_filter_program_shape():
    code = seccomp.program()
    assert len(code) % 8 == 0 and len(code) // 8 < 256
    assert len(seccomp.DENIED) == len(set(seccomp.DENIED.values()))


def test_isolation_report_and_refusal():
    report = isolation_level.isolation_report()
    assert report.complete, report.describe()
    assert report.describe().startswith("full")
    isolation_level.require_isolation("llm candidates")  # complete: no refusal
    partial = isolation_level.IsolationReport({**report.layers, "seccomp filter": False})
    assert partial.describe().startswith("partial: missing seccomp filter")
    with pytest.raises(isolation_level.IsolationMissing, match="refusing to run llm candidates.*seccomp filter"):
        isolation_level.require_isolation("llm candidates", report=partial)
    isolation_level.require_isolation("llm candidates", report=partial, accept_risk=True)


DRIVER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from sgcc.verify.box.signals import install_signal_handlers
    from sgcc.verify.box.sandbox import Sandbox
    install_signal_handlers()
    bins, marker = Path(sys.argv[1]), sys.argv[2]
    try:
        with Sandbox(timeout=60) as sb:
            print(sb.root, flush=True)
            sb.run(bins / "ticker", (marker + "\\n").encode(), writable=[Path(marker).parent])
    except KeyboardInterrupt as exc:
        print("interrupted", type(exc).__name__, flush=True)
        sys.exit(130)
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signals_to_sgcc_end_every_run_and_remove_temp_dirs(bindir, sig):
    d = Path(tempfile.mkdtemp(prefix="sgcc-iso-sig-"))
    os.chmod(d, 0o777)
    marker = d / "ticks"
    try:
        # SIGINT as an interactive shell gives it: a suite started in the background by a shell
        # without job control runs with SIGINT ignored, which its children inherit (and Python
        # then keeps ignoring it, as it should).
        p = subprocess.Popen([sys.executable, "-c", DRIVER, str(bindir), str(marker)], stdout=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                             text=True)
        root = Path(p.stdout.readline().strip())
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists() and root.is_dir()
        p.send_signal(sig)
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 130 and "interrupted" in out
        assert not root.exists()
        size = marker.stat().st_size
        time.sleep(0.5)
        assert marker.stat().st_size == size  # the program stopped with sgcc
    finally:
        proc.run(["rm", "-rf", str(d)], timeout=30)


def test_the_c_helper_and_the_python_box_behave_alike(bindir):
    """The box has two implementations of its P and init (the C helper, used where it can be
    built, and forks of sgcc, the fallback): the same hostile programs see the same box."""
    from sgcc.verify.box import boxhelper

    if boxhelper.helper_path() is None:
        pytest.skip("the C helper cannot be built here: only the Python box runs")
    root = Path(tempfile.mkdtemp(prefix="sgcc-iso-twin-"))
    try:
        os.chmod(root, 0o711)
        (root / "mnt").mkdir(mode=0o711)
        seen = {}
        world = worlds.make(1, os.getuid(), seed=3)[0]
        for helper in (True, False):
            out = {}
            for name, stdin, memory in (("whereami", b"", None), ("syscalls", b"", None), ("forkexit", b"", None),
                                        ("memhog", b"60\n", 128 << 20), ("int80", b"", None)):
                view = isolate.View(str(root), str(bindir / name), memory=memory, world=world)
                env = world.environment("x" * 100)
                r = proc.run([world.argv0], stdin=stdin, env=env, timeout=20, spawner=isolate.spawner(view, helper=helper),
                             limits=proc.Limits(processes=20, address_space=memory))
                out[name] = (r.returncode, r.stdout, r.notes)
            seen[helper] = out
        assert seen[True] == seen[False]
        assert seen[True]["forkexit"] == (0, b"", [])
        assert seen[True]["memhog"][2] == ["memory"] and seen[True]["int80"][0] == -signal.SIGSYS
        assert b"procs 2\n" in seen[True]["whereami"][1]
    finally:
        proc.run(["rm", "-rf", str(root)], timeout=30)
