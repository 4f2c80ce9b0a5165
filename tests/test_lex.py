"""Tests for sgcc.asm.lex, the one assembly lexer.

Unit tests pin how a line is read (strings, character constants, comments, separators);
the differential tests compare the lexer with the three lexers it replaced (frozen below,
verbatim, as oracles) over real gcc output of the whole tests/asm_corpus and over lines
written to be awkward: the units splitter and the text screen must read everything exactly
as before, the transplant's reading only differs where the old one was wrong (character
constants). Labels have one reading, gas's: the lexer's and the text screen's are compared
with each other over the corpus and with the real assembler over hostile spellings.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from sgcc.asm import lex
from sgcc.asm.units import AsmFile
from sgcc.candidates.transplant import asmtext
from sgcc.proc import run
from sgcc.verify.static import textscreen

CORPUS = Path(__file__).parent / "asm_corpus"
FLAG_SETS = {"O3": ["-O3"], "O2-g": ["-O2", "-g"], "O3-fPIC": ["-O3", "-fPIC"], "O0": ["-O0"]}

#: Lines chosen to be hard to read: strings holding ';', '#' and escaped quotes, character
#: constants of the three special characters, '/' comments, open strings, hazards.
AWKWARD = [
    "", "\n", "   \n", "# only a comment\n", "/ a slash comment\n", "  /x\n", "\tret\n", "\tret",
    "foo: bar: \tnop ; nop\n", ".L3:\n", "1: jmp 1b\n", "x = 3\n", "x == 3\n",
    '\t.string "a;b#c"\n', '\t.string "a;b#c" ; nop # tail\n', '\t.ascii "x\\"; y" ;ret\n',
    '\t.ascii "open ; # string\n', '\t.ascii "ends in backslash\\', '\t.ascii "\\\\"; ret\n',
    "\tmovb $'#, %al # comment\n", "\tmovb $';, %al ; ret\n", "\tmovb $'\\n, %al ; ret\n",
    "\tmovb $'\\'', %al ; ret\n", "\tmovl $'a', %eax # c\n", "\tmovb $'", "\tmovb $'\\",
    '\tmovb $\'"\', %al ; .string "x;y"\n', "\tnop \\ odd\n", "\tnop ` odd\n", "\tnop / 2\n",
    "#APP\n", "# APP\n", "#NO_APP\n", "\t.section .rodata,\"aMS\",@progbits,1 # x\n",
    "\t.section\t\".text.a;b\",\"ax\"\n", "\t.L1: .long .L5-.L4 ; .quad f\n", "lab:\t.Set X, Y\n",
    "\tcall\tfoo@PLT ; jmp bar # baz\n", "x:\t# trailing\n", "\t;;\n", ";\n", "\tnop;\n",
]


# --------------------------------------------------------------------------- the old lexers


def _old_units_statements(line: str) -> list[str]:
    """sgcc.asm.units._statements before the lexer was shared (verbatim)."""
    if '"' not in line and "#" not in line and ";" not in line and "'" not in line:
        s = line.strip()
        return [s] if s and s[0] != "/" else []
    if line.lstrip().startswith("/"):
        return []
    parts = []
    start = i = 0
    end = n = len(line)
    while i < n:
        c = line[i]
        if c == '"':
            i += 1
            while i < n and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
            i += 1
        elif c == "'":
            i += 3 if line[i + 1 : i + 2] == "\\" else 2
        elif c == "#":
            end = i
            break
        elif c == ";":
            parts.append(line[start:i])
            start = i = i + 1
        else:
            i += 1
    parts.append(line[start:end])
    return [s for s in (p.strip() for p in parts) if s]


_OLD_LABEL_RE = re.compile(r"([A-Za-z_.$][\w.$]*|\d+)[ \t]*:(?!=)")
_OLD_ASSIGN_RE = re.compile(r"([A-Za-z_.$][\w.$]*)[ \t]*=(?!=)")
_OLD_DIRECTIVE_RE = re.compile(r"\.[A-Za-z0-9_.$]*")


def _old_units_analyze(line: str):
    """sgcc.asm.units._analyze before the lexer was shared (verbatim)."""
    labels: list[str] = []
    ops: list[tuple[str, str]] = []
    for s in _old_units_statements(line):
        while ":" in s:
            m = _OLD_LABEL_RE.match(s)
            if not m:
                break
            labels.append(m.group(1))
            s = s[m.end() :].lstrip()
        if not s:
            continue
        m = _OLD_ASSIGN_RE.match(s)
        if m:
            ops.append(("=", m.group(1)))
        elif s[0] == ".":
            m = _OLD_DIRECTIVE_RE.match(s)
            ops.append((m.group(0).lower(), s[m.end() :].strip()))
        else:
            ops.append(("", s))
    return tuple(labels), tuple(ops)


class _OldRefusal(Exception):
    pass


def _old_screen_statements(line: str, lineno: int) -> list[str]:
    """sgcc.verify.screen._split_statements before the lexer was shared (verbatim)."""
    out: list[str] = []
    cur: list[str] = []
    i, n = 0, len(line)
    in_str = False
    while i < n:
        c = line[i]
        if in_str:
            cur.append(c)
            if c == "\\":
                if i + 1 >= n:
                    raise _OldRefusal(f"line {lineno}: backslash at the end of a string")
                cur.append(line[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
            cur.append(c)
        elif c == "#":
            comment = line[i + 1:].strip()
            if comment.startswith(("APP", "NO_APP")):
                raise _OldRefusal(f"line {lineno}: #APP/#NO_APP markers (inline asm) are not accepted")
            break
        elif c == ";":
            out.append("".join(cur))
            cur = []
        elif c in "'\\/`":
            raise _OldRefusal(f"line {lineno}: character {c!r} is not accepted outside strings")
        else:
            cur.append(c)
        i += 1
    if in_str:
        raise _OldRefusal(f"line {lineno}: unterminated string")
    out.append("".join(cur))
    return out


_OLD_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')


def _old_transplant_statements(line: str) -> list[str]:
    """sgcc.candidates.transplant._statements before the lexer was shared (verbatim)."""
    text = _OLD_STRING_RE.sub('""', line)
    if "#" in text:
        text = text[: text.index("#")]
    return [s.strip() for s in text.split(";") if s.strip()]


def _screen_reading(reader, line: str):
    try:
        return reader(line, 7)
    except (_OldRefusal, textscreen._Refusal) as exc:
        return ("refused", str(exc))


# --------------------------------------------------------------------------- corpus


@pytest.fixture(scope="module")
def corpus_lines(tmp_path_factory) -> dict[str, list[str]]:
    """Every line of gcc's assembly for every corpus file under every flag set here."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    root = tmp_path_factory.mktemp("lex")
    out = {}
    for src in sorted(CORPUS.glob("*.c")):
        for key, flags in FLAG_SETS.items():
            asm = root / f"{src.stem}.{key}.s"
            run(["gcc", *flags, "-S", "-o", asm, src], timeout=120, check=True)
            out[f"{src.stem}.{key}"] = lex.split_lines(asm.read_text())
    return out


