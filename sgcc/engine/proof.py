"""The tests a candidate must pass, in two parts: what the search sees, and what it does not.

The papers saw their model learn the visible answers. A candidate that hard-codes them passes
every test it was screened and timed on, so acceptance asks for more:

* **held-out tests**: when there are at least two, a deterministic third of the user's tests
  (at least one) is kept out of screening, timing and any feedback to a generator;
* **generated inputs**: the user's inputs mutated (:mod:`sgcc.verify.box.mutate`), run on gcc's
  own program in two worlds (other environments and sizes of it, :mod:`sgcc.verify.box.worlds`),
  kept when both runs agree, exit
  normally and finish within three times the slowest test (so they cost every candidate
  little), with the output and exit status recorded as the expectation.

A candidate is accepted only if it also matches gcc's program on all of these. Expected
outputs live in sgcc's memory and are compared outside the candidate's box, so a candidate
never reads them; a failure says which kind of test failed, never what was printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sgcc.verify.box import mutate

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import Sandbox, TestCase


@dataclass
class ProofTests:
    """Visible tests (screening, timing, feedback) and hidden ones (acceptance only)."""

    visible: list
    held_out: list = field(default_factory=list)
    generated: list = field(default_factory=list)
    generated_tried: int = 0  # mutants run on the baseline (kept ones are in ``generated``)

    @property
    def hidden(self) -> list:
        return [*self.held_out, *self.generated]

    def summary(self) -> dict:
        """Counts for the report: visible tests, tests held out, inputs generated and kept
        (the driver adds how many candidates failed them)."""
        return {"visible": len(self.visible), "held_out": len(self.held_out),
                "generated": self.generated_tried, "kept": len(self.generated)}


GENERATED_PREFIX = "generated-"


def split(tests: list[TestCase]) -> tuple[list, list]:
    """(visible, held out): every third test by name (at least one) when there are two or more."""
    if len(tests) < 2:
        return list(tests), []
    ordered = sorted(tests, key=lambda t: t.name)
    held = [t for i, t in enumerate(ordered) if i % 3 == 1] or [ordered[-1]]
    names = {t.name for t in held}
    return [t for t in tests if t.name not in names], [t for t in tests if t.name in names]


def prepare(tests: list[TestCase], sandbox: Sandbox, baseline, *, mutants: int = mutate.DEFAULT_COUNT,
            seed: int | None = None, note=None) -> ProofTests:
    """Split ``tests`` (already recorded) and generate ``mutants`` inputs from all of them,
    recorded from running gcc's program ``baseline`` in ``sandbox``."""
    visible, held = split(tests)
    proof = ProofTests(visible=visible, held_out=held)
    inputs = [t.stdin for t in tests]
    made = mutate.mutants(inputs, mutants, seed=seed or 0)
    if note is not None and made:
        note(f"recording gcc's program on {len(made)} generated inputs")
    proof.generated_tried = len(made)
    template = tests[0] if tests else None
    # A mutant may make the program run far longer than any test (a count scaled up, a
    # number turned into 2**31): every candidate would pay for it. Keep the ones gcc's
    # program answers within a few times its slowest test.
    slowest = max((sandbox.run(baseline, t.stdin).wall for t in tests), default=0.0)
    limit = max(0.25, 3 * slowest)
    for i, data in enumerate(made):
        first = sandbox.run(baseline, data, world=0, timeout=limit)
        if not _clean(first):
            continue
        second = sandbox.run(baseline, data, world=1, timeout=limit)
        if not _clean(second) or (first.stdout, first.returncode) != (second.stdout, second.returncode):
            continue  # not deterministic: it cannot judge a candidate
        assert template is not None  # inputs are made only from tests
        case = replace(template, name=f"{GENERATED_PREFIX}{i:03d}", stdin=data,
                       expected_stdout=first.stdout, expected_status=first.returncode)
        proof.generated.append(case)
    return proof


def _clean(result) -> bool:
    """A run whose behaviour can be an expectation: it ended by itself, not by a signal,
    within the limits (a crash on a mutant is undefined behaviour, which a candidate may
    legitimately do differently)."""
    return not result.timed_out and not result.truncated and result.returncode >= 0
