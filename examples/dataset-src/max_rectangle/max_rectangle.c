/* max_rectangle: Largest-sum rectangle in a generated matrix: O(n^3) Kadane over column pairs. Input: "n seed". */
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

__attribute__((noinline)) long max_rect(const int *a, int n, long *col)
{
    long best = a[0];
    for (int top = 0; top < n; top++) {
        for (int c = 0; c < n; c++) col[c] = 0;
        for (int bot = top; bot < n; bot++) {
            long run = 0;
            for (int c = 0; c < n; c++) {
                col[c] += a[bot * n + c];
                run = run > 0 ? run + col[c] : col[c];
                if (run > best) best = run;
            }
        }
    }
    return best;
}

int main(void)
{
    int n; unsigned long long seed;
    if (scanf("%d %llu", &n, &seed) != 2 || n < 1) { puts("0"); return 0; }
    rng_state = seed;
    int *a = malloc(sizeof *a * (size_t)n * n);
    long *col = malloc(sizeof *col * (size_t)n);
    for (int i = 0; i < n * n; i++) a[i] = (int)(next_rand() % 201) - 105;
    printf("%ld\n", max_rect(a, n, col));
    free(a); free(col);
    return 0;
}