def test_corpus_reads_exactly_as_the_units_lexer_did(corpus_lines):
    for name, lines in corpus_lines.items():
        analyzed = lex.analyze_lines(lines)
        for line, fast in zip(lines, analyzed):
            old = _old_units_analyze(line)
            assert lex.statements(line) == _old_units_statements(line), (name, line)
            assert lex.analyze(line) == old, (name, line)
            if fast == ((), (("", ""),)):  # the fast path: a plain instruction, text not kept
                assert old[0] == () and len(old[1]) == 1 and old[1][0][0] == "", (name, line)
            else:
                assert fast == old, (name, line)
        # The split itself gives the file back byte for byte.
        text = "".join(lines)
        assert AsmFile.parse(text).join() == text, name


def test_corpus_screens_exactly_as_before(corpus_lines):
    for name, lines in corpus_lines.items():
        for line in "".join(lines).split("\n"):
            assert _screen_reading(textscreen._statements, line) == \
                _screen_reading(_old_screen_statements, line), (name, line)


def test_corpus_transplant_reading_is_unchanged(corpus_lines):
    """gcc's output outside inline asm has no character constants: there the transplant
    reads every line as before."""
    for name, lines in corpus_lines.items():
        for line in lines:
            if "'" in line:
                continue
            assert asmtext.statements(line) == _old_transplant_statements(line), (name, line)


