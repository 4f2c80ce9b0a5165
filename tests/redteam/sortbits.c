/* sortbits: the red team's program of issue 43. count_bits copies its input into a buffer on
   main's stack (memcpy), sorts the first few words (qsort with a comparator) and counts the
   bits. Input: "n seed reps" (n <= 1024). Output: the total over reps calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long rng_state;
static unsigned long in[1024];

static unsigned long next_rand(void)
{
    unsigned long z = (rng_state += 0x9E3779B97F4A7C15UL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

static int cmp(const void *x, const void *y)
{
    unsigned long a = *(const unsigned long *)x, b = *(const unsigned long *)y;
    return (a > b) - (a < b);
}

__attribute__((noinline)) long count_bits(unsigned long *buf, const unsigned long *src, int n)
{
    memcpy(buf, src, (size_t)n * sizeof *buf);
    qsort(buf, n < 16 ? (size_t)n : 16, sizeof *buf, cmp);
    long c = 0;
    for (int i = 0; i < n; i++) {
        unsigned long x = buf[i];
        while (x) {
            c += x & 1;
            x >>= 1;
        }
    }
    return c + (long)(buf[0] & 1);
}

int main(void)
{
    unsigned long buf[1024];
    int n, reps;
    unsigned long seed;
    if (scanf("%d %lu %d", &n, &seed, &reps) != 3 || n <= 0 || n > 1024 || reps <= 0)
        return 1;
    rng_state = seed;
    for (int i = 0; i < n; i++)
        in[i] = next_rand() >> (next_rand() & 63);
    long total = 0;
    for (int r = 0; r < reps; r++)
        total += count_bits(buf, in, n);
    printf("%ld\n", total);
    return 0;
}
