"""Understanding a gcc command line: what it compiles, to what, and whether sgcc may intercept it.

The rule is the one compiler wrappers live by: intercept only what is fully understood, hand
everything else to the real gcc untouched. An invocation is *eligible* when it compiles C
sources at -O2/-O3/-Ofast to objects (-c), assembly (-S) or an executable, with no option that
makes gcc write side files named after its output (those would come out under sgcc's temporary
names) and nothing sgcc does not recognise.

This module is on every compile's path: standard library only, no subprocesses.
"""

from __future__ import annotations

import os

# Driver options whose argument may be the next argv element. Anything sgcc does not know
# could swallow the next word, so unknown options are harmless only when they cannot take
# one; the list covers gcc 12's separate-argument options that a C build uses.
SEPARATE_ARG = frozenset(
    """
    -o -x -I -D -U -L -l -include -imacros -idirafter -iprefix -iwithprefix -iwithprefixbefore
    -isystem -isysroot -iquote -imultilib -imultiarch -MF -MT -MQ -Xlinker -Xassembler
    -Xpreprocessor -u -T -e -z -A -B -aux-info --param -dumpbase -dumpbase-ext -dumpdir
    -wrapper --sysroot -G -Tbss -Tdata -Ttext --entry -isystem-after
    """.split()
)

# Options that make gcc do something other than compile-and-produce-output, or that name side
# files after the output file: always the real gcc, untouched.
_PASS_EXACT = frozenset(
    """
    -E -M -MM -v -### --version --help --target-help -dumpversion -dumpfullversion -dumpmachine
    -dumpspecs -fsyntax-only -save-temps -shared -r -static-pie -Q -aux-info --coverage
    -ftest-coverage -fprofile-arcs -fprofile-generate -fprofile-use -fauto-profile -gsplit-dwarf
    -fstack-usage -fcallgraph-info -fcompare-debug -fcompare-debug-second -fdump-final-insns
    -fplugin -wrapper -pass-exit-codes -print-search-dirs -print-libgcc-file-name
    -print-multiarch -print-multi-directory -print-multi-lib -print-multi-os-directory
    -print-sysroot -print-sysroot-headers-suffix -fworking-directory --sysroot -nostdlib
    -fdebug-prefix-map -ffile-prefix-map -fmacro-prefix-map -fprofile-prefix-map
    """.split()
)
_PASS_PREFIX = (
    "-save-temps=", "-flto", "-fdump-", "-fprofile-generate=", "-fprofile-use=", "-fprofile-dir=",
    "-fauto-profile=", "-fcallgraph-info=", "-fcompare-debug=", "-fplugin=", "-fplugin-arg-",
    "-print-file-name=", "-print-prog-name=", "--help=", "-fopt-info", "-specs=", "--specs=",
    "-fdebug-prefix-map=", "-ffile-prefix-map=", "-fmacro-prefix-map=", "-fprofile-prefix-map=",
    "-fprofile-update=", "-fprofile-info-section", "-fprofile-note=", "-fsave-optimization-record",
    "-fdiagnostics-format=sarif", "-fdump", "-g-split", "-gsplit-dwarf", "-Wl,--help",
)

_C_SUFFIXES = (".c",)
# Inputs that are clearly not for the linker and not C: sgcc does not handle them, so a
# command with any of these goes to gcc as it is.
_OTHER_LANG_SUFFIXES = (
    ".i", ".ii", ".h", ".s", ".S", ".sx", ".cc", ".cp", ".cxx", ".cpp", ".CPP", ".c++", ".C",
    ".hh", ".H", ".hp", ".hxx", ".hpp", ".HPP", ".h++", ".tcc", ".m", ".mi", ".mm", ".M", ".mii",
    ".f", ".for", ".ftn", ".F", ".FOR", ".fpp", ".FPP", ".FTN", ".f90", ".f95", ".f03", ".f08",
    ".F90", ".F95", ".F03", ".F08", ".go", ".d", ".di", ".dd", ".ads", ".adb", ".rs", ".gch",
    ".pch", ".D",
)

ELIGIBLE_OPT_LEVELS = frozenset(["2", "3", "fast"])


