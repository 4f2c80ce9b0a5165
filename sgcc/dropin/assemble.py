"""Assembling a compile's assembly with ``as`` directly, with the arguments gcc would pass.

``gcc <flags> -c -x assembler in.s -o out.o`` starts the gcc driver only for it to run one
``as`` command; running that command ourselves saves a process and the driver's start-up on
every compile that substitutes. The command is what the driver itself prints for the same
flags under ``-###`` (so -m32, -g, -Wa,..., -march are passed exactly as gcc passes them),
learnt once per compiler and flag set and kept in the cache directory
(``ROOT/as-commands/<hash>``), with placeholders for the input and output names.

Anything unexpected (the driver would run more than one program, prints something this module
cannot read back, the template cannot be kept) returns None, and the caller runs the driver.
Lean: standard library, no subprocess (the caller's runner is passed in).
"""

from __future__ import annotations

import os

_IN = "sgcc-asm-input.s"
_OUT = "sgcc-asm-output.o"


def _unquote(line: str) -> list[str] | None:
    """The argv of one ``-###`` command line: words, or ``"..."`` with \\", \\\\ and \\$ escaped."""
    words: list[str] = []
    i, n = 0, len(line)
    while i < n:
        if line[i] == " ":
            i += 1
            continue
        if line[i] == '"':
            i += 1
            word = []
            while i < n and line[i] != '"':
                if line[i] == "\\" and i + 1 < n:
                    i += 1
                word.append(line[i])
                i += 1
            if i >= n:
                return None  # unterminated
            words.append("".join(word))
            i += 1
        else:
            j = line.find(" ", i)
            j = n if j < 0 else j
            words.append(line[i:j])
            i = j
    return words


def _which(program: str, env: dict) -> str | None:
    if "/" in program:
        return program
    for directory in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def template(compiler: str, compiler_id: str, flags: list[str], env: dict, cache_root: str, spawn) -> list[str] | None:
    """The ``as`` argv (with placeholders) that ``compiler <flags> -c -x assembler`` runs, or None.

    ``spawn(argv) -> (status, stdout, stderr)`` runs the driver when the template is not kept yet.
    """
    from sgcc.cache import keys

    ident = "\0".join([compiler_id, *flags, env.get("PATH", ""), env.get("GCC_EXEC_PREFIX", ""),
                       env.get("COMPILER_PATH", "")])
    digest = keys.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    path = os.path.join(cache_root, "as-commands", digest)
    try:
        with open(path, "rb") as fh:
            argv = fh.read().decode("utf-8", "surrogateescape").split("\0")
        if _IN in argv and _OUT in argv:
            return argv
    except OSError:
        pass
    status, _, err = spawn([compiler, *flags, "-###", "-c", "-x", "assembler", _IN, "-o", _OUT])
    if status != 0:
        return None
    commands = [line for line in err.decode("utf-8", "surrogateescape").splitlines() if line.startswith(" ")]
    if len(commands) != 1:
        return None
    parsed = _unquote(commands[0])
    if not parsed:
        return None
    argv = parsed
    if argv.count(_IN) != 1 or argv.count(_OUT) != 1 or os.path.basename(argv[0]) != "as":
        return None
    found = _which(argv[0], env)
    if found is None:
        return None
    argv[0] = found
    from sgcc.fsutil import atomic_write

    try:
        atomic_write(path, "\0".join(argv), mode=None)
    except OSError:
        pass
    return argv


def command(argv: list[str], source: str, output: str) -> list[str]:
    """The template with the real input and output names."""
    return [source if a == _IN else output if a == _OUT else a for a in argv]
