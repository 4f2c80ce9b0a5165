/* histogram: byte frequencies of a generated text of n bytes drawn from an
   alphabet of k letters with a skewed distribution.  Prints every letter that
   occurs with its count.  Input: "n k seed". */
#include <stdio.h>
#include <stdlib.h>

/* h must have 256 entries; they are overwritten */
__attribute__((noinline)) void histogram(const unsigned char *s, long n, unsigned *h)
{
    for (int i = 0; i < 256; i++)
        h[i] = 0;
    for (long i = 0; i < n; i++)
        h[s[i]]++;
}

int main(void)
{
    long n;
    int k;
    unsigned long seed;
    if (scanf("%ld %d %lu", &n, &k, &seed) != 3 || n <= 0 || k <= 0 || k > 26)
        return 1;
    unsigned char *s = malloc((size_t)n);
    if (!s)
        return 1;
    unsigned long x = seed | 1;
    for (long i = 0; i < n; i += 4) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        /* four letters per step; skewed: the minimum of two draws favours
           early letters */
        for (int q = 0; q < 4 && i + q < n; q++) {
            unsigned c = (unsigned)(x >> (16 * q));
            unsigned a = ((c & 0xff) * (unsigned)k) >> 8;
            unsigned b = (((c >> 8) & 0xff) * (unsigned)k) >> 8;
            s[i + q] = (unsigned char)('a' + (a < b ? a : b));
        }
    }
    unsigned h[256];
    histogram(s, n, h);
    for (int c = 0; c < 256; c++)
        if (h[c])
            printf("%c %u\n", c, h[c]);
    free(s);
    return 0;
}
