/* big_factorial: Computes n! exactly in base 10^4 limbs and prints its digit count and digit sum. Input: "n". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) int fact_mul(unsigned *limb, int len, unsigned m)
{
    unsigned long carry = 0;
    for (int i = 0; i < len; i++) {
        unsigned long v = (unsigned long)limb[i] * m + carry;
        limb[i] = (unsigned)(v % 10000);
        carry = v / 10000;
    }
    while (carry) { limb[len++] = (unsigned)(carry % 10000); carry /= 10000; }
    return len;
}

int main(void)
{
    int n;
    if (scanf("%d", &n) != 1 || n < 0 || n > 100000) { puts("bad"); return 0; }
    unsigned *limb = calloc((size_t)n + 16, 2 * sizeof *limb);
    int len = 1;
    limb[0] = 1;
    for (int m = 2; m <= n; m++) len = fact_mul(limb, len, (unsigned)m);
    long digits = 4L * (len - 1), sum = 0;
    for (unsigned v = limb[len - 1]; v; v /= 10) digits++;
    for (int i = 0; i < len; i++) for (unsigned v = limb[i]; v; v /= 10) sum += v % 10;
    printf("%ld %ld\n", digits, sum);
    free(limb);
    return 0;
}
