"""Which candidate generators a run uses, built from the effective configuration.

Each generator lives in its own module with a ``from_config(cfg, **context)`` factory; this
module only turns the ``generators`` setting (``auto``, names, ``-NAME``) into instances, so
that a run imports only what it uses (llama.cpp is loaded by the llm generator alone).
"""

from __future__ import annotations

from importlib import import_module

from sgcc.candidates import Generator
from sgcc.config import GENERATOR_NAMES
from sgcc.errors import SgccError

#: Generators ``auto`` means when no model is configured (the llm joins when one is). clang's
#: candidates are untrusted: where the isolated runner is incomplete, ``auto`` leaves it out
#: (the engine says so) instead of refusing the run (see :attr:`Generator.optional`).
AUTO = ("clang", "variants", "flags", "pgo", "layout")

#: Untrusted generators ``auto`` leaves out (with a note) where the isolated runner is
#: incomplete, rather than refusing the run.
LEFT_OUT_UNBOXED = frozenset({"clang"})

#: Generator name -> the module holding it (and its ``from_config`` factory).
MODULES = {
    "llm": "sgcc.candidates.llm",
    "variants": "sgcc.candidates.variants",
    "flags": "sgcc.candidates.flagsearch",
    "pgo": "sgcc.candidates.pgo",
    "layout": "sgcc.candidates.layout",
    "clang": "sgcc.candidates.clang",
}


def _available(name: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(MODULES[name]) is not None
    except ImportError:
        return False


def resolve_names(spec: str, *, have_model: bool, have_replay: bool) -> list[str]:
    """The generator names ``spec`` selects, in a fixed order (cheap ones first)."""
    chosen: list[str] = []
    removed: set[str] = set()
    for word in filter(None, spec.replace(" ", "").lower().split(",")):
        if word.startswith("-"):
            removed.add(word[1:])
        elif word == "auto":
            # What is installed: a generator named explicitly and missing is an error instead.
            chosen += (["replay"] if have_replay else []) + [n for n in AUTO if _available(n)] + \
                (["llm"] if have_model else [])
        else:
            chosen.append(word)
    order = {n: i for i, n in enumerate(GENERATOR_NAMES)}
    names = sorted({n for n in chosen if n not in removed}, key=lambda n: order.get(n, 99))
    if "replay" in names and not have_replay:
        raise SgccError("the replay generator needs --candidates DIR")
    return names


def build(cfg, *, replay_dirs=(), names: list[str] | None = None) -> list[Generator]:
    """Generator instances for the effective configuration ``cfg`` (:class:`sgcc.config.Config`)."""
    if names is None:
        names = resolve_names(cfg.generators, have_model=bool(cfg.model or cfg.endpoint),
                              have_replay=bool(replay_dirs))
    named = {w for w in cfg.generators.replace(" ", "").lower().split(",") if w and not w.startswith("-")}
    generators: list = []
    for name in names:
        if name == "replay":
            from sgcc.candidates.replay import ReplayGenerator

            generators.extend(ReplayGenerator(d) for d in replay_dirs)
            continue
        try:
            module = import_module(MODULES[name])
        except ImportError as exc:
            raise SgccError(f"the {name} generator is not available ({exc})", cause=exc,
                            hint=f"leave it out: --generators auto,-{name}") from exc
        gen = module.from_config(cfg)
        # Chosen by 'auto', not by name (the llm is asked for by configuring a model: it keeps
        # refusing the run where untrusted code may not run).
        gen.optional = name in LEFT_OUT_UNBOXED and name not in named
        generators.append(gen)
    return generators


def describe(cfg, *, replay_dirs=()) -> str:
    """A stable description of how candidates are made (part of the cache's search key): the
    generators, and for the llm the model, samples, rounds and sampling settings."""
    names = resolve_names(cfg.generators, have_model=bool(cfg.model or cfg.endpoint), have_replay=bool(replay_dirs))
    parts = list(names)
    if "replay" in names:
        import hashlib
        from pathlib import Path

        from sgcc.candidates.replay import candidate_files, read_candidate

        h = hashlib.sha256()
        for d in replay_dirs:
            for f in sorted(path for _fn, path in candidate_files(Path(d))):
                h.update(f.name.encode())
                h.update(read_candidate(f))  # bounded: a FIFO or /dev/zero is refused, not read
        parts.append(f"replay={h.hexdigest()[:16]}")
    if "flags" in names:
        parts.append(f"flags=seed{cfg.seed or 0}")  # the search's choices depend on the seed
    if "clang" in names:
        from sgcc.candidates import clang

        parts.append(f"clang={clang.identity(cfg.clang)}|{cfg.clang_variants}")
    if "llm" in names:
        parts.append(f"llm={cfg.model or cfg.endpoint}|n={cfg.samples}|k={cfg.rounds}|t={cfg.temperature}"
                     f"|max={cfg.max_tokens}")
    if cfg.budget:
        parts.append(f"budget={cfg.budget}")
    if cfg.footprint == "waived":
        # Which candidates may be accepted where the footprint rule cannot run: a verdict
        # searched without the untrusted generators says nothing of a run with them.
        parts.append("footprint=waived")
    return ",".join(parts)
