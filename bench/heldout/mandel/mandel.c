/* mandel: escape-time iteration counts of an n x n Mandelbrot grid (doubles); prints the
   total count and a histogram of counts in 8 buckets.  Input: "n maxiter". */
#include <stdio.h>

__attribute__((noinline)) long escape_sum(int n, int maxiter, long *hist)
{
    long total = 0;
    for (int py = 0; py < n; py++) {
        double ci = -1.25 + 2.5 * py / n;
        for (int px = 0; px < n; px++) {
            double cr = -2.0 + 2.75 * px / n;
            double zr = 0, zi = 0;
            int it = 0;
            while (it < maxiter && zr * zr + zi * zi <= 4.0) {
                double t = zr * zr - zi * zi + cr;
                zi = 2 * zr * zi + ci;
                zr = t;
                it++;
            }
            total += it;
            hist[(long)it * 8 / (maxiter + 1)]++;
        }
    }
    return total;
}

int main(void)
{
    int n, maxiter;
    if (scanf("%d %d", &n, &maxiter) != 2 || n <= 0 || maxiter <= 0)
        return 1;
    long hist[8] = {0};
    printf("%ld\n", escape_sum(n, maxiter, hist));
    for (int k = 0; k < 8; k++)
        printf("%ld%c", hist[k], k == 7 ? '\n' : ' ');
    return 0;
}
