"""Assembling a screened candidate: gcc's driver, never the preprocessor, under limits.

``gcc -c -x assembler`` (never ``assembler-with-cpp``) runs under CPU, memory and
output-size limits, and what it says is reduced to the candidate's own ``file:line: Error:``
lines, so nothing read from another file reaches a model.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sgcc.stages import Stage
from sgcc.verify.verdict import Verdict

#: Limits for the assembler: gas needs tens of megabytes for a function; the bounds stop a
#: runaway that got past the text screen (or a bug) from eating the machine.
ASSEMBLER_LIMITS_CPU = 30
ASSEMBLER_LIMITS_MEMORY = 2 << 30
ASSEMBLER_LIMITS_FILE = 64 << 20
_MAX_MESSAGE_LINES = 20
_MAX_MESSAGE_CHARS = 240

#: Driver flags passed on to ``gcc -c -x assembler``: the ones that shape the object (mode,
#: debug info, prefix maps) and a few safe ``-Wa,`` options. Everything else is dropped --
#: ``-x assembler-with-cpp``, ``-D``, ``-I``, ``-include``, ``@file`` or ``-Wa,-a=listing`` must
#: never reach the assembler of a hostile candidate.
_AS_FLAG = re.compile(
    r"^(?:-m64|-march=[\w.+-]+|-mtune=[\w.+-]+|-mno-[\w.-]+|-m[a-z0-9.]+|-g[\w-]*|-gdwarf-\d"
    r"|-fdebug-prefix-map=[^,]*|-ffile-prefix-map=[^,]*|-pipe"
    r"|-Wa,(?:--noexecstack|--execstack|-mrelax-relocations=(?:yes|no)|--gdwarf-\d|-O[0-2]?"
    r"|-mx86-used-note=(?:yes|no)|--generate-missing-build-notes=(?:yes|no)))$"
)
_AS_MESSAGE = re.compile(r"^(.*?):(\d+): (Error|Warning|Fatal error|Assembler messages): ?(.*)$")


def _assembler_flags(flags) -> list[str]:
    out = []
    for f in flags or ():
        if isinstance(f, str) and _AS_FLAG.match(f) and f not in ("-m32", "-mx32", "-m16"):
            out.append(f)
    return out


def _sanitize(stderr: bytes, asm_path: Path) -> tuple[list[str], int]:
    """Keep only ``<candidate>:<line>: Error|Warning: message`` lines, shortened.

    Messages about any other file (an ``.include``d file, a ``# 1 "file"`` line marker) are
    dropped whole: they could quote that file's text. Returns the kept lines and how many
    file:line messages were withheld.
    """
    names = {str(asm_path), os.fspath(asm_path.name), os.path.abspath(asm_path)}
    keep, withheld = [], 0
    for raw in stderr.decode("utf-8", errors="replace").splitlines():
        m = _AS_MESSAGE.match(raw)
        if not m or m.group(3) == "Assembler messages":
            continue
        if m.group(1) not in names:
            withheld += 1
            continue
        msg = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in m.group(4))
        line = f"{asm_path.name}:{m.group(2)}: {m.group(3)}: {msg}"
        keep.append(line[:_MAX_MESSAGE_CHARS])
        if len(keep) >= _MAX_MESSAGE_LINES:
            break
    return keep, withheld


def assemble(asm_path: Path, obj_path: Path, *, gcc: str = "gcc", flags=(), timeout: float = 60) -> Verdict:
    """Assemble a screened candidate: ``gcc <flags> -c -x assembler asm -o obj`` (stage ``"assemble"``).

    ``-x assembler`` keeps the C preprocessor out. The run has CPU, address-space and
    output-size limits and a wall-clock timeout, a minimal environment and the object's
    directory as working directory. The verdict's ``detail`` holds only the candidate's own
    ``file:line: Error: ...`` lines (capped), never text from other files.
    """
    from sgcc import proc

    asm_path, obj_path = Path(asm_path), Path(obj_path)
    argv = [gcc, *_assembler_flags(flags), "-c", "-x", "assembler", str(asm_path), "-o", str(obj_path)]
    # A minimal environment: no GCC_EXEC_PREFIX/COMPILER_PATH/DEPENDENCIES_OUTPUT steering the
    # driver, and C messages so the sanitizer's pattern matches.
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "TMPDIR", "HOME")}
    env["LC_ALL"] = "C"
    try:
        obj_path.unlink()
    except FileNotFoundError:
        pass
    result = proc.run(
        argv,
        env=env,
        cwd=str(obj_path.parent),
        timeout=timeout,
        capture_limit=1 << 20,
        limits=proc.Limits(
            cpu=ASSEMBLER_LIMITS_CPU,
            address_space=ASSEMBLER_LIMITS_MEMORY,
            file_size=ASSEMBLER_LIMITS_FILE,
            open_files=256,
        ),
    )
    messages, withheld = _sanitize(result.stderr, asm_path)
    detail = "\n".join(messages)
    if result.ok and obj_path.is_file():
        return Verdict(True, Stage.ASSEMBLE, "", detail)
    errors = [m for m in messages if ": Error: " in m or ": Fatal error: " in m]
    if result.timed_out or result.signal is not None or result.truncated:
        reason = f"the assembler was stopped ({result.describe()})"
    elif errors:
        reason = errors[0]
    else:
        reason = f"the assembler failed ({result.describe()})"
    if withheld:
        # Said, not shown: they concern other files and could quote them.
        reason += f"; {withheld} message(s) about other files withheld"
    return Verdict(False, Stage.ASSEMBLE, reason, detail)