# Plain classes rather than dataclasses: importing dataclasses costs ~6 ms, paid by every
# compile a build runs through sgcc.
class Source:
    """One C input and where its result goes."""

    __slots__ = ("path", "index", "explicit_lang")

    def __init__(self, path: str, index: int, explicit_lang: bool = False):
        self.path = path
        self.index = index  # position in the expanded argv
        self.explicit_lang = explicit_lang  # C because of -x c, not because of its suffix


class Invocation:
    """A parsed gcc command line.

    ``args`` is the argv after response-file expansion; ``eligible`` says whether sgcc may
    intercept it and, when not, ``reason`` says why (a short tag used by statistics).
    """

    def __init__(self, args: list[str]):
        self.args = args
        self.mode = "link"  # "compile" (-c), "assemble-only" (-S) or "link"
        self.output: str | None = None
        self.output_index: int | None = None
        self.sources: list[Source] = []
        self.other_inputs: list[int] = []
        self.opt_level = "0"
        self.dep_flags = False
        self.target_flags: list[str] = []
        self.eligible = False
        self.reason = ""

    def default_output(self, source: Source) -> str:
        """Where gcc writes the result for ``source`` when the command names no -o."""
        stem = os.path.splitext(os.path.basename(source.path))[0]
        if self.mode == "compile":
            return stem + ".o"
        if self.mode == "assemble-only":
            return stem + ".s"
        return "a.out"

    def output_for(self, source: Source) -> str:
        """The file gcc would produce for ``source`` in -c/-S mode."""
        if self.output is not None:
            return self.output
        return self.default_output(source)

    def flags_without_inputs(self, *, drop_dependency_flags: bool = False) -> list[str]:
        """The argv with inputs, -o, -c, -S and -x removed (and optionally -M* flags).

        This is what sgcc passes along when it runs its own steps; every other user flag is
        kept, in order, so gcc sees exactly the options the user gave.
        """
        drop: set[int] = {s.index for s in self.sources} | set(self.other_inputs)
        out: list[str] = []
        args = self.args
        i = 0
        while i < len(args):
            a = args[i]
            if i in drop or a in ("-c", "-S"):
                i += 1
                continue
            if a in ("-o", "-x"):
                i += 2
                continue
            if (a.startswith("-o") or a.startswith("-x")) and len(a) > 2:
                i += 1
                continue
            if drop_dependency_flags:
                if a in ("-MD", "-MMD", "-MP", "-MG"):
                    i += 1
                    continue
                if a in ("-MF", "-MT", "-MQ"):
                    i += 2
                    continue
                if a[:3] in ("-MF", "-MT", "-MQ"):
                    i += 1
                    continue
            out.append(a)
            if a in SEPARATE_ARG and i + 1 < len(args):
                out.append(args[i + 1])
                i += 2
                continue
            i += 1
        return out


def expand_response_files(argv: list[str], *, _depth: int = 0) -> list[str]:
    """Expand ``@file`` arguments the way gcc (libiberty's expandargv) does.

    A missing file leaves ``@file`` as it is (gcc then treats it as an input name); nested
    response files are expanded too, up to a depth that stops self-inclusion loops.
    """
    if not any(a.startswith("@") for a in argv):
        return list(argv)
    out: list[str] = []
    for a in argv:
        if a.startswith("@") and len(a) > 1 and _depth < 10:
            try:
                with open(a[1:], "rb") as fh:
                    text = fh.read().decode("utf-8", "surrogateescape")
            except OSError:
                out.append(a)
                continue
            out.extend(expand_response_files(_split_response(text), _depth=_depth + 1))
        else:
            out.append(a)
    return out


def _split_response(text: str) -> list[str]:
    """libiberty's buildargv: whitespace separates, quotes group, backslash escapes."""
    words: list[str] = []
    cur: list[str] = []
    have = False
    quote = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            else:
                cur.append(ch)
        elif ch.isspace():
            if have:
                words.append("".join(cur))
                cur, have = [], False
        elif ch == "\\" and i + 1 < len(text):
            cur.append(text[i + 1])
            have = True
            i += 2
            continue
        elif ch in "'\"":
            quote = ch
            have = True
        else:
            cur.append(ch)
            have = True
        i += 1
    if have:
        words.append("".join(cur))
    return words


