/* bitstats: set bits and parity of n pseudo-random 64-bit numbers. Input: "n seed". */
#include <stdio.h>
#include <stdlib.h>
#include "bits.h"

int main(void)
{
    int n;
    unsigned long seed;
    if (scanf("%d %lu", &n, &seed) != 2 || n <= 0)
        return 1;
    seed_rand(seed);
    unsigned long *a = malloc(sizeof *a * (size_t)n);
    if (!a)
        return 1;
    for (int i = 0; i < n; i++) {
        unsigned long r = next_rand();
        a[i] = r >> (next_rand() & 63);
    }
    printf("%ld %ld %ld\n", count_bits(a, n), parity_sum(a, n), count_bits(a + n - 1, 1));
    free(a);
    return 0;
}
