"""The box: every run of a candidate (and of gcc's program) is isolated.

:mod:`.sandbox` runs a program on its tests; :mod:`.isolate` builds the box (namespaces, a
read-only view of the system, limits on the whole process tree) with the helper
:mod:`.boxhelper` and the filter :mod:`.seccomp`; :mod:`.worlds` draws the synthetic
environments every test runs in; :mod:`.isolation_level` says what this machine allows;
:mod:`.signals` names how a run ended; :mod:`.mutate` makes the generated inputs (the
user's inputs, mutated) the box runs beside the tests.

Imports nothing of the static proof, the function-level proof or timing.
"""
