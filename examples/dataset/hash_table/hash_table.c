/* hash_table: Inserts n generated keys into an open-addressing hash table, then looks up n others; prints distinct keys and hits. Input: "n range seed". */
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

__attribute__((noinline)) long hash_run(const unsigned *keys, int n, unsigned *table, unsigned mask)
{
    long distinct = 0, hits = 0;
    for (int i = 0; i < n; i++) {
        unsigned k = keys[i], h = (k * 2654435761u) & mask;
        while (table[h] && table[h] != k) h = (h + 1) & mask;
        if (!table[h]) { table[h] = k; distinct++; }
    }
    for (int i = 0; i < n; i++) {
        unsigned k = keys[i] + 1, h = (k * 2654435761u) & mask;
        while (table[h] && table[h] != k) h = (h + 1) & mask;
        hits += table[h] == k;
    }
    return distinct * 1000000 + hits;
}

int main(void)
{
    int n; unsigned range; unsigned long long seed;
    if (scanf("%d %u %llu", &n, &range, &seed) != 3 || n < 1 || range < 1) { puts("0"); return 0; }
    rng_state = seed;
    unsigned size = 1;
    while (size < 2u * (unsigned)n) size <<= 1;
    unsigned *keys = malloc(sizeof *keys * (size_t)n), *table = calloc(size, sizeof *table);
    for (int i = 0; i < n; i++) keys[i] = 1 + (unsigned)(next_rand() % range);
    printf("%ld\n", hash_run(keys, n, table, size - 1));
    free(keys); free(table);
    return 0;
}
