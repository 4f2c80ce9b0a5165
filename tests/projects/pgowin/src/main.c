#include <stdio.h>
#include "kern.h"

int main(void)
{
    unsigned long n;
    int seed;
    if (scanf("%lu %d", &n, &seed) != 2)
        return 2;
    unsigned long total = 0;
    for (int op = 0; op < 4; op++)
        total += kernel(op, n, 97u + (unsigned long)seed);
    printf("%lu\n", total);
    return 0;
}
