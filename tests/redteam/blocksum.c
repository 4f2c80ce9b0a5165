#include <stdio.h>

/* Reads its input a block at a time into its own frame through fread: the bytes fread reports
   it read are the function's to read, the ones past them are what was there before
   (tests/test_footprint.py). */
__attribute__((noinline)) long block_sum(void)
{
    unsigned char buf[32];
    size_t n = fread(buf, 1, sizeof buf, stdin);
    long s = 0;
    for (size_t i = 0; i < n; i++)
        s += (long)buf[i] * (long)(i + 1);
    return n ? s : -1;
}

int main(void)
{
    long s, total = 0;
    while ((s = block_sum()) >= 0)
        total += s;
    printf("%ld\n", total);
    return 0;
}
