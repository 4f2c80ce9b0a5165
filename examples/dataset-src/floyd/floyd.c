/* floyd: All-pairs shortest paths (Floyd-Warshall) on a generated digraph; prints the sum of finite distances and the unreachable pairs. Input: "n p seed". */
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

#define INF 0x3fffffff

__attribute__((noinline)) void floyd(int *d, int n)
{
    for (int k = 0; k < n; k++)
        for (int i = 0; i < n; i++) {
            int dik = d[i * n + k];
            if (dik == INF) continue;
            for (int j = 0; j < n; j++)
                if (dik + d[k * n + j] < d[i * n + j])
                    d[i * n + j] = dik + d[k * n + j];
        }
}

int main(void)
{
    int n, p; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &p, &seed) != 3 || n < 1) { puts("0 0"); return 0; }
    rng_state = seed;
    int *d = malloc(sizeof *d * (size_t)n * n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            d[i * n + j] = i == j ? 0 : next_rand() % 100 < (unsigned)p ? (int)(1 + next_rand() % 100) : INF;
    floyd(d, n);
    long sum = 0, unreachable = 0;
    for (int i = 0; i < n * n; i++) { if (d[i] == INF) unreachable++; else sum += d[i]; }
    printf("%ld %ld\n", sum, unreachable);
    free(d);
    return 0;
}
