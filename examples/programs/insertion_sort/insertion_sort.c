/* insertion_sort: sorts n generated integers with insertion sort, then prints
   the minimum, median, maximum and a position-weighted checksum.
   Input: "n seed". */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void insertion_sort(int *a, int n)
{
    for (int i = 1; i < n; i++) {
        int key = a[i];
        int j = i - 1;
        while (j >= 0 && a[j] > key) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = key;
    }
}

int main(void)
{
    int n;
    unsigned seed;
    if (scanf("%d %u", &n, &seed) != 2 || n <= 0)
        return 1;
    int *a = malloc(sizeof(int) * (size_t)n);
    if (!a)
        return 1;
    unsigned x = seed ? seed : 1;
    for (int i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        a[i] = (int)(x % 2000001u) - 1000000;
    }
    insertion_sort(a, n);
    unsigned long check = 0;
    for (int i = 0; i < n; i++)
        check += (unsigned long)(i + 1) * (unsigned)a[i];
    printf("%d %d %d %lu\n", a[0], a[n / 2], a[n - 1], check);
    free(a);
    return 0;
}
