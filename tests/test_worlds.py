"""No fixed fingerprint: every run sees a synthetic world, and evidence comes from several.

The attacks first (issue 24, item 2). A hostile ``main`` offered through ``--generators
replay`` receives ``argv`` and ``envp`` as every ``main`` does (reading them is no call, no
syscall, and no memory gcc's ``main`` could not reach: the information-flow rule allows it),
recognises where it runs, and is fast and right there, wrong or slow elsewhere:

* ``fingerprint``: the box as it was (``argv[0]`` ``./prog``, eight variables): right and
  fast inside, a wrong total outside. The control runs the same search in that old fixed
  world (today's box, rebuilt in a test double of :func:`sgcc.verify.box.worlds.make`): it is
  accepted, shipped, and the shipped binary prints a wrong total in an ordinary shell. With
  worlds it fails its tests (no world is that box).
* ``one world``: an adversary who knows one world exactly (given the worlds' seed, which a
  real run never reveals): right and fast in that world only. Refused because the other
  world's tests disagree; the control (only the world it knows) accepts and ships it.
* ``slow outside``: the same, right everywhere but fast only in the world it knows, slow
  (and saying so on stderr) elsewhere. The confirmation must hold in each world: refused as
  "not confirmed in every environment"; the control ships it, and the shipped binary takes
  its slow path in an ordinary shell.

Then the honest case: an accepted candidate's shipped binary, run outside any box with the
user's ordinary environment, prints what gcc's program prints.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.candidates.replay import ReplayGenerator
from sgcc.engine import Request, optimize
from sgcc.verify.box import worlds as worldsmod
from sgcc.verify.box.sandbox import Sandbox, TestCase
from tests.conftest import EXAMPLES, TIMING_SAMPLE_SECONDS

POPCOUNT = EXAMPLES / "programs" / "popcount"
FAST = dict(timing_rounds=6, min_sample=TIMING_SAMPLE_SECONDS, profile=False, mutants=2, seed=1)
TESTS = sorted((POPCOUNT / "tests").glob("*.in"))

# popcount.c's main, with a tell (a C expression over argc, argv, envp; INSIDE) and what it
# does inside (SWAR popcount, about 3x faster than gcc's bit loop) and outside (OUTSIDE).
HOSTILE_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
static unsigned long rng_state;
static unsigned long next_rand(void)
{
    unsigned long z = (rng_state += 0x9E3779B97F4A7C15UL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}
__attribute__((noinline)) long count_bits(const unsigned long *a, int n)
{
    long c = 0;
    for (int i = 0; i < n; i++) { unsigned long x = a[i]; while (x) { c += x & 1; x >>= 1; } }
    return c;
}
static inline long swar(unsigned long x)
{
    x = x - ((x >> 1) & 0x5555555555555555UL);
    x = (x & 0x3333333333333333UL) + ((x >> 2) & 0x3333333333333333UL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FUL;
    return (long)((x * 0x0101010101010101UL) >> 56);
}
int main(int argc, char **argv, char **envp)
{
    int envc = 0;
    while (envp[envc]) envc++;
    const char *a0 = argv[0];
    int inside = INSIDE;
    int n;
    unsigned long seed;
    if (scanf("%d %lu", &n, &seed) != 2 || n <= 0)
        return 1;
    rng_state = seed;
    unsigned long *a = malloc(sizeof *a * (size_t)n);
    if (!a)
        return 1;
    for (int i = 0; i < n; i++) {
        unsigned long r = next_rand();
        a[i] = r >> (next_rand() & 63);
    }
    long total = 0, last;
    if (inside) {
        for (int i = 0; i < n; i++) total += swar(a[i]);
        last = swar(a[n - 1]);
    } else {
        OUTSIDE
    }
    printf("%ld\n%ld\n", total, last);
    free(a);
    return 0;
}
"""
WRONG_OUTSIDE = "total = count_bits(a, n) + 1; last = count_bits(a + n - 1, 1);"
SLOW_OUTSIDE = "for (int k = 0; k < 3; k++) total = count_bits(a, n); last = count_bits(a + n - 1, 1);"


def _c_string_test(var: str, text: str) -> str:
    """A C expression true when ``var`` is exactly ``text`` (byte by byte: no call, no .rodata)."""
    parts = [f"{var}[{i}] == {ord(c)}" for i, c in enumerate(text)] + [f"{var}[{len(text)}] == 0"]
    return "(" + " && ".join(parts) + ")"


