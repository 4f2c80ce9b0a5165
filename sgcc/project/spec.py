"""How to build, test and time a project: the ``[project]`` table of its sgcc.toml (and the
command line), checked before anything is built.

Two ways to prove a candidate correct:

* ``test = "make test"``: the project's own test command, run in a private copy of the built
  tree inside the isolated runner; exit status 0 is a pass. ``bench`` (a list of commands,
  default: the test command) is the workload that is profiled and timed (CPU of the whole
  process tree). The proof rests on the project's tests, and the report says so.
* ``tests = "tests"``: a directory of ``NAME.in`` stdin tests fed to ``binary``, with the
  generated differential inputs of the single-program mode.

With a test command, the workload is a test too where it can judge a result
(``bench_is_test``): by default ("auto") when it prints something, which every run must then
print exactly as gcc's build did; ``true`` when it checks its own result (``... | cmp - ref``:
its exit status says); ``false`` never. Functions only the workload runs are then searched,
on its evidence (the report says which).

Paths given on the command line are relative to the current directory; paths in sgcc.toml
are relative to the file's directory (the project's root).
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from sgcc.errors import SgccError

#: Words a command may start with that are the shell's, not programs on PATH.
SHELL_WORDS = frozenset({"cd", "exec", "set", "export", "test", "[", "true", "false", ":", ".", "if", "for",
                         "while", "case", "{", "(", "env", "ulimit", "umask", "time", "!"})

#: The default share of the workload's instructions the search covers, hottest functions first.
DEFAULT_COVERAGE = 0.9


@dataclass
class ProjectSpec:
    """How to build and test a project (the ``[project]`` table of its sgcc.toml)."""

    root: Path
    build: str = "make"
    clean: str = "make clean"
    binary: str = ""
    tests: str = ""  # a directory of stdin tests (absolute once checked)
    test: str = ""  # the project's own test command
    bench: list[str] = field(default_factory=list)  # the workload to profile and time
    test_timeout: float = 600.0  # seconds the test command (or one bench run) may take
    build_timeout: float = 1800.0
    coverage: float = DEFAULT_COVERAGE
    bench_is_test: bool | str = "auto"  # whether the workload judges results (see the module docstring)
    profile_timeout: float = 0.0  # seconds each callgrind profile may take (0: a fifth of the budget, >= 60)
    # Whole-project candidates with link-time optimisation (PGO + LTO, LTO alone). false: a
    # project whose builds must not use LTO, or whose functions should be searched (an adopted
    # LTO build ships without a function search: its code is made in the link's partitions).
    lto: bool = True

    KNOWN = ("build", "clean", "binary", "tests", "test", "bench", "test_timeout", "build_timeout", "coverage",
             "bench_is_test", "profile_timeout", "lto")

    @classmethod
    def from_table(cls, root: Path, table: dict, **overrides) -> ProjectSpec:
        """The spec from the ``[project]`` table and command-line ``overrides`` (None = not
        given), checked (:meth:`check`). Command-line ``tests`` is already absolute."""
        unknown = set(table) - set(cls.KNOWN)
        if unknown:
            raise SgccError(f"{root / 'sgcc.toml'}: unknown [project] setting(s): {', '.join(sorted(unknown))}",
                            hint=f"known: {', '.join(cls.KNOWN)}")
        values = {k: v for k, v in table.items() if k in cls.KNOWN}
        if isinstance(values.get("tests"), str) and values["tests"]:
            values["tests"] = str((root / values["tests"]).resolve())  # sgcc.toml: relative to the project
        values.update({k: v for k, v in overrides.items() if v not in (None, (), [])})
        if isinstance(values.get("bench"), str):
            values["bench"] = [values["bench"]]
        spec = cls(root=root, **values)
        spec.check()
        return spec

    @property
    def command_mode(self) -> bool:
        """Whether the project's own test command is the proof (else stdin tests)."""
        return bool(self.test)

    @property
    def workload(self) -> list[str]:
        """The commands profiled and timed."""
        return list(self.bench) or [self.test]

    def check(self) -> None:
        """Refuse, before anything is built, a configuration that cannot work."""
        where = "under [project] in sgcc.toml, or on the command line"
        for name in ("build", "clean", "test"):
            if not isinstance(getattr(self, name), str):
                raise SgccError(f"[project] {name} must be a string (a shell command)")
        if not isinstance(self.bench, list) or not all(isinstance(b, str) and b.strip() for b in self.bench):
            raise SgccError("[project] bench must be a list of shell commands", hint='bench = ["./prog < big.in"]')
        for name in ("test_timeout", "build_timeout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise SgccError(f"[project] {name} must be a positive number of seconds")
        if not isinstance(self.profile_timeout, (int, float)) or isinstance(self.profile_timeout, bool) \
                or self.profile_timeout < 0:
            raise SgccError("[project] profile_timeout must be a number of seconds (0: a fifth of the budget)")
        if self.bench_is_test not in (True, False, "auto"):
            raise SgccError('[project] bench_is_test must be true, false or "auto"',
                            hint="true: the workload checks its own result (its exit status says); auto: it "
                                 "counts as a test when it prints something")
        if not isinstance(self.lto, bool):
            raise SgccError("[project] lto must be true or false",
                            hint="false leaves out the whole-project candidates with link-time optimisation")
        if not isinstance(self.coverage, (int, float)) or not 0 < self.coverage <= 1:
            raise SgccError("[project] coverage must be a share of the workload, above 0 and at most 1")
        for what, command in (("build", self.build), ("clean", self.clean), ("test", self.test),
                              *(("bench", b) for b in self.bench)):
            if command:
                check_command(command, what)
        if self.bench and not self.test:
            raise SgccError("bench is set but test is not: a workload needs the project's test command as its proof",
                            hint=f'set test = "make test" {where}')
        if self.test:
            if self.tests:
                raise SgccError("give either test (the project's test command) or tests (stdin tests), not both")
            return
        if not self.binary:
            raise SgccError("the project's binary is not named",
                            hint=f'set test = "make test" (the project\'s own tests), or binary = "path/to/program" '
                                 f'with stdin tests, {where}')
        tests = Path(self.tests or self.root / "tests")
        if not tests.is_dir():
            raise SgccError(f"the test directory {tests} does not exist",
                            hint="--tests is relative to the current directory; or set test = \"make test\"")
        self.tests = str(tests.resolve())


def check_command(command: str, what: str) -> None:
    """A command whose first word cannot be found (a program not on PATH) is refused now.
    Words with a slash (``./prog``) name something the build makes: checked after it."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise SgccError(f"the {what} command {command!r} cannot be parsed: {exc}") from None
    if not words:
        raise SgccError(f"the {what} command is empty")
    first = words[0]
    while "=" in first and not first.startswith("=") and len(words) > 1 and "/" not in first.split("=")[0]:
        words = words[1:]  # VAR=value prefixes
        first = words[0]
    if first in SHELL_WORDS or "/" in first or first.startswith("{"):
        return
    if shutil.which(first) is None:
        raise SgccError(f"the {what} command {command!r}: {first} is not found on PATH",
                        hint="install it, or name it by its path")
