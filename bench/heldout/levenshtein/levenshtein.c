/* levenshtein: edit distance between two lines (two-row dynamic programming).
   Input: two lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) int edit_distance(const char *a, int n, const char *b, int m, int *prev, int *cur)
{
    for (int j = 0; j <= m; j++)
        prev[j] = j;
    for (int i = 1; i <= n; i++) {
        cur[0] = i;
        char ca = a[i - 1];
        for (int j = 1; j <= m; j++) {
            int best = prev[j - 1] + (ca != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            if (del < best)
                best = del;
            if (ins < best)
                best = ins;
            cur[j] = best;
        }
        int *t = prev; prev = cur; cur = t;
    }
    return prev[m];
}

static char *read_line(void)
{
    size_t cap = 1024, len = 0;
    char *s = malloc(cap);
    int c;
    while (s && (c = getchar()) != EOF && c != '\n') {
        if (len + 1 >= cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) { free(s); return NULL; }
            s = t;
        }
        s[len++] = (char)c;
    }
    if (s)
        s[len] = 0;
    return s;
}

int main(void)
{
    char *a = read_line(), *b = read_line();
    if (!a || !b)
        return 1;
    int n = (int)strlen(a), m = (int)strlen(b);
    int *prev = malloc(sizeof(int) * (size_t)(m + 1)), *cur = malloc(sizeof(int) * (size_t)(m + 1));
    if (!prev || !cur)
        return 1;
    printf("%d\n", edit_distance(a, n, b, m, prev, cur));
    free(a); free(b); free(prev); free(cur);
    return 0;
}
