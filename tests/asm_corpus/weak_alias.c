/* Weak definitions and aliases (.weak, .set alias,target). */
#include <stdio.h>

__attribute__((weak, noinline)) int hook(int x)
{
    return x + 100;
}

__attribute__((noinline)) int real_impl(int x)
{
    return x * 3;
}

int aliased(int x) __attribute__((alias("real_impl")));
int weak_aliased(int x) __attribute__((weak, alias("real_impl")));

static __attribute__((noinline)) int local_impl(int x)
{
    return x - 1;
}
static int local_alias(int) __attribute__((alias("local_impl")));

int main(void)
{
    printf("%d %d %d %d\n", hook(1), aliased(2), weak_aliased(3), local_alias(4));
    return 0;
}