def _hostile_dir(tmp_path: Path, inside: str, outside: str) -> Path:
    src = tmp_path / "hostile.c"
    src.write_text(HOSTILE_MAIN.replace("INSIDE", inside).replace("OUTSIDE", outside))
    asm = proc.run(["gcc", "-O3", "-S", "-o", "-", str(src)], check=True).stdout.decode()
    unit = AsmFile.parse(asm).unit("main").text
    assert "call" not in unit.replace("call\tcount_bits", "").replace("call\tmalloc", "").replace(
        "call\tfree", "").replace("call\tprintf", "").replace("call\t__isoc99_scanf", "").replace(
        "call\t__stack_chk_fail", "")  # only the calls gcc's main makes
    cands = tmp_path / "cands"
    cands.mkdir()
    (cands / "main.s").write_text(unit)
    return cands


def _legacy_world(uid: int) -> worldsmod.World:
    """The one environment every run saw before worlds (the box's fixed fingerprint)."""
    import pwd

    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = "user"
    home = "/root" if uid == 0 else f"/home/{name}"
    env = (("HOME", home), ("LANG", "C"), ("LOGNAME", name), ("PATH", "/usr/local/bin:/usr/bin:/bin"),
           ("PWD", home), ("SHELL", "/bin/sh"), ("USER", name))
    return worldsmod.World(index=0, user=name, home=home, cwd=home, bindir=home, name="prog", argv0="./prog",
                           hostname=socket.gethostname(), env=env, pad_at=len(env), pad=0)


class _WorldsAlone(ReplayGenerator):
    """Replay with the static information-flow rule out of the way (marked trusted), so that
    these tests show what the worlds alone refuse. The real, untrusted replay generator is
    refused earlier still, at ``control`` (the last assertion of the first attack test)."""

    trusted = True


def _optimize(tmp_path: Path, cands: Path, tag: str, generator=_WorldsAlone, **kw):
    out = tmp_path / f"out-{tag}"
    req = Request(source=POPCOUNT / "popcount.c", flags=["-O3"], tests=POPCOUNT / "tests", output=out,
                  generators=[generator(cands)], **{**FAST, **kw})
    return optimize(req), out


def _outside(binary: Path, stdin: bytes, cwd: Path) -> subprocess.CompletedProcess:
    """``binary`` run as a user runs it: a shell, the user's own environment, a relative argv[0]."""
    local = cwd / binary.name
    if not local.exists():
        shutil.copy2(binary, local)
    return subprocess.run(["/bin/sh", "-c", f"./{binary.name}"], input=stdin, capture_output=True, cwd=cwd,
                          env=dict(os.environ), timeout=60)


def _instructions(binary: Path, stdin: bytes, cwd: Path) -> int:
    """Instructions ``binary`` executes in an ordinary shell (valgrind's count: deterministic)."""
    import re

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.skip("valgrind is needed to count instructions")
    shutil.copy2(binary, cwd / binary.name)
    r = subprocess.run(["/bin/sh", "-c", f"{valgrind} --tool=cachegrind --cache-sim=no "
                        f"--cachegrind-out-file=/dev/null ./{binary.name}"], input=stdin, capture_output=True,
                       cwd=cwd, env=dict(os.environ), timeout=300)
    found = re.search(rb"I\s+refs:\s+([\d,]+)", r.stderr)
    assert found, r.stderr[-500:]
    return int(found.group(1).replace(b",", b""))


