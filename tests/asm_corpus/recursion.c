/* Recursion: plain, mutual, and tail recursion gcc turns into loops. */
#include <stdio.h>

__attribute__((noinline)) long fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) unsigned ackermann(unsigned m, unsigned n)
{
    if (m == 0)
        return n + 1;
    if (n == 0)
        return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}

int is_odd(unsigned n);

__attribute__((noinline)) int is_even(unsigned n)
{
    return n == 0 ? 1 : is_odd(n - 1);
}

__attribute__((noinline)) int is_odd(unsigned n)
{
    return n == 0 ? 0 : is_even(n - 1);
}

__attribute__((noinline)) long gcd(long a, long b)
{
    return b == 0 ? a : gcd(b, a % b);
}

int main(void)
{
    printf("%ld %u %d %d %ld\n", fib(24), ackermann(2, 3), is_even(17), is_odd(17), gcd(1071, 462));
    return 0;
}
