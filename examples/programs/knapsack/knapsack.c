/* knapsack: 0/1 knapsack, best total value with total weight <= W.
   Input: "n W" then n lines "weight value". */
#include <stdio.h>
#include <stdlib.h>

/* dp must have room for W + 1 longs */
__attribute__((noinline)) long knapsack(int n, int W, const int *w, const int *v, long *dp)
{
    for (int j = 0; j <= W; j++)
        dp[j] = 0;
    for (int i = 0; i < n; i++) {
        int wi = w[i];
        long vi = v[i];
        for (int j = W; j >= wi; j--) {
            long cand = dp[j - wi] + vi;
            if (cand > dp[j])
                dp[j] = cand;
        }
    }
    return dp[W];
}

int main(void)
{
    int n, W;
    if (scanf("%d %d", &n, &W) != 2 || n <= 0 || W < 0)
        return 1;
    int *w = malloc(sizeof(int) * (size_t)n);
    int *v = malloc(sizeof(int) * (size_t)n);
    long *dp = malloc(sizeof(long) * ((size_t)W + 1));
    if (!w || !v || !dp)
        return 1;
    for (int i = 0; i < n; i++)
        if (scanf("%d %d", &w[i], &v[i]) != 2 || w[i] <= 0)
            return 1;
    printf("%ld\n", knapsack(n, W, w, v, dp));
    free(w); free(v); free(dp);
    return 0;
}
