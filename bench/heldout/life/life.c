/* life: Conway's Game of Life on an n x n torus from a generated start; prints the
   population after each tenth of the steps.  Input: "n steps seed". */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void step(const unsigned char *g, unsigned char *out, int n)
{
    for (int i = 0; i < n; i++) {
        int up = (i + n - 1) % n, down = (i + 1) % n;
        for (int j = 0; j < n; j++) {
            int left = (j + n - 1) % n, right = (j + 1) % n;
            int s = g[up * n + left] + g[up * n + j] + g[up * n + right]
                  + g[i * n + left] + g[i * n + right]
                  + g[down * n + left] + g[down * n + j] + g[down * n + right];
            out[i * n + j] = (unsigned char)(s == 3 || (s == 2 && g[i * n + j]));
        }
    }
}

int main(void)
{
    int n, steps;
    unsigned long seed;
    if (scanf("%d %d %lu", &n, &steps, &seed) != 3 || n < 3 || n > 4000 || steps < 0)
        return 1;
    unsigned char *a = malloc((size_t)n * n), *b = malloc((size_t)n * n);
    if (!a || !b)
        return 1;
    unsigned long x = seed | 1;
    for (int i = 0; i < n * n; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        a[i] = (x >> 40) % 3 == 0;
    }
    int every = steps >= 10 ? steps / 10 : 1;
    for (int t = 1; t <= steps; t++) {
        step(a, b, n);
        unsigned char *tmp = a; a = b; b = tmp;
        if (t % every == 0) {
            long pop = 0;
            for (int i = 0; i < n * n; i++)
                pop += a[i];
            printf("%d %ld\n", t, pop);
        }
    }
    free(a); free(b);
    return 0;
}
