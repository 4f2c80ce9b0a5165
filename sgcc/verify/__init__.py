"""Every proof a candidate must pass before sgcc uses it, in pipeline order.

Candidates come from a model (or files, or a shared cache): sgcc treats them as hostile.

1. :mod:`sgcc.verify.static.textscreen` -- pure Python, before ``as`` ever sees the text: only the
   subset of GAS that gcc emits for functions gets through.
2. :mod:`sgcc.verify.static.assembler` -- ``gcc -c -x assembler`` (never the C preprocessor) under CPU,
   memory and output-size limits, with messages reduced to the candidate's own lines.
3. :mod:`sgcc.verify.static.objcheck` -- the assembled object against gcc's baseline object (new
   symbols, sections, relocations, forbidden instructions however spelled), including the
   instruction set the target promises (:mod:`sgcc.verify.static.isa`; what each instruction needs
   is :mod:`sgcc.verify.static.insnfeatures`).
4. :mod:`sgcc.verify.static.clobbers` -- the registers gcc's callers in the same file keep live
   across a call (``-fipa-ra``).
5. :mod:`sgcc.verify.box.sandbox` runs the tests in isolation and :mod:`sgcc.verify.timing.rounds`
   proves a candidate faster.

What the static stages do not do: make arbitrary machine code harmless. Code that runs
inside a process can reach the C library through any pointer it finds (a return address on
the stack, a GOT entry), so the real boundary for *running* candidates is the sandbox of
:func:`sgcc.proc.run` (rlimits, no network, scratch directory). The static stages keep
assembly time safe, refuse the direct routes (system calls, new imports, constructors,
privileged/I-O instructions, hidden bytes, jumps into the middle of instructions), and keep
shipped code within the promised instruction set.

Every stage answers with a :class:`sgcc.verify.verdict.Verdict`; verify knows nothing of the
engine.
"""
