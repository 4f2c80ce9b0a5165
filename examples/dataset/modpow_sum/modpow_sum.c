/* modpow_sum: Sum of i^e mod p for i = 1..n by binary exponentiation. Input: "n e p". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) unsigned long long modpow(unsigned long long b, unsigned long long e, unsigned long long p)
{
    unsigned long long r = 1 % p;
    b %= p;
    while (e) {
        if (e & 1) r = r * b % p;
        b = b * b % p;
        e >>= 1;
    }
    return r;
}

int main(void)
{
    long n; unsigned long long e, p;
    if (scanf("%ld %llu %llu", &n, &e, &p) != 3 || p < 1 || p > 4000000000ULL) { puts("bad"); return 0; }
    unsigned long long s = 0;
    for (long i = 1; i <= n; i++) s = (s + modpow((unsigned long long)i, e, p)) % p;
    printf("%llu\n", s);
    return 0;
}
