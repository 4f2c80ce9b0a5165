"""The static proof: what is decided about a candidate before any of it runs.

In pipeline order: :mod:`.textscreen` (the directive allow-list, before ``as`` sees the
text), :mod:`.assembler` (``as`` under limits), :mod:`.objcheck` (symbols, sections,
writable data, forbidden instructions; :mod:`.isa` and :mod:`.insnfeatures` for the
instruction set the target promises; :mod:`.writable`), :mod:`.clobbers` (``-fipa-ra``), and
the control-flow proof :mod:`.controlflow` over the one code model (:mod:`.codemodel`), with
the symbolic stack (:mod:`.stackframe`), the information-flow rule (:mod:`.infoflow`) and its
index ranges (:mod:`.bounds`). :mod:`.names` holds the symbol names these treat specially.

Imports nothing of the box, the function-level proof or timing.
"""
