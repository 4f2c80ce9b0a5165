/* isqrt: sum over i = lo..hi of floor(sqrt(i)), each root found by counting up.
   Input: "lo hi" (0 <= lo <= hi <= 10^12). */
#include <stdio.h>

__attribute__((noinline)) long isqrt_sum(long lo, long hi)
{
    long total = 0;
    for (long i = lo; i <= hi; i++) {
        long r = 0;
        while ((r + 1) * (r + 1) <= i)
            r++;
        total += r;
    }
    return total;
}

int main(void)
{
    long lo, hi;
    if (scanf("%ld %ld", &lo, &hi) != 2 || lo < 0 || hi < lo || hi > 1000000000000L)
        return 1;
    printf("%ld\n", isqrt_sum(lo, hi));
    return 0;
}
