"""What the engine is asked to do (:class:`Request`) and what it works on (:class:`Program`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sgcc.candidates import ProgramView

if TYPE_CHECKING:
    from collections.abc import Callable

    from sgcc.asm.units import AsmFile
    from sgcc.cache.store import Store
    from sgcc.candidates import Generator
    from sgcc.verify.static.isa import Target


class Linker(Protocol):
    """How a candidate's assembly becomes the program to test, where the engine's own link
    would not do (a whole project: :mod:`sgcc.project.search` relinks its binaries):
    ``link(asm_text, obj, where, replacements) -> (binary or None, why not)``. ``obj`` is
    the candidate's object, ``where`` a directory of its own, ``replacements`` the units it
    replaces (``{function: text}``)."""

    def __call__(self, asm_text: str, obj: Path, where: Path,
                 replacements: dict[str, str]) -> tuple[Path | None, str]: ...


@dataclass
class Request:
    """What the user asked ``sgcc optimize`` to do."""

    source: Path
    flags: list[str]
    tests: Path
    output: Path
    generators: list[Generator] = field(default_factory=list)
    isa: str = "flags"
    min_gain: float = 0.03
    timing_rounds: int = 20
    race: bool = True  # several candidates of one function race each other (sgcc.verify.timing.halving)
    worlds: int = 2  # synthetic environments per run (sgcc.verify.box.worlds)
    world_seed: int | None = None  # fixes the worlds (tests of sgcc only; a real run draws fresh ones)
    min_sample: float = 0.05
    test_timeout: float = 10.0
    jobs: int = 0
    keep_temps: bool = False
    max_generator_rounds: int = 1
    compiler: str = "gcc"
    seed: int | None = None
    budget_seconds: float | None = None  # search time for the whole program (None: unbounded)
    budget_candidates: int | None = None  # candidates built for the whole program (None: unbounded)
    profile: bool = True  # weigh functions by where the tests spend instructions
    cache_dir: str | None = None  # verdict cache (None: no cache)
    cache_max_bytes: int = 256 << 20
    refresh: bool = False  # search again even where the cache has a verdict for this search
    mutants: int = 16  # generated differential inputs (sgcc.engine.proof); 0: none
    proof: str = "default"  # required proof level of accepted candidates (docs/proof.md)
    proof_bound: int = 8  # SMT tier: unrolling bound (runs of one block on one path)
    proof_seconds: float = 60.0  # SMT tier: seconds per function and candidate
    function_states: int = 600  # function-level differential test: states per function (0: off)
    function_seconds: float = 4.0  # ... and seconds per function and candidate
    signing_key: str = ""  # the key that signs stored verdicts ("": the user's own)
    trusted_keys: str = ""  # more keys whose entries are used, comma-separated
    remote_storage: str = ""  # the remote cache behind cache_dir (sgcc.cache.remote; "": none)
    remote_timeout: int = 150  # milliseconds one conversation with the remote may take
    accept_isolation_risk: bool = False  # run untrusted candidates even where runs cannot be boxed
    footprint: str = "required"  # "waived": untrusted candidates accepted where the footprint rule cannot run
    generator_config: str = ""  # identifies how candidates were made (part of the search key)
    # Also write the shipped program's object of this source here (a program of several
    # sources, sgcc.engine.sources: the next source's baseline links it).
    object_output: Path | None = None

    def cache_store(self) -> Store:
        """The verdict cache this request names, with its remote layer behind it: the engine
        holds the settings, so it composes the storage and hands it down (the cache reads no
        configuration). Only when :attr:`cache_dir` is set."""
        from sgcc.cache import compose

        assert self.cache_dir, "no cache in this request"
        return compose.open_store(self.cache_dir, max_bytes=self.cache_max_bytes, signing_key=self.signing_key,
                                  trusted_keys=self.trusted_keys, remote_storage=self.remote_storage,
                                  remote_timeout=self.remote_timeout)


@dataclass
class Program(ProgramView):
    """The baseline: the source, its flags, its assembly split into units, its binary. What
    generators read of it is :class:`sgcc.candidates.ProgramView`, which it implements."""

    source: Path
    source_text: str
    flags: list[str]
    asm: AsmFile
    asm_text: str
    obj: Path
    binary: Path
    target: Target  # the instruction set candidates may use
    asm_flags: list[str] = field(default_factory=list)  # flags that assemble any variant of it
    weights: dict[str, float] | None = None  # function -> share of the tests' instructions
    weights_scope: str = "the tests"  # which tests the weights speak for (profile.Profile.scope)
    weights_complete: bool = True  # the weights saw every test (else a function they miss may still run)
    # Whole projects (sgcc.project.search): how a candidate's assembly becomes the program to test,
    # ``link(asm_text, obj, where, replacements) -> (binary or None, error)``, and the cache key the
    # project's own compile of this unit has (recorded by the drop-in).
    link: Linker | None = None
    cache_key: str | None = None
    cache_context: dict | None = None  # the context cache_key was made in (kept with winners, for audits)
    #: binary -> host directories its test runs see (a project's tree; Sandbox(expose=)).
    expose: Callable[[Path], list[Path]] | None = None
    #: function -> [(unit that holds its inlined code, "file:line")] (sgcc.engine.inlining); None: not asked yet
    inlined: dict | None = None
    # A project's compile as the build ran it: its directory and the source as spelled there
    # (variants compile the same way: relative -I paths, and -fprofile-use matches a profile
    # by the source's name), and the whole project's profile of this compile (a .gcda).
    compile_cwd: Path | None = None
    source_arg: str | None = None
    profile: Path | None = None

    @property
    def defined(self) -> frozenset[str]:
        """Names of the baseline's function units (a candidate may define these)."""
        return frozenset(u.name for u in self.asm.units)


