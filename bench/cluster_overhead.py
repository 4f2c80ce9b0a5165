#!/usr/bin/env python3
"""What running a problem as a Ray task adds to its time (``sgcc bench --cluster``).

A local cluster (a head with no CPUs and one worker node with one CPU, separate processes
on this machine) is started; then, interleaved ``--runs`` times, the same problem (a copy of
examples/programs/popcount with its small tests and its replay candidate) goes through the
bench's per-problem work (:func:`sgcc.lab.bench.run_one`) once in this process and once as
a cluster task (:meth:`sgcc.lab.cluster.Session.map` with :func:`sgcc.lab.bench.cluster_task`).

For each run, *overhead* = wall time the driver saw minus the seconds the engine itself
reported for the problem (``row["seconds"]``, measured inside the task). Locally that is
the thread and bookkeeping cost (about zero); on the cluster it is packing the problem,
scheduling, the worker's import of sgcc when the worker is new, unpacking, scratch space and
returning the row. The engine's own time varies with load and is not part of it. The first
cluster run starts the node's worker process (cold); the others reuse it (warm); both are
reported, median and range.

Usage: python bench/cluster_overhead.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.lab import bench as benchmod  # noqa: E402
from sgcc.lab.cluster import Session, pack  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from ray.cluster_utils import Cluster

    tmp = Path(tempfile.mkdtemp(prefix="sgcc-cluster-overhead-"))
    os.environ.setdefault("SGCC_TIMING_LOCK", str(tmp / "timing.lock"))
    src = ROOT / "examples" / "programs" / "popcount"
    d = tmp / "data" / "popcount"
    (d / "tests").mkdir(parents=True)
    shutil.copyfile(src / "popcount.c", d / "popcount.c")
    for t in (src / "tests").iterdir():
        if not t.name.startswith("large"):
            shutil.copyfile(t, d / "tests" / t.name)
    shutil.copytree(src / "candidates", d / "candidates")
    problem = benchmod.Problem("popcount", d, d / "popcount.c", d / "tests", [d / "candidates"])
    opts = benchmod.Options(jobs=1, timing_rounds=3, min_sample=0.01, seed=7)
    make = benchmod.RequestMaker({"generators": "replay", "timing_rounds": 3, "min_sample": 0.01, "seed": 7,
                                  "cache": False}, "replay", opts.flags, 1)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                            "object_store_memory": 80 << 20})
    try:
        cluster.add_node(num_cpus=1, object_store_memory=80 << 20)
        cluster.wait_for_nodes()
        local, remote = [], []
        with Session(cluster.address) as session:
            session.check_nodes()
            for i in range(args.runs):
                work = tmp / f"w{i}"
                (work / "out").mkdir(parents=True)
                t0 = time.perf_counter()
                row = benchmod.run_one("engine", problem, make, opts, work)
                local.append((time.perf_counter() - t0) - row["seconds"])
                got = []
                t0 = time.perf_counter()
                session.map(benchmod.cluster_task, [("engine", pack(d), "popcount", ["candidates"], make, opts,
                                                     False)], lambda _, r, got=got: got.append(r))
                remote.append((time.perf_counter() - t0) - got[0]["seconds"])
                print(f"run {i + 1}: local overhead {local[-1] * 1000:.1f} ms (engine {row['seconds']:.1f} s), "
                      f"cluster overhead {remote[-1] * 1000:.1f} ms (engine {got[0]['seconds']:.1f} s)", flush=True)
    finally:
        cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    warm = remote[1:] or remote

    def ms(xs):
        return f"median {statistics.median(xs) * 1000:.0f} ms (range {min(xs) * 1000:.0f}-{max(xs) * 1000:.0f})"

    print(f"local: {ms(local)}")
    print(f"cluster, first task (worker started): {remote[0] * 1000:.0f} ms")
    print(f"cluster, warm worker: {ms(warm)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
