#include <stddef.h>

/* Pseudo-random bytes (xorshift32): what the workload checksums; the tests never call it. */
void fill(unsigned char *p, size_t n, unsigned seed)
{
    unsigned x = seed ? seed : 2463534242u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)(x >> 7);
    }
}
