"""Hostile programs and what they manage to do in a box (used by tests/test_isolation.py).

Each scenario runs real C programs in a real :class:`~sgcc.verify.box.sandbox.Sandbox` and
returns what it observed as a dict of plain values. ``test_isolation.py`` calls them in its
own process and, when it runs as root, again as user nobody through this file's command line:

    python tests/isolation_scenarios.py SCENARIO BINDIR   -> one JSON object on stdout

Payloads are harmless: marker files, reading a file to stdout, sleeping, spinning.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAMS = {
    # The timing escape: the parent exits at once, a child does the work and prints.
    "forkexit": r"""
        #include <stdio.h>
        #include <unistd.h>
        int main(void) { if (fork() == 0) { for (volatile long i = 0; i < 200000000L; i++) ;
            puts("result"); fflush(stdout); _exit(0); } _exit(0); }
    """,
    # A detached grandchild does the work while main waits on a pipe (never on the process).
    "detachwork": r"""
        #include <stdio.h>
        #include <unistd.h>
        int main(void) { int p[2]; pipe(p); char c;
            if (fork() == 0) { if (fork() == 0) { setsid();
                for (volatile long i = 0; i < 150000000L; i++) ; write(p[1], "x", 1); _exit(0); } _exit(0); }
            close(p[1]); read(p[0], &c, 1); puts("done"); return 0; }
    """,
    "solowork": r"""
        #include <stdio.h>
        int main(void) { for (volatile long i = 0; i < 150000000L; i++) ; puts("done"); return 0; }
    """,
    # A setsid daemon that writes a marker (path on stdin) half a second later; with an
    # argument-free stdin line "wait" first, the parent waits for it (the control).
    "daemon": r"""
        #include <stdio.h>
        #include <string.h>
        #include <unistd.h>
        #include <sys/wait.h>
        int main(void) { char mode[16], path[4096];
            if (scanf("%15s %4095s", mode, path) != 2) return 2;
            pid_t pid = fork();
            if (pid == 0) { setsid(); usleep(500000); FILE *f = fopen(path, "w"); if (f) { fputs("late", f); fclose(f); } _exit(0); }
            if (!strcmp(mode, "wait")) waitpid(pid, 0, 0);
            puts("started"); return 0; }
    """,
    # Prints the file named on stdin, or the errno of the failure.
    "cat": r"""
        #include <stdio.h>
        #include <string.h>
        #include <errno.h>
        int main(void) { char path[4096]; if (!fgets(path, sizeof path, stdin)) return 2;
            path[strcspn(path, "\n")] = 0; FILE *f = fopen(path, "r");
            if (!f) { printf("errno %d\n", errno); return 0; }
            int c; while ((c = getc(f)) != EOF) putchar(c); return 0; }
    """,
    # Connects to the UNIX socket named on stdin ("@name" for an abstract one).
    "unixconnect": r"""
        #include <stdio.h>
        #include <string.h>
        #include <errno.h>
        #include <sys/socket.h>
        #include <sys/un.h>
        #include <stddef.h>
        int main(void) { char path[108]; if (scanf("%100s", path) != 1) return 2;
            struct sockaddr_un a; memset(&a, 0, sizeof a); a.sun_family = AF_UNIX;
            socklen_t len = sizeof a;
            if (path[0] == '@') { strcpy(a.sun_path + 1, path + 1); len = offsetof(struct sockaddr_un, sun_path) + strlen(path); }
            else strcpy(a.sun_path, path);
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            if (connect(s, (struct sockaddr *)&a, len) == 0) puts("connected"); else printf("errno %d\n", errno);
            return 0; }
    """,
    # Writes /tmp/NAME and /dev/shm/NAME (NAME on stdin), saying whether they existed before.
    "tmpwriter": r"""
        #include <stdio.h>
        #include <unistd.h>
        int main(void) { char name[200], p[300]; if (scanf("%199s", name) != 1) return 2;
            const char *dirs[] = {"/tmp", "/dev/shm"};
            for (int i = 0; i < 2; i++) { snprintf(p, sizeof p, "%s/%s", dirs[i], name);
                int seen = access(p, F_OK) == 0; FILE *f = fopen(p, "w");
                printf("%s %s %s\n", dirs[i], seen ? "seen" : "fresh", f ? "written" : "denied"); if (f) fclose(f); }
            return 0; }
    """,
    # Writes N files of 3 MB into /tmp, /dev/shm and its home in turn; prints how many fit.
    "filler": r"""
        #include <stdio.h>
        #include <stdlib.h>
        static char buf[3 << 20];
        int main(void) { int n; if (scanf("%d", &n) != 1) return 2; int ok = 0;
            const char *dirs[] = {"/tmp", "/dev/shm", getenv("HOME")};
            for (int i = 0; i < n; i++) { char p[300]; snprintf(p, sizeof p, "%s/f%d", dirs[i % 3], i);
                FILE *f = fopen(p, "w"); if (!f) break;
                size_t w = fwrite(buf, 1, sizeof buf, f); if (fclose(f) != 0 || w != sizeof buf) break; ok++; }
            printf("%d\n", ok); return 0; }
    """,
    # Three children each hold MB megabytes (stdin) for a second; "all held" if all did.
    "memhog": r"""
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        #include <sys/wait.h>
        int main(void) { int mb; if (scanf("%d", &mb) != 1) return 2; int good = 0;
            for (int i = 0; i < 3; i++) if (fork() == 0) { volatile char *p = malloc((size_t)mb << 20);
                if (!p) _exit(1); for (size_t k = 0; k < ((size_t)mb << 20); k += 4096) p[k] = 1;
                sleep(1); _exit(p[4096] == 1 ? 0 : 1); }
            for (int i = 0; i < 3; i++) { int st; wait(&st); if (WIFEXITED(st) && WEXITSTATUS(st) == 0) good++; }
            if (good == 3) puts("all held"); else printf("%d held\n", good); return 0; }
    """,
    # Sends SIGKILL to the pid on stdin.
    "killer": r"""
        #include <stdio.h>
        #include <errno.h>
        #include <signal.h>
        int main(void) { int pid; if (scanf("%d", &pid) != 1) return 2;
            if (kill(pid, SIGKILL) == 0) puts("killed"); else printf("errno %d\n", errno); return 0; }
    """,
    # The tell: right only where HOME is unset (as it was in old test runs).
    "tell": r"""
        #include <stdio.h>
        #include <stdlib.h>
        int main(void) { puts(getenv("HOME") ? "what users get" : "what the tests saw"); return 0; }
    """,
    # What a program can learn about where it runs.
    "whereami": r"""
        #include <stdio.h>
        #include <string.h>
        #include <unistd.h>
        #include <dirent.h>
        #include <ctype.h>
        #include <stdlib.h>
        extern char **environ;
        int main(int argc, char **argv) { char cwd[4096]; getcwd(cwd, sizeof cwd);
            int procs = 0; DIR *d = opendir("/proc"); struct dirent *e;
            while (d && (e = readdir(d))) if (isdigit((unsigned char)e->d_name[0])) procs++;
            int home_entries = 0; DIR *h = opendir(getenv("HOME") ? getenv("HOME") : "/nonexistent");
            while (h && (e = readdir(h))) if (e->d_name[0] != '.') home_entries++;
            printf("uid %d\ncwd %s\nargv0 %s\nprocs %d\nhome_entries %d\n", (int)getuid(), cwd, argv[0], procs, home_entries);
            for (char **v = environ; *v; v++) if (strncmp(*v, "LS_COLORS=", 10)) printf("env %s\n", *v);
            return 0; }
    """,
    # Tries calls a test never needs; prints NAME RESULT (0 or errno) for each.
    "syscalls": r"""
        #define _GNU_SOURCE
        #include <stdio.h>
        #include <errno.h>
        #include <sched.h>
        #include <unistd.h>
        #include <sys/mount.h>
        #include <sys/syscall.h>
        #include <sys/ptrace.h>
        static void show(const char *name, long rc) { printf("%s %d\n", name, rc == -1 ? errno : 0); }
        int main(void) {
            show("unshare", unshare(CLONE_NEWUSER));
            show("mount", mount("none", "/tmp", "tmpfs", 0, 0));
            show("ptrace", ptrace(PTRACE_TRACEME, 0, 0, 0));
            show("bpf", syscall(SYS_bpf, 0, 0, 0));
            show("perf_event_open", syscall(SYS_perf_event_open, 0, 0, -1, -1, 0));
            show("keyctl", syscall(SYS_keyctl, 0, 0, 0, 0, 0));
            show("setns", syscall(SYS_setns, 0, 0));
            show("io_uring_setup", syscall(425, 1, 0));
            show("clone_newns", syscall(SYS_clone, CLONE_NEWNS | 17, 0, 0, 0, 0));
            show("clone3", syscall(435, 0, 0));
            show("getppid", getppid() > 0 ? 0 : -1);
            return 0; }
    """,
    # A 32-bit system call through int $0x80 (getpid there): the filter kills the process.
    "int80": r"""
        #include <stdio.h>
        int main(void) { long r; __asm__ volatile ("int $0x80" : "=a"(r) : "a"(20L)); printf("%ld\n", r); return 0; }
    """,
    # A setsid child appends to the file named on stdin every 50 ms; main spins forever.
    "tickers": r"""
        #include <stdio.h>
        #include <unistd.h>
        int main(void) { char path[4096]; if (scanf("%4095s", path) != 1) return 2;
            if (fork() == 0) { setsid(); for (;;) { FILE *f = fopen(path, "a"); if (f) { fputs("tick\n", f); fclose(f); } usleep(50000); } }
            for (;;) ; }
    """,
    # Appends a line to the file named on stdin every 50 ms, forever.
    "ticker": r"""
        #include <stdio.h>
        #include <unistd.h>
        int main(void) { char path[4096]; if (scanf("%4095s", path) != 1) return 2;
            for (;;) { FILE *f = fopen(path, "a"); if (f) { fputs("tick\n", f); fclose(f); } usleep(50000); } }
    """,
}


def build(directory: Path) -> dict[str, Path]:
    """Compile every program into ``directory`` (readable by everyone)."""
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o755)
    out = {}
    for name, src in PROGRAMS.items():
        c = directory / f"{name}.c"
        c.write_text(src)
        subprocess.run(["gcc", "-O1", "-o", str(directory / name), str(c)], check=True, timeout=120)
        out[name] = directory / name
    return out


def _shared_dir() -> Path:
    """A world-writable directory in /tmp (reachable by nobody) for markers."""
    d = Path(tempfile.mkdtemp(prefix="sgcc-iso-test-"))
    os.chmod(d, 0o777)
    return d


def _sandbox(**kw):
    from sgcc.verify.box.sandbox import Sandbox

    return Sandbox(**{"timeout": 10, **kw})


# --------------------------------------------------------------------------- scenarios


def fork_escape(bins):
    from sgcc.verify.box.sandbox import TestCase

    with _sandbox() as sb:
        start = time.monotonic()
        r = sb.run(bins["forkexit"], b"")
        elapsed = time.monotonic() - start
        outcome = sb.check(bins["forkexit"], [TestCase("t", b"", b"result\n", 0)])
    return {"stdout": r.stdout.decode(), "timed_out": r.timed_out, "seconds": elapsed,
            "passes": outcome.ok, "isolated": sb.isolated}


def detached_cpu(bins):
    # The same loop's CPU time varies up to 1.7x on this shared 2-core machine (0.066-0.116 s,
    # quiet), so each is the least of four runs, interleaved: what a noisy neighbour adds
    # falls on both, and the comparison is of the loop, not of the moment.
    detached, solo = [], []
    with _sandbox() as sb:
        for _ in range(4):
            detached.append(sb.run(bins["detachwork"], b"").cpu)
            solo.append(sb.run(bins["solowork"], b"").cpu)
    return {"detached": min(detached), "solo": min(solo)}


def daemon(bins):
    d = _shared_dir()
    try:
        with _sandbox() as sb:
            r = sb.run(bins["daemon"], f"nowait {d}/late\n".encode(), writable=[d])
            time.sleep(1.2)
            late = (d / "late").exists()
            control = sb.run(bins["daemon"], f"wait {d}/waited\n".encode(), writable=[d])
            waited = (d / "waited").exists()
        return {"stdout": r.stdout.decode(), "late_marker": late, "control_stdout": control.stdout.decode(),
                "control_marker": waited}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def host_files(bins):
    d = _shared_dir()
    try:
        secret = d / "secret.txt"
        secret.write_text("the secret\n")
        os.chmod(secret, 0o644)
        tests = d / "tests"
        tests.mkdir(mode=0o755)
        os.chmod(tests, 0o755)
        (tests / "a.out").write_text("expected answer\n")
        os.chmod(tests / "a.out", 0o644)
        source = Path(__file__).resolve()
        host_passwd = Path("/etc/passwd").read_text()
        paths = {"secret": str(secret), "expected": str(tests / "a.out"), "source": str(source),
                 "passwd": "/etc/passwd"}
        out = {}
        with _sandbox() as sb:
            for key, path in paths.items():
                out[key] = sb.run(bins["cat"], f"{path}\n".encode()).stdout.decode()
                # The control: the same program, same user, outside the box.
                out[key + "_direct"] = subprocess.run([str(bins["cat"])], input=f"{path}\n".encode(),
                                                      capture_output=True, timeout=30).stdout.decode()
        out["host_passwd_lines"] = [ln for ln in host_passwd.splitlines() if ln]
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def unix_socket(bins):
    d = Path(tempfile.mkdtemp(prefix="sgcc-iso-sock-"))
    os.chmod(d, 0o755)
    path = str(d / "s")
    abstract = f"sgcc-iso-{os.getpid()}"
    listeners = []
    try:
        for addr in (path, "\0" + abstract):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(addr)
            s.listen(4)
            listeners.append(s)
        os.chmod(path, 0o777)
        out = {}
        with _sandbox() as sb:
            for key, name in (("path", path), ("abstract", "@" + abstract)):
                out[key] = sb.run(bins["unixconnect"], f"{name}\n".encode()).stdout.decode()
                out[key + "_direct"] = subprocess.run([str(bins["unixconnect"])], input=f"{name}\n".encode(),
                                                      capture_output=True, timeout=30).stdout.decode()
        return out
    finally:
        for s in listeners:
            s.close()
        shutil.rmtree(d, ignore_errors=True)


def tmp_and_shm(bins):
    name = f"sgcc-iso-marker-{os.getpid()}"
    with _sandbox() as sb:
        first = sb.run(bins["tmpwriter"], f"{name}\n".encode()).stdout.decode()
        second = sb.run(bins["tmpwriter"], f"{name}\n".encode()).stdout.decode()
    left = [p for p in (f"/tmp/{name}", f"/dev/shm/{name}") if os.path.exists(p)]
    for p in left:
        os.unlink(p)
    with _sandbox(file_size=8 << 20) as sb:
        fitted = sb.run(bins["filler"], b"4\n").stdout.decode().strip()
    with _sandbox(file_size=64 << 20) as sb:
        fitted_control = sb.run(bins["filler"], b"4\n").stdout.decode().strip()
    return {"first": first, "second": second, "left_on_host": left, "fitted": fitted,
            "fitted_control": fitted_control}


def memory(bins):
    with _sandbox(memory=128 << 20) as sb:
        r = sb.run(bins["memhog"], b"60\n")
    with _sandbox(memory=512 << 20) as sb:
        control = sb.run(bins["memhog"], b"60\n")
    return {"stdout": r.stdout.decode(), "notes": r.notes, "returncode": r.returncode,
            "control_stdout": control.stdout.decode()}


def signals(bins):
    with _sandbox() as sb:
        outer_uid = sb.identity.outer_uid

        def victim():
            def drop():
                if os.getuid() != outer_uid:
                    os.setgid(outer_uid)
                    os.setuid(outer_uid)
            return subprocess.Popen(["sleep", "30"], preexec_fn=drop)

        v = victim()
        try:
            out = sb.run(bins["killer"], f"{v.pid}\n".encode()).stdout.decode()
            time.sleep(0.2)
            alive = v.poll() is None
        finally:
            v.kill()
            v.wait()
        v = victim()
        try:
            direct = subprocess.run([str(bins["killer"])], input=f"{v.pid}\n".encode(), capture_output=True,
                                    timeout=30, preexec_fn=(lambda: os.setuid(outer_uid)) if os.getuid() != outer_uid else None)
            v.wait(timeout=10)
            direct_killed = v.returncode == -signal.SIGKILL
        finally:
            if v.poll() is None:
                v.kill()
                v.wait()
    return {"stdout": out, "victim_alive": alive, "direct": direct.stdout.decode(), "direct_killed": direct_killed}


def tells(bins):
    from sgcc.verify.box.sandbox import TestCase

    with _sandbox() as sb:
        views = [sb.run(bins["whereami"], b"", env_pad=pad).stdout.decode() for pad in (0, 1000, 4096)]
        other = sb.run(bins["whereami"], b"", world=1).stdout.decode()
        tell = sb.record(bins["tell"], [TestCase("t", b"")])[0].expected_stdout.decode()
        worlds = [{"argv0": w.argv0, "cwd": w.cwd, "home": w.home, "user": w.user} for w in sb.worlds]
    return {"views": views, "other": other, "worlds": worlds, "tell": tell, "uid": os.getuid(),
            "host_home": os.path.expanduser("~"), "host_cwd": os.getcwd()}


def syscalls(bins):
    with _sandbox() as sb:
        out = sb.run(bins["syscalls"], b"").stdout.decode()
        int80 = sb.run(bins["int80"], b"")
    return {"results": dict(line.split() for line in out.splitlines()), "int80": int80.returncode,
            "int80_stdout": int80.stdout.decode()}


def timeout_kills_all(bins):
    d = _shared_dir()
    try:
        with _sandbox(timeout=1.0) as sb:
            # A detached ticker writes every 50 ms; main (the same program) never exits.
            r = sb.run(bins["tickers"], f"{d}/ticks\n".encode(), writable=[d])
            size = (d / "ticks").stat().st_size if (d / "ticks").exists() else -1
            time.sleep(0.5)
            after = (d / "ticks").stat().st_size if (d / "ticks").exists() else -1
        return {"timed_out": r.timed_out, "size": size, "after": after}
    finally:
        shutil.rmtree(d, ignore_errors=True)


SCENARIOS = {f.__name__: f for f in (fork_escape, detached_cpu, daemon, host_files, unix_socket, tmp_and_shm,
                                      memory, signals, tells, syscalls, timeout_kills_all)}


def main(argv: list[str]) -> int:
    name, bindir = argv[1], Path(argv[2])
    bins = {n: bindir / n for n in PROGRAMS}
    print(json.dumps(SCENARIOS[name](bins)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
