#include <stdio.h>
#include "weight.h"

/* The hot loop calls weight(), which lives in another source (in a library): gcc compiles
 * each source alone and the loop pays a call per element. With link-time optimisation gcc
 * inlines weight() into the loop and vectorizes it: several times faster, and no flag of a
 * single compile reaches it. */
int main(void)
{
    static unsigned a[4096];
    unsigned rounds, seed;
    if (scanf("%u %u", &rounds, &seed) != 2)
        return 2;
    for (unsigned i = 0; i < 4096; i++)
        a[i] = i * 40503u + seed;
    unsigned long sum = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < 4096; i++)
            sum += weight(a[i] + r);
    printf("%lu\n", sum);
    return 0;
}
