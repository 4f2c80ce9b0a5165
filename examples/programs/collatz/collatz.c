/* collatz: for every start value in [1, n), the number of steps the Collatz
   iteration takes to reach 1.  Prints the total number of steps and the start
   value with the longest chain.  Input: "n". */
#include <stdio.h>

__attribute__((noinline)) long collatz_steps(long x)
{
    long steps = 0;
    while (x != 1) {
        if (x % 2 == 0)
            x = x / 2;
        else
            x = 3 * x + 1;
        steps++;
    }
    return steps;
}

int main(void)
{
    long n;
    if (scanf("%ld", &n) != 1 || n < 2)
        return 1;
    long total = 0, best = 1, best_len = 0;
    for (long s = 1; s < n; s++) {
        long len = collatz_steps(s);
        total += len;
        if (len > best_len) {
            best_len = len;
            best = s;
        }
    }
    printf("%ld\n%ld %ld\n", total, best, best_len);
    return 0;
}
