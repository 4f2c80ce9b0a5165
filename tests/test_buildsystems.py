"""The build-system recipes of docs/build-systems.md, each run with the real tool on the bundled
project tests/projects/hotsum (a static library with one hot function, ``hot_mix``, and a
program that links it).

For every recipe, three builds in the same directory path (so every path the objects record
is the same):

1. plain gcc: the reference objects, archive and program, and the compile command the build
   system ran for src/hot.c (from its compile database, or ``make -n``);
2. through sgcc with an empty cache: every object, the archive and the program are gcc's, byte
   for byte, and sgcc's log shows that the compiles did go through sgcc;
3. through sgcc with a winner for ``hot_mix`` in the cache (stored under the key that exact
   compile has, as ``sgcc optimize`` would store it): the build contains the winner, in
   ``hot_mix`` and nowhere else, and the program prints what gcc's prints.

The tools come from the README's set-up command (cmake, meson and ninja are in the ``test``
extra); a test whose tool is missing is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.cache import keys
from sgcc.cache import store as cache
from sgcc.cache.entry import Applied, Entry
from sgcc.gcc import args as gccargs

PROJECT = Path(__file__).parent / "projects" / "hotsum"
BIN = Path(sys.executable).parent  # the venv's scripts: sgcc, cmake, meson, ninja
HOT = "hot_mix"


def _tool(name: str) -> str:
    found = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        pytest.skip(f"{name} is not installed (the README's set-up command installs it)")
    return found


def _env(cache_dir: Path | None = None, log: Path | None = None, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("SGCC_") and k != "SGCC_CONFIG") and k not in ("MAKEFLAGS", "MFLAGS", "CC", "CFLAGS")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if cache_dir is not None:
        env["SGCC_CACHE_DIR"] = str(cache_dir)
    if log is not None:
        env["SGCC_LOGFILE"] = str(log)
    env.update(extra)
    return env


def _run(argv: list[str], cwd: Path, env: dict, timeout: int = 300) -> proc.Result:
    result = proc.run(argv, cwd=cwd, env=env, timeout=timeout)
    assert result.returncode == 0, f"{argv}: {result.stdout.decode()[-2000:]}\n{result.stderr.decode()[-3000:]}"
    return result


# --- the recipes: each builds a fresh copy of the project at ``work`` with ``cc`` ("gcc" or
# the sgcc executable) the way the docs say, and returns the directory it built in.

def _make(work: Path, cc: str, env: dict) -> Path:
    # `make CC=...`: a command-line variable overrides the makefile's `CC = gcc`.
    _run(["make", "-s", f"CC={cc}"], work, env)
    return work


def _make_env_only(work: Path, cc: str, env: dict) -> Path:
    # `CC=... make`: the environment loses to the makefile's own `CC = gcc`.
    _run(["make", "-s"], work, {**env, "CC": cc})
    return work


def _cmake_launcher(work: Path, cc: str, env: dict) -> Path:
    build = work / "build"
    launcher = [] if cc == "gcc" else [f"-DCMAKE_C_COMPILER_LAUNCHER={cc}"]
    _run([_tool("cmake"), "-S", ".", "-B", "build", "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}",
          "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", *launcher], work, env)
    _run([_tool("cmake"), "--build", "build"], work, env)
    return build


def _cmake_compiler(work: Path, cc: str, env: dict) -> Path:
    build = work / "build"
    _run([_tool("cmake"), "-S", ".", "-B", "build", "-G", "Unix Makefiles", f"-DCMAKE_C_COMPILER={cc}",
          "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"], work, env)
    _run([_tool("cmake"), "--build", "build"], work, env)
    return build


def _meson(work: Path, cc: str, env: dict) -> Path:
    _tool("ninja")
    _run([_tool("meson"), "setup", "build", "--buildtype=release"], work, {**env, "CC": cc})
    _run([_tool("meson"), "compile", "-C", "build"], work, env)
    return work / "build"


def _meson_native(work: Path, cc: str, env: dict) -> Path:
    # The compiler from a native file instead of the environment.
    (work / "cc.ini").write_text(f"[binaries]\nc = ['{cc}']\n")
    _tool("ninja")
    _run([_tool("meson"), "setup", "build", "--native-file", "cc.ini", "--buildtype=release"], work, env)
    _run([_tool("ninja"), "-C", "build"], work, env)
    return work / "build"


def _autotools(work: Path, cc: str, env: dict) -> Path:
    # A VPATH build, as `mkdir build && cd build && ../configure CC=sgcc && make`.
    build = work / "_build"
    build.mkdir()
    _run(["../configure", f"CC={cc}"], build, env)
    _run(["make", "-s"], build, env)
    return build


def _make_lto(work: Path, cc: str, env: dict) -> Path:
    # LTO with make: -flto in the flags of compiles and links; gcc-ar writes the archive's
    # index of LTO symbols (the linker plugin reads it).
    _run(["make", "-s", f"CC={cc}", "CFLAGS=-O2 -Wall -flto=auto", "AR=gcc-ar"], work, env)
    return work


def _cmake_lto(work: Path, cc: str, env: dict) -> Path:
    # CMake's own switch for LTO; the launcher form needs sgcc as the linker's launcher too,
    # since the code LTO ships is made at the link.
    launcher = [] if cc == "gcc" else [f"-DCMAKE_C_COMPILER_LAUNCHER={cc}", f"-DCMAKE_C_LINKER_LAUNCHER={cc}"]
    _run([_tool("cmake"), "-S", ".", "-B", "build", "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}",
          "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON", *launcher], work, env)
    _run([_tool("cmake"), "--build", "build"], work, env)
    return work / "build"


def _meson_lto(work: Path, cc: str, env: dict) -> Path:
    _tool("ninja")
    _run([_tool("meson"), "setup", "build", "--buildtype=release", "-Db_lto=true"], work, {**env, "CC": cc})
    _run([_tool("meson"), "compile", "-C", "build"], work, env)
    return work / "build"


LTO_RECIPES = {"make": _make_lto, "cmake": _cmake_lto, "meson": _meson_lto}


RECIPES = {"make": _make, "cmake-launcher": _cmake_launcher, "cmake-compiler": _cmake_compiler,
           "meson": _meson, "meson-native": _meson_native, "autotools": _autotools}


def _fresh(work: Path) -> None:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(PROJECT, work)


def _products(build: Path) -> dict[str, bytes]:
    """The project's objects, archive and program (not the build systems' own probes)."""
    out = {}
    for p in sorted(build.rglob("*")):
        if not p.is_file() or "CompilerId" in str(p) or "meson-private" in p.parts:
            continue
        if p.name in ("libhot.a", "hotsum") or (p.suffix == ".o" and any(n in p.name for n in ("hot", "fill", "main"))):
            out[str(p.relative_to(build))] = p.read_bytes()
    assert any(n.endswith("hotsum") for n in out) and any(n.endswith("libhot.a") for n in out), sorted(out)
    return out


def _hot_object(products: dict[str, bytes]) -> str:
    (name,) = [n for n in products if n.endswith(".o") and "hot" in Path(n).name]
    return name


def _hot_compile(build: Path) -> tuple[Path, list[str]]:
    """The command the build system ran for src/hot.c, and the directory it ran in."""
    db = build / "compile_commands.json"
    if db.exists():
        for entry in json.loads(db.read_text()):
            if entry["file"].endswith("hot.c"):
                argv = entry.get("arguments") or shlex.split(entry["command"])
                return Path(entry["directory"]), argv
        raise AssertionError(f"no compile of hot.c in {db}")
    # make: what it runs, from a fresh copy of the makefile's view of the tree.
    dry = _run(["make", "-n", "-B", "CC=gcc"], build, _env())
    for line in dry.stdout.decode().splitlines():
        if "hot.c" in line and " -c " in line:
            return build, shlex.split(line)
    raise AssertionError(dry.stdout.decode())


def _seed_winner(cache_dir: Path, directory: Path, argv: list[str]) -> str:
    """Store a winner for hot_mix (gcc's code with a leading nop) under the key sgcc computes
    for exactly this compile, as ``sgcc optimize`` stores its winners. Returns the key."""
    compiler = shutil.which(argv[0]) or argv[0]
    inv = gccargs.parse(argv[1:])
    assert inv.eligible, (argv, inv.reason)
    flags = inv.flags_without_inputs(drop_dependency_flags=True)
    asm = _run([compiler, *flags, "-S", "-o", "-", inv.sources[0].path], directory, _env()).stdout.decode()
    unit = next(u for u in AsmFile.parse(asm).units if u.name == HOT)
    winner = unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n\tnop\n", 1)
    assert winner != unit.text
    key = keys.entry_key(keys.context(compiler, flags, "flags"), keys.tu_digest(asm))
    cache.Store(cache_dir).update(key, lambda old: Entry(applied=Applied({HOT: winner})))
    return key


def _mnemonics(obj: bytes, tmp: Path) -> dict[str, list[str]]:
    """Each function's instruction mnemonics (addresses and operands left out)."""
    path = tmp / "o.o"
    path.write_bytes(obj)
    text = _run(["objdump", "-d", "--no-show-raw-insn", str(path)], tmp, _env()).stdout.decode()
    funcs: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.endswith(">:"):
            current = line.split("<", 1)[1][:-2]
            funcs[current] = []
        elif current and "\t" in line and line.strip():
            insn = line.split("\t", 1)[1].split()
            if insn:
                funcs[current].append(insn[0])
    return funcs


@pytest.fixture(scope="module")
def built(tmp_path_factory, sgcc_exe):
    """recipe -> the three builds' products, logs and program outputs (built once per recipe)."""
    results: dict[str, dict] = {}

    def get(recipe: str) -> dict:
        if recipe in results:
            return results[recipe]
        base = tmp_path_factory.mktemp(recipe)
        work = base / "hotsum"
        build = RECIPES[recipe]
        _fresh(work)
        ref_dir = build(work, "gcc", _env())
        ref = _products(ref_dir)
        ref_out = _run([str(ref_dir / "hotsum")], ref_dir, _env()).stdout
        directory, argv = _hot_compile(ref_dir)
        runs = {}
        for name, seeded in (("empty", False), ("winner", True)):
            cache_dir, log = base / f"cache-{name}", base / f"{name}.log"
            key = _seed_winner(cache_dir, directory, argv) if seeded else None
            _fresh(work)
            out_dir = build(work, sgcc_exe, _env(cache_dir, log))
            runs[name] = {"products": _products(out_dir), "log": log.read_text() if log.exists() else "",
                          "out": _run([str(out_dir / "hotsum")], out_dir, _env()).stdout, "key": key}
        results[recipe] = {"ref": ref, "ref_out": ref_out, "tmp": base, **runs}
        return results[recipe]

    return get


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_a_build_through_sgcc_with_no_winners_is_gccs_build(built, recipe):
    r = built(recipe)
    ours = r["empty"]
    assert sorted(ours["products"]) == sorted(r["ref"])
    for name, data in r["ref"].items():
        assert ours["products"][name] == data, f"{name} differs from gcc's"
    assert ours["out"] == r["ref_out"]
    # The compiles did go through sgcc (a recipe that silently built with gcc fails here).
    assert ours["log"].count("] eligible") >= 3, ours["log"]
    if recipe == "cmake-launcher":  # called as `sgcc /usr/bin/cc ...`
        assert ours["log"].count(": prefix /") >= 3, ours["log"]


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_a_build_through_sgcc_contains_the_cached_winner_and_nothing_else(built, recipe):
    r = built(recipe)
    ours = r["winner"]
    assert f"substituted {HOT} in" in ours["log"], ours["log"]
    assert ours["out"] == r["ref_out"]  # the program still computes what gcc's does
    hot = _hot_object(r["ref"])
    for name, data in r["ref"].items():
        if name == hot:
            continue
        if name.endswith(".o"):
            assert ours["products"][name] == data, f"{name} differs from gcc's"
    assert ours["products"][hot] != r["ref"][hot]
    theirs, mine = _mnemonics(r["ref"][hot], r["tmp"]), _mnemonics(ours["products"][hot], r["tmp"])
    assert sorted(mine) == sorted(theirs)
    for func, insns in theirs.items():
        assert mine[func] == (["nop", *insns] if func == HOT else insns), func
    # The program carries it too, and so does the archive unless it is a thin one (Meson's),
    # which only names the object.
    prog = next(n for n in r["ref"] if n.endswith("hotsum"))
    assert ours["products"][prog] != r["ref"][prog]
    lib = next(n for n in r["ref"] if n.endswith("libhot.a"))
    assert (ours["products"][lib] != r["ref"][lib]) != r["ref"][lib].startswith(b"!<thin>\n")


def test_cc_in_the_environment_does_not_reach_a_makefile_that_sets_cc(tmp_path, sgcc_exe):
    """The friction the recipe exists for: `CC=sgcc make` builds with the makefile's gcc (no
    compile reaches sgcc); `make CC=sgcc` builds through sgcc."""
    work = tmp_path / "hotsum"
    _fresh(work)
    log = tmp_path / "env.log"
    _make_env_only(work, sgcc_exe, _env(tmp_path / "cache", log))
    assert not log.exists() or "eligible" not in log.read_text()
    _fresh(work)
    _make(work, sgcc_exe, _env(tmp_path / "cache", log))
    assert log.read_text().count("] eligible") == 3


def test_the_launcher_runs_exactly_the_compiler_it_names(tmp_path, sgcc_exe):
    """`sgcc COMPILER args` (CMake's launcher form) runs COMPILER, not gcc from PATH; a compiler
    that is not gcc gets the command untouched, even where the cache holds a winner for it."""
    fake = tmp_path / "bin" / "clang"
    fake.parent.mkdir()
    calls = tmp_path / "calls"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {calls}\nexec gcc \"$@\"\n")
    fake.chmod(0o755)
    src = tmp_path / "hot.c"
    shutil.copy(PROJECT / "src" / "hot.c", src)
    shutil.copy(PROJECT / "src" / "hot.h", tmp_path / "hot.h")
    cache_dir, log = tmp_path / "cache", tmp_path / "log"
    _seed_winner(cache_dir, tmp_path, [str(fake), "-O2", "-c", "hot.c"])
    calls.unlink()
    env = _env(cache_dir, log)
    _run([sgcc_exe, str(fake), "-O2", "-c", "hot.c", "-o", "ours.o"], tmp_path, env)
    assert calls.read_text() == "-O2 -c hot.c -o ours.o\n"  # once, as given
    assert "pass-through (not-gcc)" in log.read_text()
    _run(["gcc", "-O2", "-c", "hot.c", "-o", "gcc.o"], tmp_path, _env())
    assert (tmp_path / "ours.o").read_bytes() == (tmp_path / "gcc.o").read_bytes()  # no winner in it
    # A bare name found in PATH is a launcher's compiler too.
    calls.unlink()
    _run([sgcc_exe, "clang", "-O2", "-c", "hot.c", "-o", "bare.o"], tmp_path,
         {**env, "PATH": f"{fake.parent}{os.pathsep}{env['PATH']}"})
    assert calls.read_text() == "-O2 -c hot.c -o bare.o\n"


