"""Replay candidates: function units read from files (``--candidates DIR``).

``DIR/FUNC.s`` is one candidate for function FUNC; ``DIR/FUNC/*.s`` are several. Each file is
the full replacement text of that function's unit, as ``sgcc functions --show FUNC`` prints
it, rewritten. Files are hostile input like any candidate: they are read (capped in size) and
then screened by the engine like everything else.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.candidates import Candidate, Generator
from sgcc.errors import SgccError
from sgcc.fsutil import read_bounded

if TYPE_CHECKING:
    from sgcc.asm.units import Unit
    from sgcc.candidates import Attempt, ProgramView

MAX_CANDIDATE_BYTES = 1 << 20


def read_candidate(path: Path) -> bytes:
    """The bytes of one candidate file: a regular file (not a link, a FIFO or a device, which
    could hang the read or never end), at most :data:`MAX_CANDIDATE_BYTES`."""
    return read_bounded(path, MAX_CANDIDATE_BYTES, what="candidate", follow_symlinks=False)


def candidate_files(directory: Path) -> list[tuple[str, Path]]:
    """(function, file) for every ``FUNC.s`` and ``FUNC/*.s`` in ``directory``, sorted."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SgccError(f"candidate directory {directory} does not exist",
                        hint="--candidates takes a directory of FUNC.s files or FUNC/ folders")
    found: list[tuple[str, Path]] = []
    for entry in sorted(directory.iterdir()):
        if entry.suffix == ".s" and not entry.is_dir():
            found.append((entry.stem, entry))  # whatever it is: read_candidate refuses non-files
        elif entry.is_dir() and not entry.is_symlink():
            found.extend((entry.name, sub) for sub in sorted(entry.glob("*.s")))
    return found


def load(directory: Path) -> list[Candidate]:
    """All candidates in ``directory``, sorted by function then file name."""
    return [Candidate(fn, "replay", read_candidate(path).decode("utf-8", "replace"), origin=str(path))
            for fn, path in candidate_files(directory)]


class ReplayGenerator(Generator):
    """Offers every file's candidate once, in round 0."""

    name = "replay"

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._all = load(self.directory)

    def unmatched(self, names: set[str]) -> list[Candidate]:
        """Candidates for functions the program does not have (refused at ``screen``)."""
        return [c for c in self._all if c.function not in names]

    def propose(self, program: ProgramView, unit: Unit, round_no: int, history: list[Attempt]) -> list[Candidate]:
        """The files for ``unit``, in round 0 only."""
        if round_no > 0:
            return []
        return [c for c in self._all if c.function == unit.name]
