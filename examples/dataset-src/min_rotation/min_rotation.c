/* min_rotation: Lexicographically least rotation of a generated string (mostly a, one b in k on average), by comparing every rotation (naive); prints its start and a hash. Input: "n k seed". */
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

__attribute__((noinline)) int least_rotation(const char *s, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) {
        int k = 0;
        while (k < n && s[(best + k) % n] == s[(i + k) % n]) k++;
        if (k < n && s[(i + k) % n] < s[(best + k) % n]) best = i;
    }
    return best;
}

int main(void)
{
    int n, k; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &k, &seed) != 3 || n < 1 || k < 1) { puts("0 0"); return 0; }
    rng_state = seed;
    char *s = malloc((size_t)n);
    for (int i = 0; i < n; i++) s[i] = next_rand() % (unsigned)k ? 'a' : 'b';
    int b = least_rotation(s, n);
    unsigned long h = 0;
    for (int i = 0; i < n; i++) h = h * 31 + (unsigned char)s[(b + i) % n];
    printf("%d %lu\n", b, h);
    free(s);
    return 0;
}