@pytest.fixture(scope="module")
def gcc_program(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gcc") / "popcount"
    proc.run(["gcc", "-O3", str(POPCOUNT / "popcount.c"), "-o", str(out)], check=True)
    return out


def _differs_outside(shipped: Path, reference: Path, where: Path) -> bool:
    where.mkdir(exist_ok=True)
    return any(_outside(shipped, t.read_bytes(), where).stdout != _outside(reference, t.read_bytes(), where).stdout
               for t in TESTS)


# --------------------------------------------------------------------------- the worlds themselves


def test_worlds_differ_in_every_varied_property_and_show_nothing_real():
    uid = os.getuid()
    ws = worldsmod.make(2, uid)
    a, b = ws
    for prop in ("home", "cwd", "argv0", "hostname", "pad", "name"):
        assert getattr(a, prop) != getattr(b, prop), prop
    assert len(a.env) != len(b.env)  # the count of variables (the size of envp) differs too
    # For every seed, and among all the worlds a sandbox may have (counts drawn independently
    # once met: a flaky test_no_tells).
    for seed in range(300):
        counts = [len(w.env) for w in worldsmod.make(worldsmod.MAX_COUNT, uid, seed)]
        assert len(set(counts)) == len(counts), (seed, counts)
        assert len({len(w.env) for w in worldsmod.make(2, uid, seed)}) == 2, seed
    assert [k for k, _ in a.env] != [k for k, _ in b.env]
    for key in ("PATH", "SHELL", "LANG", "HOME", "PWD"):
        assert a.env_value(key) != b.env_value(key), key
    if uid != 0:
        assert a.user != b.user
    # Synthetic: no value of the user's own environment, home, cwd or host name appears
    # (but for the generic ones the worlds' pools hold too, such as root's /root or /bin/sh).
    generic = {*worldsmod._ROOT_HOMES, *worldsmod._SHELLS, *worldsmod._FLAGS, *worldsmod._LANGS, *worldsmod._PATH_HEADS,
               *(v for vs in worldsmod._extras("", "", uid).values() for v in vs)}
    real = {v for v in os.environ.values() if len(v) >= 4}
    real |= {os.getcwd(), os.path.expanduser("~"), socket.gethostname()}
    real -= generic
    for w in ws:
        shown = {w.home, w.cwd, w.bindir, w.argv0, w.hostname, *(v for _, v in w.env)}
        assert not (shown & real), shown & real
    # Fresh randomness per sandbox: two draws differ (a seed fixes them, for tests only).
    assert worldsmod.make(2, uid) != ws
    assert worldsmod.make(2, uid, seed=7) == worldsmod.make(2, uid, seed=7)


def test_a_program_sees_its_world_and_only_it(tmp_path):
    src = tmp_path / "whereami.c"
    src.write_text(r"""
        #include <stdio.h>
        #include <unistd.h>
        #include <sys/utsname.h>
        int main(int argc, char **argv, char **envp) { char cwd[4096]; struct utsname u; uname(&u);
            printf("argv0 %s\ncwd %s\nhost %s\n", argv[0], getcwd(cwd, sizeof cwd) ? cwd : "?", u.nodename);
            for (char **e = envp; *e; e++) printf("env %.60s\n", *e);
            return 0; }
    """)
    binary = tmp_path / "whereami"
    proc.run(["gcc", "-O2", str(src), "-o", str(binary)], check=True)
    with Sandbox(timeout=10) as sb:
        if not sb.isolated:
            pytest.skip("no box here")
        views = [sb.run(binary, b"", world=i).stdout.decode() for i in range(len(sb.worlds))]
        for w, view in zip(sb.worlds, views):
            lines = view.splitlines()
            assert f"argv0 {w.argv0}" in lines and f"cwd {w.cwd}" in lines and f"host {w.hostname}" in lines
            names = [ln[4:].split("=", 1)[0] for ln in lines if ln.startswith("env ")]
            expected = [k for k, _ in w.env]
            expected.insert(w.pad_at, worldsmod.PAD_VARIABLE)
            assert names == expected  # its variables, in its order
        assert views[0] != views[1]
        for secret in {os.getcwd(), socket.gethostname(), os.environ.get("HOME", "/nonexistent-home")} - set(
                worldsmod._ROOT_HOMES):  # root's /root is generic: a world may show it
            assert all(f" {secret}\n" not in v and f"={secret}\n" not in v for v in views)
        # A baseline whose output depends on its environment cannot judge candidates.
        with pytest.raises(Exception, match="not deterministic"):
            sb.record(binary, [TestCase("t", b"")])


# --------------------------------------------------------------------------- attacks


def test_box_fingerprint_tell_ships_without_worlds_and_is_refused_with_them(tmp_path, gcc_program, monkeypatch):
    """The environment tell through main's own argv/envp: right and fast in the old fixed
    box, a wrong total anywhere else."""
    tell = f"(envc == 8 && {_c_string_test('a0', './prog')})"
    cands = _hostile_dir(tmp_path, tell, WRONG_OUTSIDE)

    # Worlds: no world is the old box, so the candidate is wrong in every one of them.
    report, out = _optimize(tmp_path, cands, "worlds")
    (cand,) = report.candidates
    assert cand.stage == "test", (cand.stage, cand.reason)
    assert not report.shipped
    assert not _differs_outside(out, gcc_program, tmp_path / "shell-worlds")

    # Control: the same search in the old fixed box accepts and ships it, and the shipped
    # binary is wrong in an ordinary shell.
    monkeypatch.setattr(worldsmod, "make", lambda count, uid, seed=None: [_legacy_world(uid)])
    report, out = _optimize(tmp_path, cands, "fixed")
    (cand,) = report.candidates
    assert cand.stage == "accepted" and report.shipped == [cand.id], (cand.stage, cand.reason)
    assert _differs_outside(out, gcc_program, tmp_path / "shell-fixed")

    # Defence in depth: offered as what it is (an untrusted replay), the static information-flow
    # rule refuses it before any run, even in the old fixed box (it reads envp, which gcc's main
    # never reads).
    report, out = _optimize(tmp_path, cands, "untrusted", generator=ReplayGenerator)
    (cand,) = report.candidates
    assert cand.stage == "control" and "entry-register" in cand.reason, (cand.stage, cand.reason)
    assert not report.shipped


def _knows_world0(tmp_path: Path, outside: str, seed: int) -> Path:
    w0 = worldsmod.make(2, os.getuid(), seed=seed)[0]
    return _hostile_dir(tmp_path, _c_string_test("a0", w0.argv0), outside)


def test_a_tell_for_one_world_fails_the_tests_of_the_other(tmp_path, gcc_program, monkeypatch):
    """Even an adversary who knew one world exactly (a real run's worlds come from fresh
    randomness) is refused: the other world's tests disagree. The control, with only the
    world it knows, ships it wrong."""
    seed = 24
    cands = _knows_world0(tmp_path, WRONG_OUTSIDE, seed)
    report, out = _optimize(tmp_path, cands, "two", world_seed=seed)
    (cand,) = report.candidates
    assert cand.stage == "test" and "environment" in cand.reason, (cand.stage, cand.reason)
    assert not report.shipped

    real_make = worldsmod.make
    monkeypatch.setattr(worldsmod, "make", lambda count, uid, seed=None: real_make(2, uid, seed=seed)[:1])
    report, out = _optimize(tmp_path, cands, "one", world_seed=seed)
    (cand,) = report.candidates
    assert cand.stage == "accepted" and report.shipped == [cand.id], (cand.stage, cand.reason)
    assert _differs_outside(out, gcc_program, tmp_path / "shell-one")


@pytest.mark.slow
def test_fast_only_in_one_world_is_not_confirmed(tmp_path, gcc_program, monkeypatch):
    """Right everywhere, fast only in the world it recognises: a winner's confirmation must
    clear the gain in each world. The control (that world alone) ships it, and the shipped
    binary takes its slow path in an ordinary shell."""
    seed = 24
    cands = _knows_world0(tmp_path, SLOW_OUTSIDE, seed)
    report, out = _optimize(tmp_path, cands, "two", world_seed=seed, timing_rounds=8)
    (cand,) = report.candidates
    assert cand.stage != "accepted" and not report.shipped, (cand.stage, cand.reason)
    # Either screening already saw the slow world, or the confirmation refused it there.
    assert cand.stage == "time", (cand.stage, cand.reason)
    if cand.confirm:
        assert "every environment" in cand.reason and len(cand.confirm["worlds"]) == 2

    real_make = worldsmod.make
    monkeypatch.setattr(worldsmod, "make", lambda count, uid, seed=None: real_make(2, uid, seed=seed)[:1])
    report, out = _optimize(tmp_path, cands, "one", world_seed=seed, timing_rounds=8)
    (cand,) = report.candidates
    assert cand.stage == "accepted" and report.shipped == [cand.id], (cand.stage, cand.reason)
    shell = tmp_path / "shell-slow"
    shell.mkdir()
    assert not _differs_outside(out, gcc_program, shell)  # right outside...
    # ...and slow: it executes more instructions than gcc's program (counted, not timed).
    stdin = (POPCOUNT / "tests" / "t4.in").read_bytes()
    assert _instructions(out, stdin, shell) > 2 * _instructions(gcc_program, stdin, shell)


# --------------------------------------------------------------------------- the honest case


@pytest.mark.slow
def test_shipped_binary_behaves_outside_the_box_as_gccs(tmp_path, gcc_program):
    """An honest accepted candidate (examples' SWAR count_bits): the shipped program, run in
    an ordinary shell with the user's own environment and several argv[0] forms, prints what
    gcc's program prints on every test."""
    report, out = _optimize(tmp_path, POPCOUNT / "candidates", "honest", timing_rounds=8)
    (cand,) = report.candidates
    assert cand.stage == "accepted" and report.shipped == [cand.id], (cand.stage, cand.reason)
    assert cand.confirm and len(cand.confirm["worlds"]) == 2
    assert all(w["low"] > 1.03 for w in cand.confirm["worlds"])
    shell = tmp_path / "shell"
    shell.mkdir()
    assert not _differs_outside(out, gcc_program, shell)
    for t in TESTS:  # an absolute argv[0], and one found through PATH
        stdin = t.read_bytes()
        want = subprocess.run([str(gcc_program)], input=stdin, capture_output=True, timeout=60).stdout
        assert subprocess.run([str(out)], input=stdin, capture_output=True, timeout=60).stdout == want
        env = {**os.environ, "PATH": f"{out.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        assert subprocess.run(["/bin/sh", "-c", out.name], input=stdin, capture_output=True, env=env,
                              timeout=60).stdout == want


# --------------------------------------------------------------------------- the rule, in numbers


def _fake_runs(b_by_world: tuple[float, float]):
    import random

    rng = random.Random(5)
    return (lambda pad, world=0: 1.0 * (1 + 0.01 * rng.random()),
            lambda pad, world=0: b_by_world[world] * (1 + 0.01 * rng.random()))


def test_confirmation_must_clear_the_gain_in_each_world():
    """Twice as fast in one world, no faster in the other: the pooled interval clears the
    gain, the confirmation (``each_world``) does not. Rounds alternate worlds; ``each_world``
    gives each world full rounds."""
    from sgcc.verify.timing import rounds as timing

    run_a, run_b = _fake_runs((0.5, 1.0))
    est = timing.measure(run_a, run_b, rounds=10, min_sample_seconds=0.05, seed=1, lock=False, worlds=2,
                         each_world=True)
    assert est.rounds == 12 and sorted(est.worlds) == [0] * 6 + [1] * 6  # shared, at least 6 each
    assert est.worlds[:2] in ([0, 1], [1, 0])  # the worlds take turns within each block
    (s0, low0, _), (s1, low1, high1) = est.per_world
    assert low0 > 1.9 and 0.97 < s1 < 1.03 and high1 < 1.03
    assert timing.decide(est, 0.03) and not timing.decide(est, 0.03, each_world=True)
    # Faster in both worlds: confirmed.
    run_a, run_b = _fake_runs((0.5, 0.6))
    est = timing.measure(run_a, run_b, rounds=10, min_sample_seconds=0.05, seed=1, lock=False, worlds=2,
                         each_world=True)
    assert timing.decide(est, 0.03, each_world=True)


def test_the_budget_keeps_what_a_confirmation_over_the_worlds_costs():
    from types import SimpleNamespace

    from sgcc.engine.budget import Budget
    from sgcc.verify.timing import rounds as timing

    assert timing.confirm_rounds(20, 2) == 20 and timing.confirm_rounds(8, 2) == 12
    assert timing.confirm_rounds(20, 8) == 8 * timing.MIN_WORLD_ROUNDS
    units = [SimpleNamespace(name="f")]
    one, two = (Budget(100.0, None, units, {"f": 1.0}, confirm_factor=timing.confirm_rounds(8, n) / 8)
                for n in (1, 2))
    for b in (one, two):
        b.begin_search()
        b.record_timing(10.0)
        b.winners = b.combinable = 1
    assert one.reserve() == 10.0 and two.reserve() == 15.0


def test_worlds_carry_variables_no_public_pool_lists():
    # A tell that checks every name against the names this (public) file can draw must find
    # unknown ones in the box too (issue 35 item 4); none of them changes what libc or a build does.
    listed = set(worldsmod._extras("/h", "u", 1000)) | {"HOME", "LANG", "LOGNAME", "PATH", "PWD", "SHELL", "USER", "_",
                                                       "MAIL", "OLDPWD", "XDG_RUNTIME_DIR", worldsmod.PAD_VARIABLE}
    seen = []
    for seed in range(30):
        for w in worldsmod.make(2, 1000, seed):
            fresh = [k for k, _ in w.env if k not in listed]
            assert 1 <= len(fresh) <= 6, fresh
            assert not any(k.startswith(worldsmod._MEANINGFUL) for k in fresh), fresh
            seen += fresh
    assert len(set(seen)) > 0.9 * len(seen)  # fresh randomness, not a second pool
