/* lcs: length of the longest common subsequence of two strings.
   Input: two lines, each a string of lowercase letters (up to 20000). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 20005

static char s[MAXN], t[MAXN];

/* row must have room for m + 1 ints */
__attribute__((noinline)) int lcs(const char *a, int n, const char *b, int m, int *row)
{
    for (int j = 0; j <= m; j++)
        row[j] = 0;
    for (int i = 1; i <= n; i++) {
        int diag = 0;
        for (int j = 1; j <= m; j++) {
            int up = row[j];
            int cur;
            if (a[i - 1] == b[j - 1])
                cur = diag + 1;
            else
                cur = up > row[j - 1] ? up : row[j - 1];
            diag = up;
            row[j] = cur;
        }
    }
    return row[m];
}

int main(void)
{
    if (scanf("%20000s %20000s", s, t) != 2)
        return 1;
    int n = (int)strlen(s), m = (int)strlen(t);
    int *row = malloc(sizeof(int) * (size_t)(m + 1));
    if (!row)
        return 1;
    printf("%d\n", lcs(s, n, t, m, row));
    free(row);
    return 0;
}
