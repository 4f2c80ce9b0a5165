/* scale: a function of two pointers that a legal C call may make overlap (no restrict). gcc's
   code checks for overlap at run time; the tests never make the arguments alias. Input: "n seed". */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void scale(long *dst, const long *src, int n)
{
    for (int i = 0; i < n; i++)
        dst[i] = src[i] * 3 + 1;
}

int main(void)
{
    int n;
    long seed;
    if (scanf("%d %ld", &n, &seed) != 2 || n <= 0 || n > 100000)
        return 1;
    long *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    if (!a || !b)
        return 1;
    for (int i = 0; i < n; i++)
        a[i] = (seed = seed * 6364136223846793005L + 1442695040888963407L) >> 33;
    long sum = 0;
    for (int r = 0; r < 20; r++) {
        scale(b, a, n);
        for (int i = 0; i < n; i++)
            sum += b[i] ^ r;
    }
    printf("%ld\n", sum);
    free(a);
    free(b);
    return 0;
}
