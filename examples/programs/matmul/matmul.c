/* matmul: C = A * B for n x n matrices of small integers generated from a
   seed; prints the trace of C and a checksum of all entries.  Input: "n seed". */
#include <stdio.h>
#include <stdlib.h>

/* row-major n x n int matrices; c must not overlap a or b */
__attribute__((noinline)) void matmul(int n, const int *a, const int *b, int *c)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int sum = 0;
            for (int k = 0; k < n; k++)
                sum += a[i * n + k] * b[k * n + j];
            c[i * n + j] = sum;
        }
}

int main(void)
{
    int n;
    unsigned seed;
    if (scanf("%d %u", &n, &seed) != 2 || n <= 0 || n > 2000)
        return 1;
    int *a = malloc(sizeof(int) * (size_t)n * n);
    int *b = malloc(sizeof(int) * (size_t)n * n);
    int *c = malloc(sizeof(int) * (size_t)n * n);
    if (!a || !b || !c)
        return 1;
    unsigned x = seed ? seed : 1;
    for (int i = 0; i < n * n; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        a[i] = (int)(x % 19) - 9;
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        b[i] = (int)(x % 19) - 9;
    }
    matmul(n, a, b, c);
    long trace = 0;
    unsigned long check = 0;
    for (int i = 0; i < n; i++)
        trace += c[i * n + i];
    for (int i = 0; i < n * n; i++)
        check = check * 1000003UL + (unsigned)c[i];
    printf("%ld %lu\n", trace, check);
    free(a); free(b); free(c);
    return 0;
}
