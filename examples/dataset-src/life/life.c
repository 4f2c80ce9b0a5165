/* life: Conway's Game of Life on an n x n torus from a random start, for g generations; prints the live cells. Input: "n g seed". */
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

__attribute__((noinline)) void life_step(const unsigned char *cur, unsigned char *next, int n)
{
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            int live = 0;
            for (int dr = -1; dr <= 1; dr++)
                for (int dc = -1; dc <= 1; dc++)
                    if (dr || dc)
                        live += cur[((r + dr + n) % n) * n + (c + dc + n) % n];
            unsigned char v = cur[r * n + c];
            next[r * n + c] = (unsigned char)(live == 3 || (v && live == 2));
        }
}

int main(void)
{
    int n, g; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &g, &seed) != 3 || n < 1 || g < 0) { puts("0"); return 0; }
    rng_state = seed;
    unsigned char *a = malloc((size_t)n * n), *b = malloc((size_t)n * n);
    for (int i = 0; i < n * n; i++) a[i] = (unsigned char)(next_rand() % 3 == 0);
    for (int t = 0; t < g; t++) { life_step(a, b, n); unsigned char *x = a; a = b; b = x; }
    long live = 0;
    for (int i = 0; i < n * n; i++) live += a[i];
    printf("%ld\n", live);
    free(a); free(b);
    return 0;
}
