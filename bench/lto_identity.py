#!/usr/bin/env python3
"""An LTO build through ``CC=sgcc`` against the same build through gcc, byte for byte.

Three builds of a real project in one directory (so every path the objects and the debug
information record is the same), each after the project's clean command:

1. ``gcc``: the reference artifacts;
2. ``sgcc`` with an empty cache: every LTO link is handed to gcc as it is (sgcc's log names
   the context of each, ``lto link, nothing to substitute in its context (ID)``);
3. ``sgcc`` with a *decoy* winner stored in each of those contexts (an entry for assembly no
   partition has): every LTO link now runs with sgcc's assembler front in place, which looks
   up every partition, finds nothing to substitute, and hands it to the real ``as``.

A fourth build, gcc again, is the control: gcc's own LTO *objects* differ from build to build
(each names its sections ``.gnu.lto_.*.<random>`` unless ``-frandom-seed`` is given), so an
archive of them does too. An artifact that differs between the two gcc builds is reported as
such and not compared; every other one (``--artifact``, repeated) must be identical in all
four builds. The script prints each one's SHA-256 and how many links and partitions went
through the front, and exits 1 on any difference.

Usage: ``python bench/lto_identity.py --tree DIR --build "make CC={cc} ..." --clean "make
clean" --artifact lua --artifact liblua.a`` (``{cc}`` is replaced by gcc or sgcc). The tree
is used in place: give it a scratch copy (``git archive HEAD | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def _build(tree: Path, clean: str, build: str, cc: str, env: dict) -> None:
    subprocess.run(clean, shell=True, cwd=tree, env=env, check=True, capture_output=True)
    done = subprocess.run(build.replace("{cc}", cc), shell=True, cwd=tree, env=env, capture_output=True)
    if done.returncode:
        sys.exit(f"build with {cc} failed:\n{done.stderr.decode(errors='replace')[-3000:]}")


def _digests(tree: Path, artifacts: list[str]) -> dict[str, str]:
    return {a: hashlib.sha256((tree / a).read_bytes()).hexdigest() for a in artifacts}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--clean", required=True)
    ap.add_argument("--artifact", action="append", required=True)
    args = ap.parse_args()
    sgcc = shutil.which("sgcc", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if not sgcc:
        sys.exit("sgcc is not installed")
    work = Path(tempfile.mkdtemp(prefix="lto-identity-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") and k not in ("MAKEFLAGS", "CC")}
    env.update(SGCC_CACHE_DIR=str(work / "cache"), SGCC_CONFIG=str(work / "none.toml"))
    _build(args.tree, args.clean, args.build, "gcc", env)
    ref = _digests(args.tree, args.artifact)
    log = work / "empty.log"
    _build(args.tree, args.clean, args.build, sgcc, {**env, "SGCC_LOGFILE": str(log)})
    empty = _digests(args.tree, args.artifact)
    contexts = sorted({line.rsplit("(", 1)[1].split(")")[0] for line in log.read_text().splitlines()
                       if "lto link, nothing to substitute in its context" in line})
    if not contexts:
        sys.exit("no LTO link went through sgcc: are the build's flags LTO flags?")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sgcc.cache import store
    from sgcc.cache.entry import Applied, Entry

    cache = store.Store(work / "cache")
    for ctx in contexts:  # a key is 48 digits of content hash, then the context id
        cache.update("0" * 48 + ctx, lambda old: Entry(applied=Applied({"decoy": "\tret\n"})))
    log = work / "decoy.log"
    _build(args.tree, args.clean, args.build, sgcc, {**env, "SGCC_LOGFILE": str(log)})
    decoy = _digests(args.tree, args.artifact)
    _build(args.tree, args.clean, args.build, "gcc", env)
    again = _digests(args.tree, args.artifact)
    text = log.read_text()
    links = text.count("routing the ltrans assembly through sgcc")
    stats = subprocess.run([sgcc, "stats", "--json"], env=env, capture_output=True, check=True).stdout.decode()
    import json

    counters = json.loads(stats)["counters"]
    print(f"LTO contexts: {len(contexts)}; links through the front: {links}; partitions looked up: "
          f"{counters.get('ltrans', 0)}; substituted: {counters.get('units_substituted', 0)}; "
          f"fallbacks: {counters.get('fallbacks', 0) + counters.get('internal_errors', 0)}")
    same = True
    for a in args.artifact:
        ok = ref[a] == empty[a] == decoy[a] == again[a]
        varies = ref[a] != again[a]
        same &= ok or varies
        print(f"{a}: gcc {ref[a][:16]}  sgcc (empty) {empty[a][:16]}  sgcc (front) {decoy[a][:16]}  "
              f"gcc again {again[a][:16]}  "
              f"{'identical' if ok else 'differs between gcc builds too: not compared' if varies else 'DIFFERENT'}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if same and links else 1


if __name__ == "__main__":
    sys.exit(main())
