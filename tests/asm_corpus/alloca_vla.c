/* Variable-length arrays and alloca: frame pointers and dynamic stack adjustment. */
#include <alloca.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) long vla_sum(int n)
{
    long a[n];
    for (int i = 0; i < n; i++)
        a[i] = (long)i * i - 3;
    long s = 0;
    for (int i = n - 1; i >= 0; i--)
        s += a[i] ^ i;
    return s;
}

__attribute__((noinline)) int alloca_copy(const char *src)
{
    size_t len = strlen(src);
    char *buf = alloca(len + 1);
    memcpy(buf, src, len + 1);
    int h = 0;
    for (size_t i = 0; i < len; i++)
        h = h * 31 + buf[len - 1 - i];
    return h;
}

int main(void)
{
    printf("%ld %ld %d\n", vla_sum(10), vla_sum(1000), alloca_copy("hello, alloca"));
    return 0;
}
