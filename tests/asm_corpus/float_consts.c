/* Floating-point constants: .LC blocks in .rodata.cst4/.cst8/.cst16, some private to one
 * function, one (2.5) shared by two functions. */
#include <math.h>
#include <stdio.h>

__attribute__((noinline)) double poly(double x)
{
    return ((3.25 * x + 1.125) * x - 7.0625) * x + 2.5;
}

__attribute__((noinline)) double scale(double x)
{
    return x * 2.5;
}

__attribute__((noinline)) float fpoly(float x)
{
    return x * 0.375f + 11.5f;
}

__attribute__((noinline)) double magnitude(double x)
{
    return fabs(x) + copysign(1.0, x);
}

__attribute__((noinline)) void saxpy(float *restrict y, const float *restrict x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = 1.75f * x[i] + y[i] + 0.5f;
}

int main(void)
{
    float x[37], y[37];
    for (int i = 0; i < 37; i++) {
        x[i] = i * 0.25f;
        y[i] = 1.0f - i;
    }
    saxpy(y, x, 37);
    double t = 0;
    for (int i = 0; i < 37; i++)
        t += y[i];
    printf("%.4f %.4f %.4f %.4f %.4f\n", poly(1.5), scale(-4.0), (double)fpoly(2.0f),
           magnitude(-3.5), t);
    return 0;
}
