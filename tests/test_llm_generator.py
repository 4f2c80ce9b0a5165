"""The llm generator with scripted answers (and a local endpoint): best-of-N, refinement
feedback, the whole engine down to a shipped faster function, and what happens when the model
is missing or broken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from sgcc import proc
from sgcc.candidates import llm as llmgen
from sgcc.engine import Request, optimize
from sgcc.errors import SgccError
from sgcc.llm.backends import ScriptedBackend
from tests.conftest import EXAMPLES, TIMING_SAMPLE_SECONDS
from tests.test_llm_remote import Server, _ok

POPCOUNT = EXAMPLES / "programs" / "popcount"
FAST = (POPCOUNT / "candidates" / "count_bits.s").read_text()  # SWAR popcount: ~2x faster, plain x86-64
BAD_REG = FAST.replace("movq\t(%rdi), %rdx", "movq\t(%rdi), %nosuchreg")
WRONG = (POPCOUNT / "bad" / "wrong_output.s").read_text()


def _passes_tests(binary: Path) -> bool:
    for t in sorted((POPCOUNT / "tests").glob("*.in")):
        r = proc.run([str(binary)], stdin=t.read_bytes(), timeout=30)
        if r.returncode != 0 or r.stdout != t.with_suffix(".out").read_bytes():
            return False
    return True


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory):
    """popcount with best-of-3 and 2 refinement rounds, every answer scripted."""
    tmp = tmp_path_factory.mktemp("scripted")
    script = {
        "count_bits": [
            # round 0: three samples
            "Sure! The loop can use a SWAR popcount.",  # no assembly at all
            f"<assembly>\n{BAD_REG}</assembly>",  # does not assemble
            f"<assembly>\n{WRONG}</assembly>",  # assembles, links, wrong output
            # round 1: each sample refines its own last attempt
            f"```asm\n{FAST}```",  # correct and faster
            f"<assembly>\n{FAST}</assembly>",  # the same text as sample 1's: not built twice
            f"Here it is:\n<assembly>\n{FAST}</assembly>",  # prose around the assembly
            # round 2
            "<assembly>\n</assembly>",
            "```c\nlong count_bits(const unsigned long *a, int n) { return 0; }\n```",
            f"<assembly>\n{FAST}",
        ],
        "*": ["I do not know."] * 9,
    }
    backend = ScriptedBackend(script)
    gen = llmgen.LLMGenerator(backend, samples=3, seed=7, label="scripted")
    req = Request(source=POPCOUNT / "popcount.c", flags=["-O3"], tests=POPCOUNT / "tests", output=tmp / "out",
                  generators=[gen], seed=1, timing_rounds=6, min_sample=TIMING_SAMPLE_SECONDS, max_generator_rounds=3)
    return optimize(req), backend, gen, tmp


def _llm(report, function="count_bits"):
    return {(c.meta["round"], c.meta["sample"]): c for c in report.candidates
            if c.generator == "llm" and c.function == function}


def test_each_answer_stops_at_its_stage_and_the_faster_one_ships(scripted_run):
    report, _, _, tmp = scripted_run
    got = {k: (c.stage, c.reason) for k, c in _llm(report).items()}
    assert got[(0, 1)] == ("screen", "no assembly in the answer: no <assembly> tags and no ``` block")
    assert got[(0, 2)][0] == "assemble" and "bad register name `%nosuchreg'" in got[(0, 2)][1]
    assert got[(0, 3)][0] == "test" and "output differs from the expected" in got[(0, 3)][1]
    assert got[(1, 1)][0] == "accepted"
    assert got[(1, 2)] == ("skipped", "same text as another candidate of this round")
    assert got[(1, 3)][0] == "screen" and got[(1, 3)][1].startswith("prose around the assembly: 'Here it is:'")
    assert got[(2, 1)] == ("screen", "the assembly block in the answer is empty")
    assert got[(2, 2)] == ("screen", "the ``` block in the answer is marked as c code, not assembly")
    assert got[(2, 3)] == ("screen", "<assembly> is never closed by </assembly>")
    winner = _llm(report)[(1, 1)]
    assert report.shipped == [winner.id]
    assert report.final["low"] > 1.03
    assert _passes_tests(tmp / "out")
    assert all(c.stage in ("screen", "skipped") for c in _llm(report, "main").values())


def test_refinement_prompts_carry_the_feedback(scripted_run):
    _, backend, _, _ = scripted_run
    asked = [r for r in backend.requests if r["label"] == "count_bits"]
    assert len(asked) == 9
    first = asked[0]["messages"]
    assert len(first) == 1 and first[0]["content"].startswith("Given the following C code and assembly code")
    assert "long count_bits(const unsigned long *a, int n)" in first[0]["content"]  # the C source
    assert "count_bits:\n" in first[0]["content"] and "main:" not in first[0]["content"]  # one unit
    r1 = [a["messages"] for a in asked[3:6]]
    assert all(len(m) == 3 and m[0] == first[0] for m in r1)
    assert r1[0][1]["content"] == "Sure! The loop can use a SWAR popcount."  # the model's own last answer
    assert r1[0][2]["content"].startswith("Your answer could not be used: no assembly in the answer")
    k = BAD_REG.split("\n").index("\tmovq\t(%rdi), %nosuchreg") + 1
    assert f"line {k} of your answer: `movq\t(%rdi), %nosuchreg`\n  Error: bad register name" in r1[1][2]["content"]
    assert "builds but is wrong: test" in r1[2][2]["content"]
    assert "Expected output:\n" in r1[2][2]["content"] and "Actual output" not in r1[2][2]["content"]
    r2 = [a["messages"][2]["content"] for a in asked[6:9]]
    # Two of the five tests are held out (sgcc.engine.proof): the model hears of the three it may see.
    assert "is correct (it passes all 3 tests) and measured" in r2[0] and "as fast as gcc -O3" in r2[0]
    assert "repeats an earlier attempt" in r2[1]
    assert r2[2].startswith("Your answer could not be used: prose around the assembly")
    for text in [m[2]["content"] for m in r1] + r2:
        assert text.endswith("Wrap the assembly code in assembly tags.\n\nOptimized Assembly Code:\n")


def test_throughput_and_seeds_are_recorded(scripted_run):
    report, backend, gen, _ = scripted_run
    for c in report.candidates:
        assert {"prompt_tokens", "tokens", "gen_seconds", "tokens_per_s", "finish"} <= set(c.meta), c
    t = report.throughput()["llm"]
    assert t["answers"] == 18 and t["tokens"] > 0 and set(t["functions"]) == {"count_bits", "main"}
    assert "sgcc: llm: 18 answer(s)" in report.summary() and "tokens/s" in report.summary()
    assert report.to_dict()["throughput"]["llm"]["answers"] == 18
    seeds = [r["seed"] for r in backend.requests if r["label"] == "count_bits"][:3]
    assert len(set(seeds)) == 3 and seeds[0] == gen._seed("count_bits", 0, 0)
    assert all(r["temperature"] == 0.5 and r["max_tokens"] == 2000 for r in backend.requests)


# -- the generator on its own ---------------------------------------------------------------

UNIT = "\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n\tleal\t(%rdi,%rdi), %eax\n\tret\n\t.size\tf, .-f\n"
PROGRAM = SimpleNamespace(source_text="int f(int x) { return 2 * x; }\n", asm=None)
UNIT_F = SimpleNamespace(name="f", text=UNIT)


def _attempts(cands, stage="check", reason="r"):
    from sgcc.candidates import Attempt
    from sgcc.engine.report import CandidateResult

    out = []
    for c in cands:
        res = CandidateResult(id="c1", function=c.function, generator=c.generator)
        res.stop("skipped" if c.skip else stage, c.skip or c.invalid or reason)
        out.append(Attempt(c, res))
    return out


def test_a_prompt_that_does_not_fit_is_skipped_not_truncated():
    backend = ScriptedBackend({"*": ["x"] * 10, "context": 2100})
    gen = llmgen.LLMGenerator(backend, samples=2)
    cands = gen.propose(PROGRAM, UNIT_F, 0, [])
    assert len(cands) == 2 and not backend.requests
    assert cands[0].skip.startswith("prompt does not fit: the prompt (") and \
        "plus 2000 tokens for the answer do not fit the model's context of 2100 tokens" in cands[0].skip
    assert gen.propose(PROGRAM, UNIT_F, 1, _attempts(cands)) == []  # those conversations are over
    assert not gen.incomplete  # a prompt too long is a verdict, not a failure


def test_generation_errors_are_skips_and_make_the_search_incomplete():
    backend = ScriptedBackend({"*": [{"error": "the GPU caught fire"}, "<assembly>\n\tret\n</assembly>"]})
    gen = llmgen.LLMGenerator(backend, samples=2)
    a, b = gen.propose(PROGRAM, UNIT_F, 0, [])
    assert a.skip == "generation failed: the GPU caught fire" and b.text == "\tret\n" and not b.invalid
    assert gen.incomplete


def test_temperature_zero_asks_each_conversation_once():
    backend = ScriptedBackend({"*": ["no"] * 10})
    gen = llmgen.LLMGenerator(backend, samples=3, temperature=0.0)
    assert len(gen.propose(PROGRAM, UNIT_F, 0, [])) == 1 and len(backend.requests) == 1


def _cfg(**kw):
    base = dict(model="", endpoint="", samples=1, rounds=0, temperature=0.5, max_tokens=2000, context=0,
                threads=0, llm_timeout=600.0, seed=None)
    return SimpleNamespace(**{**base, **kw})


def test_from_config(tmp_path):
    with pytest.raises(SgccError, match="needs a model or an endpoint"):
        llmgen.from_config(_cfg())
    with pytest.raises(SgccError, match="samples must be at least 1"):
        llmgen.from_config(_cfg(model="smollm2", samples=0))
    with pytest.raises(SgccError, match="not an http"):
        llmgen.from_config(_cfg(endpoint="localhost:8080"))
    gen = llmgen.from_config(_cfg(model="smollm2", threads=1, context=1024))
    assert gen.error is None and gen.backend.threads == 1 and gen.backend.context == 1024
    assert gen.backend.llm is None  # nothing is loaded before the run needs it
    assert llmgen.from_config(_cfg(model="smollm2")).backend.context == 8192  # its own, capped
    gen = llmgen.from_config(_cfg(endpoint="http://127.0.0.1:9", model="m"))
    assert gen.backend.url == "http://127.0.0.1:9/v1/chat/completions" and gen.backend.model == "m"
    # A missing or corrupt model does not raise: the generator says why, once, and offers nothing.
    (tmp_path / "bad.gguf").write_text("garbage")
    for spec, words in ((str(tmp_path / "none.gguf"), "does not exist"), (str(tmp_path / "bad.gguf"), "not a GGUF"),
                        ("no-such-model-name", "no model named")):
        gen = llmgen.from_config(_cfg(model=spec))
        gen.prepare(SimpleNamespace(note=None, workdir=tmp_path))
        assert gen.error is not None and words in gen.error.message and gen.incomplete
        (cand,) = gen.propose(PROGRAM, UNIT_F, 0, [])
        assert cand.skip.startswith("the llm generator cannot run:") and words in cand.skip
        assert gen.propose(PROGRAM, SimpleNamespace(name="g", text=UNIT), 0, []) == []


def test_the_compile_path_never_imports_the_llm():
    code = ("import sys, sgcc.cli, sgcc.dropin.driver, sgcc.cli.main, sgcc.candidates.registry, sgcc.candidates.llm\n"
            "bad = sorted(m for m in sys.modules if m == 'llama_cpp' or m.startswith(('llama_cpp.', 'sgcc.llm')))\n"
            "assert not bad, bad\n"
            "import sgcc.llm.backends, sgcc.llm.models, sgcc.llm.prompt\n"
            "assert 'llama_cpp' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- through the command line ---------------------------------------------------------------


def _optimize_cli(sgcc_exe, tmp_path, *args, env=None):
    out = tmp_path / "out"
    report = tmp_path / "report.json"
    r = proc.run([sgcc_exe, "optimize", str(POPCOUNT / "popcount.c"), "-O3", "--tests", str(POPCOUNT / "tests"),
                  "-o", str(out), "--generators", "llm", "--timing-rounds", "6", "--seed", "1", "--no-cache",
                  "--report", str(report), *args], env={**os.environ, **(env or {})}, timeout=300)
    data = json.loads(report.read_text()) if report.exists() else None
    return r, out, data


def test_cli_with_an_endpoint_ships_the_faster_function(tmp_path, sgcc_exe):
    server = Server()

    def respond(body):
        prompt_text = body["messages"][0]["content"]
        if "count_bits:\n" in prompt_text.split("Assembly Code:")[1]:
            return 200, _ok(f"<assembly>\n{FAST}</assembly>", 900, 300), 0.0
        return 200, _ok("I cannot improve main.", 1500, 6), 0.0

    server.respond = respond
    try:
        r, out, data = _optimize_cli(sgcc_exe, tmp_path, "--endpoint", server.url, "--samples", "1", "--rounds", "0")
    finally:
        server.close()
    assert r.returncode == 0, r.stderr.decode()
    assert data["honest"]["functions"] == ["count_bits"] and data["honest"]["ci_low"] > 1.03
    assert server.posts()[0][2]["model"] == "served-model"  # asked from GET /v1/models
    assert data["throughput"]["llm"]["tokens"] == 306
    assert b"sgcc: llm: 2 answer(s), 306 tokens" in r.stderr
    assert _passes_tests(out)


def test_cli_with_scripted_answers(tmp_path, sgcc_exe):
    script = tmp_path / "answers.json"
    script.write_text(json.dumps({"count_bits": ["no idea", f"<assembly>\n{WRONG}</assembly>"] * 2,
                                  "*": ["```\n\tnop\n```", "nope"] * 2}))
    r, out, data = _optimize_cli(sgcc_exe, tmp_path, "--model", f"fake:{script}", "--samples", "2", "--rounds", "1")
    assert r.returncode == 0, r.stderr.decode()
    stages = sorted((c["function"], c["meta"]["round"], c["meta"]["sample"], c["stage"]) for c in data["candidates"])
    assert ("count_bits", 0, 1, "screen") in stages and ("count_bits", 0, 2, "test") in stages
    assert all(c["meta"]["tokens"] for c in data["candidates"])
    assert data["honest"]["speedup"] == 1.0 and _passes_tests(out)


@pytest.mark.parametrize("make, words", [
    (lambda d: str(d / "missing" / "supercoder-7b.gguf"), "model file {model} does not exist"),
    (lambda d: (d / "corrupt.gguf").write_bytes(b"\x7fELF" + b"\0" * 100) and str(d / "corrupt.gguf"),
     "model file {model} is not a GGUF file"),
    (lambda d: "no-such-model-name", "no model named 'no-such-model-name'"),
])
def test_cli_refuses_a_bad_model_before_any_work(tmp_path, sgcc_exe, make, words):
    """A model that is not there or not a model is known before anything is built: said at
    once (it was said after the baseline had been built and tested, issue 28)."""
    model = make(tmp_path)
    r, out, data = _optimize_cli(sgcc_exe, tmp_path, "--model", model, "--samples", "3")
    err = r.stderr.decode()
    assert r.returncode == 1
    assert err.count("sgcc: error:") == 1 and "Traceback" not in err
    assert f"sgcc: error: the llm generator cannot run: {words.format(model=model)}" in err
    assert "building the baseline" not in err and not out.exists() and data is None


def test_cli_with_an_endpoint_that_fails_still_writes_gccs_program(tmp_path, sgcc_exe):
    """What fails only once the run has begun (no server at the endpoint) does not stop it."""
    r, out, data = _optimize_cli(sgcc_exe, tmp_path, "--endpoint", "http://127.0.0.1:9", "--model", "m")
    err = r.stderr.decode()
    assert r.returncode == 1
    assert err.count("sgcc: error:") == 1 and "Traceback" not in err
    assert "sgcc: error: the llm generator could not run:" in err
    assert "was still written and passes every test" in err
    ref = tmp_path / "ref"
    proc.run(["gcc", "-O3", str(POPCOUNT / "popcount.c"), "-o", str(ref)], check=True)
    assert out.read_bytes() == ref.read_bytes()  # exactly gcc's program
    assert any("could not run" in n for n in data["notes"])
