"""The llm generator: a language model rewrites each function unit (the SuperCoder approach).

Round 0 asks the model ``samples`` times per function unit with the papers' prompt
(best-of-N: every answer is a candidate, and the engine keeps the best proven one). Each
later round (``--rounds K``) continues every sample's conversation: the previous answer and
what became of it (assembler error at the exact line, the refusal, the first failing test,
or the measured speed of a correct attempt) go back to the model, which answers again. A
conversation ends when its prompt no longer fits the context or generation fails; the engine
stops the whole search early when a round brings nothing new.

The model is loaded once per run, when the first function needs it. A model that cannot be
found, read or loaded does not stop the run: the generator records the error
(``self.error``), offers nothing, and ``sgcc optimize`` still writes gcc's program (or what
other generators proved) before it reports the error. Throughput (tokens, tokens/s, seconds) is kept per candidate in
its ``meta`` and shown in the progress display.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.candidates import Candidate, Generator
from sgcc.errors import SgccError
from sgcc.stages import Stage

if TYPE_CHECKING:
    from collections.abc import Callable

    from sgcc.asm.units import Unit
    from sgcc.candidates import Attempt, Context, ProgramView
    from sgcc.config import Config
    from sgcc.llm.backends import Backend

NAME = "llm"


class LLMGenerator(Generator):
    """Asks a model (:mod:`sgcc.llm.backends`) for each unit; see the module docstring."""

    name = NAME

    def __init__(self, backend: Backend | None, *, samples: int = 1, temperature: float = 0.5, max_tokens: int = 2000,
                 seed: int | None = None, label: str = "", error: SgccError | None = None):
        self.backend = backend
        self.samples = max(1, int(samples))
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.seed = seed
        self.label = label or (backend.describe() if backend is not None else "")
        self.error: SgccError | None = error
        self.failures = 0  # requests that failed (not counting prompts that did not fit)
        self._error_reported = False
        self._loaded = False
        self._note: Callable[[str], None] | None = None
        self._dir: Path | None = None
        self._answers: dict[tuple[str, int, int], str] = {}  # (function, round, sample) -> raw answer
        self._ended: set[tuple[str, int]] = set()  # (function, sample) conversations that ended
        self._asked: set[str] = set()  # conversations already sent at temperature 0
        self._transcript_no = 0

    @property
    def incomplete(self) -> bool:
        """True when the model could not do its part (not loaded, requests failed): the engine
        then caches no "nothing faster" verdict for this search."""
        return self.error is not None or self.failures > 0

    # -- engine hooks ---------------------------------------------------------------------

    def prepare(self, context: Context) -> None:
        """Keep the progress display and a directory for transcripts (the model is loaded when
        the first function needs it, so a run with nothing to search never loads it)."""
        self._note = context.note
        if context.workdir is not None:
            self._dir = Path(context.workdir) / "llm"
            self._dir.mkdir(parents=True, exist_ok=True)

    def _load(self) -> bool:
        """Load the model once; its errors are kept, not raised (the run goes on without it)."""
        if self._loaded or self.error is not None:
            return self._loaded
        from sgcc.llm.backends import BackendError

        assert self.backend is not None, "a generator without a backend holds its error"
        self._say(f"llm: loading {self.label}")
        started = time.perf_counter()
        try:
            self.backend.load()
        except BackendError as exc:
            self.error = exc
            self._say(f"llm: cannot run: {exc.message}")
            return False
        self._loaded = True
        self._say(f"llm: ready ({self.label}, {time.perf_counter() - started:.1f} s)")
        return True

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()

    def propose(self, program: ProgramView, unit: Unit, round_no: int, history: list[Attempt]) -> list[Candidate]:
        if not self._load():
            return self._report_error(unit)
        from sgcc.llm import prompt

        jobs: list[tuple[int, list[dict]]] = []
        if round_no == 0:
            messages = prompt.messages_for(program.source_text, unit.text)
            jobs = [(i, messages) for i in range(self.samples)]
        else:
            for i in range(self.samples):
                if (unit.name, i) in self._ended:
                    continue
                last = _latest(history, i)
                if last is None:
                    continue
                cand, result = last.candidate, last.result
                if cand.skip:  # did not fit, or generation failed: a longer prompt will not do better
                    self._ended.add((unit.name, i))
                    continue
                raw = self._answers.get((unit.name, cand.meta.get("round", -1), i))
                if raw is None:
                    continue
                offset = lines = None
                if result.stage == Stage.ASSEMBLE and not cand.invalid:
                    offset = prompt.unit_line_offset(program.asm, unit.name, cand.text)
                    try:
                        lines = program.asm.join({unit.name: cand.text}).split("\n")
                    except Exception:  # noqa: BLE001
                        lines = None
                invalid = bool(cand.invalid) and result.stage == Stage.SCREEN and result.reason == cand.invalid
                text = prompt.feedback(result, cand.text, invalid=invalid, offset=offset, base_lines=lines)
                jobs.append((i, prompt.messages_for(program.source_text, unit.text, raw, text)))
        if self.temperature == 0:  # the same conversation would get the same answer
            fresh = []
            for i, messages in jobs:
                digest = hashlib.sha256(json.dumps(messages).encode()).hexdigest()
                if digest not in self._asked:
                    self._asked.add(digest)
                    fresh.append((i, messages))
            jobs = fresh
        if not jobs:
            return []
        if self.backend is not None and self.backend.concurrent and len(jobs) > 1:
            with ThreadPoolExecutor(max_workers=min(4, len(jobs))) as pool:
                return list(pool.map(lambda job: self._ask(unit.name, round_no, *job), jobs))
        return [self._ask(unit.name, round_no, i, messages) for i, messages in jobs]

    # -- one answer -----------------------------------------------------------------------

    def _ask(self, function: str, round_no: int, sample: int, messages: list[dict]) -> Candidate:
        from sgcc.llm import prompt
        from sgcc.llm.backends import BackendError, BackendUnavailable, PromptTooLong

        where = f"{function} round {round_no} sample {sample + 1}/{self.samples}"
        origin = f"round {round_no}, sample {sample + 1}/{self.samples}"
        meta: dict[str, object] = {"round": round_no, "sample": sample + 1}
        if self.error is not None:  # another sample of this batch found the backend gone
            return Candidate(function, NAME, "", origin=origin, meta=meta,
                             skip=f"llm unavailable: {self.error.message}")
        self._say(f"llm: {where}: generating")
        backend = self.backend
        assert backend is not None  # asked only once loaded

        def progress(tokens: int, seconds: float) -> None:
            rate = f", {tokens / seconds:.1f} tokens/s" if seconds > 0 else ""
            self._say(f"llm: {where}: {tokens} tokens{rate}")

        try:
            done = backend.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature,
                                         seed=self._seed(function, round_no, sample), label=function,
                                         on_progress=progress)
        except BackendError as exc:
            if isinstance(exc, BackendUnavailable):
                self.error = exc
            elif not isinstance(exc, PromptTooLong):
                self.failures += 1
            self._transcript(function, round_no, sample, messages, None, exc.message)
            return Candidate(function, NAME, "", origin=origin, meta=meta, skip=_skip_reason(exc))
        tps = done.tokens_per_s
        meta.update({"prompt_tokens": done.prompt_tokens, "tokens": done.completion_tokens,
                     "gen_seconds": round(done.seconds, 3),
                     "tokens_per_s": round(tps, 2) if tps is not None else None,
                     "finish": done.finish_reason})
        if done.first_token_seconds is not None:
            meta["prompt_seconds"] = round(done.first_token_seconds, 3)  # time to the first token
        rate = f" ({tps:.1f} tokens/s)" if tps is not None else ""
        self._say(f"llm: {where}: {done.completion_tokens} tokens in {done.seconds:.1f} s{rate}")
        self._answers[(function, round_no, sample)] = done.text
        self._transcript(function, round_no, sample, messages, done.text, "")
        parsed = prompt.parse_answer(done.text, done.finish_reason)
        if parsed.assembly is not None:
            return Candidate(function, NAME, parsed.assembly, origin=origin, meta=meta)
        return Candidate(function, NAME, done.text, origin=origin, meta=meta, invalid=parsed.problem)

    def _seed(self, function: str, round_no: int, sample: int) -> int:
        """Reproducible per (function, round, sample) with a seed; fresh randomness without."""
        if self.seed is None:
            return random.SystemRandom().randrange(1 << 31)
        return zlib.crc32(f"{self.seed}/{function}/{round_no}/{sample}".encode()) & 0x7FFFFFFF

    def _report_error(self, unit) -> list[Candidate]:
        """Say once, in the report, why the llm offers nothing; then stay quiet."""
        if self._error_reported:
            return []
        self._error_reported = True
        assert self.error is not None  # only called when _load() failed, which keeps the error
        return [Candidate(unit.name, NAME, "", origin=self.label,
                          skip=f"the llm generator cannot run: {self.error.message}")]

    def _say(self, message: str) -> None:
        if self._note is not None:
            try:
                self._note(message)
            except Exception:  # noqa: BLE001 - the display must never break a run
                pass

    def _transcript(self, function, round_no, sample, messages, answer, error) -> None:
        """Keep the conversation in the work directory (kept with --keep-temps)."""
        if self._dir is None:
            return
        self._transcript_no += 1
        record = {"function": function, "round": round_no, "sample": sample, "messages": messages,
                  "answer": answer, "error": error}
        try:
            name = f"{self._transcript_no:04d}-{function}-r{round_no}-s{sample + 1}.json"
            (self._dir / name).write_text(json.dumps(record, indent=1), encoding="utf-8")
        except OSError:
            pass


def _latest(history, sample: int):
    """The newest attempt of conversation ``sample`` (0-based; 1-based in ``meta``) in this unit's history."""
    for attempt in reversed(history):
        cand = attempt.candidate
        if cand.generator == NAME and cand.meta.get("sample") == sample + 1:
            return attempt
    return None


