/* quickselect: k-th smallest of n generated values by quickselect (Lomuto partition), for q different k; prints a checksum. Input: "n q seed". */
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

__attribute__((noinline)) int select_kth(int *a, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int pivot = a[(lo + hi) / 2], i = lo;
        int t = a[(lo + hi) / 2]; a[(lo + hi) / 2] = a[hi]; a[hi] = t;
        for (int j = lo; j < hi; j++)
            if (a[j] < pivot) { t = a[i]; a[i] = a[j]; a[j] = t; i++; }
        t = a[i]; a[i] = a[hi]; a[hi] = t;
        if (i == k) return a[i];
        if (i < k) lo = i + 1; else hi = i - 1;
    }
    return a[lo];
}

int main(void)
{
    int n, q; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &q, &seed) != 3 || n < 1) { puts("0"); return 0; }
    rng_state = seed;
    int *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    for (int i = 0; i < n; i++) a[i] = (int)(next_rand() % 1000000);
    unsigned long sum = 0;
    for (int t = 0; t < q; t++) {
        memcpy(b, a, sizeof *a * (size_t)n);
        sum = sum * 3 + select_kth(b, n, (int)(next_rand() % (unsigned)n));
    }
    printf("%lu\n", sum);
    free(a); free(b);
    return 0;
}
