"""What else the user could have had, timed against gcc's program beside sgcc's result.

A single program's report shows clang's whole program (the ``clang`` generator's compiler,
the same meaning of the user's flags) timed against gcc's program on the same tests, in the
same box, by the same statistic as every candidate: where clang's program is faster than
what sgcc shipped, the user should know. Timed after the search, outside the budget, only
when the clang generator ran; a reference never fails the run.
"""

from __future__ import annotations

from pathlib import Path


def clang_whole_program(pipeline, program, sandbox, tests, all_tests, generators, workdir: Path,
                        compiler: str, note=None) -> dict | None:
    """``{"what", "speedup", "low", "high", "rounds"}`` (clang's whole program against gcc's,
    on ``tests``), ``{"error": why}``, or None when no clang generator is in the run. Its
    output must match gcc's on ``all_tests`` (hidden ones included) to be timed."""
    gen = next((g for g in generators if getattr(g, "name", "") == "clang"), None)
    if gen is None or program.link is not None:
        return None
    try:
        binary, what = gen.whole_program(program, compiler, Path(workdir) / "references")
        if binary is None:
            return {"error": what}
        outcome = sandbox.check(binary, all_tests)
        if outcome.first_failure is not None:
            f = outcome.first_failure
            return {"what": what, "error": f"its output differs from gcc's program on test {f.test}"}
        if note is not None:
            note(f"timing clang's whole program ({what}) against gcc's, as a reference")
        _accepted, est = pipeline.measure(sandbox, tests, program.binary, binary)
        return {"what": what, "speedup": est.speedup, "low": est.low, "high": est.high, "rounds": est.rounds}
    except Exception as exc:  # noqa: BLE001 - a reference never fails the run
        return {"error": f"{type(exc).__name__}: {exc}"}
