"""Layered configuration: command line > SGCC_* environment > project sgcc.toml > user file > defaults.

Every effective value remembers where it came from, so ``sgcc config`` can show it. The
project file is the nearest ``sgcc.toml`` at or above the working directory; the user file is
``config.toml`` in the platform's user configuration directory for sgcc (``SGCC_CONFIG``
names another). Both use an ``[sgcc]`` table or top-level keys.

A bad value (wrong type, unknown choice) is an error that names its source, never a
silent default.

The same layers serve sgcc's commands (:func:`load`) and the compile path every ``make``
compile runs (:func:`compile_settings`): both go through :func:`_resolve`. That is why this
module is lean: plain classes rather than dataclasses, no pathlib or typing at module level,
and TOML is parsed only when a file exists (importing ``tomllib`` costs ~15 ms, most builds
have no sgcc.toml).
"""

from __future__ import annotations

import os

from sgcc.errors import SgccError

TYPE_CHECKING = False  # typing's own import costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from pathlib import Path


def parse_bool(value: object) -> bool:
    """The one reading of a yes/no value (a setting, an ``SGCC_*`` variable): ``1 yes true on``
    or ``0 no false off`` and empty, any case; anything else raises ValueError, and each caller
    says what an unknown value means where it stands."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "yes", "true", "on"):
        return True
    if text in ("0", "no", "false", "off", ""):
        return False
    raise ValueError(f"expected a boolean (1/0, yes/no, true/false, on/off), got {value!r}")


def env_flag(name: str, *, unknown: bool) -> bool:
    """The environment variable ``name`` read by :func:`parse_bool` (unset: false); an unknown
    value counts as ``unknown`` (the side that is safe for that variable)."""
    try:
        return parse_bool(os.environ.get(name, ""))
    except ValueError:
        return unknown


def _float(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number")
    number = float(value)  # type: ignore[arg-type]  # ValueError/TypeError: a bad setting
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"expected a finite number, got {value!r}")
    return number


def _int(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    return int(value)  # type: ignore[call-overload]  # ValueError/TypeError: a bad setting


def _int_or_none(value: object) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    return _int(value)


def _size(value: object) -> str:
    parse_size(value)
    return str(value).strip()


def parse_size(value: object) -> int:
    """Bytes from '256M', '1G', '500k' or a plain number."""
    text = str(value).strip().upper().removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:], 1)
    number = text[:-1] if mult != 1 else text
    try:
        size = int(float(number) * mult)
    except ValueError:
        raise ValueError(f"expected a size like 256M or 1G, got {value!r}") from None
    if size <= 0:
        raise ValueError("size must be positive")
    return size


def _str(value: object) -> str:
    if not isinstance(value, (str, int, float)):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return str(value)


#: Every generator, in the order a run asks them (the search takes their candidates in turn):
#: clang before gcc's variants, since another code generator's units differ most from gcc's
#: (crc32's bit loop: 1.8x from clang's, none from gcc's variants, docs/results.md).
GENERATOR_NAMES = ("replay", "llm", "clang", "variants", "flags", "pgo", "layout")


def _generators(value: object) -> str:
    """A comma-separated generator list: names from GENERATOR_NAMES, 'auto', '-NAME'."""
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    text = str(value).replace(" ", "").lower()
    for word in filter(None, text.split(",")):
        name = word.lstrip("-")
        if name != "auto" and name not in GENERATOR_NAMES:
            raise ValueError(f"unknown generator {name!r} (known: auto, {', '.join(GENERATOR_NAMES)})")
    return text or "auto"


def _budget(value: object) -> str:
    """'300s', '40c', '300s,40c', '5m' or '' (unbounded); checked here, read by :func:`parse_budget`."""
    parse_budget(str(value))
    return str(value).replace(" ", "")


#: Units of a budget's time: ``90s``, ``90sec``, ``5m``, ``5min``, ``5minutes``, ``1h``...
BUDGET_UNITS = (("seconds", 1), ("second", 1), ("secs", 1), ("sec", 1), ("s", 1),
                ("minutes", 60), ("minute", 60), ("mins", 60), ("min", 60), ("m", 60),
                ("hours", 3600), ("hour", 3600), ("hrs", 3600), ("hr", 3600), ("h", 3600))
#: Units of a budget's candidate count: ``40c``, ``40cand``, ``40candidates``. A bare number
#: (``40``) is a count too, the older spelling, which reads like seconds: warned about
#: (:func:`budget_warning`).
CANDIDATE_UNITS = ("candidates", "candidate", "cands", "cand", "c")
#: What a budget may be, for messages.
BUDGET_FORMS = "seconds ('300s', '5m', '5min', '1h'), candidates built ('40c') or both ('300s,40c')"


def _budget_parts(text: str) -> list[str]:
    return [part for part in str(text).replace(" ", "").lower().split(",") if part]


def parse_budget(text: str) -> tuple[float | None, int | None]:
    """(seconds, candidates) from a budget string; None where unbounded."""
    seconds = candidates = None
    units = [*BUDGET_UNITS, *((u, 0) for u in CANDIDATE_UNITS)]
    for part in _budget_parts(text):
        try:
            # The longest unit that ends it ('2minutes' is minutes, not an 's'; '90sec' not a 'c').
            unit = max(((u, n) for u, n in units if part.endswith(u) and part[:-len(u)]),
                       key=lambda un: len(un[0]), default=None)
            if unit is not None and unit[1]:
                seconds = unit[1] * float(part[:-len(unit[0])])
            else:
                candidates = int(part[:-len(unit[0])] if unit is not None else part)
        except ValueError:
            raise ValueError(f"bad budget {part!r}: use {BUDGET_FORMS}") from None
        if (seconds is not None and not 0 < seconds < float("inf")) or (candidates is not None and candidates <= 0):
            raise ValueError(f"budget {part!r} must be positive")  # and a number: not 'nan s', not 'inf s'

    return seconds, candidates


def budget_warning(cfg: Config) -> str | None:
    """The ``sgcc: warning:`` line the effective budget deserves when it holds a bare number
    (``--budget 90`` is 90 candidates built, not 90 seconds, and then the run has no time
    limit), or None. Said by the commands that run the engine (optimize, bench)."""
    text = str(cfg.budget)
    source = cfg.source("budget")
    name = "--budget" if source == "command line" else f"budget (from {source})"
    bare = [part for part in _budget_parts(text) if part.isdigit()]
    if not bare:
        return None
    n = bare[0]
    limit = "" if parse_budget(text)[0] is not None else "; the run has no time limit"
    return (f"sgcc: warning: {name} {text}: '{n}' counts candidates built, not seconds{limit}; "
            f"write '{n}s' for seconds, or '{n}c' for candidates (which says so and silences this)")


def _within(convert, low: float, high: float):
    """``convert``, then a check that the value lies in [low, high] (the range goes in the error)."""
    def checked(value: object):
        v = convert(value)
        if not low <= v <= high:
            raise ValueError(f"{v!r} is out of range ({low:g} to {high:g})")
        return v

    return checked


def _paths(value: object) -> str:
    """Files named by a setting: a TOML list, or a comma-separated string."""
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return ",".join(p.strip() for p in _str(value).split(",") if p.strip())


def _remote_storage(value: object) -> str:
    """'' (none) or a remote storage URL that :func:`sgcc.cache.remote.parse` accepts."""
    text = _str(value).strip()
    if text:
        from sgcc.cache import remote

        remote.parse(text)
    return text


def shown(key: str, value: object) -> object:
    """A setting's value as ``sgcc config`` prints it: a remote storage password replaced by ``***``."""
    if key == "remote_storage" and value and "@" in str(value):
        scheme, sep, rest = str(value).partition("://")
        userinfo, _, hostpart = rest.partition("@")
        user = userinfo.partition(":")[0] if ":" in userinfo else ""
        return f"{scheme}{sep}{user}:***@{hostpart}"
    return value


