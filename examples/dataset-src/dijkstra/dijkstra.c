/* dijkstra: Single-source shortest paths, O(V^2) Dijkstra on a dense generated graph (edge with probability p%). Input: "n p seed". */
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

__attribute__((noinline)) long dijkstra(const int *w, int n, int *dist, char *done)
{
    for (int i = 0; i < n; i++) { dist[i] = INF; done[i] = 0; }
    dist[0] = 0;
    for (int it = 0; it < n; it++) {
        int v = -1;
        for (int i = 0; i < n; i++)
            if (!done[i] && (v < 0 || dist[i] < dist[v])) v = i;
        if (dist[v] == INF) break;
        done[v] = 1;
        for (int u = 0; u < n; u++) {
            int c = w[v * n + u];
            if (c && dist[v] + c < dist[u]) dist[u] = dist[v] + c;
        }
    }
    long sum = 0;
    for (int i = 0; i < n; i++) sum += dist[i] == INF ? -1 : dist[i];
    return sum;
}

int main(void)
{
    int n, p; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &p, &seed) != 3 || n < 1) { puts("0"); return 0; }
    rng_state = seed;
    int *w = malloc(sizeof *w * (size_t)n * n), *dist = malloc(sizeof *dist * (size_t)n);
    char *done = malloc((size_t)n);
    for (int i = 0; i < n * n; i++) w[i] = next_rand() % 100 < (unsigned)p ? (int)(1 + next_rand() % 1000) : 0;
    printf("%ld\n", dijkstra(w, n, dist, done));
    free(w); free(dist); free(done);
    return 0;
}
