"""Command-line values to an engine request: what ``sgcc optimize`` and ``sgcc bench`` both run.

This translation is not argument handling alone (it builds the generators and resolves the
budget and the cache): it belongs with :class:`sgcc.engine.optimize.Request`, and lives here
until the engine offers it.
"""

from __future__ import annotations

from pathlib import Path


def request_from_options(options: dict, *, source: Path, flags: list[str], tests: Path, output: Path,
                         replay_dirs=(), refresh: bool = False, cwd: Path | None = None):
    """(config, sgcc.engine.optimize.Request) from command-line values (None = not given) layered over
    SGCC_* variables and sgcc.toml files: what `sgcc optimize` and `sgcc bench` both run."""
    from sgcc import config as configmod
    from sgcc.candidates import registry
    from sgcc.engine.optimize import Request

    cfg = configmod.load(options, cwd=cwd)
    budget_seconds, budget_candidates = configmod.parse_budget(cfg.budget)
    request = Request(source=source, flags=list(flags), tests=tests, output=output,
                      generators=registry.build(cfg, replay_dirs=replay_dirs),
                      isa=cfg.isa, min_gain=cfg.min_gain, timing_rounds=cfg.timing_rounds,
                      min_sample=cfg.min_sample, test_timeout=cfg.test_timeout,
                      jobs=cfg.jobs, keep_temps=cfg.keep_temps, seed=cfg.seed,
                      compiler=cfg.compiler or "gcc", max_generator_rounds=1 + max(0, cfg.rounds),
                      budget_seconds=budget_seconds, budget_candidates=budget_candidates,
                      cache_dir=configmod.cache_dir(cfg) if cfg.cache else None,
                      cache_max_bytes=configmod.parse_size(cfg.cache_size), refresh=refresh,
                      generator_config=registry.describe(cfg, replay_dirs=replay_dirs))
    return cfg, request

