/* hashmix: iterates a 64-bit xorshift-multiply mixing function n times from
   a seed and prints the final state and how many states had their top bit set.
   Input: "n seed". */
#include <stdio.h>

__attribute__((noinline)) unsigned long mix_chain(unsigned long x, long n, long *top_count)
{
    long top = 0;
    for (long i = 0; i < n; i++) {
        x ^= x >> 33;
        x *= 0xFF51AFD7ED558CCDUL;
        x ^= x >> 29;
        x += 0x9E3779B97F4A7C15UL;
        top += (long)(x >> 63);
    }
    *top_count = top;
    return x;
}

int main(void)
{
    long n;
    unsigned long seed;
    if (scanf("%ld %lu", &n, &seed) != 2 || n < 0)
        return 1;
    long top;
    unsigned long h = mix_chain(seed, n, &top);
    printf("%016lx %ld\n", h, top);
    return 0;
}
