"""Writes word_freq's inputs (deterministic): python3 make_inputs.py (from this directory)."""
import random

rng = random.Random(2024)
WORDS = ("the of and to in is was he for it with as his on be at by had are but from or have an they which one "
         "you were her all she there would their we him been has when who will more no if out so said what up its "
         "about into than them can only other new some could time these two may then do first any my now such like "
         "our over man me even most made after also did many before must through back years where much your way").split()


def text(n_words, extra=0):
    out = []
    for i in range(n_words):
        w = rng.choice(WORDS) if rng.random() < 0.8 else "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9 + extra)))
        if rng.random() < 0.1:
            w = w.capitalize()
        out.append(w + rng.choice(["", "", "", ",", ".", "!"]))
        out.append("\n" if rng.random() < 0.08 else " ")
    return "".join(out)


open("tests/t1.in", "w").write("the cat and The dog, and THE bird.\n")
open("tests/t2.in", "w").write("")
open("tests/t3.in", "w").write("x" * 40 + " 1234 --- " + "y" * 10 + "\n")
open("tests/t4.in", "w").write(text(3000))
open("tests/large.in", "w").write("REP 50\n" + text(30000))
