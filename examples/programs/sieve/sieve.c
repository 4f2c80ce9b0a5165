/* sieve: number of primes <= n, the largest prime <= n and the sum of all
   primes <= n (mod 1e9+7), with a sieve of Eratosthenes.  Input: "n". */
#include <stdio.h>
#include <stdlib.h>

/* Marks composite[i] = 1 for every composite i in [2, n] (0 and 1 are marked too)
   and returns the number of primes <= n. */
__attribute__((noinline)) int sieve(int n, unsigned char *composite)
{
    composite[0] = 1;
    if (n >= 1)
        composite[1] = 1;
    for (long i = 2; i * i <= n; i++) {
        if (composite[i])
            continue;
        for (long j = i * i; j <= n; j += i)
            composite[j] = 1;
    }
    int count = 0;
    for (int i = 2; i <= n; i++)
        if (!composite[i])
            count++;
    return count;
}

int main(void)
{
    int n;
    if (scanf("%d", &n) != 1 || n < 2)
        return 1;
    unsigned char *c = calloc((size_t)n + 1, 1);
    if (!c)
        return 1;
    int count = sieve(n, c);
    int largest = n;
    while (c[largest])
        largest--;
    long sum = 0;
    for (int i = 2; i <= n; i++)
        if (!c[i])
            sum = (sum + i) % 1000000007L;
    printf("%d %d %ld\n", count, largest, sum);
    free(c);
    return 0;
}
