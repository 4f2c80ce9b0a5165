/* naive_search: Counts occurrences of a generated pattern in a generated text by naive matching (binary alphabet: many partial matches). Input: "n m seed". */
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

__attribute__((noinline)) long count_matches(const char *text, int n, const char *pat, int m)
{
    long count = 0;
    for (int i = 0; i + m <= n; i++) {
        int j = 0;
        while (j < m && text[i + j] == pat[j]) j++;
        if (j == m) count++;
    }
    return count;
}

int main(void)
{
    int n, m; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &m, &seed) != 3 || n < 0 || m < 1) { puts("0"); return 0; }
    rng_state = seed;
    char *t = malloc((size_t)n + 1), *p = malloc((size_t)m + 1);
    for (int i = 0; i < n; i++) t[i] = (char)('a' + (next_rand() % 32 == 0));
    for (int j = 0; j < m; j++) p[j] = (char)('a' + (j == m - 1));
    printf("%ld\n", count_matches(t, n, p, m));
    free(t); free(p);
    return 0;
}