def test_corpus_has_character_constants(corpus_lines):
    """The corpus exercises what the old transplant lexer got wrong."""
    lines = corpus_lines["char_consts.O3"]
    differ = [ln for ln in lines if asmtext.statements(ln) != _old_transplant_statements(ln)]
    assert any("'#" in ln for ln in differ) and any("';" in ln for ln in differ)


@pytest.mark.parametrize("line", AWKWARD)
def test_awkward_lines_read_as_before(line):
    assert lex.statements(line) == _old_units_statements(line)
    assert lex.analyze(line) == _old_units_analyze(line)
    for physical in line.split("\n"):
        assert _screen_reading(textscreen._statements, physical) == \
            _screen_reading(_old_screen_statements, physical)
    if "'" not in line and not line.lstrip().startswith("/") and line.count('"') % 2 == 0:
        assert asmtext.statements(line) == _old_transplant_statements(line)


# --------------------------------------------------------------------------- the lexer itself


def test_split_lines_cuts_only_at_newlines():
    assert lex.split_lines("a\r\nb\x0cc\u2028d\n\ne") == ["a\r\n", "b\x0cc\u2028d\n", "\n", "e"]
    assert lex.split_lines("") == [] and lex.split_lines("x\n") == ["x\n"]


def test_strings_keep_separators_and_comment_signs():
    assert lex.statements('\t.string "a;b#c" ; nop # tail\n') == ['.string "a;b#c"', "nop"]
    assert lex.statements('\t.ascii "x\\"; y" ;ret\n') == ['.ascii "x\\"; y"', "ret"]
    assert lex.statements('\t.ascii "\\\\"; ret\n') == ['.ascii "\\\\"', "ret"]


def test_character_constants_are_no_comment_and_no_separator():
    assert lex.statements("\tmovb $'#, %al # comment\n") == ["movb $'#, %al"]
    assert lex.statements("\tmovb $';, %al ; ret\n") == ["movb $';, %al", "ret"]
    assert lex.statements("\tmovb $'\\n, %al ; ret\n") == ["movb $'\\n, %al", "ret"]
    # '\n' with a closing quote: the lexer takes '\n, then the quote and the comma as
    # another constant; the split is what matters and it is right.
    assert lex.statements("\tmovb $'\\n', %al ; ret # x\n") == ["movb $'\\n', %al", "ret"]
    assert lex.statements('\tmovb $\'", %al ; .string "x;y"\n') == ["movb $'\", %al", '.string "x;y"']


def test_comment_lines():
    assert lex.statements("# only\n") == [] and lex.statements("/ slash\n") == []
    assert lex.statements("  / indented slash\n") == [] and lex.statements("\n") == []


def test_scan_reports_what_a_strict_reader_refuses():
    s = lex.scan("\tmovb $'#, %al # c")
    assert s.hazard == "'" and s.comment == " c" and s.parts == ["\tmovb $'#, %al "]
    assert lex.scan("/ comment").hazard == "/" and lex.scan("/ comment").parts == []
    assert lex.scan("\tnop / 2").hazard == "/"
    assert lex.scan("\tnop \\ x").hazard == "\\" and lex.scan("\tnop ` x").hazard == "`"
    assert lex.scan('\t.ascii "a\\"b;#c"').hazard is None
    assert lex.scan('\t.ascii "open').open_string == "string"
    assert lex.scan('\t.ascii "esc\\').open_string == "escape"
    assert lex.scan("#APP").comment == "APP" and lex.scan("a;;b").parts == ["a", "", "b"]
    assert lex.scan("\tret") == lex.Scan(["\tret"], None, None, None)