def _skip_reason(exc) -> str:
    from sgcc.llm.backends import PromptTooLong

    if isinstance(exc, PromptTooLong):
        return f"prompt does not fit: {exc.message}"
    return f"generation failed: {exc.message}"


def from_config(cfg: Config, **_context) -> LLMGenerator:
    """The llm generator for the effective configuration (``model``/``endpoint`` and the llm settings).

    A configuration error (no model and no endpoint, a malformed endpoint URL, a bad number)
    raises :class:`SgccError`. A model file that is missing or unreadable does not: the
    generator keeps the error, offers nothing, and the command reports it after writing gcc's
    result.
    """
    from sgcc.llm import backends, models

    model, endpoint = cfg.model.strip(), cfg.endpoint.strip()
    samples, max_tokens = int(cfg.samples), int(cfg.max_tokens)
    temperature = float(cfg.temperature)
    if samples < 1:
        raise SgccError(f"samples must be at least 1 (got {samples})")
    if max_tokens < 1:
        raise SgccError(f"max_tokens must be at least 1 (got {max_tokens})")
    if not 0.0 <= temperature <= 5.0:
        raise SgccError(f"temperature must be between 0 and 5 (got {temperature})")
    seed = cfg.seed

    def generator(backend, *, label: str = "", error: SgccError | None = None) -> LLMGenerator:
        return LLMGenerator(backend, samples=samples, temperature=temperature, max_tokens=max_tokens, seed=seed,
                            label=label, error=error)

    if endpoint:
        remote = backends.RemoteBackend(endpoint, model=model, timeout=cfg.llm_timeout)
        return generator(remote, label=remote.describe())
    if model.startswith("fake:"):
        try:
            scripted = backends.ScriptedBackend.from_file(model[len("fake:"):])
        except SgccError as exc:
            return generator(None, label=model, error=exc)
        return generator(scripted)
    if not model:
        raise SgccError("the llm generator needs a model or an endpoint",
                        hint="--model PATH|NAME (`sgcc models` lists what sgcc finds) or --endpoint URL")
    try:
        info = models.resolve(model)
    except SgccError as exc:
        return generator(None, label=model, error=exc)
    local = backends.LlamaCppBackend(info.path, context=cfg.context, threads=cfg.threads,
                                     train_context=info.context_length, name=info.name)
    return generator(local)