def test_a_launcher_in_front_of_sgcc_runs_sgcc_once(tmp_path, sgcc_exe, masquerade_bin):
    """CMake's launcher with CC=sgcc (how `sgcc optimize --project` runs a CMake build) calls
    `sgcc sgcc /usr/bin/cc ...`; a masquerade link found as CMake's compiler gives
    `sgcc .../gcc ...`. Both compile once, with the real gcc, and give gcc's object."""
    shutil.copy(PROJECT / "src" / "hot.c", tmp_path / "hot.c")
    shutil.copy(PROJECT / "src" / "hot.h", tmp_path / "hot.h")
    _run(["gcc", "-O2", "-c", "hot.c", "-o", "gcc.o"], tmp_path, _env())
    log = tmp_path / "log"
    for n, words in enumerate([[sgcc_exe, "/usr/bin/cc"], ["sgcc"], [sgcc_exe, sgcc_exe],
                               [str(masquerade_bin / "gcc")]]):
        log.unlink(missing_ok=True)
        _run([sgcc_exe, *words, "-O2", "-c", "hot.c", "-o", f"{n}.o"], tmp_path, _env(tmp_path / "cache", log))
        assert (tmp_path / f"{n}.o").read_bytes() == (tmp_path / "gcc.o").read_bytes(), words
        text = log.read_text()
        assert text.count("] eligible") == 1 and "sgcc" not in text.split(": ", 1)[1].split(" compile")[0], text


