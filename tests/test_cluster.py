"""`sgcc bench --cluster` on a real local Ray cluster (docs/cluster.md).

The cluster is real: a head (no CPUs: it only coordinates) and two worker nodes, each its
own raylet process with one CPU, started by ``ray.cluster_utils.Cluster`` on this machine
and torn down (every process checked gone) when the module ends. The dataset is three tiny
problems from examples/programs with replay candidates only (popcount and bitrev with their
good candidates, ``wrong`` with a candidate that crashes), so each run takes a few tens of
seconds. Checked against a single-machine run of the same dataset: the same per-problem
verdicts; a worker killed while it runs a problem still gives a complete report; ^C leaves
no task running on any node; a resumed run re-runs nothing already finished; nodes with
another compiler are refused. The fast tests need no cluster.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sgcc.errors import SgccError
from sgcc.lab import cluster as clustermod
from sgcc.lab.journal import Journal

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "examples" / "programs"
MB = 1 << 20


# --------------------------------------------------------------------------- fast: no cluster


def test_parse_address():
    for ok in ("auto", "ray://10.0.0.1:10001", "head:6379", "ray://[::1]:10001"):
        assert clustermod.parse_address(ok) == ok
    for bad in ("", "head", "ray://head", "head:0", "head:99999", "http://head:80", "ray://h:1/x"):
        with pytest.raises(SgccError):
            clustermod.parse_address(bad)


def test_config_key_checks_the_address(tmp_path):
    from sgcc import config

    assert config.load({"cluster": "ray://h:10001"}).cluster == "ray://h:10001"
    assert config.load({"cluster": "none"}).cluster == ""
    assert config.load({}).cluster == ""
    with pytest.raises(SgccError, match="cluster"):
        config.load({"cluster": "h"})


def test_pack_unpack_keeps_files_and_drops_links(tmp_path):
    d = tmp_path / "src" / "p"
    (d / "tests").mkdir(parents=True)
    (d / "p.c").write_text("int main(){return 0;}\n")
    (d / "tests" / "t.in").write_text("1\n")
    (d / "tests" / "evil").symlink_to("/etc/passwd")
    clustermod.unpack(clustermod.pack(d), tmp_path / "dst")
    got = sorted(str(p.relative_to(tmp_path / "dst")) for p in (tmp_path / "dst").rglob("*") if p.is_file())
    assert got == ["p/p.c", "p/tests/t.in"]


def test_unpack_refuses_paths_outside(tmp_path):
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../escape")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(tarfile.TarError):
        clustermod.unpack(buf.getvalue(), tmp_path / "dst")
    assert not (tmp_path / "escape").exists()


def test_journal_resumes_refuses_other_settings_and_skips_a_torn_line(tmp_path):
    path = tmp_path / "run.jsonl"
    j = Journal(path, {"timing_rounds": 3})
    j.add("engine", "a", {"name": "a", "speedup": 1.5})
    with open(path, "a") as f:
        f.write('{"kind": "engine", "name": "b", "ro')  # the run was killed mid-line
    again = Journal(path, {"timing_rounds": 3})
    assert again.get("engine", "a") == {"name": "a", "speedup": 1.5}
    assert again.get("engine", "b") is None
    again.add("engine", "b", {"name": "b"})
    assert Journal(path, {"timing_rounds": 3}).get("engine", "b") == {"name": "b"}
    with pytest.raises(SgccError, match="other settings.*timing_rounds"):
        Journal(path, {"timing_rounds": 20})
    (tmp_path / "other").write_text("not json\n")
    with pytest.raises(SgccError, match="not an sgcc resume file"):
        Journal(tmp_path / "other", {})


def _sgcc_python(code: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=env or os.environ)


def test_cluster_without_ray_installed_is_a_clear_error(tmp_path):
    data = tmp_path / "d"
    _copy_problem("popcount", data, "popcount")
    # sys.modules["ray"] = None makes `import ray` fail as it does where Ray is not installed.
    r = _sgcc_python("import sys; sys.modules['ray'] = None; from sgcc.cli import main; "
                     f"sys.argv = ['sgcc', 'bench', {str(data)!r}, '--cluster', 'auto']; sys.exit(main())")
    assert r.returncode != 0
    assert "sgcc: error: --cluster needs Ray" in r.stderr
    assert "pip install 'sgcc[cluster]'" in r.stderr
    assert "Traceback" not in r.stderr


def test_unreachable_cluster_is_an_error_not_a_hang(tmp_path, sgcc_exe):
    data = tmp_path / "d"
    _copy_problem("popcount", data, "popcount")
    t0 = time.monotonic()
    r = subprocess.run([sgcc_exe, "bench", str(data), "--cluster", "127.0.0.1:9"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0 and "sgcc: error: cannot reach the Ray cluster at 127.0.0.1:9" in r.stderr
    assert time.monotonic() - t0 < 60


def test_no_path_but_cluster_imports_ray():
    """The lab's modules, the CLI and a local bench's code never import Ray (only sgcc.lab.cluster does)."""
    r = _sgcc_python("import sys; import sgcc.cli.main, sgcc.lab.bench, sgcc.lab.bench_cmd, sgcc.lab.dataset, "
                     "sgcc.lab.dataset_cmd, sgcc.lab.reward, sgcc.lab.journal, sgcc.lab.cluster; "
                     "from click.testing import CliRunner; from sgcc.cli.main import cli; "
                     "CliRunner().invoke(cli, ['bench', '--help']); "
                     "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


# --------------------------------------------------------------------------- the dataset


def _copy_problem(src_name: str, dest: Path, name: str, candidates: dict[str, str] | None = None) -> None:
    src = PROGRAMS / src_name
    d = dest / name
    (d / "tests").mkdir(parents=True)
    shutil.copyfile(src / f"{src_name}.c", d / f"{name}.c")
    for t in sorted((src / "tests").iterdir()):
        if not t.name.startswith("large"):  # small inputs: a short test
            shutil.copyfile(t, d / "tests" / t.name)
    if candidates is None:
        shutil.copytree(src / "candidates", d / "candidates")
    else:
        for rel, text in candidates.items():
            (d / "candidates" / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / "candidates" / rel).write_text(text)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("cluster") / "dataset"
    _copy_problem("popcount", data, "popcount")
    _copy_problem("bitrev", data, "bitrev")
    _copy_problem("bitrev", data, "wrong", {"reverse_all.s": (PROGRAMS / "bitrev" / "bad" / "segfault.s").read_text()})
    return data


BENCH = ["--generators", "replay", "--timing-rounds", "3", "--seed", "7", "-q"]


def _env() -> dict:
    return dict(os.environ)


def _bench(sgcc_exe, data, js, *extra, python_flags=()) -> subprocess.CompletedProcess:
    argv = ([sys.executable, *python_flags, sgcc_exe] if python_flags else [sgcc_exe])
    r = subprocess.run([*argv, "bench", str(data), *BENCH, "--json", str(js), *extra], capture_output=True, text=True,
                       timeout=900, env=_env())
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def _verdicts(report: dict) -> dict:
    """Per problem: compiled, passed, and how many candidates stopped at each stage, with the
    stages past the tests that timing alone separates ("time": not proven faster, "accepted")
    counted as one. Whether a 3-round timing confirms a 1.4x candidate in every world is the
    wall clock's call, not the cluster's: one full run of the suite had bitrev's candidate
    unconfirmed in one world (lower bound 0.915x) on one machine and shipped on the cluster."""
    def stages(row: dict) -> tuple:
        counts = dict(row["stages"])
        past = counts.pop("time", 0) + counts.pop("accepted", 0)
        if past:
            counts["passed the tests"] = past
        return tuple(sorted(counts.items()))
    return {r["name"]: (r["compiled"], r["passed"], stages(r)) for r in report["problems"]}


def _why_they_differ(report: dict, other: dict) -> str:
    """What each run said about the problems whose verdicts differ (a failure names its cause)."""
    mine, theirs = _verdicts(report), _verdicts(other)
    rows = {r["name"]: r for r in report["problems"]}
    rows2 = {r["name"]: r for r in other["problems"]}
    return "\n".join(f"{n}: {rows[n].get('outcome')!r} {rows[n].get('attempts')} {rows[n].get('notes')} | "
                     f"other run: {rows2[n].get('outcome')!r}" for n in mine if mine[n] != theirs.get(n))


# --------------------------------------------------------------------------- a real cluster


def _our_pids(cluster) -> set[int]:
    pids = set()
    for node in [cluster.head_node, *cluster.worker_nodes]:
        for procs in node.all_processes.values():
            pids.update(p.process.pid for p in procs)
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture(scope="module")
def ray_cluster():
    ray_utils = pytest.importorskip("ray.cluster_utils")
    small = {"object_store_memory": 80 * MB}
    cluster = ray_utils.Cluster(initialize_head=True, connect=False,
                                head_node_args={"num_cpus": 0, "include_dashboard": False, **small})
    started: set[int] = set()
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, **small)
        cluster.wait_for_nodes()
        started |= _our_pids(cluster)
        yield cluster
    finally:
        started |= _our_pids(cluster)
        cluster.shutdown()
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in started) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not [p for p in started if _alive(p)], "Ray processes left behind"
        # Nor any of the nodes' helpers (agents, workers): they are named ray::NAME.
        _wait_for(lambda: not _pgrep("raylet") and not _pgrep("^ray::"), 30, "every Ray process to end")


def _pgrep(pattern: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _task_pids() -> list[int]:
    """Worker processes running a problem now (Ray names a busy worker ray::FUNCTION)."""
    return _pgrep("^ray::cluster_task")


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for {what}")


def _ensure_two_workers(cluster) -> None:
    while len(cluster.worker_nodes) < 2:
        cluster.add_node(num_cpus=1, object_store_memory=80 * MB)
    cluster.wait_for_nodes()


@pytest.fixture(scope="module")
def local_run(dataset, sgcc_exe, tmp_path_factory):
    """The single-machine bench of the dataset (imports logged: Ray must not be among them)."""
    js = tmp_path_factory.mktemp("local") / "local.json"
    r = _bench(sgcc_exe, dataset, js, "-j", "1", python_flags=("-X", "importtime"))
    imported = set(re.findall(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", r.stderr))
    return {"json": json.loads(js.read_text()), "imports": imported}


@pytest.mark.slow
def test_local_bench_never_imports_ray(local_run):
    assert "sgcc.lab.bench" in local_run["imports"]
    assert not {m for m in local_run["imports"] if m == "ray" or m.startswith("ray.")}
    assert "sgcc.lab.cluster" not in local_run["imports"]


@pytest.mark.slow
def test_cluster_gives_the_verdicts_of_one_machine_and_records_nodes(ray_cluster, dataset, local_run, sgcc_exe,
                                                                    tmp_path):
    js, out = tmp_path / "c.json", tmp_path / "shipped"
    r = _bench(sgcc_exe, dataset, js, "--cluster", ray_cluster.address, "--output-dir", str(out))
    report, local = json.loads(js.read_text()), local_run["json"]
    assert _verdicts(report) == _verdicts(local), _why_they_differ(report, local)
    past = (("passed the tests", 1),)
    assert _verdicts(report) == {"bitrev": (True, True, past), "popcount": (True, True, past),
                                 "wrong": (True, False, (("test", 1),))}
    # What shipped is each problem's candidate or gcc's program, as the timing decided.
    for row in report["problems"]:
        assert set(row["honest"]["functions"]) <= {"bitrev": {"reverse_all"}, "popcount": {"count_bits"},
                                                   "wrong": set()}[row["name"]], row
    nodes = {n["id"] for n in report["cluster"]["nodes"]}
    assert len(nodes) == 2
    for row in report["problems"]:
        assert row["node"]["id"] in nodes
        # No timing assertion (two separate runs on a shared machine drift by more than three
        # rounds' intervals: bitrev gave 1.447x [1.445, 1.451] here, 1.426x [1.401, 1.440] on
        # one machine); the verdicts above are what must agree.
    # the shipped programs came back to this machine and still pass their tests
    for name in ("bitrev", "popcount"):
        binary = out / name
        assert os.access(binary, os.X_OK)
        t = dataset / name / "tests"
        for inp in sorted(t.glob("*.in")):
            ran = subprocess.run([str(binary)], stdin=inp.open("rb"), capture_output=True, timeout=30)
            assert ran.returncode == 0
            if inp.with_suffix(".out").exists():
                assert ran.stdout == inp.with_suffix(".out").read_bytes()
    assert "problems timed per node" in r.stdout


@pytest.mark.slow
def test_killed_worker_loses_only_its_problem_and_resume_reruns_nothing(ray_cluster, dataset, local_run, sgcc_exe,
                                                                        tmp_path):
    _ensure_two_workers(ray_cluster)
    js, journal = tmp_path / "k.json", tmp_path / "run.jsonl"
    proc = subprocess.Popen([sgcc_exe, "bench", str(dataset), *BENCH, "--json", str(js), "--resume", str(journal),
                             "--cluster", ray_cluster.address], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env())
    try:
        busy = _wait_for(_task_pids, 240, "a node to run a problem")[0]
        raylet = _ppid(busy)
        victim = next(n for n in ray_cluster.worker_nodes if raylet in {p.process.pid for procs in
                                                                      n.all_processes.values() for p in procs})
        ray_cluster.remove_node(victim, allow_graceful=False)  # the node dies with a problem in flight
        stdout, stderr = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr[-3000:]
    report = json.loads(js.read_text())
    assert _verdicts(report) == _verdicts(local_run["json"]), _why_they_differ(report, local_run["json"])
    assert victim.unique_id not in {r["node"]["id"] for r in report["problems"]}
    lines = journal.read_text().splitlines()
    assert len(lines) == 1 + 3  # the settings, then each problem once

    # The same command again: everything comes from the resume file, nothing is re-timed.
    _ensure_two_workers(ray_cluster)
    js2 = tmp_path / "k2.json"
    r = subprocess.run([sgcc_exe, "bench", str(dataset), *BENCH[:-1], "--json", str(js2), "--resume", str(journal),
                        "--cluster", ray_cluster.address], capture_output=True, text=True, timeout=600, env=_env())
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("finished in an earlier run") == 3
    assert journal.read_text().splitlines() == lines
    again = json.loads(js2.read_text())
    assert [x["seconds"] for x in again["problems"]] == [x["seconds"] for x in report["problems"]]


@pytest.mark.slow
def test_interrupt_leaves_nothing_running_and_the_rest_resumes(ray_cluster, dataset, sgcc_exe, tmp_path):
    _ensure_two_workers(ray_cluster)
    js, journal = tmp_path / "i.json", tmp_path / "run.jsonl"
    argv = [sgcc_exe, "bench", str(dataset), *BENCH[:-1], "--json", str(js), "--resume", str(journal),
            "--cluster", ray_cluster.address]
    # SIGINT as an interactive shell gives it (a suite started in the background by a shell
    # without job control runs with SIGINT ignored, and the bench would inherit that).
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for(_task_pids, 240, "a node to run a problem")
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0 and "Traceback" not in stderr
    # No problem is still being worked on anywhere: no busy worker, no sgcc process in a task's scratch.
    _wait_for(lambda: not _task_pids(), 30, "the tasks to stop")
    assert not _pgrep("sgcc-cluster-")
    finished = {json.loads(x)["name"] for x in journal.read_text().splitlines()[1:]}
    assert len(finished) < 3

    r = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=_env())
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("finished in an earlier run") == len(finished)
    names = [json.loads(x)["name"] for x in journal.read_text().splitlines()[1:]]
    assert sorted(names) == ["bitrev", "popcount", "wrong"]  # each problem timed once over both runs
    assert len(json.loads(js.read_text())["problems"]) == 3


@pytest.mark.slow
def test_nodes_with_another_compiler_are_refused(ray_cluster, dataset, sgcc_exe, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "gcc").write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "gcc (Other) 99.1.0"; exit 0; fi\n'
                              'exec /usr/bin/gcc "$@"\n')
    (fake / "gcc").chmod(0o755)
    saved = os.environ["PATH"]
    os.environ["PATH"] = f"{fake}:{saved}"  # the new node's processes inherit it
    try:
        odd = ray_cluster.add_node(num_cpus=1, object_store_memory=80 * MB)
    finally:
        os.environ["PATH"] = saved
    try:
        ray_cluster.wait_for_nodes()
        r = subprocess.run([sgcc_exe, "bench", str(dataset), *BENCH, "--cluster", ray_cluster.address],
                           capture_output=True, text=True, timeout=300, env=_env())
        assert r.returncode != 0
        assert "sgcc: error: the cluster's nodes are not all the same CPU model and compiler" in r.stderr
        assert "gcc (Other) 99.1.0" in r.stderr and "Traceback" not in r.stderr
    finally:
        ray_cluster.remove_node(odd)


@pytest.mark.slow
@pytest.mark.alone  # two timing rounds of 5 ms samples: beside a neighbour O0/O3's interval reached 1.003x
def test_dataset_build_on_the_cluster_keeps_and_drops_what_one_machine_does(ray_cluster, sgcc_exe, tmp_path):
    from sgcc.lab import dataset as datasetmod

    _ensure_two_workers(ray_cluster)
    src = tmp_path / "src"
    for name in ("crc32", "bad_ub", "bad_nondet"):
        shutil.copytree(ROOT / "examples" / "dataset-src" / name, src / name)
    fast = ["--rounds", "2", "--min-sample", "0.005", "--seed", "1", "-q"]
    local = datasetmod.build(src, tmp_path / "local", rounds=2, min_sample=0.005, seed=1, jobs=1)
    r = subprocess.run([sgcc_exe, "dataset", "build", str(src), "--out", str(tmp_path / "cl"), *fast, "--cluster",
                        ray_cluster.address], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads((tmp_path / "cl" / "dataset.json").read_text())
    assert [p["name"] for p in data["problems"]] == [p["name"] for p in local["problems"]] == ["crc32"]
    assert [(d["name"], d["stage"]) for d in data["dropped"]] == [(d["name"], d["stage"]) for d in local["dropped"]]
    nodes = {n["id"] for n in data["cluster"]["nodes"]}
    for mine, theirs in zip(data["problems"], local["problems"]):
        assert mine["node"]["id"] in nodes
        assert mine["tests"] == theirs["tests"]
        # Two rounds give a point, not an interval worth comparing across runs on this shared
        # machine (three local runs gave 1.52x, 1.90x, 1.55x; full runs of the suite 1.078x
        # [1.003, 1.159] beside a neighbour and 1.095x [1.066, 1.126] alone): only the
        # direction is checked, O0 slower than O3, by the interval's lower end (an A/A
        # timing, such as the same program on both sides, has 1 inside its interval).
        for side in (mine, theirs):
            s = side["speedup_o0_o3"]
            assert s["low"] > 1.0 and s["low"] <= s["estimate"] <= s["high"], s
    for out in sorted((tmp_path / "local" / "crc32" / "tests").glob("*.out")):
        assert (tmp_path / "cl" / "crc32" / "tests" / out.name).read_bytes() == out.read_bytes()


@pytest.mark.slow
def test_batch_rewards_on_the_cluster_match_one_machine(ray_cluster):
    from sgcc.lab import reward

    _ensure_two_workers(ray_cluster)
    popcount = PROGRAMS / "popcount"
    truth = json.dumps({"problem": str(popcount), "name": "popcount", "function": "count_bits", "flags": ["-O3"]})
    swar = (popcount / "candidates" / "count_bits.s").read_text()
    answers = [f"<assembly>\n{swar}</assembly>\n", "no assembly here",
               "<assembly>\n\t.text\n\t.globl count_bits\ncount_bits:\n\tmovl $7, %eax\n\tret\n</assembly>\n"]
    extra = [{"reward": "correctness_guided", "timing_rounds": 3, "return_dict": True}] * len(answers)
    args = (["sgcc"] * len(answers), answers, [truth] * len(answers), extra)
    here = reward.compute_score_batch(*args)
    try:
        there = reward.compute_score_batch(*args, cluster=ray_cluster.address)
    finally:
        clustermod.close_shared()
    for a, b in zip(here, there):
        assert (a["compiled"], a["passed"], a["pass_fraction"]) == (b["compiled"], b["passed"], b["pass_fraction"])
    assert there[0]["passed"] == 1.0 and there[0]["score"] > 1.0
    assert there[1]["score"] == -1.0 and there[2]["passed"] == 0.0


def test_scratch_of_a_killed_task_is_removed_by_the_next(tmp_path, monkeypatch):
    monkeypatch.setattr(clustermod.tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"sgcc-cluster-{dead.pid}-abc"
    live = tmp_path / f"sgcc-cluster-{os.getpid()}-def"
    other = tmp_path / "sgcc-cluster-xyz"  # not named by a pid: not ours to judge
    for d in (stale, live, other):
        (d / "p").mkdir(parents=True)
    seen = clustermod.in_scratch(lambda scratch: (scratch.name, scratch.is_dir()))
    assert seen[0].startswith(f"sgcc-cluster-{os.getpid()}-") and seen[1]
    assert not stale.exists() and live.exists() and other.exists()
    assert not (tmp_path / seen[0]).exists()


def test_a_scratch_directory_another_task_removes_mid_sweep_is_skipped(tmp_path, monkeypatch):
    # Two tasks on one node sweep a killed process's scratch directory at once: one removes it
    # between the other's listing and its stat, and the other's task failed with
    # FileNotFoundError (the whole bench stopped: "a cluster task failed", seen in a full run).
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process has now
    stale = tmp_path / f"{clustermod.SCRATCH}{gone.pid}-abcd"
    stale.mkdir()
    listed = list(os.scandir(tmp_path))
    shutil.rmtree(stale)  # the other task's sweep
    monkeypatch.setattr(os, "scandir", lambda root: iter(listed))
    clustermod._sweep_scratch()
    assert not stale.exists()
