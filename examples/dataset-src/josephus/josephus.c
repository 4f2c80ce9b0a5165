/* josephus: Josephus problem simulated with an array and element removal (O(n^2) shifting); prints the survivor and a checksum of the elimination order. Input: "n k". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) unsigned long josephus(int *ring, int n, int k)
{
    unsigned long order = 0;
    int pos = 0, alive = n;
    for (int i = 0; i < n; i++) ring[i] = i + 1;
    while (alive > 1) {
        pos = (pos + k - 1) % alive;
        order = order * 7 + ring[pos];
        for (int j = pos; j < alive - 1; j++) ring[j] = ring[j + 1];
        alive--;
    }
    return order * 100000 + ring[0];
}

int main(void)
{
    int n, k;
    if (scanf("%d %d", &n, &k) != 2 || n < 1 || k < 1) { puts("0"); return 0; }
    int *ring = malloc(sizeof *ring * (size_t)n);
    printf("%lu\n", josephus(ring, n, k));
    free(ring);
    return 0;
}