@pytest.mark.parametrize("recipe", list(LTO_RECIPES))
def test_an_lto_build_through_sgcc_is_gccs_until_a_partition_has_a_winner(tmp_path, sgcc_exe, recipe):
    """docs/build-systems.md's LTO recipes. The program gcc's LTO link makes is sgcc's byte for
    byte with sgcc's assembler front in place (a recorded build runs every partition through
    it); with a winner stored for the largest function of the link's partitions (main, with
    hot_mix inlined into it across files), under the key that recorded build gave its
    partition, the program carries the winner there and nowhere else."""
    build = LTO_RECIPES[recipe]
    work = tmp_path / "hotsum"
    _fresh(work)
    ref_dir = build(work, "gcc", _env())
    ref = (ref_dir / "hotsum").read_bytes()
    ref_out = _run([str(ref_dir / "hotsum")], ref_dir, _env()).stdout
    record = tmp_path / "record" / "compiles.jsonl"
    record.parent.mkdir()
    cache_dir, log = tmp_path / "cache", tmp_path / "sgcc.log"
    _fresh(work)
    out_dir = build(work, sgcc_exe, _env(cache_dir, log, SGCC_RECORD=str(record)))
    assert (out_dir / "hotsum").read_bytes() == ref, "with nothing to substitute, gcc's program"
    assert "routing the ltrans assembly through sgcc" in log.read_text(), log.read_text()
    partitions = [json.loads(line) for line in (record.parent / "ltrans.jsonl").read_text().splitlines()]
    units = [(u, p) for p in partitions for u in AsmFile.parse(Path(p["asm"]).read_text()).units]
    unit, part = max(units, key=lambda up: len(up[0].text))
    winner = unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n\tnop\n", 1)
    assert winner != unit.text
    cache.Store(cache_dir).update(part["key"], lambda old: Entry(applied=Applied({unit.name: winner})))
    _fresh(work)
    log.unlink()
    out_dir = build(work, sgcc_exe, _env(cache_dir, log))
    assert f"substituted {unit.name}" in log.read_text(), log.read_text()
    assert _run([str(out_dir / "hotsum")], out_dir, _env()).stdout == ref_out
    theirs = _mnemonics(ref, tmp_path)
    mine = _mnemonics((out_dir / "hotsum").read_bytes(), tmp_path)
    assert mine[unit.name] == ["nop", *theirs[unit.name]]
    assert {f: i for f, i in mine.items() if f != unit.name} == {f: i for f, i in theirs.items() if f != unit.name}
