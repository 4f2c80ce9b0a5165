"""The engine: prove each candidate correct and faster, safely, or drop it.

The public API, which the command line, :mod:`sgcc.project` and the research harness
(:mod:`sgcc.lab`) use (nothing outside ``sgcc.engine`` uses a name that starts with ``_``):

- :class:`Request`: what to optimize and how (source, flags, tests, output, generators,
  instruction set, timing and budget settings, verdict cache); :func:`request_from_options`
  makes one from command-line values layered over the configuration;
- :class:`Program`: the baseline the engine works on (built by :func:`build_baseline`, or
  by a caller such as :mod:`sgcc.project` for one translation unit of a project);
- :func:`optimize`: run the engine on one request and return its :class:`Report` (the
  output program is always written: the optimized one, or gcc's);
- :class:`Engine`: the same run, step by step: :meth:`Engine.build_baseline`,
  :meth:`Engine.run`, :meth:`Engine.close`, and ``Engine.pipeline`` (a :class:`Pipeline`)
  to build, test and time single candidates (``new_candidate_dir``, ``build_candidate``,
  ``evaluate``, ``measure``);
- :class:`Report`, :class:`CandidateResult`: what a run found (JSON via
  :meth:`Report.to_json`, a summary via :meth:`Report.summary`); :func:`estimate_dict`
  (a timing estimate as reports keep it) and :func:`finite_json` (NaN/inf as null);
- :func:`problem_figures`, :func:`best_of`, :func:`clip`: the papers' per-problem figures;
- :data:`MAX_CONFIRMATIONS`, :class:`Budget`, :data:`BUDGET_REACHED`: how winners are
  confirmed and how the search is bounded;
- :func:`target_for`: the instruction set candidates may use for given flags;
- :func:`lto_variants`: the variants generator for an LTO partition, given how to rebuild;
- the modules :mod:`sgcc.engine.profile` (``function_weights``: where the tests spend
  instructions; ``parse_costs``: callgrind costs per object and function, which project
  attribution uses) and :mod:`sgcc.engine.explain` (what a candidate changed in machine code).

The stages a candidate goes through are named by :class:`sgcc.stages.Stage`. Modules, in
pipeline order: ``request``, ``baseline``, ``pipeline`` (with ``proof``: held-out and
generated tests), ``budget``, ``rank``, ``search``, ``funcproof`` (the function-level proof of
what timing accepted), ``verdicts`` (the cache as the search uses it), ``select`` (confirm,
combine, ship), ``figures``, ``report``, ``explain``, ``profile``, ``driver`` (:class:`Engine`,
:func:`optimize`), and ``sources`` (:func:`sgcc.engine.sources.optimize_sources`: a program of
several sources).
The engine never imports :mod:`sgcc.lab`.
"""

from sgcc.engine.baseline import build_baseline, target_for
from sgcc.engine.budget import BUDGET_REACHED, Budget
from sgcc.engine.driver import Engine, optimize
from sgcc.engine.figures import best_of, clip, problem_figures
from sgcc.engine.pipeline import Pipeline
from sgcc.engine.report import CandidateResult, Report, estimate_dict, finite_json
from sgcc.engine.request import Program, Request, lto_variants, request_from_options
from sgcc.engine.select import MAX_CONFIRMATIONS

__all__ = [
    "BUDGET_REACHED", "MAX_CONFIRMATIONS", "Budget", "CandidateResult", "Engine", "Pipeline", "Program", "Report",
    "Request", "best_of", "build_baseline", "clip", "estimate_dict", "finite_json", "optimize", "problem_figures",
    "lto_variants", "request_from_options", "target_for",
]
