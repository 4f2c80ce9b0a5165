/* closest_pair: Smallest squared distance between n generated points, naive O(n^2). Input: "n seed". */
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

__attribute__((noinline)) long closest(const int *x, const int *y, int n)
{
    long best = -1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            long dx = x[i] - x[j], dy = y[i] - y[j];
            long d = dx * dx + dy * dy;
            if (best < 0 || d < best) best = d;
        }
    return best;
}

int main(void)
{
    int n; unsigned long long seed;
    if (scanf("%d %llu", &n, &seed) != 2 || n < 1) { puts("-1"); return 0; }
    rng_state = seed;
    int *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    for (int i = 0; i < n; i++) { x[i] = (int)(next_rand() % 1000000); y[i] = (int)(next_rand() % 1000000); }
    printf("%ld\n", closest(x, y, n));
    free(x); free(y);
    return 0;
}
