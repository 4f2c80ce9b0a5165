/* nbody: 2-D gravitational n-body simulation (double precision, sqrt from libm) for s steps; prints the total energy. Input: "n s seed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static unsigned long long rng_state;
static unsigned long long next_rand(void)
{
    unsigned long long z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__attribute__((noinline)) void nbody_step(double *x, double *y, double *vx, double *vy, const double *m, int n, double dt)
{
    for (int i = 0; i < n; i++) {
        double ax = 0, ay = 0;
        for (int j = 0; j < n; j++) {
            if (j == i) continue;
            double dx = x[j] - x[i], dy = y[j] - y[i];
            double d2 = dx * dx + dy * dy + 0.01;
            double inv = m[j] / (d2 * sqrt(d2));
            ax += dx * inv;
            ay += dy * inv;
        }
        vx[i] += ax * dt;
        vy[i] += ay * dt;
    }
    for (int i = 0; i < n; i++) { x[i] += vx[i] * dt; y[i] += vy[i] * dt; }
}

int main(void)
{
    int n, s; unsigned long long seed;
    if (scanf("%d %d %llu", &n, &s, &seed) != 3 || n < 1 || n > 100000) { puts("0.000000"); return 0; }
    rng_state = seed;
    double *buf = calloc(5 * (size_t)n, sizeof *buf);
    double *x = buf, *y = x + n, *vx = y + n, *vy = vx + n, *m = vy + n;
    for (int i = 0; i < n; i++) {
        x[i] = (double)(next_rand() % 2000) / 100.0;
        y[i] = (double)(next_rand() % 2000) / 100.0;
        m[i] = 1.0 + (double)(next_rand() % 100) / 50.0;
    }
    for (int t = 0; t < s; t++) nbody_step(x, y, vx, vy, m, n, 0.001);
    double e = 0;
    for (int i = 0; i < n; i++) e += 0.5 * m[i] * (vx[i] * vx[i] + vy[i] * vy[i]);
    printf("%.6f\n", e);
    free(buf);
    return 0;
}
