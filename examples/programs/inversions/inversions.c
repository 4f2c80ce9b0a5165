/* inversions: number of pairs i < j with a[i] > a[j], counted naively,
   for n numbers given on standard input.  Input: "n" then n integers. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long count_inversions(const int *a, int n)
{
    long count = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (a[i] > a[j])
                count++;
    return count;
}

int main(void)
{
    int n;
    if (scanf("%d", &n) != 1 || n <= 0)
        return 1;
    int *a = malloc(sizeof(int) * (size_t)n);
    if (!a)
        return 1;
    for (int i = 0; i < n; i++)
        if (scanf("%d", &a[i]) != 1)
            return 1;
    printf("%ld\n", count_inversions(a, n));
    free(a);
    return 0;
}
