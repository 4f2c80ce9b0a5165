#!/usr/bin/env python3
"""Check the example programs and their hand-written replay candidates.

Stand-alone helper (stdlib + subprocess only); it is not part of sgcc and sgcc
does not use it.  For each program directory examples/programs/<name>/:

  1. build <name>.c with gcc -O0 and gcc -O3 (-std=c11, -lm), and gcc -O3 -S;
  2. run every tests/<t>.in through both builds; they must agree, and must
     match tests/<t>.out where that file exists;
  3. for every candidate (candidates/**/*.s and bad/*.s): splice its text into
     the -O3 assembly in place of the function it defines (the region from the
     section directive / .p2align before `<func>:` through `.size <func>, ...`),
     assemble and link, run the tests with a timeout, and report PASS/FAIL.
     Candidates under a directory named `native` are built the same way (they
     need a CPU with the instructions they use).  Files under bad/ are expected
     to FAIL; anything under candidates/ is expected to PASS.
  4. with --time, time the -O3 baseline against every passing candidate on the
     test named `large` (else the biggest input): ROUNDS interleaved pairs in
     random order within each pair, CPU time (user+sys from wait4), reporting
     the median of the paired ratios base/candidate.  This is a quick sanity
     check, not sgcc's measurement.
  5. warn when a candidate mentions caller-saved registers that gcc's own body
     of the function never touches: gcc -O3 enables -fipa-ra, so a caller in
     the same file may keep live values in them across the call (see
     popcount/bad/clobbers_r8.s, which is ABI-correct yet breaks main).

Usage: python3 examples/programs/verify.py [--time] [--rounds N] [name ...]
Exit status is 1 if any expectation above is not met.
"""
import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 10  # seconds per test run


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def func_of(candidate_text):
    """Name of the function a candidate defines (its `.type X, @function`)."""
    m = re.search(r"^\s*\.type\s+([\w.$]+)\s*,\s*@function", candidate_text, re.M)
    if not m:
        raise ValueError("candidate has no .type <func>, @function line")
    return m.group(1)


def splice(base_asm, func, candidate_text):
    """Replace function `func` in gcc's assembly text with candidate_text."""
    lines = base_asm.splitlines(keepends=True)
    label = next(i for i, l in enumerate(lines) if l.rstrip() == func + ":")
    start = label
    # walk back over the directives that belong to the function
    while start > 0:
        prev = lines[start - 1].strip()
        if prev.startswith((".p2align", ".align", ".globl", ".type")):
            start -= 1
        elif prev in (".text",) or prev.startswith(".section"):
            start -= 1
            break
        else:
            break
    size_re = re.compile(r"^\s*\.size\s+" + re.escape(func) + r"\s*,")
    end = next(i for i in range(label, len(lines)) if size_re.match(lines[i]))
    text = candidate_text if candidate_text.endswith("\n") else candidate_text + "\n"
    # Candidates start with their own section directive and must end in .text
    # (what gcc's text after the function assumes when it emits none).
    return "".join(lines[:start]) + text + "".join(lines[end + 1:])


CALLER_SAVED = {"rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11"} | {
    "xmm%d" % i for i in range(16)}
R64 = {"eax": "rax", "ax": "rax", "al": "rax", "ecx": "rcx", "cx": "rcx", "cl": "rcx",
       "edx": "rdx", "dx": "rdx", "dl": "rdx", "esi": "rsi", "si": "rsi", "sil": "rsi",
       "edi": "rdi", "di": "rdi", "dil": "rdi"}


def regs_used(asm_text):
    """Caller-saved registers an assembly text mentions (64-bit names)."""
    out = set()
    for r in re.findall(r"%([a-z][a-z0-9]*)", asm_text):
        r = R64.get(r, r)
        r = re.sub(r"^(r\d+)[dwb]$", r"\1", r)
        r = re.sub(r"^[yz]mm", "xmm", r)
        if r in CALLER_SAVED:
            out.add(r)
    return out


def function_text(asm, func):
    lines = asm.splitlines()
    i = lines.index(func + ":")
    size_re = re.compile(r"\s*\.size\s+" + re.escape(func) + r"\s*,")
    j = next(k for k in range(i, len(lines)) if size_re.match(lines[k]))
    return "\n".join(lines[i:j + 1])


