/* floyd: all-pairs shortest paths (Floyd-Warshall) on a generated weighted digraph;
   prints the sum of finite distances and the number of unreachable pairs.
   Input: "n density seed" (density in percent). */
#include <stdio.h>
#include <stdlib.h>

#define INF 1000000000

__attribute__((noinline)) void floyd(int *d, int n)
{
    for (int k = 0; k < n; k++)
        for (int i = 0; i < n; i++) {
            int dik = d[i * n + k];
            if (dik == INF)
                continue;
            for (int j = 0; j < n; j++) {
                int via = dik + d[k * n + j];
                if (via < d[i * n + j])
                    d[i * n + j] = via;
            }
        }
}

int main(void)
{
    int n, density;
    unsigned long seed;
    if (scanf("%d %d %lu", &n, &density, &seed) != 3 || n <= 0 || n > 2000)
        return 1;
    int *d = malloc(sizeof(int) * (size_t)n * (size_t)n);
    if (!d)
        return 1;
    unsigned long x = seed | 1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            x = x * 6364136223846793005UL + 1442695040888963407UL;
            unsigned r = (unsigned)(x >> 33);
            if (i == j)
                d[i * n + j] = 0;
            else if ((int)(r % 100) < density)
                d[i * n + j] = 1 + (int)((r >> 8) % 1000);
            else
                d[i * n + j] = INF;
        }
    floyd(d, n);
    long long sum = 0, unreachable = 0;
    for (int i = 0; i < n * n; i++) {
        if (d[i] >= INF / 2)
            unreachable++;
        else
            sum += d[i];
    }
    printf("%lld %lld\n", sum, unreachable);
    free(d);
    return 0;
}
