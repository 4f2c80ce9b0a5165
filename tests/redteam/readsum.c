#include <stdio.h>

/* Reads two numbers into its own frame through scanf: what the C library writes there on the
   function's behalf is the function's to read (tests/test_footprint.py). */
__attribute__((noinline)) long sum_pair(void)
{
    long a, b;
    if (scanf("%ld %ld", &a, &b) != 2)
        return -1;
    return a * 3 + b;
}

int main(void)
{
    long s, total = 0;
    while ((s = sum_pair()) >= 0)
        total += s;
    printf("%ld\n", total);
    return 0;
}
