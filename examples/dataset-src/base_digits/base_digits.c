/* base_digits: Writes every number in [lo, hi] in base b and sums the digits and the digit string lengths. Input: "lo hi b". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) long digit_sum_range(long lo, long hi, int b, long *len)
{
    long s = 0, l = 0;
    char buf[72];
    for (long x = lo; x <= hi; x++) {
        int k = 0;
        long v = x;
        do { buf[k++] = (char)(v % b); v /= b; } while (v);
        l += k;
        for (int i = 0; i < k; i++) s += buf[i];
    }
    *len = l;
    return s;
}

int main(void)
{
    long lo, hi, len;
    int b;
    if (scanf("%ld %ld %d", &lo, &hi, &b) != 3 || lo < 0 || b < 2 || b > 36) { puts("0 0"); return 0; }
    long s = digit_sum_range(lo, hi, b, &len);
    printf("%ld %ld\n", s, len);
    return 0;
}
