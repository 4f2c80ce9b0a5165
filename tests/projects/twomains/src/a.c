/* prog_a: the program the workload and the tests run. Input: "n seed". */
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
    for (int i = 0; i < n; i++)
        a[i] = next_rand() >> (next_rand() & 63);
    printf("%ld %ld\n", count_bits(a, n), parity_sum(a, n));
    free(a);
    return 0;
}