def test_analyze_labels_assignments_directives_instructions():
    assert lex.analyze("foo: .L2: \tmovl $1, %eax\n") == (("foo", ".L2"), (("", "movl $1, %eax"),))
    assert lex.analyze("x = 3\n") == ((), (("=", "x"),))
    assert lex.analyze("\t.SECTION .text.a,\"ax\" ; 1: ret\n") == \
        (("1",), ((".section", '.text.a,"ax"'), ("", "ret")))
    assert lex.analyze("x == 3\n") == ((), (("", "x == 3"),))
    lines = ["\tret\n", "f:\n", "\tret\n", "\t.p2align 4\n"]
    assert lex.analyze_lines(lines) == [((), (("", ""),)), (("f",), ()), ((), (("", ""),)),
                                        ((), ((".p2align", "4"),))]


def test_arguments_and_names():
    assert lex.split_args('"a,b", 1, (2,3) ,x') == ['"a,b"', "1", "(2,3)", "x"]
    assert lex.split_args("") == [] and lex.split_args(' "a\\",b" ') == ['"a\\",b"']
    assert lex.section_name('".text.a b", "ax"') == ".text.a b"
    assert lex.section_name(".rodata.str1.1,\"aMS\",@progbits,1") == ".rodata.str1.1"
    assert lex.strip_labels("a: 1: b :\tret") == "ret" and lex.strip_labels("x = 1") == "x = 1"
    # gas reads `x :` as a label whatever follows (then refuses `= 1` as junk): so does the lexer.
    assert lex.split_labels("x := 1") == (["x"], "= 1") and lex.split_labels("f:: ret") == (["f"], ": ret")
    assert lex.blank_strings('.string "a;b" ; .ascii "c') == '.string "" ; .ascii ""'


def test_rename_leaves_strings_character_constants_and_comments_alone():
    text = '\tjmp .L2 ; .string ".L2" ; movb $\'., %al # .L2\n.L2:\n'
    new = lex.rename_tokens(text, {".L2": ".Lx"}.get)
    assert new == '\tjmp .Lx ; .string ".L2" ; movb $\'., %al # .L2\n.Lx:\n'


def test_transplant_references_see_past_character_constants():
    """The transplant's own lexer used to cut this line at '#: the call was lost."""
    refs, calls, _tails = asmtext.references("\tmovb $'#, %al ; call helper\n")
    assert calls == {"helper"} and "helper" in refs
    assert _old_transplant_statements("\tmovb $'#, %al ; call helper\n") == ["movb $'"]


def test_screen_refuses_character_constants_as_before():
    v = textscreen.screen_text("\tmovb $'#, %al\n\tret\n")
    assert not v.ok and v.reason == "line 1: character \"'\" is not accepted outside strings"


# --------------------------------------------------------------------------- one reading of labels

#: Spellings of a label that a reader could take otherwise than gas: the colon doubled or
#: followed by '=', blanks before it, several labels on a statement, '$' and '.' in names,
#: names beyond ASCII (gas takes every byte >= 0x80 as a name character), a name that
#: starts with a digit, a quoted name, a separator or comment right after the colon.
HOSTILE_LABELS = [
    "malloc:: nop", "malloc:=1", "malloc :=1", "malloc:==1", "malloc\t: nop", "malloc :nop", "malloc : : nop",
    "a:malloc: nop", "1: malloc: nop", "x: 2:malloc:", "m$a.l: nop", "$malloc: nop", ".malloc: nop",
    "malloc\u00e9: nop", "\u00e9malloc: nop", "\u0663: nop", "123malloc: nop", '"malloc": nop', "malloc:;nop",
    "malloc:#c", "malloc = 1", "malloc == 1", ".L5: malloc = .L5", "malloc:nop;free: ret",
]


