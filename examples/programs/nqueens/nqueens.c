/* nqueens: number of ways to place n non-attacking queens on an n x n board.
   Input: "n" (1 <= n <= 14). */
#include <stdio.h>

static int col_of[16];

/* counts completions of a board whose rows 0..row-1 hold queens at col_of[] */
__attribute__((noinline)) long place(int row, int n)
{
    if (row == n)
        return 1;
    long total = 0;
    for (int c = 0; c < n; c++) {
        int ok = 1;
        for (int r = 0; r < row; r++) {
            int d = col_of[r] - c;
            if (d == 0 || d == row - r || d == r - row) {
                ok = 0;
                break;
            }
        }
        if (ok) {
            col_of[row] = c;
            total += place(row + 1, n);
        }
    }
    return total;
}

int main(void)
{
    int n;
    if (scanf("%d", &n) != 1 || n < 1 || n > 14)
        return 1;
    printf("%ld\n", place(0, n));
    return 0;
}