def parse(argv: list[str]) -> Invocation:
    """Parse a gcc command line (without the compiler itself) and decide eligibility."""
    args = expand_response_files(argv)
    inv = Invocation(args=args)
    mode_flags = set()
    lang: str | None = None  # from -x; None means "by suffix"
    reasons: list[str] = []

    def refuse(tag: str) -> None:
        if tag not in reasons:
            reasons.append(tag)

    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        nxt = args[i + 1] if i + 1 < n else None
        if a == "-" or (not a.startswith("-")) or a == "":
            # An input file (or stdin). Its language comes from -x or the suffix.
            if a in ("-", ""):
                refuse("stdin-input")
            elif lang == "c" or (lang is None and a.endswith(_C_SUFFIXES)):
                inv.sources.append(Source(a, i, explicit_lang=lang == "c"))
            elif lang is not None and lang != "none":
                refuse(f"language-{lang}")
            elif a.endswith(_OTHER_LANG_SUFFIXES):
                refuse("not-c-source")
            else:
                inv.other_inputs.append(i)
            i += 1
            continue
        if a in ("-c", "-S", "-E"):
            mode_flags.add(a)
        elif a == "-o":
            if nxt is None:
                refuse("bad-args")
            inv.output, inv.output_index = nxt, i + 1
            i += 2
            continue
        elif a.startswith("-o"):
            inv.output, inv.output_index = a[2:], i
        elif a.startswith("-x"):
            value = nxt if a == "-x" else a[2:]
            if value is None:
                refuse("bad-args")
            lang = None if value == "none" else value
            if lang not in (None, "c"):
                refuse(f"language-{lang}")
            i += 2 if a == "-x" else 1
            continue
        elif a.startswith("-O"):
            level = a[2:]
            inv.opt_level = "1" if level == "" else level
        elif a in ("-MD", "-MMD"):
            inv.dep_flags = True
        elif a in _PASS_EXACT or a.startswith(_PASS_PREFIX):
            refuse(f"option{a.split('=')[0]}")
        elif a.startswith("-m"):
            # -march, -mtune, -mavx2, -mno-sse4.2, -m32...: what the target promises.
            inv.target_flags.append(a)
        elif a.startswith("-print-") or a.startswith("--print"):
            refuse("option-print")
        elif a.startswith("--") and a.split("=")[0] not in ("--param", "--std", "--sysroot"):
            # Long options are driver aliases sgcc does not track; let gcc handle them.
            refuse("long-option")
        if a in SEPARATE_ARG:  # the bare form; a joined one (-Ifoo) is a single word
            if nxt is None:
                refuse("bad-args")
            i += 2
            continue
        i += 1

    if "-E" in mode_flags:
        refuse("preprocess-only")
    if "-S" in mode_flags:
        inv.mode = "assemble-only"
    elif "-c" in mode_flags:
        inv.mode = "compile"
    else:
        inv.mode = "link"
    if not inv.sources:
        refuse("no-c-source")
    if inv.opt_level not in ELIGIBLE_OPT_LEVELS:
        refuse(f"opt-level-O{inv.opt_level}")
    if inv.output == "-":
        refuse("output-stdout")
    if inv.mode != "link" and inv.output is not None and len(inv.sources) + len(inv.other_inputs) > 1:
        refuse("bad-args")  # gcc refuses -o with several inputs in -c/-S mode; let it say so
    if inv.mode != "link" and inv.other_inputs:
        refuse("unused-linker-input")  # gcc warns about these; keep its exact behaviour
    if inv.mode == "link" and inv.dep_flags:
        # gcc names dependency files of a compile-and-link after the executable and lets
        # later sources overwrite earlier ones; rare enough to leave to gcc itself.
        refuse("link-with-dependencies")
    inv.eligible = not reasons
    inv.reason = ",".join(reasons)
    return inv


def link_argv(compiler: str, flags: list[str], objects: list[str], output: str) -> list[str]:
    """The command that links ``objects`` with the user's ``flags`` into ``output``.

    The objects come first: libraries among the flags (``-lm``) must follow the objects that
    use them, or the linker (``--as-needed`` by default on Debian) drops them, as it would for
    ``gcc -O3 prog.c -lm`` written the other way round. Other flags do not care about order."""
    return [compiler, *objects, *flags, "-o", output]
