/* bad_nondet (deliberately bad): hashes the address of a heap block and of a local
   variable into its output. Under ASLR (and with the sandbox's varying environment size)
   the output changes from run to run, so no recorded output can judge it: the dataset
   build must drop it as non-deterministic. Input: "n". */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

__attribute__((noinline)) unsigned long mix(unsigned long x, long n)
{
    for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

int main(void)
{
    long n;
    int local = 0;
    if (scanf("%ld", &n) != 1) n = 1;
    void *p = malloc(16);
    unsigned long seed = (unsigned long)(uintptr_t)p ^ (unsigned long)(uintptr_t)&local;
    printf("%lu\n", mix(seed, n) % 1000);
    free(p);
    return 0;
}
