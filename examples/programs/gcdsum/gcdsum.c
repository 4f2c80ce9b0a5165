/* gcdsum: sum of gcd(i, j) over 1 <= i, j <= n using Euclid's algorithm.
   Input: "n". */
#include <stdio.h>

static unsigned gcd(unsigned a, unsigned b)
{
    while (b) {
        unsigned t = a % b;
        a = b;
        b = t;
    }
    return a;
}

__attribute__((noinline)) unsigned long gcd_sum(unsigned n)
{
    unsigned long s = 0;
    for (unsigned i = 1; i <= n; i++)
        for (unsigned j = 1; j <= n; j++)
            s += gcd(i, j);
    return s;
}

int main(void)
{
    unsigned n;
    if (scanf("%u", &n) != 1)
        return 1;
    printf("%lu\n", gcd_sum(n));
    return 0;
}
