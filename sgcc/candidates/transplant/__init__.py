"""Moving function units from another gcc compilation of the same file into the baseline.

The variant and profile-guided generators compile the translation unit again under other
flags and offer each function's unit from that compilation as a candidate for the
baseline's unit of the same name. A unit's text is not self-contained, and the two
compilations name things independently:

* local labels and constants (``.L5``, ``.LC3``): the numbers differ between compilations,
  so a variant's ``.LC3`` may be another constant than the baseline's ``.LC3``;
* compiler clones (``f.constprop.0``, ``f.isra.0``, ``f.part.0``): the same name may be a
  different specialization (other constants propagated, other parameters removed, another
  split), or not exist at all on the other side;
* functions inlined on one side and not the other, static functions removed;
* compiler-made read-only tables (``CSWTCH.12``) and numbered static locals (``buf.0``);
* interprocedural assumptions: with ``-fipa-ra`` a caller keeps values in caller-saved
  registers its callee (as compiled *there*) leaves alone, and with ``-fipa-stack-alignment``
  a caller may call a callee that needs no aligned stack with a misaligned one.

:func:`~sgcc.candidates.transplant.build.transplant` builds a candidate that needs no luck
to link and keeps what both sides assumed: the variant's unit, plus private copies (under fresh names) of everything it
relies on that the baseline does not provide with the same meaning -- constants the
variant shares between functions, compiler tables, clones, and callees whose baseline
version breaks an assumption the variant's caller made. References that mean the same on
both sides (user functions, global and static variables with unambiguous names, the C
library) are kept. When that is not possible (writable data the baseline lacks or names
ambiguously, a symbol the baseline does not have, baseline labels referenced from outside
the unit such as debug information, inline asm) the unit is not offered alone and the
generator may offer the whole variant translation unit instead.

Only gcc's own output is handled here (the generators compile it themselves); the engine
still screens, assembles, checks, links, tests and times every candidate.

The package, one job per module:

* :mod:`~sgcc.candidates.transplant.asmtext` -- what a unit's text refers to, defines and
  needs (references, labels, normalised text for comparisons, stack-alignment needs);
* :mod:`~sgcc.candidates.transplant.side` -- :class:`Side`, one compilation of the translation
  unit: its units, symbols, data blocks and clobber sets;
* :mod:`~sgcc.candidates.transplant.build` -- :func:`transplant`, the variant's unit made fit
  for the baseline;
* :mod:`~sgcc.candidates.transplant.generator` -- compiling variants and the
  :class:`TransplantGenerator` the variant and profile-guided generators share.
"""
