#!/usr/bin/env python3
"""Tokens per second through sgcc's llama.cpp backend, against llama-cpp-python called directly.

Both sides run the same GGUF model with the same settings (context, threads) on the same
prompt (sgcc's prompt for a real function unit: popcount's ``count_bits`` by default), with
the same seed per repetition, so they generate the same tokens. Each side has its own
``Llama`` instance, loaded once; before every call its state is reset so that each call reads
the whole prompt and then generates (what one sgcc request costs). Repetitions interleave
the two sides in random order; the figure is the median of the per-repetition ratios
sgcc/direct of tokens per second, with their range and a bootstrap interval (target >= 0.9).

- direct: ``llm.create_chat_completion(messages=..., max_tokens, temperature, seed)``;
- sgcc: :meth:`sgcc.llm.backends.LlamaCppBackend.complete` (the model's own chat template,
  token counting and the context check, a per-token progress counter).

Usage: ``python bench/llm_throughput.py [--model PATH|NAME] [--reps 10] [--max-tokens 128]
[--threads N] [--program popcount] [--function count_bits]``. Takes about a minute with the
tiny packaged model (SmolLM2-135M) on 2 cores.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import proc  # noqa: E402
from sgcc.asm.units import AsmFile  # noqa: E402
from sgcc.llm import models, prompt  # noqa: E402
from sgcc.llm.backends import LlamaCppBackend, default_threads  # noqa: E402
from sgcc.verify.timing.rounds import timing_lock  # noqa: E402


def _messages(program: str, function: str) -> list[dict]:
    src = ROOT / "examples" / "programs" / program / f"{program}.c"
    asm = proc.run(["gcc", "-O3", "-S", "-o", "-", str(src)], check=True).stdout.decode()
    return prompt.messages_for(src.read_text(), AsmFile.parse(asm).unit(function).text)


def _bootstrap(ratios: list[float], n: int = 2000, seed: int = 1) -> tuple[float, float]:
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2", help="GGUF path or name (default: the packaged SmolLM2-135M)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0, help="default: all cores")
    ap.add_argument("--context", type=int, default=0, help="default: the model's own, at most 8192")
    ap.add_argument("--temperature", type=float, default=0.5)
    ap.add_argument("--program", default="popcount")
    ap.add_argument("--function", default="count_bits")
    args = ap.parse_args()

    from llama_cpp import Llama

    info = models.resolve(args.model)
    messages = _messages(args.program, args.function)
    ours = LlamaCppBackend(info.path, context=args.context, threads=args.threads or default_threads(),
                           train_context=info.context_length, name=info.name)
    ours.load()
    direct = Llama(model_path=info.path, n_ctx=ours.context, n_threads=ours.threads, n_threads_batch=ours.threads,
                   verbose=False)
    n_prompt = ours.count_tokens(messages)
    print(f"model: {info.name} ({models.human_size(info.size)}, {info.quantization}), context {ours.context}, "
          f"{ours.threads} threads; prompt: {args.program}/{args.function}, {n_prompt} tokens; "
          f"max {args.max_tokens} new tokens, temperature {args.temperature}")

    def run_direct(seed: int) -> tuple[int, float]:
        direct.reset()
        t0 = time.perf_counter()
        out = direct.create_chat_completion(messages=messages, max_tokens=args.max_tokens,
                                            temperature=args.temperature, seed=seed)
        return out["usage"]["completion_tokens"], time.perf_counter() - t0

    def run_sgcc(seed: int) -> tuple[int, float]:
        ours.llm.reset()
        t0 = time.perf_counter()
        done = ours.complete(messages, max_tokens=args.max_tokens, temperature=args.temperature, seed=seed)
        return done.completion_tokens, time.perf_counter() - t0

    run_direct(0)  # warm-up: page in the weights for both
    run_sgcc(0)
    rates: dict[str, list[float]] = {"sgcc": [], "direct": []}
    ratios: list[float] = []
    order_rng = random.Random(12345)
    with timing_lock():
        for rep in range(args.reps):
            seed = 1000 + rep
            sides = [("sgcc", run_sgcc), ("direct", run_direct)]
            order_rng.shuffle(sides)
            got = {}
            for name, fn in sides:
                tokens, seconds = fn(seed)
                got[name] = (tokens, seconds, tokens / seconds)
                rates[name].append(tokens / seconds)
            if got["sgcc"][0] != got["direct"][0]:
                print(f"  note: rep {rep}: different token counts ({got['sgcc'][0]} vs {got['direct'][0]})")
            ratios.append(got["sgcc"][2] / got["direct"][2])
            print(f"  rep {rep + 1:2d} ({sides[0][0]} first): sgcc {got['sgcc'][2]:6.1f} tok/s "
                  f"({got['sgcc'][0]} tokens in {got['sgcc'][1]:.2f} s), direct {got['direct'][2]:6.1f} tok/s "
                  f"({got['direct'][0]} in {got['direct'][1]:.2f} s), ratio {ratios[-1]:.3f}")
    for name in ("sgcc", "direct"):
        r = sorted(rates[name])
        q1, q3 = r[len(r) // 4], r[(3 * len(r)) // 4]
        print(f"{name:>6}: median {statistics.median(r):.1f} tokens/s (IQR {q1:.1f}-{q3:.1f}, "
              f"range {r[0]:.1f}-{r[-1]:.1f})")
    lo, hi = _bootstrap(ratios)
    med = statistics.median(ratios)
    print(f"ratio sgcc/direct (tokens/s, paired): median {med:.3f}, range {min(ratios):.3f}-{max(ratios):.3f}, "
          f"95% bootstrap interval {lo:.3f}-{hi:.3f}, {len(ratios)} interleaved pairs "
          f"({'meets' if med >= 0.9 else 'BELOW'} the 0.9 target)")
    ours.close()
    direct.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
