/* matrix_power: k x k matrix raised to the power e mod 1e9+7 (square-and-multiply); prints the trace. Input: "k e seed". */
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

#define MOD 1000000007ULL

__attribute__((noinline)) void matmul_mod(const unsigned long long *a, const unsigned long long *b, unsigned long long *c, int k)
{
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) {
            unsigned long long s = 0;
            for (int t = 0; t < k; t++) s = (s + a[i * k + t] * b[t * k + j]) % MOD;
            c[i * k + j] = s;
        }
}

int main(void)
{
    int k; unsigned long long e, seed;
    if (scanf("%d %llu %llu", &k, &e, &seed) != 3 || k < 1 || k > 200) { puts("0"); return 0; }
    rng_state = seed;
    size_t sz = (size_t)k * k;
    unsigned long long *m = malloc(sz * 8), *r = calloc(sz, 8), *t = malloc(sz * 8);
    for (size_t i = 0; i < sz; i++) m[i] = next_rand() % MOD;
    for (int i = 0; i < k; i++) r[i * k + i] = 1;
    while (e) {
        if (e & 1) { matmul_mod(r, m, t, k); memcpy(r, t, sz * 8); }
        matmul_mod(m, m, t, k); memcpy(m, t, sz * 8);
        e >>= 1;
    }
    unsigned long long tr = 0;
    for (int i = 0; i < k; i++) tr = (tr + r[i * k + i]) % MOD;
    printf("%llu\n", tr);
    free(m); free(r); free(t);
    return 0;
}
