/* palindromes: number of palindromic substrings (counted by position) of a
   string of length n over the first k letters, generated from a seed.
   Input: "n k seed". */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long count_palindromes(const char *s, int n)
{
    long total = 0;
    for (int c = 0; c < 2 * n - 1; c++) {
        int l = c / 2, r = l + c % 2;
        while (l >= 0 && r < n && s[l] == s[r]) {
            total++;
            l--;
            r++;
        }
    }
    return total;
}

int main(void)
{
    int n, k;
    unsigned seed;
    if (scanf("%d %d %u", &n, &k, &seed) != 3 || n <= 0 || k <= 0 || k > 26)
        return 1;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return 1;
    unsigned x = seed ? seed : 1;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        s[i] = (char)('a' + (x >> 16) % (unsigned)k);
    }
    s[n] = 0;
    printf("%ld\n", count_palindromes(s, n));
    free(s);
    return 0;
}
