/* gray_code: Converts n Gray codes back to binary with a bit-by-bit loop; prints a checksum. Input: "n seed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng_state;
static unsigned long long next_rand(void)
{
    unsigned long long z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__attribute__((noinline)) unsigned long long gray_decode_all(const unsigned *g, int n)
{
    unsigned long long acc = 0;
    for (int i = 0; i < n; i++) {
        unsigned x = g[i], b = 0;
        while (x) { b ^= x; x >>= 1; }
        acc += b ^ (unsigned)i;
    }
    return acc;
}

int main(void)
{
    int n; unsigned long long seed;
    if (scanf("%d %llu", &n, &seed) != 2 || n < 1) { puts("0"); return 0; }
    rng_state = seed;
    unsigned *g = malloc(sizeof *g * (size_t)n);
    for (int i = 0; i < n; i++) { unsigned v = (unsigned)next_rand(); g[i] = v ^ (v >> 1); }
    printf("%llu\n", gray_decode_all(g, n));
    free(g);
    return 0;
}
