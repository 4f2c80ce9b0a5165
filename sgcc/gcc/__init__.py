"""gcc's command line: what an invocation compiles, to what, with which flags (:mod:`sgcc.gcc.args`).

A lower package of its own so that the drop-in, the engine, the generators, project mode and the
lab share one reading of gcc's argv without importing each other. Standard library only: it is
on every compile's path.
"""
