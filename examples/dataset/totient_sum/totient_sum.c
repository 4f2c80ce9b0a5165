/* totient_sum: Sum of Euler phi(i), i = 1..n, each by trial division. Input: "n". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) long phi(long x)
{
    long r = x;
    for (long p = 2; p * p <= x; p++) {
        if (x % p == 0) {
            while (x % p == 0) x /= p;
            r -= r / p;
        }
    }
    if (x > 1) r -= r / x;
    return r;
}

int main(void)
{
    long n;
    if (scanf("%ld", &n) != 1 || n < 1) { puts("0"); return 0; }
    long s = 0;
    for (long i = 1; i <= n; i++) s += phi(i);
    printf("%ld\n", s);
    return 0;
}
