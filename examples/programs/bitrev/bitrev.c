/* bitrev: reverses the bits of n generated 32-bit words and prints an
   order-dependent checksum of the results.  Input: "n seed". */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) unsigned long reverse_all(const unsigned *in, unsigned *out, int n)
{
    unsigned long check = 0;
    for (int i = 0; i < n; i++) {
        unsigned x = in[i], r = 0;
        for (int b = 0; b < 32; b++) {
            r = (r << 1) | (x & 1);
            x >>= 1;
        }
        out[i] = r;
        check = check * 31 + r;
    }
    return check;
}

int main(void)
{
    int n;
    unsigned seed;
    if (scanf("%d %u", &n, &seed) != 2 || n <= 0)
        return 1;
    unsigned *in = malloc(sizeof(unsigned) * (size_t)n);
    unsigned *out = malloc(sizeof(unsigned) * (size_t)n);
    if (!in || !out)
        return 1;
    unsigned x = seed ? seed : 1;
    for (int i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        in[i] = x;
    }
    unsigned long check = reverse_all(in, out, n);
    printf("%lu %u %u\n", check, out[0], out[n - 1]);
    free(in); free(out);
    return 0;
}
