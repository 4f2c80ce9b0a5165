/* popcount: total number of set bits in n pseudo-random 64-bit numbers.
   Input: "n seed". Output: the total, and the count for the last number. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long rng_state;

static unsigned long next_rand(void)
{
    unsigned long z = (rng_state += 0x9E3779B97F4A7C15UL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

__attribute__((noinline)) long count_bits(const unsigned long *a, int n)
{
    long c = 0;
    for (int i = 0; i < n; i++) {
        unsigned long x = a[i];
        while (x) {
            c += x & 1;
            x >>= 1;
        }
    }
    return c;
}

int main(void)
{
    int n;
    unsigned long seed;
    if (scanf("%d %lu", &n, &seed) != 2 || n <= 0)
        return 1;
    rng_state = seed;
    unsigned long *a = malloc(sizeof *a * (size_t)n);
    if (!a)
        return 1;
    for (int i = 0; i < n; i++) {
        unsigned long r = next_rand();
        /* vary the magnitude so the bit loop runs a varying number of times */
        a[i] = r >> (next_rand() & 63);
    }
    long total = count_bits(a, n);
    long last = count_bits(a + n - 1, 1);
    printf("%ld\n%ld\n", total, last);
    free(a);
    return 0;
}
