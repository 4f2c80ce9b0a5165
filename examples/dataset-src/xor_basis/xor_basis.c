/* xor_basis: Builds a GF(2) linear basis of n generated 64-bit numbers, many times; prints the rank and the largest xor. Input: "n reps seed". */
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

__attribute__((noinline)) int basis_build(const unsigned long long *a, int n, unsigned long long *basis)
{
    int rank = 0;
    for (int b = 0; b < 64; b++) basis[b] = 0;
    for (int i = 0; i < n; i++) {
        unsigned long long x = a[i];
        for (int b = 63; b >= 0 && x; b--) {
            if (!((x >> b) & 1)) continue;
            if (!basis[b]) { basis[b] = x; rank++; x = 0; }
            else x ^= basis[b];
        }
    }
    return rank;
}

int main(void)
{
    int n, reps; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &reps, &seed) != 3 || n < 1 || reps < 1) { puts("0 0"); return 0; }
    rng_state = seed;
    unsigned long long *a = malloc(8 * (size_t)n), basis[64], best = 0;
    int rank = 0;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < n; i++) a[i] = next_rand() >> (next_rand() % 48);
        rank = basis_build(a, n, basis);
        unsigned long long x = 0;
        for (int b = 63; b >= 0; b--) if ((x ^ basis[b]) > x) x ^= basis[b];
        if (x > best) best = x;
    }
    printf("%d %llu\n", rank, best);
    free(a);
    return 0;
}
