"""Tests for sgcc.asm.units against real gcc output.

Every C file in tests/asm_corpus is compiled with the real gcc under several flag sets; the
split must give the input back byte for byte, find the functions we know are there (clones
and cold partitions included), and swapping units for their own text (or for text with
clashing labels) must still assemble, link and behave exactly like the original program.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

from sgcc.asm.units import AsmFile, Unit, parse_file
from sgcc.proc import run

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

CORPUS = Path(__file__).parent / "asm_corpus"
STEMS = sorted(p.stem for p in CORPUS.glob("*.c"))

FLAG_SETS = {
    "O3": ["-O3"],
    "O2": ["-O2"],
    "O3-g": ["-O3", "-g"],
    "O3-fPIC": ["-O3", "-fPIC"],
    "O3-sections": ["-O3", "-ffunction-sections", "-fdata-sections"],
    "Os": ["-Os"],
    "O0": ["-O0"],
}
OPTIMIZED = {"O3", "O2", "O3-g", "O3-fPIC", "O3-sections"}
# Flag sets where gcc 12 makes the constant-propagation clones of recursion.c and
# switch_table.c (not under -fPIC, where the global functions may be interposed).
O3_NOPIC = {"O3", "O3-g", "O3-sections"}

# Units every flag set must produce.
ALWAYS = {
    "alloca_vla": {"vla_sum", "alloca_copy", "main"},
    "assert_split": {"flush_cache", "prepare", "main"},
    "callbacks": {"run", "protected_call", "main"},
    "char_consts": {"hash_char", "semi_char", "in_string", "main"},
    "clones": {"refill", "main"},
    "cold_paths": {"fail", "checked_div", "sum_positive", "main"},
    "computed_goto": {"run", "main"},
    "ctor_dtor": {"setup", "teardown", "early_setup", "main"},
    "float_consts": {"poly", "scale", "fpoly", "magnitude", "saxpy", "main"},
    "globals": {"twice", "thrice", "step", "name_of", "main"},
    "inline_asm": {"asm_triple", "add_asm", "tagged", "main"},
    "lib_nomain": {"level_name", "clamp_byte", "lerp", "my_strlen"},
    "partial_inline": {"a1", "a2", "a3", "a4", "main"},
    "recursion": {"fib", "ackermann", "is_even", "is_odd", "gcd", "main"},
    "sections": {"in_custom", "hot_loop", "report", "main"},
    "static_funcs": {"cmp_desc", "hash", "main"},
    "strings": {"greet", "farewell", "count_vowels", "main"},
    "switch_table": {"dispatch", "lookup", "main"},
    "tls": {"bump", "history_sum", "main"},
    "varargs": {"sum_ints", "mean", "say", "main"},
    "weak_alias": {"hook", "real_impl", "main"},
}
# Compiler clones expected at -O2/-O3.
CLONES = {
    "clones": {"mix.constprop.0", "apply.constprop.0.isra.0"},
    "partial_inline": {"grow.part.0"},
    "static_funcs": {"fill.constprop.0"},
    "weak_alias": {"local_impl.constprop.0"},
}
CLONES_O3_NOPIC = {
    "recursion": {"ackermann.constprop.0"},
    "switch_table": {"dispatch.constprop.0"},
}
# Functions with a NAME.cold partition at -O2/-O3.
COLD = {
    "clones": {"refill"},
    "cold_paths": {"sum_positive"},
    "switch_table": {"dispatch"},
}
COLD_O3_NOPIC = {"switch_table": {"dispatch.constprop.0"}}
# Files whose `main` is a deterministic program (everything but the library file).
PROGRAMS = [s for s in STEMS if s != "lib_nomain"]

_COLD_LABEL = re.compile(r"^([^\s:#]+?)\.cold(?:\.\d+)?:", re.M)


def test_corpus_is_complete():
    assert set(STEMS) == set(ALWAYS), "every corpus file needs its expected units listed"
    assert len(STEMS) >= 14


# --------------------------------------------------------------------------- helpers


class Compiler:
    """gcc -S output of corpus files, compiled once per session."""

    def __init__(self, root: Path):
        self.root = root
        self._cache: dict[tuple[str, str], str] = {}

    def asm(self, stem: str, key: str, flags: list[str] | None = None) -> str:
        if (stem, key) not in self._cache:
            out = self.root / f"{stem}.{key}.s"
            argv = ["gcc", *(flags if flags is not None else FLAG_SETS[key]), "-S", "-o", out, CORPUS / f"{stem}.c"]
            run(argv, timeout=120, check=True)
            self._cache[stem, key] = out.read_text()
        return self._cache[stem, key]


@pytest.fixture(scope="session")
def gcc(tmp_path_factory) -> Compiler:
    return Compiler(tmp_path_factory.mktemp("asm"))


def build(asm_text: str, where: Path, name: str, link: bool) -> tuple[set[tuple[str, str]], bytes | None]:
    """Assemble (and link, and run) ``asm_text``; return its defined symbols and the output."""
    src = where / f"{name}.s"
    obj = where / f"{name}.o"
    src.write_text(asm_text)
    run(["gcc", "-c", "-o", obj, src], timeout=120, check=True)
    nm = run(["nm", "--defined-only", obj], timeout=60, check=True).stdout.decode()
    symbols = {(parts[1], parts[2]) for parts in (line.split() for line in nm.splitlines()) if len(parts) == 3}
    if not link:
        return symbols, None
    exe = where / name
    run(["gcc", "-o", exe, obj, "-lm"], timeout=120, check=True)
    result = run([exe], timeout=60, cwd=where)
    return symbols, result.stdout + f"\nexit {result.returncode}\n".encode()


def owner_of(asm: AsmFile, line: int) -> Unit | None:
    for unit in asm.units:
        if any(line in piece for piece in unit.pieces):
            return unit
    return None


def line_of(asm: AsmFile, pattern: str) -> int:
    rx = re.compile(pattern)
    hits = [i for i, line in enumerate(asm.lines) if rx.search(line)]
    assert len(hits) == 1, (pattern, hits)
    return hits[0]


def relabel(text: str, names: list[str]) -> str:
    """Rename the ``.L<digits>`` labels ``text`` defines to ``names`` in turn (then fresh ones)."""
    mapping: dict[str, str] = {}
    for label in re.findall(r"^(\.L\d+):", text, re.M):
        if label not in mapping:
            n = len(mapping)
            mapping[label] = names[n] if n < len(names) else f".L{90000 + n}"
    return re.sub(r"\.L\d+\b", lambda m: mapping.get(m.group(0), m.group(0)), text)


def local_labels(text: str) -> list[str]:
    return re.findall(r"^(\.L\d+):", text, re.M)


# --------------------------------------------------------------------------- split and join


def check_structure(asm: AsmFile, text: str) -> None:
    """Invariants every parse must satisfy."""
    assert asm.join() == text
    assert asm.join({}) == text
    seen: set[int] = set()
    for unit in asm.units:
        assert not re.search(r"\.cold(\.\d+)?$", unit.name)
        assert 0 <= unit.main < len(unit.pieces)
        assert [p.start for p in unit.pieces] == sorted(p.start for p in unit.pieces)
        for piece in unit.pieces:
            assert 0 <= piece.start < piece.stop <= len(asm.lines)
            lines = set(piece)
            assert not lines & seen, f"{unit.name} overlaps another unit"
            seen |= lines
        assert unit.text.endswith("\n")
        assert unit.lines == unit.text.count("\n")
        assert asm.unit(unit.name) is unit
        main = "".join(asm.lines[unit.span.start : unit.span.stop])
        assert re.search(rf"^{re.escape(unit.name)}:", main, re.M)
        assert re.search(rf"\.size\s+{re.escape(unit.name)}, \.-{re.escape(unit.name)}\s*$", main, re.M)
        # Self-contained: the text opens with a section directive.
        assert re.match(r"\s*\.(text|data|bss|section)\b", unit.text), unit.text[:200]
    # Every cold partition lives inside its parent's main piece.
    for m in _COLD_LABEL.finditer(text):
        line = text.count("\n", 0, m.start())
        parent = asm.unit(m.group(1))
        assert line in parent.span, f"{m.group(0)} outside {parent.name}"
        assert m.group(0) in parent.text


@pytest.mark.parametrize("key", list(FLAG_SETS))
@pytest.mark.parametrize("stem", STEMS)
def test_split_join(gcc, stem, key):
    text = gcc.asm(stem, key)
    asm = AsmFile.parse(text)
    check_structure(asm, text)
    names = {u.name for u in asm.units}
    expected = set(ALWAYS[stem])
    cold = set()
    if key in OPTIMIZED:
        expected |= CLONES.get(stem, set())
        cold |= COLD.get(stem, set())
    if key in O3_NOPIC:
        expected |= CLONES_O3_NOPIC.get(stem, set())
        cold |= COLD_O3_NOPIC.get(stem, set())
    assert expected <= names, f"missing {expected - names}"
    found_cold = {m.group(1) for m in _COLD_LABEL.finditer(text)}
    assert cold <= found_cold, f"gcc made no cold part for {cold - found_cold}"
    if key in OPTIMIZED and "main" in names:
        assert re.search(r"^\t\.section\t\.text\.startup\b", asm.unit("main").text, re.M)
    if key == "O3-sections":
        # Each function in its own section (bar the ones placed by attribute or top-level asm).
        for unit in asm.units:
            if unit.name not in {"asm_triple", "in_custom"}:
                pattern = rf"^\t\.section\t\.text\.(?:startup\.|unlikely\.|hot\.|exit\.)?{re.escape(unit.name)},"
                assert re.search(pattern, unit.text, re.M), unit.name
    if key in {"O3", "O2"} and stem == "switch_table":
        assert re.search(r"^\.L\d+:\n\t\.long\t\.L\d+-\.L\d+$", text, re.M), "expected a jump table"


@pytest.mark.parametrize("stem", STEMS)
def test_split_join_march_native(gcc, stem):
    text = gcc.asm(stem, "O3-native", ["-O3", "-march=native"])
    asm = AsmFile.parse(text)
    check_structure(asm, text)
    assert ALWAYS[stem] <= {u.name for u in asm.units}


def test_crlf_and_missing_final_newline(gcc):
    text = gcc.asm("cold_paths", "O3")
    names = [u.name for u in AsmFile.parse(text).units]
    crlf = text.replace("\n", "\r\n")
    asm = AsmFile.parse(crlf)
    assert asm.join() == crlf
    assert [u.name for u in asm.units] == names
    bare = text.rstrip("\n")
    asm = AsmFile.parse(bare)
    assert asm.join() == bare
    assert [u.name for u in asm.units] == names


def test_private_and_shared_constants(gcc):
    asm = AsmFile.parse(gcc.asm("strings", "O3"))
    shared = line_of(asm, r'\.string\t"shared: %s\\n"')
    assert owner_of(asm, shared) is None
    assert owner_of(asm, line_of(asm, r'"private to greet"')).name == "greet"
    farewell = owner_of(asm, line_of(asm, r'"private to farewell'))
    assert farewell.name == "farewell"
    # The aligned string brings its alignment and gets its section named in the unit text.
    text = farewell.text
    assert re.search(r'\.section\t\.rodata\.str1\.8,"aMS",@progbits,1\n\t\.align 8\n\.LC\d+:\n\t\.string\t"private to farewell', text)
    assert owner_of(asm, line_of(asm, r'"aeiouAEIOU"')).name == "count_vowels"

    asm = AsmFile.parse(gcc.asm("float_consts", "O3"))
    poly = asm.unit("poly")
    assert len(poly.pieces) > 1
    assert "\t.section\t.rodata.cst8," in poly.text
    # 2.5 is used by poly and scale: one shared constant that stays in the frame.
    scale = asm.unit("scale")
    (ref,) = re.findall(r"(\.LC\d+)\(%rip\)", scale.text)
    assert f"{ref}:" not in scale.text and f"{ref}:" not in poly.text
    assert owner_of(asm, line_of(asm, rf"^{re.escape(ref)}:")) is None


def test_unit_text_synthesizes_sections():
    text = (
        "\t.text\n"
        "\t.section\t.rodata.str1.1,\"aMS\",@progbits,1\n"
        ".LC0:\n"
        "\t.string\t\"only f\"\n"
        "\t.text\n"
        "\t.p2align 4\n"
        "\t.globl\tf\n"
        "\t.type\tf, @function\n"
        "f:\n"
        "\tleaq\t.LC0(%rip), %rax\n"
        "\tret\n"
        "\t.size\tf, .-f\n"
        "\t.p2align 4\n"
        "\t.type\tg, @function\n"
        "g:\n"
        "\tret\n"
        "\t.size\tg, .-g\n"
        "\t.section\t.rodata\n"
        "obj:\n"
        "\t.long\t1\n"
    )
    asm = AsmFile.parse(text)
    assert [u.name for u in asm.units] == ["f", "g"]
    f, g = asm.units
    assert f.pieces == [range(2, 4), range(4, 12)] and f.main == 1
    assert f.text == "\t.section\t.rodata.str1.1,\"aMS\",@progbits,1\n" + "".join(asm.lines[2:12])
    assert g.pieces == [range(12, 17)]
    assert g.text == "\t.text\n" + "".join(asm.lines[12:17])
    assert g.lines == 6
    # Replacing g: the replacement, then the section g left the frame in (.text).
    assert asm.join({"g": "g:\n\tnop\n\tret"}) == "".join(asm.lines[:12]) + "g:\n\tnop\n\tret\n\t.text\n" + "".join(asm.lines[17:])
    # Replacing f drops its constant too; the restore line is f's own `.text`.
    joined = asm.join({"f": "F"})
    assert joined == "".join(asm.lines[:2]) + "F\n\t.text\n" + "".join(asm.lines[12:])
    with pytest.raises(KeyError):
        asm.join({"nope": ""})
    with pytest.raises(KeyError):
        asm.unit("nope")


def test_cold_head_and_tail(gcc):
    text = gcc.asm("cold_paths", "O3")
    asm = AsmFile.parse(text)
    unit = asm.unit("sum_positive")
    body = unit.text
    # The head brings the .LCOLDB/.LHOTB markers, the tail the cold .size and end markers.
    assert re.search(r"\t\.section\t\.text\.unlikely(,\"ax\",@progbits)?\n\.LCOLDB\d+:\n\t\.text\n\.LHOTB\d+:\n", body)
    assert re.search(r"\t\.size\tsum_positive\.cold, \.-sum_positive\.cold\n\.LCOLDE\d+:\n\t\.text\n\.LHOTE\d+:\n$", body)
    assert "\t.type\tsum_positive.cold, @function\nsum_positive.cold:\n" in body


def test_trailing_section_switch_stays_in_frame():
    text = (
        "\t.text\n"
        "\t.type\tf, @function\n"
        "f:\n"
        "\tret\n"
        "\t.size\tf, .-f\n"
        "\t.section\t.rodata\n"
        "\t.align 4\n"
        "table:\n"
        "\t.long\t1\n"
    )
    asm = AsmFile.parse(text)
    assert asm.unit("f").pieces == [range(0, 5)]
    assert asm.join({"f": "f:\n\tud2\n"}) == "f:\n\tud2\n\t.text\n" + "".join(asm.lines[5:])


# --------------------------------------------------------------------------- substitution


@pytest.mark.parametrize("stem", STEMS)
def test_substitute_own_text(gcc, stem, tmp_path):
    text = gcc.asm(stem, "O3")
    asm = AsmFile.parse(text)
    link = stem in PROGRAMS
    symbols, output = build(text, tmp_path, "orig", link)
    if link:
        assert output and output.endswith(b"exit 0\n")
    variants = {u.name: {u.name: u.text} for u in asm.units}
    variants["*all*"] = {u.name: u.text for u in asm.units}
    for k, (label, replacements) in enumerate(variants.items()):
        joined = asm.join(replacements)
        # Own text defines no label found elsewhere: nothing gets renamed.
        assert ".Lsg_" not in joined
        got_symbols, got_output = build(joined, tmp_path, f"v{k}", link)
        assert got_symbols == symbols, label
        assert got_output == output, label


@pytest.mark.parametrize("stem", ["switch_table", "cold_paths", "clones", "recursion", "float_consts"])
def test_label_collisions_are_renamed(gcc, stem, tmp_path):
    text = gcc.asm(stem, "O3")
    asm = AsmFile.parse(text)
    _, output = build(text, tmp_path, "orig", True)
    with_labels = [u for u in asm.units if local_labels(u.text)]
    assert len(with_labels) >= 2
    # One unit at a time, its labels renamed to labels other units define.
    for k, unit in enumerate(with_labels):
        others = [label for u in with_labels if u is not unit for label in local_labels(u.text)]
        joined = asm.join({unit.name: relabel(unit.text, others)})
        assert ".Lsg_" in joined
        _, got = build(joined, tmp_path, f"one{k}", True)
        assert got == output, unit.name
    # All at once, every unit numbering its labels from .L1: they collide with each other.
    first = [f".L{n}" for n in range(1, 1000)]
    joined = asm.join({u.name: relabel(u.text, first) for u in asm.units})
    assert ".Lsg_" in joined
    _, got = build(joined, tmp_path, "all", True)
    assert got == output


def test_label_collision_with_constants(gcc, tmp_path):
    # A replacement whose private constant reuses the label of another unit's constant.
    text = gcc.asm("strings", "O3")
    asm = AsmFile.parse(text)
    _, output = build(text, tmp_path, "strings", True)
    greet, farewell = asm.unit("greet"), asm.unit("farewell")
    (mine,) = re.findall(r"^(\.LC\d+):", greet.text, re.M)
    (theirs,) = re.findall(r"^(\.LC\d+):", farewell.text, re.M)
    clashing = re.sub(rf"{re.escape(mine)}\b", theirs, greet.text)
    joined = asm.join({"greet": clashing})
    assert joined.count(f"\n{theirs}:") == 1
    _, got = build(joined, tmp_path, "strings-clash", True)
    assert got == output

    # ... and the label of a constant the frame keeps (shared by two other functions).
    text = gcc.asm("float_consts", "O3")
    asm = AsmFile.parse(text)
    _, output = build(text, tmp_path, "float", True)
    (shared,) = re.findall(r"(\.LC\d+)\(%rip\)", asm.unit("scale").text)
    assert owner_of(asm, line_of(asm, rf"^{re.escape(shared)}:")) is None
    fpoly = asm.unit("fpoly")
    assert shared not in fpoly.text
    mine = re.findall(r"^(\.LC\d+):", fpoly.text, re.M)[0]
    clashing = re.sub(rf"{re.escape(mine)}\b", shared, fpoly.text)
    joined = asm.join({"fpoly": clashing})
    assert joined.count(f"\n{shared}:") == 1
    _, got = build(joined, tmp_path, "float-clash", True)
    assert got == output


def test_original_owner_keeps_a_label_the_frame_refers_to():
    text = (
        "\t.text\n"
        "\t.type\tf, @function\n"
        "f:\n"
        "\tret\n"
        "\t.size\tf, .-f\n"
        "\t.type\tg, @function\n"
        "g:\n"
        ".L5:\n"
        "\tret\n"
        "\t.size\tg, .-g\n"
        "\t.section\t.data.rel.ro.local,\"aw\"\n"
        "table:\n"
        "\t.quad\t.L5\n"
    )
    asm = AsmFile.parse(text)
    f_text = "f:\n.L5:\n\tjmp\t.L5\n"
    joined = asm.join({"f": f_text, "g": asm.unit("g").text})
    # g defined .L5 in the original, and the frame's table means g's: f's copy is renamed.
    assert "f:\n.Lsg_0_5:\n\tjmp\t.Lsg_0_5\n" in joined
    assert "g:\n.L5:\n" in joined
    assert joined.endswith("\t.quad\t.L5\n")
    # Alone, f's .L5 collides with g's kept one.
    assert "f:\n.Lsg_0_5:\n" in asm.join({"f": f_text})


def test_debug_labels_keep_their_names(gcc, tmp_path):
    text = gcc.asm("cold_paths", "O3-g")
    asm = AsmFile.parse(text)
    symbols, _ = build(text, tmp_path, "orig", False)
    # Debug info in the frame refers to .LFB/.LVL/.LCOLDE labels inside units.
    joined = asm.join({u.name: u.text for u in asm.units})
    assert ".Lsg_" not in joined
    got, _ = build(joined, tmp_path, "all", False)
    assert got == symbols


# --------------------------------------------------------------------------- robustness


def _odd_inputs(real: str) -> list[str]:
    rng = random.Random(1234)
    odd = [
        "",
        "\n",
        "\r\n",
        "garbage",
        "garbage\n\n\x00\x01\x02",
        "\t.type\tf, @function\n",
        "f:\n\t.size\tf, .-f\n",
        "\t.size\tf, .-f\nf:\n\tret\n",
        "\t.type\tf, @function\nf:\n\tret\n",  # no .size
        "\t.type\tf, @function\nf:\nf:\n\t.size\tf, .-f\n",  # defined twice
        "\t.type\tf, @function\n\t.type\tg, @function\nf:\ng:\n\t.size\tg, .-g\n\t.size\tf, .-f\n",
        "\t.type\tf.cold, @function\nf.cold:\n\t.size\tf.cold, .-f.cold\n",
        '\t.string "unterminated\n\t.ascii \'\n\t.type "f", @function\n',
        "\t.popsection\n\t.previous\n\t.previous\n.LC0:\n\t.long 1\n",
        "\t.section .data\n\t.type\tf, @function\nf:\n\t.previous\n\t.size\tf, .-f\n\t.previous\n",
        ";;;;\n#\n/\n'\n\"\n::\n:\n.:\n.\n..\n=\n= =\n",
        "\u2028\u0085\x0c\x1c\x1d\x1e\n\ud800\n",
        real.replace("\n", "\r"),
        real[: len(real) // 2],
    ]
    for _ in range(20):
        odd.append("".join(chr(rng.randrange(0, 256)) for _ in range(rng.randrange(0, 400))))
    for _ in range(20):
        lines = real.splitlines(keepends=True)
        rng.shuffle(lines)
        odd.append("".join(lines[: rng.randrange(len(lines))]))
    # Truncated gcc output: cut after many lines and in the middle of lines.
    for cut in range(0, len(real), max(1, len(real) // 60)):
        odd.append(real[:cut])
    return odd


def test_odd_input_never_raises(gcc):
    real = gcc.asm("switch_table", "O3") + gcc.asm("cold_paths", "O3-g")
    for text in _odd_inputs(real):
        asm = AsmFile.parse(text)
        assert asm.join() == text
        if asm.units:
            asm.join({u.name: u.text for u in asm.units})


def test_truncated_output_keeps_complete_functions(gcc):
    text = gcc.asm("cold_paths", "O3")
    cut = text.index("sum_positive:") + 40  # in the middle of sum_positive's body
    asm = AsmFile.parse(text[:cut])
    assert asm.join() == text[:cut]
    names = {u.name for u in asm.units}
    assert {"fail", "checked_div"} <= names
    assert "sum_positive" not in names


def test_unsure_splits_give_frame_only():
    previous_across = (
        "\t.section\t.rodata\n"
        "\t.text\n"
        "\t.type\tf, @function\n"
        "f:\n"
        "\tret\n"
        "\t.size\tf, .-f\n"
        "\t.previous\n"  # returns to whatever came before f's `.text`
        "\t.long\t1\n"
    )
    asm = AsmFile.parse(previous_across)
    assert asm.units == []
    assert asm.join() == previous_across
    nested = "\t.type\tf, @function\n\t.type\tg, @function\nf:\ng:\n\t.size\tg, .-g\n\t.size\tf, .-f\n"
    assert AsmFile.parse(nested).units == []
    self_contained = (
        "\t.text\n\t.type\tf, @function\nf:\n"
        "\t.section\t.rodata\n\t.long\t1\n\t.previous\n"
        "\tret\n\t.size\tf, .-f\n"
    )
    assert [u.name for u in AsmFile.parse(self_contained).units] == ["f"]


def test_parse_file_keeps_bytes(tmp_path):
    raw = b"\t.text\n\t.type\tf, @function\nf:\n\t.ascii \"\xff\xfe\"\n\tret\n\t.size\tf, .-f\n"
    path = tmp_path / "x.s"
    path.write_bytes(raw)
    asm = parse_file(path)
    assert asm.join().encode("utf-8", errors="surrogateescape") == raw
    assert [u.name for u in asm.units] == ["f"]
