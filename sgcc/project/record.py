"""Building a project with sgcc as ``$CC`` and recording its compiles (``SGCC_RECORD``).

Every eligible compile writes down its source, flags, working directory, gcc's assembly and
the cache key it will have in later builds; the build itself is plain gcc's.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sgcc import proc
from sgcc.errors import SgccError


@dataclass
class Compile:
    """One recorded eligible compile (a source in one mode: its flags make its key)."""

    key: str
    source: Path
    cwd: Path
    args: list[str]
    asm_path: Path
    output: Path | None
    context: dict | None = None  # the cache context of the compile (sgcc.cache.keys.context)
    #: An LTO partition's: the program its link made, relative to the tree (attribution charges
    #: it to that program only); None for a compile, whose object may be linked anywhere.
    linked_into: str | None = None


def sgcc_executable() -> str:
    """The sgcc command to put in $CC (this installation's own)."""
    here = Path(sys.argv[0])
    if here.name.startswith("sgcc") and here.exists():
        return str(here.resolve())
    candidate = Path(sys.executable).parent / "sgcc"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("sgcc")
    if found:
        return found
    raise SgccError("cannot find the sgcc command to build the project with")


class Builder:
    """Runs the project's build and clean commands with sgcc as ``$CC``."""

    def __init__(self, spec, tmpl, progress=None):
        self.spec = spec
        self.tmpl = tmpl  # an sgcc.engine.Request (cache directory, keys, ISA policy)
        self.sgcc = sgcc_executable()
        self.progress = progress
        # Copies are built where the build put the project (sgcc.project.place): set once
        # the run knows the kernel allows it.
        self.placing = False
        self.started = 0.0  # time.time() when the recorded build began: what it made is newer

    def env(self, **extra) -> dict:
        """The build's environment: ``CC`` is sgcc, with this run's cache and keys."""
        env = dict(os.environ)
        env.update({"CC": self.sgcc, "SGCC_CACHE_DIR": self.tmpl.cache_dir or env.get("SGCC_CACHE_DIR", ""),
                    "SGCC_ISA": self.tmpl.isa})
        # The build substitutes what this run signs: the same keys.
        env.update({k: v for k, v in (("SGCC_SIGNING_KEY", self.tmpl.signing_key),
                                      ("SGCC_TRUSTED_KEYS", self.tmpl.trusted_keys)) if v})
        for name in ("SGCC_RECORD", "SGCC_OVERLAY", "SGCC_OVERLAY_USED", "SGCC_PREFIX_MAP"):
            env.pop(name, None)
        if not env["SGCC_CACHE_DIR"]:
            env.pop("SGCC_CACHE_DIR")
        env.update(extra)
        return env

    def overlay_env(self, overlay: Path, tree: Path) -> dict:
        """The environment of a build of ``tree`` (a copy of the project's tree) whose compiles
        take their assembly from ``overlay``: the cache off, the copy's paths spelled as the
        tree's (so that, with -g too, each compile has the key it was recorded under; a copy
        built where the project lies needs no mapping), and each compile that used the overlay
        noted in :func:`used_file` (see :func:`unused`)."""
        env = self.env(SGCC_CACHE="0", SGCC_OVERLAY=str(overlay), SGCC_OVERLAY_USED=str(used_file(overlay)))
        if not self.placing:
            env["SGCC_PREFIX_MAP"] = f"{tree.resolve()}={Path(self.spec.root).resolve()}"
        return env

    def argv(self, command: str) -> list[str]:
        """A command of the spec as run: through the shell, ``{sgcc}`` replaced."""
        return ["/bin/sh", "-c", command.replace("{sgcc}", shlex.quote(self.sgcc))]

    def run(self, command: str, cwd: Path, env: dict, what: str, *, check: bool = True) -> proc.Result:
        """Run a build or clean command in the tree ``cwd`` (the project's, or a copy of it,
        which is then mounted where the project lies: :mod:`sgcc.project.place`); a failure
        is an error (with the output's tail) unless ``check`` is false. The progress clock
        ticks meanwhile."""
        root = Path(self.spec.root).resolve()
        place = (Path(cwd), root) if self.placing and Path(cwd).resolve() != root else None
        if self.progress is not None:
            self.progress.tick(True)
        try:
            r = proc.run(self.argv(command), cwd=root if place else cwd, env=env, timeout=self.spec.build_timeout,
                         capture_limit=4 << 20, place=place)
        finally:
            if self.progress is not None:
                self.progress.tick(False)
        if check and not r.ok:
            tail = (r.stdout + r.stderr).decode(errors="replace").strip().splitlines()[-15:]
            raise SgccError(f"{what} failed in {cwd}: {command}: {r.describe()}\n" + "\n".join(tail))
        return r

    def record(self, workdir: Path) -> tuple[list[Compile], float]:
        """Clean, then build with every compile recorded (and every LTO link's partitions,
        ``record/ltrans.jsonl``): (the compiles, seconds the build took)."""
        root = self.spec.root
        rec_dir = workdir / "record"
        rec_dir.mkdir()
        rec = rec_dir / "compiles.jsonl"
        self.run(self.spec.clean, root, self.env(), "clean")
        started = time.monotonic()
        self.started = time.time()
        self.run(self.spec.build, root, self.env(SGCC_CACHE="0", SGCC_RECORD=str(rec)), "build")
        seconds = time.monotonic() - started
        if not rec.is_file() and (rec_dir / "ltrans.jsonl").is_file():
            # Every compile was -flto (GIMPLE, handed to gcc); only the links made code: their
            # partitions (sgcc.project.partitions) are what the project has to search.
            return [], seconds
        if not rec.is_file():
            raise SgccError("the build compiled nothing through sgcc",
                            hint="the build command must use $CC (CC ?= gcc in the Makefile), or write "
                                 "build = \"make CC={sgcc}\" in sgcc.toml (a Makefile that sets CC = gcc "
                                 "needs it); only -O2/-O3 C compiles are searched")
        compiles: dict[str, Compile] = {}
        for line in rec.read_text().splitlines():
            d = json.loads(line)
            c = Compile(d["key"], Path(d["source"]), Path(d["cwd"]), d["args"], Path(d["asm"]),
                        Path(d["output"]) if d.get("output") else None, d.get("context"))
            compiles[c.key] = c
        return list(compiles.values()), seconds


def used_file(overlay: Path) -> Path:
    """Where a build with ``overlay`` notes the keys of the compiles that used it."""
    return overlay.with_name(overlay.name + ".used")


def unused(overlay: Path, keys) -> list[str]:
    """The keys of ``keys`` that no compile of the build with ``overlay`` used."""
    try:
        seen = set(used_file(overlay).read_text().split())
    except OSError:
        seen = set()
    return [k for k in keys if k not in seen]

