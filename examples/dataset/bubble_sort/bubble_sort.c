/* bubble_sort: Bubble-sorts n generated ints (with early exit); prints min, max, checksum. Input: "n seed". */
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

__attribute__((noinline)) void bubble_sort(int *a, int n)
{
    for (int i = 0; i < n - 1; i++) {
        int swapped = 0;
        for (int j = 0; j < n - 1 - i; j++) {
            if (a[j] > a[j + 1]) {
                int t = a[j]; a[j] = a[j + 1]; a[j + 1] = t;
                swapped = 1;
            }
        }
        if (!swapped)
            break;
    }
}

int main(void)
{
    int n; unsigned long long seed;
    if (scanf("%d %llu", &n, &seed) != 2 || n < 1) { puts("empty"); return 0; }
    rng_state = seed;
    int *a = malloc(sizeof *a * (size_t)n);
    for (int i = 0; i < n; i++)
        a[i] = seed == 0 ? i : (int)(next_rand() % 1000000);
    bubble_sort(a, n);
    unsigned long long sum = 0;
    for (int i = 0; i < n; i++) sum = sum * 31 + a[i];
    printf("%d %d %llu\n", a[0], a[n - 1], sum);
    free(a);
    return 0;
}
