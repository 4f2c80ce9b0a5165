/* edit_distance: Levenshtein distance between two generated strings over a k-letter alphabet. Input: "n m k seed". */
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

__attribute__((noinline)) int edit_distance(const char *s, int n, const char *t, int m, int *row)
{
    for (int j = 0; j <= m; j++) row[j] = j;
    for (int i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= m; j++) {
            int up = row[j];
            int best = diag + (s[i - 1] != t[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

int main(void)
{
    int n, m, k; unsigned long long seed;
    if (scanf("%d %d %d %llu", &n, &m, &k, &seed) != 4 || n < 0 || m < 0 || k < 1) { puts("-1"); return 0; }
    rng_state = seed;
    char *s = malloc((size_t)n + 1), *t = malloc((size_t)m + 1);
    int *row = malloc(sizeof *row * ((size_t)m + 1));
    for (int i = 0; i < n; i++) s[i] = (char)('a' + next_rand() % (unsigned)k);
    for (int j = 0; j < m; j++) t[j] = (char)('a' + next_rand() % (unsigned)k);
    printf("%d\n", edit_distance(s, n, t, m, row));
    free(s); free(t); free(row);
    return 0;
}