def lto_variants(rebuild, like=None):
    """The variants generator for an LTO partition (:mod:`sgcc.candidates.ltovariants`):
    ``rebuild(flags, directory)`` makes the build again with ``flags`` added to its LTO
    compiles and returns its links' partitions' assembly; the flag sets are those of ``like``
    (the run's variants generator, when it has its own) or the built-in ones."""
    from sgcc.candidates.ltovariants import LtoVariantsGenerator

    return LtoVariantsGenerator(rebuild, getattr(like, "sets", None))


def request_from_options(options: dict, *, source: Path, flags: list[str], tests: Path, output: Path,
                         replay_dirs=(), refresh: bool = False, cwd: Path | None = None):
    """``(config, Request)`` from command-line values (None = not given) layered over
    ``SGCC_*`` variables and sgcc.toml files: what ``sgcc optimize`` and ``sgcc bench`` both run
    (it builds the generators and resolves the budget and the cache)."""
    from sgcc import config as configmod
    from sgcc.candidates import registry

    cfg = configmod.load(options, cwd=cwd)
    budget_seconds, budget_candidates = configmod.parse_budget(cfg.budget)
    request = Request(source=source, flags=list(flags), tests=tests, output=output,
                      generators=registry.build(cfg, replay_dirs=replay_dirs),
                      isa=cfg.isa, min_gain=cfg.min_gain, timing_rounds=cfg.timing_rounds, worlds=cfg.worlds,
                      race=cfg.race, min_sample=cfg.min_sample, test_timeout=cfg.test_timeout,
                      jobs=cfg.jobs, keep_temps=cfg.keep_temps, seed=cfg.seed,
                      compiler=cfg.compiler or "gcc", max_generator_rounds=1 + max(0, cfg.rounds),
                      budget_seconds=budget_seconds, budget_candidates=budget_candidates,
                      cache_dir=configmod.cache_dir(cfg) if cfg.cache else None,
                      cache_max_bytes=configmod.parse_size(cfg.cache_size), refresh=refresh, mutants=cfg.mutants,
                      proof=cfg.proof, proof_bound=cfg.proof_bound, proof_seconds=cfg.proof_seconds,
                      function_states=cfg.function_states, function_seconds=cfg.function_seconds,
                      accept_isolation_risk=cfg.accept_isolation_risk, footprint=cfg.footprint,
                      signing_key=cfg.signing_key,
                      trusted_keys=cfg.trusted_keys, remote_storage=cfg.remote_storage,
                      remote_timeout=cfg.remote_timeout,
                      generator_config=registry.describe(cfg, replay_dirs=replay_dirs))
    return cfg, request
