/* bfs_grid: Shortest path from top-left to bottom-right of a generated n x n maze (wall density p%), BFS, repeated over q seeds. Input: "n p q seed". */
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

__attribute__((noinline)) int bfs(const char *g, int n, int *dist, int *queue)
{
    for (int i = 0; i < n * n; i++) dist[i] = -1;
    if (g[0] || g[n * n - 1]) return -1;
    int head = 0, tail = 0;
    queue[tail++] = 0;
    dist[0] = 0;
    while (head < tail) {
        int v = queue[head++], r = v / n, c = v % n;
        int nb[4] = { r > 0 ? v - n : -1, r < n - 1 ? v + n : -1, c > 0 ? v - 1 : -1, c < n - 1 ? v + 1 : -1 };
        for (int k = 0; k < 4; k++) {
            int u = nb[k];
            if (u >= 0 && !g[u] && dist[u] < 0) {
                dist[u] = dist[v] + 1;
                queue[tail++] = u;
            }
        }
    }
    return dist[n * n - 1];
}

int main(void)
{
    int n, p, q; unsigned long long seed;
    if (scanf("%d %d %d %llu", &n, &p, &q, &seed) != 4 || n < 1 || q < 1) { puts("none"); return 0; }
    rng_state = seed;
    char *g = malloc((size_t)n * n);
    int *dist = malloc(sizeof *dist * (size_t)n * n), *queue = malloc(sizeof *queue * (size_t)n * n);
    long total = 0;
    int reached = 0;
    for (int t = 0; t < q; t++) {
        for (int i = 0; i < n * n; i++) g[i] = (char)(next_rand() % 100 < (unsigned)p);
        g[0] = g[n * n - 1] = (char)(t % 7 == 6);
        int d = bfs(g, n, dist, queue);
        if (d >= 0) { total += d; reached++; }
    }
    printf("%d %ld\n", reached, total);
    free(g); free(dist); free(queue);
    return 0;
}
