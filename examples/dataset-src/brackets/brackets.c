/* brackets: Generates bracket strings of four kinds and checks them with a stack; prints how many are balanced and the deepest nesting. Input: "count len seed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng_state;
static unsigned long long next_rand(void)
{
    unsigned long long z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__attribute__((noinline)) int check(const char *s, int n, char *stack, int *depth)
{
    int top = 0, deepest = 0;
    for (int i = 0; i < n; i++) {
        char c = s[i];
        if (c == '(' || c == '[' || c == '{' || c == '<') {
            stack[top++] = c;
            if (top > deepest) deepest = top;
        } else {
            char want = c == ')' ? '(' : c == ']' ? '[' : c == '}' ? '{' : '<';
            if (top == 0 || stack[top - 1] != want) { *depth = deepest; return 0; }
            top--;
        }
    }
    *depth = deepest;
    return top == 0;
}

int main(void)
{
    int count, len; unsigned long long seed;
    if (scanf("%d %d %llu", &count, &len, &seed) != 3 || len < 1) { puts("0 0"); return 0; }
    rng_state = seed;
    static const char open[] = "([{<", close[] = ")]}>";
    char *s = malloc((size_t)len), *st = malloc((size_t)len), *mine = malloc((size_t)len);
    int ok = 0, deepest = 0;
    for (int t = 0; t < count; t++) {
        int top = 0;
        for (int i = 0; i < len; i++) {
            int remaining = len - i;
            if (top > 0 && (top >= remaining || next_rand() % 2)) {
                s[i] = next_rand() % 2048 ? close[(int)mine[--top]] : ')';
            } else {
                int k = (int)(next_rand() % 4);
                mine[top++] = (char)k;
                s[i] = open[k];
            }
        }
        int d;
        ok += check(s, len, st, &d);
        if (d > deepest) deepest = d;
    }
    printf("%d %d\n", ok, deepest);
    free(s); free(st); free(mine);
    return 0;
}
