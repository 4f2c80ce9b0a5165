/* Error paths gcc moves to a cold partition: foo.cold in .text.unlikely, inside foo's body. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((cold, noinline)) void fail(const char *why)
{
    fprintf(stderr, "fatal: %s\n", why);
    exit(3);
}

__attribute__((noinline)) int checked_div(int a, int b)
{
    if (__builtin_expect(b == 0, 0)) {
        fprintf(stderr, "division by zero (%d)\n", a);
        abort();
    }
    return a / b;
}

__attribute__((noinline)) long sum_positive(const int *v, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            fail("negative element");
        s += v[i] * (long)v[i];
    }
    return s;
}

int main(void)
{
    int v[16];
    for (int i = 0; i < 16; i++)
        v[i] = i * 3 + 1;
    printf("%d %d\n", checked_div(100, 7), checked_div(-9, 2));
    printf("%ld\n", sum_positive(v, 16));
    return 0;
}
