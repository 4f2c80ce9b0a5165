/* convex_hull: Convex hull (monotone chain) of n generated lattice points, q times; prints hull sizes and twice the area. Input: "n q seed". */
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

typedef struct { long x, y; } pt;

static int cmp(const void *a, const void *b)
{
    const pt *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return (p->y > q->y) - (p->y < q->y);
}

__attribute__((noinline)) int hull(const pt *p, int n, pt *h)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        while (k >= 2 && (h[k-1].x - h[k-2].x) * (p[i].y - h[k-2].y) - (h[k-1].y - h[k-2].y) * (p[i].x - h[k-2].x) <= 0) k--;
        h[k++] = p[i];
    }
    for (int i = n - 2, lo = k + 1; i >= 0; i--) {
        while (k >= lo && (h[k-1].x - h[k-2].x) * (p[i].y - h[k-2].y) - (h[k-1].y - h[k-2].y) * (p[i].x - h[k-2].x) <= 0) k--;
        h[k++] = p[i];
    }
    return n > 1 ? k - 1 : n;
}

int main(void)
{
    int n, q; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &q, &seed) != 3 || n < 1) { puts("0 0"); return 0; }
    rng_state = seed;
    pt *p = malloc(sizeof *p * (size_t)n), *h = malloc(sizeof *h * 2 * ((size_t)n + 1));
    long sizes = 0, area2 = 0;
    for (int t = 0; t < q; t++) {
        for (int i = 0; i < n; i++) { p[i].x = (long)(next_rand() % 100000); p[i].y = (long)(next_rand() % 100000); }
        qsort(p, (size_t)n, sizeof *p, cmp);
        int k = hull(p, n, h);
        sizes += k;
        for (int i = 0; i < k; i++) { int j = (i + 1) % k; area2 += h[i].x * h[j].y - h[j].x * h[i].y; }
    }
    printf("%ld %ld\n", sizes, area2);
    free(p); free(h);
    return 0;
}
