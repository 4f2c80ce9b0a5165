#include "kern.h"

/* Four step functions called through a table: which one runs is known only at run time.
 * With a profile gcc promotes the hot indirect call to a direct one and inlines it,
 * specializes the division by the divisor the run always uses, and vectorizes the window's
 * dot product, whose length is known only at run time (gcc -O2 leaves such a loop scalar).
 * The dot product dominates, so PGO's build is several times faster: a margin no noise on a
 * shared machine hides. */
static unsigned long step_add(unsigned long x, unsigned long i) { return x + i * 7u; }
static unsigned long step_xor(unsigned long x, unsigned long i) { return (x ^ (i << 3)) + 1u; }
static unsigned long step_mul(unsigned long x, unsigned long i) { return x * 3u + i; }
static unsigned long step_rot(unsigned long x, unsigned long i) { return ((x << 5) | (x >> 59)) + i; }

static unsigned long (*const steps[])(unsigned long, unsigned long) = {step_add, step_xor, step_mul, step_rot};

static unsigned dot(const short *a, const short *b, unsigned long m)
{
    unsigned s = 0;  /* unsigned: the sum wraps, defined */
    for (unsigned long j = 0; j < m; j++)
        s += (unsigned)(a[j] * b[j]);
    return s;
}

unsigned long kernel(int op, unsigned long n, unsigned long d)
{
    static short window[1024], weights[1024];
    unsigned long (*volatile table)(unsigned long, unsigned long) = steps[op & 3];
    unsigned long (*f)(unsigned long, unsigned long) = table;
    unsigned long x = 1, acc = 0, m = d * 8 + 3;  /* the window's length, from the input */
    for (unsigned long j = 0; j < 1024; j++)
        weights[j] = (short)(j * 37u);
    for (unsigned long i = 0; i < n; i++) {
        x = f(x, i);
        acc += x % d;
        window[i & 1023] = (short)x;
        if ((i & 63) == 63)
            acc += dot(window, weights, m);
    }
    return acc;
}
