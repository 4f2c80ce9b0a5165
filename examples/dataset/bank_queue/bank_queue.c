/* bank_queue: Discrete simulation of c tellers serving generated customers (first free teller); prints the total and maximum wait. Input: "customers tellers seed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng_state;
static unsigned long long next_rand(void)
{
    unsigned long long z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__attribute__((noinline)) long simulate(const int *arrive, const int *service, int n, long *free_at, int c, long *max_wait)
{
    long total = 0;
    *max_wait = 0;
    for (int t = 0; t < c; t++) free_at[t] = 0;
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int t = 1; t < c; t++)
            if (free_at[t] < free_at[best]) best = t;
        long start = free_at[best] > arrive[i] ? free_at[best] : arrive[i];
        long wait = start - arrive[i];
        total += wait;
        if (wait > *max_wait) *max_wait = wait;
        free_at[best] = start + service[i];
    }
    return total;
}

int main(void)
{
    int n, c; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &c, &seed) != 3 || n < 1 || c < 1) { puts("0 0"); return 0; }
    rng_state = seed;
    int *arrive = malloc(sizeof *arrive * (size_t)n), *service = malloc(sizeof *service * (size_t)n);
    long *free_at = malloc(sizeof *free_at * (size_t)c), mx;
    int now = 0;
    for (int i = 0; i < n; i++) { now += (int)(next_rand() % 10); arrive[i] = now; service[i] = 1 + (int)(next_rand() % (unsigned)(9 * c)); }
    long total = simulate(arrive, service, n, free_at, c, &mx);
    printf("%ld %ld\n", total, mx);
    free(arrive); free(service); free(free_at);
    return 0;
}
