/* rle: Run-length encodes a generated string with long runs, decodes it again and checks it; prints encoded length and a checksum. Input: "n runmax seed reps". */
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

__attribute__((noinline)) int rle_encode(const char *s, int n, char *out)
{
    int o = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && s[j] == s[i] && j - i < 255) j++;
        out[o++] = s[i];
        out[o++] = (char)(j - i);
        i = j;
    }
    return o;
}

static int rle_decode(const char *in, int len, char *out)
{
    int o = 0;
    for (int i = 0; i < len; i += 2)
        for (int k = 0; k < (unsigned char)in[i + 1]; k++) out[o++] = in[i];
    return o;
}

int main(void)
{
    int n, runmax, reps; unsigned long long seed;
    if (scanf("%d %d %llu %d", &n, &runmax, &seed, &reps) != 4 || n < 1 || runmax < 1) { puts("0"); return 0; }
    rng_state = seed;
    char *s = malloc((size_t)n), *enc = malloc(2 * (size_t)n), *dec = malloc((size_t)n);
    for (int i = 0; i < n;) {
        int len = 1 + (int)(next_rand() % (unsigned)runmax);
        char c = (char)('a' + next_rand() % 3);
        for (int k = 0; k < len && i < n; k++) s[i++] = c;
    }
    int len = 0;
    unsigned long sum = 0;
    for (int r = 0; r < reps; r++) {
        len = rle_encode(s, n, enc);
        for (int i = 0; i < len; i++) sum = sum * 131 + (unsigned char)enc[i];
    }
    int back = rle_decode(enc, len, dec);
    printf("%d %lu %s\n", len, sum, back == n && memcmp(s, dec, (size_t)n) == 0 ? "ok" : "mismatch");
    free(s); free(enc); free(dec);
    return 0;
}
