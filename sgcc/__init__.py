"""sgcc: a gcc drop-in that makes C programs faster than gcc -O3 and never makes them wrong.

This package is imported on every compile a build system runs through sgcc, so this file
must stay free of imports: each stage lives in its own module and is imported where used.
"""

__version__ = "0.1.0"
