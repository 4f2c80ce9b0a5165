"""Exporting a dataset as VERL RL rows: one per function worth optimizing (``sgcc dataset export``).

A row is what VERL's RL dataset loader reads (from JSON lines, or a Parquet file converted
from them): ``data_source``, ``prompt`` (chat messages: the papers' prompt for one function,
:func:`sgcc.llm.prompt.messages_for`, with the problem's C source and gcc's ``-O3`` unit),
``ability``, ``reward_model`` ``{"style": "rule", "ground_truth": ...}`` and ``extra_info``.
The ground truth is the JSON text ``{"problem": DIR, "name": NAME, "function": F, "flags": [...]}``
that :func:`sgcc.lab.reward.compute_score` reads back (``SGCC_DATASET_ROOT`` relocates ``DIR``).

A dataset is a directory written by ``sgcc dataset build`` (its ``dataset.json`` lists the
problems), any directory of problem directories in that layout (``examples/programs``), or
one problem directory. Functions worth optimizing are those the problem's tests execute
(instruction counts from callgrind, :mod:`sgcc.engine.profile`, on the smallest tests first, a
few seconds' worth); without valgrind, or with ``functions="all"``, every function unit of
the ``-O3`` assembly.
"""

from __future__ import annotations

import json
from pathlib import Path

from sgcc.errors import SgccError
from sgcc.fsutil import atomic_write

DATA_SOURCE = "sgcc/superoptimization"
ABILITY = "code-optimization"
#: Wall seconds of profiling per problem when choosing the executed functions.
PROFILE_SECONDS = 5.0


def find_problems(dataset: Path) -> list[Path]:
    """The problem directories of ``dataset`` (see the module docstring), sorted by name."""
    from sgcc.lab.reward import problem_source

    dataset = Path(dataset)
    if not dataset.is_dir():
        raise SgccError(f"no such dataset directory: {dataset}")
    listing = dataset / "dataset.json"
    if listing.is_file():
        try:
            data = json.loads(listing.read_text(encoding="utf-8"))
            names = [p["name"] for p in data.get("problems", [])]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SgccError(f"{listing} is not an sgcc dataset file", cause=exc) from exc
        return [dataset / n for n in sorted(names)]
    if (dataset / "tests").is_dir():
        try:
            problem_source(dataset)
            return [dataset]
        except SgccError:
            pass
    found = []
    for d in sorted(dataset.iterdir()):
        if d.is_dir() and not d.name.startswith(".") and (d / "tests").is_dir() and (d / f"{d.name}.c").is_file():
            found.append(d)
    if not found:
        raise SgccError(f"no problems in {dataset}", hint="expected NAME/NAME.c with NAME/tests/*.in")
    return found


def _functions(prob, mode: str) -> tuple[list[str], dict[str, float] | None]:
    names = [u.name for u in prob.program.asm.units]
    if mode == "all":
        return names, None
    from sgcc.engine import profile

    tests = sorted(prob.tests, key=lambda t: (len(t.stdin), t.name))
    weights = profile.function_weights(prob.program.binary, tests, sandbox=prob.sandbox, names=names,
                                       seconds=PROFILE_SECONDS)
    if weights is None:
        return names, None
    executed = [n for n in names if weights.get(n, 0.0) > 0.0]
    executed.sort(key=lambda n: -weights[n])
    return executed, weights


def rows_for(directory: Path, *, functions: str = "executed", flags: list[str] | None = None,
             data_source: str = DATA_SOURCE, split: str = "train", reward: str | None = None,
             compiler: str = "gcc") -> list[dict]:
    """The VERL rows of one problem directory."""
    from sgcc.lab.reward import Problem
    from sgcc.llm.prompt import messages_for

    directory = Path(directory).resolve()
    rows = []
    # Any function will do to build the baseline; "main" is in every program.
    prob = Problem(directory, "main", flags, compiler=compiler)
    try:
        names, weights = _functions(prob, functions)
        for index, name in enumerate(names):
            unit = prob.program.asm.unit(name).text
            truth = {"problem": str(directory), "name": directory.name, "function": name, "flags": prob.flags}
            extra = {"split": split, "index": index, "problem": directory.name, "function": name,
                     "weight": None if weights is None else round(weights.get(name, 0.0), 6),
                     "tests": len(prob.tests)}
            if reward:
                extra["reward"] = reward
            rows.append({
                "data_source": data_source,
                "prompt": messages_for(prob.program.source_text, unit),
                "ability": ABILITY,
                "reward_model": {"style": "rule", "ground_truth": json.dumps(truth, sort_keys=True)},
                "extra_info": extra,
            })
    finally:
        prob.close()
    return rows


def export(dataset: Path, out: Path, *, functions: str = "executed", flags: list[str] | None = None,
           data_source: str = DATA_SOURCE, split: str = "train", reward: str | None = None,
           compiler: str = "gcc", progress=None) -> dict:
    """Write the rows of every problem of ``dataset`` to ``out`` (JSON lines, atomically);
    return counts: problems, rows, and problems skipped with the reason."""
    if functions not in ("executed", "all"):
        raise SgccError(f"functions must be 'executed' or 'all', not {functions!r}")
    problems = find_problems(Path(dataset))
    status = progress.status if progress else (lambda message: None)
    rows: list[dict] = []
    skipped: dict[str, str] = {}
    for i, directory in enumerate(problems, 1):
        status(f"exporting {i}/{len(problems)}: {directory.name}")
        try:
            found = rows_for(directory, functions=functions, flags=flags, data_source=data_source, split=split,
                             reward=reward, compiler=compiler)
        except SgccError as exc:
            skipped[directory.name] = exc.message
            continue
        for row in found:
            row["extra_info"]["index"] = len(rows)
            rows.append(row)
    try:
        atomic_write(Path(out), "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    except OSError as exc:
        raise SgccError(f"cannot write {out}", cause=exc) from exc
    if progress:
        progress.done()
    return {"problems": len(problems) - len(skipped), "rows": len(rows), "skipped": skipped, "out": str(out)}