def run(binary, infile):
    """Run binary on infile; return (stdout bytes, None) or (None, reason)."""
    with open(infile, "rb") as f:
        p = subprocess.Popen([binary], stdin=f, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.communicate()
            return None, "timeout"
    if p.returncode != 0:
        return None, "exit %d" % p.returncode
    return out, None


def cpu_time(binary, infile):
    with open(infile, "rb") as f:
        p = subprocess.Popen([binary], stdin=f, stdout=subprocess.DEVNULL)
        _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime


def check_program(name, tmp, do_time, rounds):
    ok = True
    d = os.path.join(HERE, name)
    src = os.path.join(d, name + ".c")
    o0, o3, s3 = (os.path.join(tmp, name + x) for x in (".O0", ".O3", ".s"))
    flags = ["-std=c11", "-Wall", "-Wextra"]
    sh(["gcc", "-O0", *flags, "-o", o0, src, "-lm"])
    sh(["gcc", "-O3", *flags, "-o", o3, src, "-lm"])
    sh(["gcc", "-O3", *flags, "-S", "-o", s3, src])
    tdir = os.path.join(d, "tests")
    tests = sorted(f[:-3] for f in os.listdir(tdir) if f.endswith(".in"))
    expected = {}
    for t in tests:
        inf = os.path.join(tdir, t + ".in")
        a, ea = run(o0, inf)
        b, eb = run(o3, inf)
        if a is None or b is None or a != b:
            print(f"  {name}/{t}: -O0 and -O3 disagree or fail ({ea or eb})")
            ok = False
        outf = os.path.join(tdir, t + ".out")
        if os.path.exists(outf):
            with open(outf, "rb") as f:
                if f.read() != b:
                    print(f"  {name}/{t}: -O3 output differs from {t}.out")
                    ok = False
        expected[t] = b
    # the test to time: "large" by convention, else the biggest input file
    largest = "large" if "large" in tests else max(
        tests, key=lambda t: os.path.getsize(os.path.join(tdir, t + ".in")))
    print(f"{name}: {len(tests)} tests, -O0/-O3 {'agree' if ok else 'PROBLEM'}")
    with open(s3) as f:
        base_asm = f.read()
    cands = []
    for sub, expect in (("candidates", True), ("bad", False)):
        root = os.path.join(d, sub)
        for dirpath, _, files in os.walk(root):
            for fn in sorted(files):
                if fn.endswith(".s"):
                    cands.append((os.path.join(dirpath, fn), expect))
    for path, expect in sorted(cands):
        rel = os.path.relpath(path, d)
        text = open(path).read()
        func = func_of(text)
        # gcc -O3 enables -fipa-ra: callers in the same file may keep values in
        # caller-saved registers that gcc's own body of `func` leaves alone.  A
        # candidate touching more of them can break the caller; flag it.
        # (a gcc body that calls out already clobbers all of them)
        body = function_text(base_asm, func)
        extra = set() if re.search(r"^\s*call", body, re.M) else regs_used(text) - regs_used(body)
        tag = re.sub(r"\W", "_", rel)
        cs, cb = os.path.join(tmp, f"{name}.{tag}.s"), os.path.join(tmp, f"{name}.{tag}")
        with open(cs, "w") as f:
            f.write(splice(base_asm, func, text))
        r = subprocess.run(["gcc", "-o", cb, cs, "-lm"], capture_output=True, text=True)
        if r.returncode != 0:
            verdict, why = False, "does not assemble/link: " + r.stderr.strip()[:300]
        else:
            verdict, why = True, ""
            for t in tests:
                out, err = run(cb, os.path.join(tdir, t + ".in"))
                if out != expected[t]:
                    verdict, why = False, f"test {t}: {err or 'wrong output'}"
                    break
        good = verdict == expect
        ok &= good
        line = f"  {rel} ({func}): {'PASS' if verdict else 'FAIL'}"
        line += "" if good else "  <-- UNEXPECTED"
        if why:
            line += f"  [{why}]"
        if extra:
            line += "  (touches caller-saved registers gcc's version does not: %s)" % (
                ", ".join(sorted(extra)))
        if verdict and do_time:
            inf = os.path.join(tdir, largest + ".in")
            ratios, tb, tc = [], [], []
            for _ in range(rounds):
                pair = [(o3, tb), (cb, tc)]
                random.shuffle(pair)
                for b, acc in pair:
                    acc.append(cpu_time(b, inf))
                ratios.append(tb[-1] / max(tc[-1], 1e-6))
            line += (f"  time[{largest}]: base {statistics.median(tb)*1000:.1f} ms,"
                     f" cand {statistics.median(tc)*1000:.1f} ms,"
                     f" median ratio {statistics.median(ratios):.2f}x")
        print(line)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    names = a.names or sorted(n for n in os.listdir(HERE)
                              if os.path.isfile(os.path.join(HERE, n, n + ".c")))
    ok = True
    with tempfile.TemporaryDirectory(prefix="sgcc-examples-") as tmp:
        for n in names:
            ok &= check_program(n, tmp, a.time, a.rounds)
    print("OK" if ok else "PROBLEMS FOUND")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
