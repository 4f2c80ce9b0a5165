"""Tests of sgcc.verify.box.sandbox with real programs compiled by the real gcc.

The box itself (namespaces, file system view, seccomp, whole-run limits) is tested with
hostile programs in ``test_isolation.py``, as root and as an unprivileged user; this file
tests the runner's contract. Where the kernel refuses a box, the fallback's protections
depend on the environment, and tests of those are skipped (with the reason).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.errors import SgccError
from sgcc.verify.box import isolation_level
from sgcc.verify.box.sandbox import Sandbox, TestCase, load_tests, pad_value

IS_ROOT = os.geteuid() == 0

PROGRAMS = {
    # Doubles the number on stdin.
    "double": r"""
        #include <stdio.h>
        int main(void) { long n; if (scanf("%ld", &n) != 1) return 2; printf("%ld\n", 2 * n); return 0; }
    """,
    "exit3": r"""
        #include <stdio.h>
        int main(void) { puts("bye"); return 3; }
    """,
    "segv": r"""
        int main(void) { volatile int *p = (int *)0; return *p; }
    """,
    "loop": r"""
        int main(void) { volatile unsigned long x = 0; for (;;) x++; }
    """,
    "forkbomb": r"""
        #include <unistd.h>
        int main(void) { for (;;) fork(); }
    """,
    # Leaves the process group, then spins: only the sandbox's sweep can catch it.
    "escape": r"""
        #include <stdio.h>
        #include <unistd.h>
        int main(void) { if (fork() == 0) { setsid(); for (;;) ; } puts("parent done"); return 0; }
    """,
    "flood": r"""
        #include <stdio.h>
        #include <string.h>
        static char buf[1 << 20];
        int main(void) { memset(buf, 'y', sizeof buf);
            for (int i = 0; i < 1024; i++) fwrite(buf, 1, sizeof buf, stdout);  /* 1 GiB */
            return 0; }
    """,
    # Tries to create the file named on stdin; reports whether it could.
    "writer": r"""
        #include <stdio.h>
        #include <string.h>
        int main(void) { char path[4096]; if (!fgets(path, sizeof path, stdin)) return 2;
            path[strcspn(path, "\n")] = 0;
            FILE *f = fopen(path, "w");
            if (!f) { puts("denied"); return 0; }
            fputs("written", f); fclose(f); puts("written"); return 0; }
    """,
    # Connects to 127.0.0.1:<port from stdin>.
    "connect": r"""
        #include <stdio.h>
        #include <string.h>
        #include <errno.h>
        #include <arpa/inet.h>
        #include <sys/socket.h>
        int main(void) { int port; if (scanf("%d", &port) != 1) return 2;
            int s = socket(AF_INET, SOCK_STREAM, 0); if (s < 0) { printf("socket: %s\n", strerror(errno)); return 0; }
            struct sockaddr_in a; memset(&a, 0, sizeof a); a.sin_family = AF_INET; a.sin_port = htons(port);
            a.sin_addr.s_addr = htonl(0x7f000001);
            if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) puts("connected");
            else printf("failed: %s\n", strerror(errno));
            return 0; }
    """,
    "whoami": r"""
        #include <stdio.h>
        #include <unistd.h>
        int main(void) { printf("%d\n", (int)getuid()); return 0; }
    """,
    # Reports whether its directory was fresh, then dirties it.
    "marker": r"""
        #include <stdio.h>
        int main(void) { FILE *f = fopen("marker", "r"); if (f) { puts("dirty"); return 0; }
            f = fopen("marker", "w"); if (!f) { puts("cannot write"); return 0; }
            fclose(f); puts("fresh"); return 0; }
    """,
    # Output depends on the environment's size: not a usable baseline.
    "padlen": r"""
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        int main(void) { const char *p = getenv("LS_COLORS"); printf("%zu\n", p ? strlen(p) : 0); return 0; }
    """,
    "spin": r"""
        #include <stdio.h>
        int main(void) { long n; if (scanf("%ld", &n) != 1) return 2;
            for (volatile long i = 0; i < n; i++) ; puts("done"); return 0; }
    """,
    "bigout": r"""
        #include <stdio.h>
        int main(void) { for (int i = 0; i < 100000; i++) printf("%d\n", i); return 0; }
    """,
}


@pytest.fixture(scope="module")
def bins(tmp_path_factory) -> dict[str, Path]:
    """Every program above, built with gcc -O2."""
    d = tmp_path_factory.mktemp("bins")
    out = {}
    for name, src in PROGRAMS.items():
        c = d / f"{name}.c"
        c.write_text(src)
        proc.run(["gcc", "-O2", "-o", str(d / name), str(c)], timeout=60, check=True)
        out[name] = d / name
    return out


@pytest.fixture(params=["box", "fallback"])
def sb(request):
    """A sandbox that boxes its runs, and one that runs them the older way (the fallback
    where the kernel refuses a box): the runner's contract is the same."""
    if request.param == "box" and not isolation_level.isolation_report().boxed:
        pytest.skip("this kernel refuses the box: " + isolation_level.isolation_report().problem)
    with Sandbox(timeout=5, boxed=request.param == "box") as sandbox:
        yield sandbox


