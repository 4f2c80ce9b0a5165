#!/usr/bin/env python3
"""Which functions with label tables a project's source offers, and whether gcc's variants
of them pass the proof: per function, each variant transplanted, assembled into the file,
and checked (object check, control-flow proof as trusted, and as untrusted with the
information-flow rule). No timing: a count of what reaches the timing stage.

Lua's interpreter loop (``luaV_execute`` in ``lvm.c``, computed goto through
``ljumptab.h``'s ``disptab``) is the case this was written for:

    python bench/label_tables.py LUA_DIR/lvm.c -- -Wall -O2 -std=c99 -DLUA_USE_LINUX \\
        -fno-stack-protector -fno-common

Usage: python bench/label_tables.py SOURCE.c [--function NAME] -- GCC_FLAGS...
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import proc  # noqa: E402
from sgcc.candidates.transplant.build import transplant  # noqa: E402
from sgcc.candidates.transplant.side import Side  # noqa: E402
from sgcc.candidates.variants import PORTABLE  # noqa: E402
from sgcc.verify.static import controlflow, isa, objcheck  # noqa: E402


def _compile(src: Path, flags: list[str], where: Path, name: str) -> tuple[Side, Path]:
    s, o = where / f"{name}.s", where / f"{name}.o"
    proc.run(["gcc", *flags, "-S", "-o", str(s), str(src)], check=True, timeout=600, cwd=src.parent)
    proc.run(["gcc", "-c", str(s), "-o", str(o)], check=True, timeout=600)
    return Side(s.read_text(), obj=o), o


def main() -> int:
    argv = sys.argv[1:]
    flags = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("--function", action="append", help="only these functions (default: those with label tables)")
    ap.add_argument("--variant", action="append", help="only these variants (default: the portable ones)")
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    src = args.source.resolve()
    target = isa.target_from_flags("gcc", flags)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        base, base_obj = _compile(src, flags, where, "base")
        names = args.function or [u.name for u in base.asm.units if len(u.pieces) > 1 and ".quad\t.L" in u.text
                                  or base.escaping_labels(u.name)]
        for name in names:
            escaping = sorted(base.escaping_labels(name))
            print(f"{name}: {len(base.units[name].pieces)} piece(s); labels referenced from outside: "
                  f"{', '.join(escaping[:3]) or 'none'}")
            for vname, vflags in PORTABLE:
                if args.variant and vname not in args.variant:
                    continue
                var, _ = _compile(src, [*flags, *vflags], where, vname)
                t = transplant(base, var, name, vname.replace("-", "_"))
                if t.text is None:
                    print(f"  {vname:12} not offered: {t.reason}")
                    continue
                s, o = where / f"c-{vname}.s", where / f"c-{vname}.o"
                s.write_text(base.asm.join({name: t.text, **t.also}))
                r = proc.run(["gcc", "-c", str(s), "-o", str(o)], timeout=600)
                if not r.ok:
                    print(f"  {vname:12} does not assemble: {r.stderr.decode().strip()[:300]}")
                    (Path.cwd() / f"label_tables-{vname}.s").write_text(s.read_text())
                    continue
                same = t.text == base.units[name].text
                v = objcheck.check_object(o, base_obj, isa=target)
                trusted = controlflow.check(o, base_obj)
                untrusted = controlflow.check(o, base_obj, untrusted={name, *t.also, *t.copied})
                print(f"  {vname:12} offered{' (identical to gcc)' if same else ''}: object check "
                      f"{'ok' if v.ok else v.reason}; control flow "
                      f"{'proven' if not trusted else trusted[0]}; as untrusted "
                      f"{'proven' if not untrusted else untrusted[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
