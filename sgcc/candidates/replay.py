"""Replay candidates: function units read from files (``--candidates DIR``).

``DIR/FUNC.s`` is one candidate for function FUNC; ``DIR/FUNC/*.s`` are several. Each file is
the full replacement text of that function's unit, as ``sgcc functions --show FUNC`` prints
it, rewritten. Files are hostile input like any candidate: they are read (capped in size) and
then screened by the engine like everything else.
"""

from __future__ import annotations

from pathlib import Path

from sgcc.candidates import Candidate, Generator
from sgcc.errors import SgccError

MAX_CANDIDATE_BYTES = 1 << 20


def _read(path: Path) -> str:
    if path.is_symlink() or not path.is_file():
        raise SgccError(f"candidate {path} is not a regular file")
    if path.stat().st_size > MAX_CANDIDATE_BYTES:
        raise SgccError(f"candidate {path} is larger than {MAX_CANDIDATE_BYTES} bytes")
    return path.read_bytes().decode("utf-8", "replace")


def load(directory: Path) -> list[Candidate]:
    """All candidates in ``directory``, sorted by function then file name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SgccError(f"candidate directory {directory} does not exist",
                        hint="--candidates takes a directory of FUNC.s files or FUNC/ folders")
    found: list[Candidate] = []
    for entry in sorted(directory.iterdir()):
        if entry.is_file() and entry.suffix == ".s":
            found.append(Candidate(entry.stem, "replay", _read(entry), origin=str(entry)))
        elif entry.is_dir() and not entry.is_symlink():
            for sub in sorted(entry.glob("*.s")):
                found.append(Candidate(entry.name, "replay", _read(sub), origin=str(sub)))
    return found


class ReplayGenerator(Generator):
    """Offers every file's candidate once, in round 0."""

    name = "replay"

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._all = load(self.directory)

    def unmatched(self, names: set[str]) -> list[Candidate]:
        """Candidates for functions the program does not have (refused at ``check``)."""
        return [c for c in self._all if c.function not in names]

    def propose(self, program, unit, round_no, history):
        """The files for ``unit``, in round 0 only."""
        if round_no > 0:
            return []
        return [c for c in self._all if c.function == unit.name]
