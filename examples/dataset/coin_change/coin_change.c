/* coin_change: Number of ways to make every amount up to W from the given coins, mod 1e9+7, printed for W. Input: "k W c1 .. ck", repeated R times with shifted W (first number R). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD 1000000007

__attribute__((noinline)) long ways(const int *coins, int k, int w, int *dp)
{
    dp[0] = 1;
    for (int i = 1; i <= w; i++) dp[i] = 0;
    for (int c = 0; c < k; c++)
        for (int i = coins[c]; i <= w; i++) {
            int v = dp[i] + dp[i - coins[c]];
            if (v >= MOD) v -= MOD;
            dp[i] = v;
        }
    return dp[w];
}

int main(void)
{
    int r, k, w, coins[64];
    if (scanf("%d %d %d", &r, &k, &w) != 3 || k < 1 || k > 64 || w < 0) { puts("bad input"); return 0; }
    for (int i = 0; i < k; i++)
        if (scanf("%d", &coins[i]) != 1 || coins[i] < 1) { puts("bad coin"); return 0; }
    int *dp = malloc(sizeof *dp * ((size_t)w + 1));
    long acc = 0;
    for (int t = 0; t < r; t++)
        acc = (acc * 7 + ways(coins, k, w - t % 3, dp)) % MOD;
    printf("%ld\n", acc);
    free(dp);
    return 0;
}
