/* factor_count: Total number of prime factors (with multiplicity) of lo..hi, by trial division; also the number with the most. Input: "lo hi". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) int omega(unsigned long x)
{
    int c = 0;
    while (x % 2 == 0 && x > 1) { x /= 2; c++; }
    for (unsigned long p = 3; p * p <= x; p += 2)
        while (x % p == 0) { x /= p; c++; }
    if (x > 1) c++;
    return c;
}

int main(void)
{
    unsigned long lo, hi;
    if (scanf("%lu %lu", &lo, &hi) != 2 || lo < 1 || lo > hi) { puts("empty"); return 0; }
    long total = 0;
    int best = -1;
    unsigned long arg = lo;
    for (unsigned long x = lo; x <= hi; x++) {
        int c = omega(x);
        total += c;
        if (c > best) { best = c; arg = x; }
    }
    printf("%ld %lu %d\n", total, arg, best);
    return 0;
}