def _live_processes_under(root: Path) -> list[int]:
    """PIDs of processes still executing something from ``root``."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.readlink(f"/proc/{entry.name}/exe").startswith(str(root) + os.sep):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


# ------------------------------------------------------------------------- load_tests


def test_load_tests_reads_in_out_status_sorted(tmp_path):
    (tmp_path / "b.in").write_bytes(b"2\n")
    (tmp_path / "b.status").write_text("3\n")
    (tmp_path / "a.in").write_bytes(b"1\n")
    (tmp_path / "a.out").write_bytes(b"2\n")
    (tmp_path / "README").write_text("ignored")
    (tmp_path / "c.in").symlink_to("a.in")  # a symlink that stays inside is fine
    tests = load_tests(tmp_path)
    assert [t.name for t in tests] == ["a", "b", "c"]
    assert tests[0] == TestCase("a", b"1\n", b"2\n", None)
    assert tests[1] == TestCase("b", b"2\n", None, 3)
    assert tests[2].stdin == b"1\n"


def test_load_tests_refuses_missing_and_empty_dirs(tmp_path):
    with pytest.raises(SgccError, match="does not exist"):
        load_tests(tmp_path / "nope")
    with pytest.raises(SgccError, match="no tests"):
        load_tests(tmp_path)
    (tmp_path / "f").write_text("x")
    with pytest.raises(SgccError, match="not a directory"):
        load_tests(tmp_path / "f")


def test_load_tests_refuses_escaping_symlink(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("password")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "a.in").symlink_to(secret)
    with pytest.raises(SgccError, match="outside"):
        load_tests(tests)


def test_load_tests_refuses_non_regular_and_huge_files(tmp_path):
    fifo_dir = tmp_path / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "a.in")
    with pytest.raises(SgccError, match="not a regular file"):
        load_tests(fifo_dir)

    dir_dir = tmp_path / "dir"
    dir_dir.mkdir()
    (dir_dir / "a.in").mkdir()
    with pytest.raises(SgccError, match="not a regular file"):
        load_tests(dir_dir)

    big = tmp_path / "big"
    big.mkdir()
    (big / "a.in").write_bytes(b"x" * 2000)
    with pytest.raises(SgccError, match="too large"):
        load_tests(big, max_file=1000)
    (big / "a.in").write_bytes(b"x" * 600)
    (big / "b.in").write_bytes(b"x" * 600)
    with pytest.raises(SgccError, match="too large together"):
        load_tests(big, max_file=1000, max_total=1000)


def test_load_tests_refuses_orphans_and_bad_status(tmp_path):
    (tmp_path / "a.in").write_bytes(b"")
    (tmp_path / "b.out").write_bytes(b"")
    with pytest.raises(SgccError, match="no matching b.in"):
        load_tests(tmp_path)
    (tmp_path / "b.out").unlink()
    (tmp_path / "a.status").write_text("300")
    with pytest.raises(SgccError, match="exit status"):
        load_tests(tmp_path)


# ------------------------------------------------------------------------- check / record


def test_output_compare_pass_and_fail(sb, bins):
    good = [TestCase("one", b"21\n", b"42\n", 0), TestCase("two", b"-4\n", b"-8\n", 0)]
    outcome = sb.check(bins["double"], good)
    assert outcome.ok and outcome.passed == 2 and outcome.total == 2

    bad = [good[0], TestCase("wrong", b"5\n", b"11\n", 0), TestCase("also", b"1\n", b"3\n", 0)]
    outcome = sb.check(bins["double"], bad)
    assert not outcome.ok and outcome.passed == 1 and outcome.total == 3
    f = outcome.first_failure
    assert (f.test, f.reason, f.stdin, f.expected, f.line) == (
        "wrong", "output differs from the expected at line 1", "5\n", "11\n", 1)
    # What the program printed ("10") is nowhere: it must never reach a prompt or a report.
    assert "differs from the expected at line 1" in f.render() and "10" not in f.render()

    # Without stopping, every test is tried: the papers' partial-credit reward.
    outcome = sb.check(bins["double"], bad, stop_on_first_failure=False)
    assert outcome.passed == 1 and outcome.first_failure.test == "wrong"


def test_failure_excerpts_are_short_and_start_near_the_difference(sb, bins):
    recorded = sb.record(bins["bigout"], [TestCase("big", b"")])
    expected = recorded[0].expected_stdout
    assert len(expected) > 100_000
    tampered = expected[:300_000] + b"X" + expected[300_001:]
    outcome = sb.check(bins["bigout"], [TestCase("big", b"", tampered, 0)])
    f = outcome.first_failure
    line = expected[:300_000].count(b"\n") + 1
    assert f.reason == f"output differs from the expected at line {line}" and f.line == line
    assert len(f.expected) < 600
    assert "X" in f.expected and "bytes before" in f.expected and "more bytes" in f.expected


def test_exit_status_mismatch(sb, bins):
    outcome = sb.check(bins["exit3"], [TestCase("t", b"", b"bye\n", 0)])
    assert outcome.first_failure.reason == "exit status 3, expected 0"
    assert sb.check(bins["exit3"], [TestCase("t", b"", b"bye\n", 3)]).ok


def test_segfault_is_reported(sb, bins):
    outcome = sb.check(bins["segv"], [TestCase("t", b"", b"", 0)])
    assert outcome.first_failure.reason == "killed by SIGSEGV"


def test_infinite_loop_times_out(bins):
    with Sandbox(timeout=1.0) as sandbox:
        start = time.monotonic()
        outcome = sandbox.check(bins["loop"], [TestCase("t", b"", b"", 0)])
        elapsed = time.monotonic() - start
    assert outcome.first_failure.reason.startswith("timed out")
    assert elapsed < 1.0 + 1.0


def test_fork_bomb_is_contained(bins):
    with Sandbox(timeout=2.0, processes=32) as sandbox:
        start = time.monotonic()
        result = sandbox.run(bins["forkbomb"], b"")
        elapsed = time.monotonic() - start
        assert result.timed_out
        assert elapsed < 2.0 + 2.0
        # The process group was killed when the run returned.
        leftovers = _live_processes_under(sandbox.root)
        assert leftovers == []
        root = sandbox.root
    assert not root.exists()


def test_process_leaving_the_group_is_killed(bins):
    with Sandbox(timeout=1.0) as sandbox:
        result = sandbox.run(bins["escape"], b"")
        assert result.stdout == b"parent done\n"
        # In a box the run ends with its main process, and the escaped child with it; in the
        # fallback the escaped child still holds stdout open, so the run ends at the timeout.
        assert result.timed_out is not sandbox.isolated
        # ...and the sandbox's sweep killed it although it left the process group.
        deadline = time.monotonic() + 2
        while _live_processes_under(sandbox.root) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _live_processes_under(sandbox.root) == []


def test_output_flood_is_cut_at_the_limit(bins):
    with Sandbox(timeout=20, output_limit=1 << 20) as sandbox:
        start = time.monotonic()
        result = sandbox.run(bins["flood"], b"")
        assert time.monotonic() - start < 10
        assert result.truncated and len(result.stdout) == 1 << 20
        outcome = sandbox.check(bins["flood"], [TestCase("t", b"", b"", 0)])
    assert outcome.first_failure.reason.startswith("output over the limit")


def test_writes_outside_the_scratch_dir_fail(sb, bins, tmp_path):
    # Inside its own scratch directory the program may write.
    assert sb.run(bins["writer"], b"./mine.txt\n").stdout == b"written\n"
    target = tmp_path / "outside.txt"
    result = sb.run(bins["writer"], f"{target}\n".encode())
    if not IS_ROOT and not sb.isolated:
        pytest.skip("no box and not root: the run is the calling user, who may write to its own tmp_path")
    assert result.stdout == b"denied\n"
    assert not target.exists()


def test_runs_as_the_user_inside_and_nobody_outside(sb, bins, tmp_path):
    if sb.isolated:
        # The program sees the invoking user's uid (root: uid 0 without capabilities)...
        assert sb.run(bins["whoami"], b"").stdout == f"{os.getuid()}\n".encode()
        # ...and what it writes through a writable directory belongs to nobody if sgcc is root.
        # (In /tmp: pytest's own temp directories are not reachable by nobody.)
        shared = Path(tempfile.mkdtemp(prefix="sgcc-test-shared-"))
        try:
            os.chmod(shared, 0o777)
            assert sb.run(bins["writer"], f"{shared}/f\n".encode(), writable=[shared]).stdout == b"written\n"
            assert (shared / "f").stat().st_uid == (proc.NOBODY if IS_ROOT else os.getuid())
        finally:
            shutil.rmtree(shared)
        return
    if not IS_ROOT:
        pytest.skip("privileges are only dropped when sgcc runs as root")
    assert sb.run(bins["whoami"], b"").stdout == b"65534\n"


def test_network_is_unreachable_under_isolation(sb, bins):
    if not proc.network_isolation_available():
        pytest.skip("this kernel refuses private network namespaces")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        # Sanity: the same program outside the sandbox does reach the listener.
        direct = proc.run([str(bins["connect"])], stdin=f"{port}\n".encode(), timeout=10)
        assert direct.stdout == b"connected\n"
        listener.accept()[0].close()

        result = sb.run(bins["connect"], f"{port}\n".encode())
        assert result.stdout.startswith(b"failed"), result.stdout
        listener.settimeout(0.2)
        with pytest.raises(socket.timeout):
            listener.accept()


def test_environment_is_an_ordinary_login_and_padded(sb):
    # /usr/bin/env prints exactly what the program sees.
    result = sb.run(Path("/usr/bin/env"), b"", env_pad=123)
    lines = result.stdout.decode().splitlines()
    expected = sb.worlds[0].environment(pad_value(123))  # the first world's, in its order
    if not sb.isolated:  # the fallback's home is the run's scratch directory
        got = dict(line.split("=", 1) for line in lines)
        expected.update(HOME=got["HOME"], PWD=got["HOME"])
    assert lines == [f"{k}={v}" for k, v in expected.items()]
    assert not any(line.startswith("SGCC") for line in lines)
    assert len(pad_value(123)) == 123 and len(pad_value(5000)) == 5000 and pad_value(0) == ""


def test_each_run_gets_a_fresh_directory_and_close_cleans_up(bins):
    with Sandbox() as sandbox:
        assert sandbox.run(bins["marker"], b"").stdout == b"fresh\n"
        assert sandbox.run(bins["marker"], b"").stdout == b"fresh\n"
        root = sandbox.root
        assert root.is_dir()
    assert not root.exists()

    kept = Sandbox(keep=True)
    kept.run(bins["marker"], b"")
    kept.close()
    try:
        assert kept.root.is_dir()
    finally:
        proc.run(["rm", "-rf", str(kept.root)], timeout=30)


def test_record_fills_expectations_from_the_baseline(sb, bins):
    tests = [
        TestCase("a", b"3\n"),
        TestCase("b", b"7\n", b"given\n", None),  # a given .out is kept, the status recorded
        TestCase("c", b"nonsense\n"),  # the baseline exits 2: that is what is expected
    ]
    recorded = sb.record(bins["double"], tests)
    assert recorded[0] == TestCase("a", b"3\n", b"6\n", 0)
    assert recorded[1] == TestCase("b", b"7\n", b"given\n", 0)
    assert recorded[2] == TestCase("c", b"nonsense\n", b"", 2)
    assert sb.check(bins["double"], [recorded[0], recorded[2]]).ok


def test_record_refuses_unusable_baselines(sb, bins):
    with pytest.raises(SgccError, match="not deterministic"):
        sb.record(bins["padlen"], [TestCase("t", b"")])
    with pytest.raises(SgccError, match="killed by SIGSEGV"):
        sb.record(bins["segv"], [TestCase("t", b"")])


def test_check_needs_expectations(sb, bins):
    with pytest.raises(SgccError, match="no expected output"):
        sb.check(bins["double"], [TestCase("t", b"1\n")])


def test_a_file_that_cannot_execute_fails_its_tests(sb, tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF not really")
    outcome = sb.check(junk, [TestCase("t", b"", b"", 0)])
    assert outcome.first_failure.reason.startswith("cannot run")


def test_concurrent_runs_do_not_kill_each_other(sb, bins):
    # One thread's clean-up sweep must not touch a program another thread is running.
    import threading

    results = []
    t = threading.Thread(target=lambda: results.append(sb.run(bins["spin"], b"1000000000\n")))
    t.start()
    quick = 0
    while t.is_alive() and quick < 200:
        assert sb.run(bins["whoami"], b"").returncode == 0
        quick += 1
    t.join()
    assert quick > 0
    assert results[0].returncode == 0 and results[0].stdout == b"done\n", results[0].describe()


def _seed_with_a_bare_world_named_like(program: str) -> int:
    """A world seed whose first world runs the binary by a bare name that a system program
    on PATH also has (``test`` is /usr/bin/test: exits 1 without arguments)."""
    from sgcc.verify.box import worlds

    for seed in range(10_000):
        w = worlds.make(1, os.getuid(), seed)[0]
        if w.argv0 == program:
            return seed
    raise AssertionError(f"no seed gives a bare world named {program}")


@pytest.mark.parametrize("helper", [True, False], ids=["helper", "python"])
def test_a_binary_that_cannot_execute_never_runs_a_system_program_of_its_name(tmp_path, helper):
    # A world runs the binary by its bare name, found through PATH (its directory first in
    # it). If the binary cannot be executed, the search must stop there: going on down PATH
    # ran /usr/bin/test instead, whose exit status 1 was judged as the candidate's (a flaky
    # "exit status 1, expected 0" where "cannot run" is the truth).
    from sgcc.verify.box import isolate

    if not isolation_level.isolation_report().boxed:
        pytest.skip("this kernel refuses the box: " + isolation_level.isolation_report().problem)
    assert shutil.which("test")
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF not really")
    was = isolate._helper_enabled
    isolate.use_helper(helper)
    try:
        with Sandbox(timeout=5, boxed=True, worlds=1, world_seed=_seed_with_a_bare_world_named_like("test")) as box:
            outcome = box.check(junk, [TestCase("t", b"", b"", 0)])
    finally:
        isolate.use_helper(was)
    assert outcome.first_failure.reason.startswith("cannot run"), outcome.first_failure.reason
