"""Running many problems on a Ray cluster (``sgcc bench --cluster``, ``sgcc dataset build --cluster``).

Timing cannot be parallelised inside a machine, so a large evaluation needs more machines,
each timing its own problems. This module is the only one that imports Ray (an optional
extra, ``pip install 'sgcc[cluster]'``); nothing else in sgcc does, and without a
``--cluster`` address nothing here is imported.

* :func:`connect` joins a running cluster (``ray://HOST:PORT`` through Ray Client, a GCS
  address ``HOST:PORT`` from a node of the cluster, or ``auto`` for the local one);
* :meth:`Session.check_nodes` runs a task pinned to every node that has CPUs and refuses to
  pool figures from nodes with another CPU model or another compiler: a speedup measured on
  one CPU says nothing about another;
* :meth:`Session.map` runs one task per problem and hands each result back as it arrives.
  A task takes ``cpus`` CPUs (default 1), so a node with several CPUs builds and tests
  several problems at once; *timing* on each node stays serial because every timed
  comparison takes sgcc's machine-wide timing lock (:func:`sgcc.verify.timing.rounds.timing_lock`,
  a file lock in the node's own cache directory). A node lost mid-run loses its in-flight
  tasks, which Ray retries on other nodes (``max_retries``); if no node with CPUs is left, the
  run stops with an error instead of waiting for ever. ^C cancels every task (a task's
  worker is interrupted, then killed) and disconnects, which ends the run's workers on every
  node.

Problems travel as data (a tar of the problem's directory), so the nodes need sgcc, the
compiler and Python, not the dataset: only the driver reads it.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from sgcc.errors import SgccError

T = TypeVar("T")

#: Largest problem directory shipped to a node (sources, tests and candidates of one problem).
MAX_PROBLEM_BYTES = 64 << 20
#: Times Ray re-runs a task whose node or worker died (a lost node loses only in-flight problems).
MAX_RETRIES = 3
#: Seconds the cluster may have no node with CPUs before the run gives up.
NO_NODE_GRACE = 60.0
#: Seconds to wait for the head's port to answer.
CONNECT_TIMEOUT = 10.0
#: Seconds ^C waits for interrupted tasks to stop before killing their workers.
CANCEL_GRACE = 5.0

INSTALL_HINT = "install the extra on this machine and every node: pip install 'sgcc[cluster]'"


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise SgccError("--cluster needs Ray, which is not installed", cause=exc, hint=INSTALL_HINT) from exc
    return ray


def parse_address(text: str) -> str:
    """The address ``ray.init`` takes: ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT``."""
    text = (text or "").strip()
    if text == "auto":
        return text
    rest = text[len("ray://"):] if text.startswith("ray://") else text
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in rest:
        raise SgccError(f"bad cluster address {text!r}",
                        hint="use ray://HOST:PORT (Ray Client), HOST:PORT (the head's GCS port) or auto")
    return text


# --------------------------------------------------------------------------- on the nodes


def node_facts(compiler: str = "gcc") -> dict:
    """What must match across nodes (CPU model, compiler) and where this runs (runs on a node)."""
    from sgcc import proc

    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if not cpu:
        import platform

        cpu = platform.processor() or platform.machine()
    version = ""
    try:
        r = proc.run([compiler, "--version"], timeout=30)
        if r.ok and r.stdout:
            version = r.stdout.decode("utf-8", "replace").splitlines()[0].strip()
    except SgccError:
        pass
    return {**here(), "cpu": cpu, "compiler": version or f"{compiler}: not found", "cpus": os.cpu_count() or 1}


def here() -> dict:
    """This node: Ray's node id, host name and address (inside a task)."""
    import ray

    try:
        ip = ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001 - only a label
        ip = ""
    return {"id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(), "ip": ip}


def pack(directory: Path) -> bytes:
    """A problem's directory as a tar (regular files and directories only, size capped)."""
    directory = Path(directory)
    buf = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for root, dirs, files in os.walk(directory):
            dirs.sort()
            for name in sorted(files):
                path = Path(root) / name
                if path.is_symlink() or not path.is_file():
                    continue
                total += path.stat().st_size
                if total > MAX_PROBLEM_BYTES:
                    raise SgccError(f"problem {directory.name} is larger than {MAX_PROBLEM_BYTES >> 20} MiB")
                tar.add(path, arcname=str(path.relative_to(directory.parent)), recursive=False)
    return buf.getvalue()


def unpack(blob: bytes, into: Path) -> None:
    """Undo :func:`pack` under ``into`` (tarfile's data filter: no links, nothing outside)."""
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
            return
        # Python before 3.11.4: the same rule by hand (what pack writes: files and directories).
        for member in tar.getmembers():
            if not (member.isfile() or member.isdir()) or member.name.startswith("/") or ".." in Path(
                    member.name).parts:
                raise tarfile.TarError(f"refusing {member.name!r} in a problem's archive")
        tar.extractall(into)


SCRATCH = "sgcc-cluster-"


def _sweep_scratch() -> None:
    """Remove scratch directories whose task's process is dead: a worker killed with its node
    (or by a forced cancel) cannot clean up, so the next task on that machine does."""
    root = Path(tempfile.gettempdir())
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        parts = entry.name.split("-")
        if not entry.name.startswith(SCRATCH) or len(parts) < 4 or not parts[2].isdigit():
            continue
        try:
            os.kill(int(parts[2]), 0)
            continue  # its process lives (or the pid was reused): leave it
        except ProcessLookupError:
            pass
        except OSError:
            continue  # another user's process: not ours to judge
        try:
            ours = entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.getuid()
        except OSError:
            continue  # removed since the listing (another task's sweep on this node)
        if ours:
            shutil.rmtree(entry.path, ignore_errors=True)


def in_scratch(fn: Callable[[Path], T]) -> T:
    """Run ``fn(scratch)`` in a fresh temporary directory on the node, removed afterwards
    (named for this process, so that a later task removes it if this process is killed)."""
    _sweep_scratch()
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-"))
    try:
        return fn(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --------------------------------------------------------------------------- on the driver


class Session:
    """A connection to a Ray cluster (use as a context manager: it disconnects on exit)."""

    def __init__(self, address: str, *, cpus: float = 1.0, max_retries: int = MAX_RETRIES):
        self.address = parse_address(address)
        self.cpus = cpus
        self.max_retries = max_retries
        self.nodes: list[dict] = []
        self._ray: ModuleType | None = None  # the ray module, once connected
        self._owned = False

    def __enter__(self) -> Session:
        self.connect()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def connect(self) -> None:
        """Join the cluster (never starts one: ``auto`` with no cluster running is an error).
        In a process already connected to Ray (a VERL trainer), that connection is used."""
        import logging

        ray = _ray()
        if ray.is_initialized():
            self._ray, self._owned = ray, False
            return
        if self.address != "auto":
            # ray.init retries an unreachable GCS for ever: find out first, in seconds.
            host, _, port = self.address.removeprefix("ray://").rpartition(":")
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
            except OSError as exc:
                raise SgccError(f"cannot reach the Ray cluster at {self.address}", cause=exc,
                                hint="is the head running (`ray status` there)? check the host and port") from exc
        try:
            ray.init(address=self.address, logging_level=logging.ERROR, log_to_driver=False,
                     configure_logging=True)
        except Exception as exc:
            # Ray's own message can carry a server's traceback: its last line says enough.
            raise SgccError(f"cannot connect to the Ray cluster at {self.address}: {_short(exc)}",
                            hint="start one (`ray start --head` there, `ray start --address HEAD:6379` on each "
                                 "node; docs/cluster.md) or check the address"
                            ) from exc
        self._ray, self._owned = ray, True

    def close(self) -> None:
        """Disconnect (unless the connection was there before); Ray then ends this run's
        workers on every node."""
        if self._ray is not None:
            try:
                if self._owned:
                    self._ray.shutdown()
            finally:
                self._ray = None

    def _connected(self) -> ModuleType:
        """The ray module of this connection (:meth:`connect` first)."""
        if self._ray is None:
            raise SgccError(f"not connected to the Ray cluster at {self.address}")
        return self._ray

    def _cpu_nodes(self) -> list[dict]:
        return [n for n in self._connected().nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]

    def check_nodes(self, compiler: str = "gcc") -> list[dict]:
        """Every node with CPUs, checked to be one kind (CPU model and compiler); an error otherwise."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._connected()
        nodes = self._cpu_nodes()
        if not nodes:
            raise SgccError(f"the Ray cluster at {self.address} has no node with CPUs",
                            hint="start worker nodes with `ray start --address HEAD:PORT`")
        task = ray.remote(node_facts)
        refs = {n["NodeID"]: task.options(num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
            n["NodeID"], soft=False)).remote(compiler) for n in nodes}
        facts = []
        for node_id, ref in refs.items():
            try:
                facts.append(ray.get(ref, timeout=120))
            except Exception as exc:
                raise SgccError(f"node {node_id[:12]} of the cluster cannot run sgcc: {_short(exc)}",
                                hint="install the same sgcc (with its [cluster] extra) and compiler on every node"
                                ) from exc
        kinds: dict[tuple[str, str], list[str]] = {}
        for f in facts:
            kinds.setdefault((f["cpu"], f["compiler"]), []).append(f"{f['host']} ({f['id'][:8]})")
        if len(kinds) > 1:
            listing = "; ".join(f"{cpu} / {cc}: {', '.join(names)}" for (cpu, cc), names in sorted(kinds.items()))
            raise SgccError(f"the cluster's nodes are not all the same CPU model and compiler ({listing}); "
                            "speedups measured on different machines cannot be pooled",
                            hint="use a cluster of one kind of node, or one cluster per kind")
        self.nodes = sorted(facts, key=lambda f: (f["host"], f["id"]))
        return self.nodes

    def map(self, fn: Callable, items: Iterable[tuple], on_done: Callable[[int, object], None]) -> None:
        """Run ``fn(*args)`` as one Ray task per ``args`` in ``items``; ``on_done(index, result)``
        on the driver as each finishes (in any order). A task's exception is re-raised here
        as an :class:`SgccError`; ^C cancels every task and re-raises ``KeyboardInterrupt``."""
        ray = self._connected()
        task = ray.remote(fn).options(num_cpus=self.cpus, max_retries=self.max_retries)
        # A bounded window of submitted tasks: the driver holds a few problems' data at a
        # time, not the whole dataset, and ^C has little to cancel.
        cpus = sum(n.get("Resources", {}).get("CPU", 0) for n in self._cpu_nodes())
        window = max(2, int(2 * cpus / max(self.cpus, 0.01)))
        queue = enumerate(items)
        pending: dict = {}

        def submit() -> None:
            while len(pending) < window:
                nxt = next(queue, None)
                if nxt is None:
                    return
                pending[task.remote(*nxt[1])] = nxt[0]

        no_node_since = None
        try:
            submit()
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=2.0)
                for ref in ready:
                    i = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except Exception as exc:
                        raise SgccError(f"a cluster task failed: {_short(exc)}",
                                        cause=exc, hint="see the Ray logs on the node (docs/cluster.md)") from exc
                    on_done(i, result)
                    submit()
                if ready:
                    continue
                # Nothing finished: make sure something can still run the rest.
                if self._cpu_nodes():
                    no_node_since = None
                elif no_node_since is None:
                    no_node_since = time.monotonic()
                elif time.monotonic() - no_node_since > NO_NODE_GRACE:
                    raise SgccError(f"no node with CPUs is left in the cluster; {len(pending)} problem(s) not run",
                                    hint="start nodes and rerun with the same --resume file")
        except BaseException:
            self.cancel(list(pending))
            raise

    def cancel(self, refs: list) -> None:
        """Stop these tasks: interrupt them (their ``finally`` blocks clean up), then kill what is left."""
        if not refs:
            return
        ray = self._connected()
        for ref in refs:
            try:
                ray.cancel(ref, force=False)
            except Exception:  # noqa: BLE001 - already finished or its node is gone
                pass
        deadline = time.monotonic() + CANCEL_GRACE
        left = list(refs)
        while left and time.monotonic() < deadline:
            _, left = ray.wait(left, num_returns=len(left), timeout=0.5)
        for ref in left:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001
                pass


_shared: dict[str, Session] = {}


def shared_session(address: str) -> Session:
    """A connected, checked :class:`Session` kept for the process (for callers that come back
    many times, like a reward function called once per training batch)."""
    session = _shared.get(address)
    if session is None or session._ray is None:
        session = Session(address)
        session.connect()
        try:
            session.check_nodes()
        except BaseException:
            session.close()
            raise
        _shared[address] = session
    return session


def close_shared() -> None:
    """Close the sessions :func:`shared_session` opened."""
    while _shared:
        _shared.popitem()[1].close()


def _short(exc: BaseException) -> str:
    """The line of a (possibly multi-line, traceback-carrying) Ray error that says what happened."""
    lines = [t.strip() for t in str(exc).splitlines()]
    said = [t for t in lines if len(t) > 2 and not t.startswith(("File ", "Traceback", "raise "))]
    return (said[-1] if said else type(exc).__name__)[:300]
