/* union_find: Random unions on n elements with union-by-size and path halving; prints the number of components after each tenth of the unions (checksum). Input: "n m seed". */
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

static int find(int *parent, int x)
{
    while (parent[x] != x) { parent[x] = parent[parent[x]]; x = parent[x]; }
    return x;
}

__attribute__((noinline)) unsigned long unions(int *parent, int *size, int n, int m)
{
    unsigned long check = 0;
    int comps = n;
    for (int i = 0; i < n; i++) { parent[i] = i; size[i] = 1; }
    for (int e = 0; e < m; e++) {
        int a = find(parent, (int)(next_rand() % (unsigned)n)), b = find(parent, (int)(next_rand() % (unsigned)n));
        if (a != b) {
            if (size[a] < size[b]) { int t = a; a = b; b = t; }
            parent[b] = a;
            size[a] += size[b];
            comps--;
        }
        if (m >= 10 && e % (m / 10) == 0) check = check * 31 + comps;
    }
    return check * 1000 + comps;
}

int main(void)
{
    int n, m; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &m, &seed) != 3 || n < 1 || m < 0) { puts("0"); return 0; }
    rng_state = seed;
    int *parent = malloc(sizeof *parent * (size_t)n), *size = malloc(sizeof *size * (size_t)n);
    printf("%lu\n", unions(parent, size, n, m));
    free(parent); free(size);
    return 0;
}
