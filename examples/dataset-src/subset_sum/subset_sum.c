/* subset_sum: Which sums up to S are reachable from n generated weights: bitset DP with 64-bit word shifts. Input: "n S seed". */
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

__attribute__((noinline)) void add_item(unsigned long long *bits, int words, int w)
{
    int ws = w / 64, bs = w % 64;
    for (int i = words - 1; i >= ws; i--) {
        unsigned long long v = bits[i - ws] << bs;
        if (bs && i - ws - 1 >= 0) v |= bits[i - ws - 1] >> (64 - bs);
        bits[i] |= v;
    }
}

int main(void)
{
    int n, s; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &s, &seed) != 3 || n < 0 || s < 0) { puts("0"); return 0; }
    rng_state = seed;
    int words = s / 64 + 1;
    unsigned long long *bits = calloc((size_t)words, 8);
    bits[0] = 1;
    for (int i = 0; i < n; i++) add_item(bits, words, 1 + (int)(next_rand() % (unsigned)(s / 4 + 1)));
    long count = 0;
    for (int v = 0; v <= s; v++) count += (bits[v / 64] >> (v % 64)) & 1;
    printf("%ld %d\n", count, (int)((bits[s / 64] >> (s % 64)) & 1));
    free(bits);
    return 0;
}
