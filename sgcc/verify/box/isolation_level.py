"""Which isolation layers test runs get on this machine, and refusing untrusted code without them.

:func:`isolation_report` probes once per process (a boxed ``true``, see
:mod:`sgcc.verify.box.isolate`) and says which layers are there; ``sgcc config`` and reports
show :meth:`IsolationReport.describe`. :func:`require_isolation` is what the engine calls
before running untrusted candidates (language model, replay files, untrusted cache
entries); gcc's own code needs no call.
"""

from __future__ import annotations

import os
import threading

from sgcc import proc
from sgcc.errors import SgccError
from sgcc.verify.box import isolate

#: The layers of a box, in the order reported.
LAYERS = ("user namespace", "pid namespace", "mount namespace", "ipc and uts namespaces", "network namespace",
          "private /proc", "seccomp filter", "run-wide limits")


class IsolationReport:
    """Which layers runs get here. ``boxed``: runs go through :func:`spawner` at all."""

    def __init__(self, layers: dict[str, bool], problem: str = ""):
        self.layers, self.problem = layers, problem

    @property
    def boxed(self) -> bool:
        return self.layers.get("mount namespace", False)

    @property
    def missing(self) -> list[str]:
        return [name for name, ok in self.layers.items() if not ok]

    @property
    def complete(self) -> bool:
        return not self.missing

    def describe(self) -> str:
        """One line for ``sgcc config`` and reports."""
        if self.complete:
            return "full (" + ", ".join(LAYERS) + ")"
        have = [n for n, ok in self.layers.items() if ok]
        text = "partial: missing " + ", ".join(self.missing)
        if have:
            text += "; have " + ", ".join(have)
        return text + (f" ({self.problem})" if self.problem else "")

    def to_dict(self) -> dict:
        return {"complete": self.complete, "layers": dict(self.layers), "problem": self.problem}


_report: IsolationReport | None = None
_report_lock = threading.Lock()


def isolation_report() -> IsolationReport:
    """Probe once (a box running ``true``) and say which isolation layers runs get here."""
    global _report
    with _report_lock:
        if _report is None:
            _report = _probe()
        return _report


def _probe() -> IsolationReport:
    import shutil
    import tempfile

    true = shutil.which("true") or "/bin/true"
    root = tempfile.mkdtemp(prefix="sgcc-probe-")
    try:
        os.chmod(root, 0o711)
        os.mkdir(os.path.join(root, "mnt"), 0o711)
        view = isolate.View(root, true, memory=1 << 30)

        def boxed_true(helper: bool) -> proc.Result:
            r = proc.run([view.world.argv0], env=view.world.environment(""), timeout=30,
                         spawner=isolate.spawner(view, helper=helper), limits=proc.Limits(processes=64))
            if r.returncode != 0:
                raise SgccError(f"a boxed `true` ended with {r.describe()}")
            return r

        try:
            result = boxed_true(True)
        except (SgccError, OSError):
            # The C helper built but does not run here (a noexec cache directory, say): the
            # Python box may still work, and then every run uses it.
            result = boxed_true(False)
            isolate.use_helper(False)
        notes = set(result.notes)
        layers = dict.fromkeys(LAYERS, True)
        layers["private /proc"] = "noproc" not in notes
        # The memory total is watched through /proc; processes and bytes written are bound anyway.
        layers["run-wide limits"] = "noproc" not in notes
        return IsolationReport(layers, "" if layers["private /proc"] else "the kernel refused a fresh /proc")
    except (SgccError, OSError) as exc:
        layers = dict.fromkeys(LAYERS, False)
        layers["network namespace"] = proc.network_isolation_available()
        msg = exc.message if isinstance(exc, SgccError) else str(exc)
        return IsolationReport(layers, msg)
    finally:
        shutil.rmtree(root, ignore_errors=True)


class IsolationMissing(SgccError):
    """Untrusted code was about to run without every isolation layer."""


def require_isolation(what: str, *, accept_risk: bool = False, report: IsolationReport | None = None) -> None:
    """Refuse to run untrusted code (``what``: "llm candidates", "replay files", ...) unless
    every layer is present or the user accepted the risk. gcc's own code needs no call."""
    report = report or isolation_report()
    if report.complete or accept_risk:
        return
    raise IsolationMissing(
        f"refusing to run {what}: test runs here lack {', '.join(report.missing)}"
        + (f" ({report.problem})" if report.problem else ""),
        hint="see docs/isolation.md for what the kernel must allow (unprivileged user namespaces); "
        "pass --accept-isolation-risk to run them anyway",
    )
