/* determinant: Determinant mod the prime 998244353 of a generated n x n matrix, by Gaussian elimination with modular inverses. Input: "n seed zero_row". */
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

#define P 998244353LL

static long long inv(long long a)
{
    long long r = 1, e = P - 2;
    a %= P;
    while (e) { if (e & 1) r = r * a % P; a = a * a % P; e >>= 1; }
    return r;
}

__attribute__((noinline)) long long det(long long *a, int n)
{
    long long d = 1;
    for (int c = 0; c < n; c++) {
        int piv = c;
        while (piv < n && a[piv * n + c] == 0) piv++;
        if (piv == n) return 0;
        if (piv != c) {
            for (int j = 0; j < n; j++) { long long t = a[c * n + j]; a[c * n + j] = a[piv * n + j]; a[piv * n + j] = t; }
            d = (P - d) % P;
        }
        d = d * a[c * n + c] % P;
        long long iv = inv(a[c * n + c]);
        for (int r = c + 1; r < n; r++) {
            long long f = a[r * n + c] * iv % P;
            if (!f) continue;
            for (int j = c; j < n; j++) a[r * n + j] = (a[r * n + j] - f * a[c * n + j] % P + P) % P;
        }
    }
    return d;
}

int main(void)
{
    int n, zero; unsigned long long seed;
    if (scanf("%d %llu %d", &n, &seed, &zero) != 3 || n < 1) { puts("1"); return 0; }
    rng_state = seed;
    long long *a = malloc(sizeof *a * (size_t)n * n);
    for (int i = 0; i < n * n; i++) a[i] = (i / n == zero) ? 0 : (i % (n + 1) == 0 ? 0 : (long long)(next_rand() % P));
    printf("%lld\n", det(a, n));
    free(a);
    return 0;
}
