"""The per-compile -fprofile-use assembly project mode ships (:func:`sgcc.project.pgo.compile_with_profile`)
is the code gcc's own PGO build makes (real gcc, tests/projects/pgowin).

gcc names a static function's profile by the output as spelled: compiled to another name
(``-o /tmp/.../prog.s``, as before), the counts of ``kern.c``'s static step functions (called
through a table: the indirect call PGO promotes) were "missing" and the code was not PGO's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace

from sgcc import proc
from sgcc.project import pgo

PGOWIN = Path(__file__).parent / "projects" / "pgowin"
FLAGS = ["-O2", "-Wall"]


def test_the_shipped_pgo_text_is_gccs_pgo_build(tmp_path):
    inst = tmp_path / "inst"  # where the instrumented build ran (sgcc's pgo-tree)
    shutil.copytree(PGOWIN, inst, ignore=shutil.ignore_patterns("build"))
    user = tmp_path / "user"  # the user's tree: the compile was recorded there
    shutil.copytree(PGOWIN, user, ignore=shutil.ignore_patterns("build"))
    prof = tmp_path / "prof"
    prof.mkdir()
    gen = [f"-fprofile-generate={prof}", *pgo.GENERATE]
    r = proc.run(["make", f"CC=gcc {' '.join(gen)}"], cwd=inst, timeout=300)
    assert r.ok, r.stderr.decode()
    r = proc.run(["/bin/sh", "-c", "echo 200000 5 | ./build/run"], cwd=inst, timeout=60)
    assert r.ok
    gcda = prof / (str(inst / "build" / "kern.gcda").replace("/", "#"))
    assert gcda.is_file(), sorted(os.listdir(prof))
    # gcc's own PGO compile of kern.c, as the PGO-everywhere build makes it.
    r = proc.run(["gcc", *FLAGS, f"-fprofile-use={prof}", *pgo.USE, "-S", "-o", "build/kern.s", "src/kern.c"],
                 cwd=inst, timeout=120)
    assert r.ok, r.stderr.decode()
    want = (inst / "build" / "kern.s").read_text()
    (inst / "build" / "kern.s").unlink()
    c = SimpleNamespace(args=[*FLAGS, "-c", "src/kern.c", "-o", "build/kern.o"], cwd=user)
    text, why = pgo.compile_with_profile("gcc", c, gcda, inst, user)
    assert why == "" and text == want
    plain = proc.run(["gcc", *FLAGS, "-S", "-o", "-", "src/kern.c"], cwd=user, timeout=120).stdout.decode()
    assert text != plain  # the profile was used
