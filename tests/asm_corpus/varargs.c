/* Variadic functions: va_list, register save areas, vprintf forwarding. */
#include <stdarg.h>
#include <stdio.h>

__attribute__((noinline)) long sum_ints(int n, ...)
{
    va_list ap;
    long s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s += va_arg(ap, int);
    va_end(ap);
    return s;
}

__attribute__((noinline)) double mean(int n, ...)
{
    va_list ap;
    double s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s += va_arg(ap, double);
    va_end(ap);
    return n ? s / n : 0.0;
}

__attribute__((noinline, format(printf, 1, 2))) int say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vprintf(fmt, ap);
    va_end(ap);
    return r;
}

int main(void)
{
    say("%ld %ld\n", sum_ints(3, 1, 2, 3), sum_ints(6, 10, 20, 30, 40, 50, 60));
    say("%.3f\n", mean(4, 1.5, 2.5, 3.0, 4.0));
    return 0;
}
