"""Timing: whether a candidate is faster, honestly.

:mod:`.rounds` measures paired, interleaved rounds of two programs (CPU time of the whole
process tree, randomized environment size, a bootstrap interval, calibration against A-vs-A);
:mod:`.halving` races several candidates by successive halving over such rounds.

May import the box (its runs are the box's); nothing of the static or function-level proof.
"""
