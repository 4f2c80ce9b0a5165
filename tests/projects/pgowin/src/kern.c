#include "kern.h"

/* Four step functions called through a table: which one runs is known only at run time.
 * With a profile gcc promotes the hot indirect call to a direct one and inlines it, and
 * specializes the division by the divisor the run always uses. */
static unsigned long step_add(unsigned long x, unsigned long i) { return x + i * 7u; }
static unsigned long step_xor(unsigned long x, unsigned long i) { return (x ^ (i << 3)) + 1u; }
static unsigned long step_mul(unsigned long x, unsigned long i) { return x * 3u + i; }
static unsigned long step_rot(unsigned long x, unsigned long i) { return ((x << 5) | (x >> 59)) + i; }

static unsigned long (*const steps[])(unsigned long, unsigned long) = {step_add, step_xor, step_mul, step_rot};

unsigned long kernel(int op, unsigned long n, unsigned long d)
{
    unsigned long (*volatile table)(unsigned long, unsigned long) = steps[op & 3];
    unsigned long (*f)(unsigned long, unsigned long) = table;
    unsigned long x = 1, acc = 0;
    for (unsigned long i = 0; i < n; i++) {
        x = f(x, i);
        acc += x % d;
    }
    return acc;
}
