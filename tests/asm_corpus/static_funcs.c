/* Static functions called directly and through pointers (qsort comparator). */
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noinline)) int cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

static __attribute__((noinline)) unsigned hash(unsigned x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

static __attribute__((noinline)) void fill(int *v, int n)
{
    for (int i = 0; i < n; i++)
        v[i] = (int)(hash((unsigned)i) % 1000);
}

int main(void)
{
    int v[25];
    fill(v, 25);
    qsort(v, 25, sizeof v[0], cmp_desc);
    for (int i = 0; i < 25; i++)
        printf("%d%c", v[i], i == 24 ? '\n' : ' ');
    return 0;
}
