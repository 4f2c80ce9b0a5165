"""The function-level proof: a candidate's functions against gcc's, on the states the tests
really produce and on mutations of them.

:mod:`.funcstate` captures entry states with a capture build of gcc's program (run in the
box); :mod:`.emulate` loads both objects into one emulated address space (Unicorn) and runs
them; :mod:`.footprint` holds every run to the memory rule (a candidate touches only what
gcc's function touches on the same state); :mod:`.funcdiff` orders the states and decides;
:mod:`.smt` is the SMT tier (angr + z3, the ``proof`` extra, imported only at ``bounded`` and
``equivalent``).

May import the static proof's code model; nothing of the box or timing.
"""