def _cluster(value: object) -> str:
    """'' (this machine), 'auto', or a Ray address: 'ray://HOST:PORT' or 'HOST:PORT'."""
    text = _str(value).strip()
    if text.lower() in ("", "none", "auto"):
        return "" if text.lower() == "none" else text.lower()
    rest = text[len("ray://"):] if text.startswith("ray://") else text
    host, sep, port = rest.rpartition(":")
    if not sep or not host or "/" in rest or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected ray://HOST:PORT, HOST:PORT, auto or none, got {value!r}")
    return text


def _choice(*choices: str):
    def convert(value: object) -> str:
        text = str(value).strip().lower()
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return text

    return convert


class Setting:
    """One configuration key: its type, default and meaning."""

    __slots__ = ("key", "convert", "default", "help")

    def __init__(self, key: str, convert, default: object, help: str):
        self.key = key
        self.convert = convert
        self.default = default
        self.help = help

    @property
    def env(self) -> str:
        """The environment variable that sets it."""
        return "SGCC_" + self.key.upper().replace("-", "_")


SETTINGS: dict[str, Setting] = {
    s.key: s
    for s in [
        Setting("isa", _choice("flags", "native"), "flags",
                "which instructions candidates may use: what the compile flags promise, or all this CPU has"),
        Setting("min_gain", _within(_float, 0, 10), 0.03,
                "a candidate must be at least this much faster (lower CI bound)"),
        Setting("timing_rounds", _within(_int, 2, 10000), 20, "paired timing rounds per comparison"),
        Setting("race", parse_bool, True,
                "several candidates of one function race each other by successive halving (off: each is "
                "timed against gcc's alone)"),
        Setting("worlds", _within(_int, 2, 8), 2,
                "synthetic environments every test runs in and a winner's timing must hold in (2-8)"),
        Setting("mutants", _within(_int, 0, 10000), 16,
                "generated differential inputs every accepted candidate must also pass (0: none)"),
        Setting("proof", _choice("default", "tested", "bounded", "equivalent"), "default",
                "how a candidate's functions must be proven (docs/proof.md): default (the program's tests, and "
                "the function-level differential test wherever it can run), tested (refuse a candidate whose "
                "functions could not be tested on function states), bounded (also the SMT tier: "
                "equivalent up to an unrolling bound or under a stated memory assumption) or equivalent (the SMT "
                "tier proved it for all inputs); both need the proof extra (pip install 'sgcc[proof]')"),
        Setting("proof_bound", _within(_int, 1, 64), 8,
                "SMT tier (proof = bounded/equivalent): most runs of one basic block on one path before a "
                "verdict is only \"equivalent up to bound k\""),
        Setting("proof_seconds", _within(_float, 1, 3600), 60.0,
                "SMT tier: most seconds per function and candidate (lifting, paths and solving); past "
                "them the function is \"not decided (out of time)\""),
        Setting("function_states", _within(_int, 0, 10**6), 600,
                "function-level differential test: most states per function and candidate (0: off)"),
        Setting("function_seconds", _within(_float, 0, 3600), 4.0,
                "function-level differential test: most seconds per function and candidate"),
        Setting("footprint", _choice("required", "waived"), "required",
                "candidates gcc did not write (replay, llm, clang, other people's cache entries): required "
                "(accepted only once the footprint rule held on their function states; where it cannot run, "
                "in project mode or with function_states = 0, their generators are left out with a note) or "
                "waived (accepted there on the tests alone, and the report says so; docs/proof.md)"),
        Setting("generators", _generators, "auto",
                "candidate generators, comma-separated: auto, replay, llm, variants, flags, pgo, layout, clang; "
                "'auto' is variants,flags,pgo,layout,clang plus llm when a model or endpoint is configured "
                "(clang only where untrusted candidates may run); '-NAME' removes one (auto,-pgo)"),
        Setting("budget", _budget, "",
                "search budget per program: wall-time seconds of the whole run ('300s', '5min'), candidates "
                "built ('40c'), or both ('300s,40c'); empty: unbounded; a bare number ('40') is candidates, "
                "with a warning"),
        Setting("variants", _str, "",
                "variants: flag sets to compile each file under, ';'-separated ('-funroll-loops; -O2'); "
                "empty: the built-in list (-march=... sets only with isa native)"),
        Setting("clang", _str, "",
                "clang: the clang driver the clang generator runs; empty: the ziglang wheel's "
                "(python -m ziglang clang)"),
        Setting("clang_variants", _str, "",
                "clang: option sets to compile each file under, ';'-separated ('-O3; -O2 -fno-vectorize'); "
                "empty: the built-in list (-march=native sets only with isa native)"),
        Setting("model", _str, "", "GGUF model for the llm generator: a path or a name from `sgcc models`"),
        Setting("endpoint", _str, "",
                "OpenAI-compatible chat endpoint for the llm generator (instead of a local model)"),
        Setting("samples", _within(_int, 1, 1000), 1, "llm: answers sampled per function and round (best-of-N)"),
        Setting("rounds", _within(_int, 0, 1000), 0,
                "llm: refinement rounds after the first (feedback from the last attempt)"),
        Setting("temperature", _within(_float, 0, 10), 0.5, "llm: sampling temperature"),
        Setting("max_tokens", _within(_int, 1, 10**7), 2000, "llm: most tokens one answer may have"),
        Setting("context", _within(_int, 0, 10**8), 0,
                "llm: context size in tokens (0: the model's own, at most 8192)"),
        Setting("threads", _within(_int, 0, 4096), 0, "llm: CPU threads for a local model (0: all cores)"),
        Setting("llm_timeout", _within(_float, 0.1, 86400), 600.0, "llm: seconds one remote request may take"),
        Setting("seed", _int_or_none, None, "seed for timing order and sampling (none: random)"),
        Setting("min_sample", _within(_float, 0.001, 3600), 0.05, "seconds of CPU one timing sample must last"),
        Setting("test_timeout", _within(_float, 0.1, 86400), 10.0, "wall-clock seconds one test run may take"),
        Setting("jobs", _within(_int, 0, 4096), 0, "parallel builds and tests (0: one per core)"),
        Setting("keep_temps", parse_bool, False, "keep temporary directories for debugging"),
        Setting("compiler", _str, "", "the real compiler for sgcc's commands (default: gcc from PATH)"),
        Setting("cache", parse_bool, True,
                "use the verdict cache (compiles substitute cached winners; searches store them)"),
        Setting("cache_dir", _str, "", "cache directory (default: the user cache directory; relative paths in "
                                     "sgcc.toml are relative to the file, e.g. 'cache' for a shared project cache)"),
        Setting("cache_size", _size, "256M", "most bytes the cache may hold before least recently used entries go"),
        Setting("accept_isolation_risk", parse_bool, False,
                "run untrusted candidates (llm, replay) even where test runs cannot be fully isolated"),
        Setting("signing_key", _str, "",
                "key file that signs cache entries sgcc validated (default: your own key, made on first use)"),
        Setting("trusted_keys", _paths, "",
                "more key files whose signed cache entries builds may use (a team's), comma-separated"),
        Setting("remote_storage", _remote_storage, "",
                "remote cache behind the local one: 'redis://host:6379/0', '|read-only' to never store there; "
                "its entries are used only if a trusted key signed them"),
        Setting("cluster", _cluster, "",
                "Ray cluster that `sgcc bench` and `sgcc dataset build` run problems on: 'ray://HOST:PORT', "
                "'HOST:PORT' or 'auto' (docs/cluster.md); empty: this machine"),
        Setting("remote_timeout", _within(_int, 1, 10000), 150,
                "milliseconds one remote lookup may take; a server that fails is left alone for a minute"),
    ]
}


