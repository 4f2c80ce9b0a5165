"""The emulator's timed slices end at their deadline, even when a stop is lost.

Each check runs in a child process with a timeout of its own: a slice that is never stopped
spins inside Unicorn, where pytest's timeout cannot reach."""
from __future__ import annotations

import subprocess
import sys
import textwrap

SPIN = textwrap.dedent("""
    import time
    import unicorn
    from unicorn import x86_const
    from sgcc.verify.function import deadline

    uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
    uc.mem_map(0x1000, 0x1000)
    uc.mem_write(0x1000, b"\\xeb\\xfe")  # jmp .
    {body}
""")


def _run(body: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SPIN.format(body=textwrap.dedent(body))],
                          capture_output=True, text=True, timeout=60)


def test_a_stop_made_before_the_engine_runs_is_made_again():
    # The first stop comes before emu_start (which clears a pending stop, as a stop that wins
    # the race with the engine's start is cleared): a keeper that stops once leaves `jmp .`
    # spinning for ever; this one asks again until the slice is disarmed.
    done = _run("""
        token = deadline.arm(uc, time.perf_counter() - 1)
        time.sleep(0.1)  # several stops, all before the engine runs
        start = time.perf_counter()
        uc.emu_start(0x1000, 0x2000)
        deadline.disarm(token)
        assert uc.reg_read(x86_const.UC_X86_REG_RIP) == 0x1000
        print("stopped after", time.perf_counter() - start)
    """)
    assert done.returncode == 0 and "stopped after" in done.stdout, done.stderr


def test_a_disarmed_slice_is_never_stopped_and_the_next_deadline_holds():
    # Short slices one after another, each with a deadline ahead of it: each ends (none runs
    # on). After each, a counted run of 4,000,000 instructions (tens of ms, past the keeper's
    # REPEAT) must run whole: a slice left armed would be stopped again and again, and the
    # counter in %rax would come short.
    done = _run("""
        uc.mem_write(0x1100, b"\\x48\\xff\\xc0\\xeb\\xfb")  # inc %rax; jmp back
        for i in range(20):
            token = deadline.arm(uc, time.perf_counter() + 0.0005 * (i % 5))
            uc.emu_start(0x1000, 0x2000)
            deadline.disarm(token)
            uc.reg_write(x86_const.UC_X86_REG_RAX, 0)
            uc.emu_start(0x1100, 0x2000, count=4_000_000)
            assert uc.reg_read(x86_const.UC_X86_REG_RAX) == 2_000_000, (i, uc.reg_read(x86_const.UC_X86_REG_RAX))
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_disarmed_slice_s_engine_is_not_kept_alive_by_the_keeper():
    # The keeper waited with the last engine it stopped still in its locals: that engine's
    # hooks kept a Machine, and its mappings, alive after the run (found by a review).
    done = _run("""
        import gc
        import weakref

        class Machine:
            pass

        def run():
            engine = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
            engine.mem_map(0x1000, 0x1000)
            engine.mem_write(0x1000, b"\\xeb\\xfe")
            m = Machine()
            engine.hook_add(unicorn.UC_HOOK_INTR, lambda *a: m)
            token = deadline.arm(engine, time.perf_counter() + 0.005)
            engine.emu_start(0x1000, 0x2000)
            deadline.disarm(token)
            return weakref.ref(m)

        ref = run()
        time.sleep(0.1)
        gc.collect()
        print("freed" if ref() is None else "kept alive")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "freed", (done.stdout, done.stderr)
