/* triangles: Counts triangles in a generated undirected graph from its adjacency matrix, O(n^3). Input: "n p seed". */
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

__attribute__((noinline)) long count_triangles(const unsigned char *adj, int n)
{
    long count = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!adj[i * n + j]) continue;
            for (int k = j + 1; k < n; k++)
                count += adj[j * n + k] & adj[i * n + k];
        }
    return count;
}

int main(void)
{
    int n, p; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &p, &seed) != 3 || n < 1) { puts("0"); return 0; }
    rng_state = seed;
    unsigned char *adj = calloc((size_t)n * n, 1);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            adj[i * n + j] = adj[j * n + i] = (unsigned char)(next_rand() % 100 < (unsigned)p);
    printf("%ld\n", count_triangles(adj, n));
    free(adj);
    return 0;
}
