/* lis: Length of the longest strictly increasing subsequence, O(n^2) DP. Input: "n seed". */
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

__attribute__((noinline)) int lis(const int *a, int *d, int n)
{
    int best = 0;
    for (int i = 0; i < n; i++) {
        d[i] = 1;
        for (int j = 0; j < i; j++)
            if (a[j] < a[i] && d[j] + 1 > d[i])
                d[i] = d[j] + 1;
        if (d[i] > best)
            best = d[i];
    }
    return best;
}

int main(void)
{
    int n; unsigned long long seed;
    if (scanf("%d %llu", &n, &seed) != 2 || n < 1) { puts("0"); return 0; }
    rng_state = seed;
    int *a = malloc(sizeof *a * (size_t)n), *d = malloc(sizeof *d * (size_t)n);
    for (int i = 0; i < n; i++) a[i] = (int)(next_rand() % 100000);
    printf("%d\n", lis(a, d, n));
    free(a); free(d);
    return 0;
}