class Value:
    """An effective value and the layer it came from."""

    __slots__ = ("value", "source")

    def __init__(self, value: object, source: str):
        self.value = value
        self.source = source


class Config:
    """Effective settings with their sources: ``cfg.KEY`` is a setting's value (of the type
    its :class:`Setting` converts to, declared below for mypy; tests/test_config.py holds the
    declarations to :data:`SETTINGS`), ``cfg.source(KEY)`` where it came from."""

    # Declarations only (no class attributes): reads go to __getattr__, which finds the values.
    isa: str
    min_gain: float
    timing_rounds: int
    race: bool
    worlds: int
    mutants: int
    proof: str
    proof_bound: int
    proof_seconds: float
    function_states: int
    function_seconds: float
    footprint: str
    generators: str
    budget: str
    variants: str
    clang: str
    clang_variants: str
    model: str
    endpoint: str
    samples: int
    rounds: int
    temperature: float
    max_tokens: int
    context: int
    threads: int
    llm_timeout: float
    seed: int | None
    min_sample: float
    test_timeout: float
    jobs: int
    keep_temps: bool
    compiler: str
    cache: bool
    cache_dir: str
    cache_size: str
    accept_isolation_risk: bool
    signing_key: str
    trusted_keys: str
    remote_storage: str
    cluster: str
    remote_timeout: int

    def __init__(self, values: dict[str, Value], files: list):
        self._values = values
        self.files = files
        self.project: dict[str, object] = {}
        self.project_file: Path | None = None

    def __getattr__(self, key: str) -> object:  # a setting declared above (its type there)
        try:
            return self._values[key].value
        except KeyError:
            raise AttributeError(key) from None

    def source(self, key: str) -> str:
        """Where ``key``'s value came from."""
        return self._values[key].source

    def items(self):
        """(key, value, source) of every setting."""
        return [(k, v.value, v.source) for k, v in self._values.items()]


