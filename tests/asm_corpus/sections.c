/* Functions placed by attribute: a custom section, hot and cold functions
 * (.text.hot/.text.unlikely), and main in .text.startup. */
#include <stdio.h>

__attribute__((section(".text.sgcc_custom"), noinline)) int in_custom(int x)
{
    return x * x + 1;
}

__attribute__((hot, noinline)) int hot_loop(const int *v, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += v[i] > 10 ? v[i] : -v[i];
    return s;
}

__attribute__((cold, noinline)) void report(int code)
{
    printf("report %d\n", code);
}

int main(void)
{
    int v[20];
    for (int i = 0; i < 20; i++)
        v[i] = i * 2;
    int h = hot_loop(v, 20);
    report(in_custom(h % 7));
    printf("%d\n", h);
    return 0;
}