def _screen_defines(stmt: str, monkeypatch) -> set[str]:
    """The names the text screen takes ``stmt`` to define (labels and assignments)."""
    defined: set[str] = set()
    screen = textscreen._TextScreen(1 << 20, frozenset())
    monkeypatch.setattr(screen, "define", lambda name, lineno: defined.add(name))
    try:
        screen.statement(stmt, 1)
    except textscreen._Refusal:
        pass  # refused for something else, after its labels were read
    return defined


def _lexer_defines(stmt: str) -> tuple[set[str], set[str]]:
    """The lexer's reading of ``stmt``: (its labels that are names, the other names it may
    define: an assignment's, or any for a directive, ``.set`` and the like)."""
    labels, ops = lex.analyze(stmt)
    named = {x for x in labels if not (x.isascii() and x.isdigit())}
    if any(op.startswith(".") for op, _ in ops):
        return named, {"*"}
    return named, {a for op, a in ops if op == "="}


def test_the_screen_reads_labels_as_the_lexer_does(corpus_lines, monkeypatch):
    """The text screen has no reading of labels of its own: over every statement of the corpus
    and every hostile spelling, the names it checks are the lexer's labels (and assignment)."""
    lines = [ln for lns in corpus_lines.values() for ln in lns] + HOSTILE_LABELS
    for line in dict.fromkeys(lines):
        try:
            stmts = textscreen._statements(line.rstrip("\n"), 1)
        except textscreen._Refusal:
            continue  # refused before anything on it is read as a label
        for stmt in stmts:
            labels, assigned = _lexer_defines(stmt)
            screened = _screen_defines(stmt, monkeypatch)
            assert labels <= screened, (line, stmt, labels, screened)
            assert "*" in assigned or screened <= labels | assigned, (line, stmt, labels, screened)


def _gas_defines(tmp_path: Path, line: str) -> set[str] | None:
    """The names gas defines for ``line`` (its object's symbols; -Z keeps the object of a line
    with junk after its label, -L keeps local labels); None when it made no object."""
    src, obj = tmp_path / "t.s", tmp_path / "t.o"
    src.write_text(line + "\n", encoding="utf-8")
    obj.unlink(missing_ok=True)
    run(["as", "--64", "-L", "-Z", "-o", obj, src], timeout=60)
    if not obj.exists():
        return None
    out = run(["nm", "--format=just-symbols", "--defined-only", obj], timeout=60, check=True).stdout
    return set(out.decode("utf-8", "surrogateescape").splitlines())


def test_hostile_label_spellings_read_as_gas_reads_them(tmp_path):
    """What gas defines is what the lexer reads, or the screen refuses the line; a reserved
    name gas defines is never let through by the screen."""
    if shutil.which("as") is None:
        pytest.skip("needs the GNU assembler")
    differ = []
    for line in HOSTILE_LABELS:
        gas = _gas_defines(tmp_path, line)
        assert gas is not None, line
        gas = {n for n in gas if "\x02" not in n}  # gas's own names for local numeric labels
        labels, assigned = set(), set()
        for stmt in lex.statements(line):
            more, names = _lexer_defines(stmt)
            labels |= more
            assigned |= names - {"*"}
        verdict = textscreen.screen_text(line + "\n\tret\n")
        if gas != labels | assigned:
            # Where the lexer reads less than gas (a quoted name, "malloc":; a global
            # assignment, malloc == 1), the screen refuses the line.
            assert not verdict.ok, (line, gas, labels | assigned)
            differ.append(line)
        if "malloc" in gas:
            assert not verdict.ok, (line, verdict)
    assert differ == ['"malloc": nop', "malloc == 1"]  # the only two
