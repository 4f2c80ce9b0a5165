/* The hot part of bitstats: counting set bits one at a time (gcc -O3 keeps the loop). */
#include "bits.h"

long count_bits(const unsigned long *a, int n)
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

long parity_sum(const unsigned long *a, int n)
{
    long p = 0;
    for (int i = 0; i < n; i++)
        p += __builtin_parityl(a[i]);
    return p;
}
