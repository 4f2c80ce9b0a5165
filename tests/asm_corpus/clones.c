/* Static functions gcc clones: .constprop.N (constant arguments), .isra.N (scalarized
 * aggregate arguments), .part.N (partial inlining of an early-exit test). */
#include <stdio.h>
#include <stdlib.h>

struct cfg { int scale; int bias; int pad[30]; };

static __attribute__((noinline)) long mix(const long *v, int n, int stride, long mul)
{
    long s = 0;
    for (int i = 0; i < n; i += stride)
        s = s * mul + v[i];
    return s;
}

static __attribute__((noinline)) int apply(const struct cfg *c, int x)
{
    return x * c->scale + c->bias;
}

static int table[64];

static void fill(int *t, int n)
{
    if (!t)
        return;
    for (int i = 0; i < n; i++) {
        t[i] = (i * 7919) % 101;
        if (t[i] == 50)
            printf("fifty at %d\n", i);
        t[i] += t[i / 2] ^ i;
        if (t[i] > 1000)
            abort();
    }
}

__attribute__((noinline)) void refill(int which)
{
    fill(which ? table : NULL, 64);
}

int main(int argc, char **argv)
{
    (void)argv;
    long v[32];
    for (int i = 0; i < 32; i++)
        v[i] = i + argc;
    struct cfg c = {3, -4, {0}};
    refill(argc);
    refill(0);
    printf("%ld %ld %d %d %d\n", mix(v, 32, 2, 3), mix(v, 32, 2, 3) + mix(v, 16, 2, 3),
           apply(&c, 5), apply(&c, -7), table[63]);
    return 0;
}
