/* stackbits: the red team's program (issues 35 and 43). count_bits(a, n) is handed a pointer
   into main's own stack array, as in the attacks that read upwards through it to envp, wrote
   over main's return address, and read libc's code at it. Input: "n seed reps" (n <= 1024).
   Output: the total number of set bits over reps calls. */
#include <stdio.h>

static unsigned long rng_state;
unsigned long scratch[64]; /* a global count_bits never touches (main clears it) */

static unsigned long next_rand(void)
{
    unsigned long z = (rng_state += 0x9E3779B97F4A7C15UL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

__attribute__((noinline)) long count_bits(const unsigned long *a, int n)
{
    long c = 0;
    for (int i = 0; i < n; i++) {
        unsigned long x = a[i];
        while (x) {
            c += x & 1;
            x >>= 1;
        }
    }
    return c;
}

int main(void)
{
    unsigned long a[1024];
    int n, reps;
    unsigned long seed;
    if (scanf("%d %lu %d", &n, &seed, &reps) != 3 || n <= 0 || n > 1024 || reps <= 0)
        return 1;
    rng_state = seed;
    for (int i = 0; i < 64; i++)
        scratch[i] = 0;
    for (int i = 0; i < n; i++)
        a[i] = next_rand() >> (next_rand() & 63);
    long total = 0;
    for (int r = 0; r < reps; r++)
        total += count_bits(a, n);
    printf("%ld\n", total);
    return 0;
}
