/* submatrix_count: Counts k x k submatrices of a generated matrix whose sum is below a limit, using 2-D prefix sums. Input: "n limit seed". */
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

__attribute__((noinline)) long count_small(const long *ps, int n, long limit)
{
    long count = 0;
    int w = n + 1;
    for (int k = 1; k <= n; k++)
        for (int r = k; r <= n; r++)
            for (int c = k; c <= n; c++) {
                long s = ps[r * w + c] - ps[(r - k) * w + c] - ps[r * w + c - k] + ps[(r - k) * w + c - k];
                if (s < limit) count++;
            }
    return count;
}

int main(void)
{
    int n; long limit; unsigned long long seed;
    if (scanf("%d %ld %llu", &n, &limit, &seed) != 3 || n < 1) { puts("0"); return 0; }
    rng_state = seed;
    int w = n + 1;
    long *ps = calloc((size_t)w * w, sizeof *ps);
    for (int r = 1; r <= n; r++)
        for (int c = 1; c <= n; c++)
            ps[r * w + c] = (long)(next_rand() % 201) - 100 + ps[(r - 1) * w + c] + ps[r * w + c - 1] - ps[(r - 1) * w + c - 1];
    long total = 0;
    for (int t = 0; t < 4; t++) total += count_small(ps, n, limit + t * 50);
    printf("%ld\n", total);
    free(ps);
    return 0;
}
