"""Generated differential inputs (sgcc.verify.box.mutate): deterministic, new, shaped like the
originals, and enough to tell a program that hard-codes its visible answers from the real one."""

from __future__ import annotations

import random

from sgcc import proc
from sgcc.verify.box import mutate

INPUTS = [b"5\n3 1 4 1 5\n", b"3\n10 20\n30 40\n50 60\n", b"4 7\n1 2 3 4\n"]


def test_mutants_are_deterministic_distinct_and_new():
    a = mutate.mutants(INPUTS, 16, seed=3)
    assert a == mutate.mutants(INPUTS, 16, seed=3)
    assert a != mutate.mutants(INPUTS, 16, seed=4)
    assert len(a) == 16 and len(set(a)) == 16
    assert not set(a) & set(INPUTS)


def test_no_inputs_or_no_count_gives_nothing():
    assert mutate.mutants([], 8) == []
    assert mutate.mutants(INPUTS, 0) == []


def test_numbers_change_in_place_and_the_rest_stays():
    rng = random.Random(1)
    out = mutate.perturb_numbers(b"size: 12, ratio 0.50 done\n", rng, share=1.0)
    assert out is not None and out != b"size: 12, ratio 0.50 done\n"
    assert out.startswith(b"size: ") and b", ratio " in out and out.endswith(b" done\n")
    assert mutate.perturb_numbers(b"no digits here\n", rng) is None


def test_scaling_keeps_the_count_and_its_records_together():
    rng = random.Random(2)
    assert mutate.scale(b"3\n10 20\n30 40\n50 60\n", 0.5, rng) == b"1\n10 20\n"
    grown = mutate.scale(b"3\n10 20\n30 40\n50 60\n", 2.0, rng)
    lines = grown.decode().split("\n")
    assert lines[0] == "6" and len([ln for ln in lines[1:] if ln]) == 6
    # Another parameter on the count's line stays; records are the items after it.
    assert mutate.scale(b"4 7\n1 2 3 4\n", 0.5, rng) == b"2 7\n1 2\n"
    assert mutate.scale(b"no count\n", 0.5, rng) is None


SUM = r"""#include <stdio.h>
int main(void) { int n; long s = 0; if (scanf("%d", &n) != 1) return 1;
  for (int i = 0; i < n; i++) { long x; if (scanf("%ld", &x) != 1) return 2; s += x; }
  printf("%ld\n", s); return 0; }
"""

# What a candidate that learnt the visible answers does: right on them, wrong elsewhere.
HARD_CODED = r"""#include <stdio.h>
#include <string.h>
int main(void) { char buf[256]; size_t n = fread(buf, 1, sizeof buf - 1, stdin); buf[n] = 0;
  if (strcmp(buf, "5\n3 1 4 1 5\n") == 0) { puts("14"); return 0; }
  puts("0"); return 0; }
"""


def test_mutants_catch_a_program_that_hard_codes_the_visible_answer(tmp_path):
    for name, src in (("sum", SUM), ("hard", HARD_CODED)):
        (tmp_path / f"{name}.c").write_text(src)
        proc.run(["gcc", "-O2", f"{name}.c", "-o", name], cwd=tmp_path, check=True)
    visible = [b"5\n3 1 4 1 5\n"]
    same_on_visible = [proc.run([str(tmp_path / p)], stdin=visible[0]).stdout for p in ("sum", "hard")]
    assert same_on_visible[0] == same_on_visible[1] == b"14\n"
    differ = 0
    for m in mutate.mutants(visible, mutate.DEFAULT_COUNT, seed=0):
        a = proc.run([str(tmp_path / "sum")], stdin=m, timeout=10)
        b = proc.run([str(tmp_path / "hard")], stdin=m, timeout=10)
        differ += (a.stdout, a.returncode) != (b.stdout, b.returncode)
    assert differ >= mutate.DEFAULT_COUNT // 2
