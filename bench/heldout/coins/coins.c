/* coins: number of ways to pay each amount up to W with the given coin values, modulo
   1000000007 (unbounded knapsack count); prints a checksum and the ways for W.
   Input: "k W" then k coin values. */
#include <stdio.h>
#include <stdlib.h>

#define MOD 1000000007u

__attribute__((noinline)) void count_ways(const int *coin, int k, unsigned *ways, int w)
{
    for (int a = 0; a <= w; a++)
        ways[a] = a == 0;
    for (int c = 0; c < k; c++)
        for (int a = coin[c]; a <= w; a++) {
            unsigned v = ways[a] + ways[a - coin[c]];
            ways[a] = v >= MOD ? v - MOD : v;
        }
}

int main(void)
{
    int k, w;
    if (scanf("%d %d", &k, &w) != 2 || k <= 0 || w < 0 || k > 100000)
        return 1;
    int *coin = malloc(sizeof(int) * (size_t)k);
    unsigned *ways = malloc(sizeof(unsigned) * ((size_t)w + 1));
    if (!coin || !ways)
        return 1;
    for (int c = 0; c < k; c++)
        if (scanf("%d", &coin[c]) != 1 || coin[c] <= 0)
            return 1;
    count_ways(coin, k, ways, w);
    unsigned long long check = 0;
    for (int a = 0; a <= w; a++)
        check = (check * 31 + ways[a]) % 1000000000000000003ULL;
    printf("%llu %u\n", check, ways[w]);
    free(coin); free(ways);
    return 0;
}