def _user_file() -> str:
    from sgcc import dirs

    return dirs.config_file()


def _project_file(start: str | None = None) -> str | None:
    here = os.path.realpath(start or os.getcwd())
    while True:
        candidate = os.path.join(here, "sgcc.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def user_config_path():
    """The user's configuration file (SGCC_CONFIG overrides the platform location), a Path."""
    from pathlib import Path

    return Path(_user_file())


def project_config_path(start=None):
    """The nearest sgcc.toml at or above ``start`` (the working directory by default), a Path."""
    from pathlib import Path

    found = _project_file(None if start is None else os.fspath(start))
    return None if found is None else Path(found)


def _read_toml(path: str) -> dict[str, object]:
    import tomllib

    try:
        # Bounded and regular: a configuration file that is a FIFO or /dev/zero must not hang.
        from sgcc.fsutil import read_bounded

        data = tomllib.loads(read_bounded(path, 1 << 20, what="configuration file").decode("utf-8"))
    except SgccError:
        raise
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SgccError(f"cannot read configuration file {path}", cause=exc,
                        hint="fix or remove the file") from exc
    table = data.get("sgcc", data)
    if not isinstance(table, dict):
        raise SgccError(f"{path}: [sgcc] must be a table")
    return table


def _resolve(cli: dict[str, object] | None, cwd: str | None):
    """Every setting through the layers: (values, files read, project file, [project] table)."""
    layers: list[tuple[str, dict[str, object]]] = []
    files: list[str] = []
    user = _user_file()
    if os.path.isfile(user):
        layers.append((f"user file {user}", _read_toml(user)))
        files.append(user)
    project = _project_file(cwd)
    if project is not None:
        layers.append((f"project file {project}", _read_toml(project)))
        files.append(project)
    env: dict[str, object] = {s.key: os.environ[s.env] for s in SETTINGS.values() if s.env in os.environ}
    layers.append(("environment", env))
    layers.append(("command line", {k: v for k, v in (cli or {}).items() if v is not None}))

    values = {key: Value(s.default, "default") for key, s in SETTINGS.items()}
    project_table: dict[str, object] = {}
    for source, table in layers:
        for raw_key, raw in table.items():
            key = raw_key.replace("-", "_")
            if key == "project" and source.startswith("project") and isinstance(raw, dict):
                project_table = raw  # [project]: how to build and test it (sgcc optimize --project)
                continue
            setting = SETTINGS.get(key)
            if setting is None:
                if source.startswith(("user", "project")):
                    raise SgccError(f"{source}: unknown setting '{raw_key}'",
                                    hint="`sgcc config` lists the settings")
                continue
            try:
                value = setting.convert(raw)
            except (TypeError, ValueError) as exc:
                where = setting.env if source == "environment" else source
                raise SgccError(f"bad value for {raw_key} in {where}: {exc}") from exc
            if key == "cache_dir" and value and source.startswith(("user", "project")):
                # Relative to the file that says it: `cache_dir = "cache"` in sgcc.toml is the
                # project's own cache/ directory wherever make runs.
                value = os.path.realpath(os.path.join(os.path.dirname(source.split(" file ", 1)[1]), value))
            values[key] = Value(value, source)
    return values, files, project, project_table


def load(cli: dict[str, object] | None = None, *, cwd=None) -> Config:
    """Resolve every setting through the layers; ``cli`` holds values given on the command line
    (None means "not given")."""
    from pathlib import Path

    values, files, project, project_table = _resolve(cli, None if cwd is None else os.fspath(cwd))
    cfg = Config(values, [Path(f) for f in files])
    cfg.project = project_table
    cfg.project_file = None if project is None else Path(project)
    return cfg


def _effective_cache_dir(value: str) -> str:
    if value:
        return os.path.abspath(value)
    from sgcc import dirs

    return os.path.abspath(dirs.cache_root())


def cache_dir(cfg: Config) -> str:
    """The effective cache directory (the same one the compile path uses)."""
    return _effective_cache_dir(cfg.cache_dir)


def compile_settings() -> dict:
    """What the compile path needs (``cache``, ``cache_dir``, ``isa``, keys, remote), through the same layers
    as :func:`load`; raises :class:`SgccError` on a bad file or value, like every command."""
    values, _, _, _ = _resolve(None, None)
    return {"cache": values["cache"].value, "isa": values["isa"].value,
            "cache_dir": _effective_cache_dir(values["cache_dir"].value),
            "signing_key": values["signing_key"].value, "trusted_keys": values["trusted_keys"].value,
            "remote_storage": values["remote_storage"].value, "remote_timeout": values["remote_timeout"].value}
