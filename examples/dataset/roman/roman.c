/* roman: Converts every number in [lo, hi] (1..3999) to Roman numerals and back; prints the total length and whether all round-tripped. Input: "lo hi reps". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int val[] = {1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1};
static const char *sym[] = {"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"};

__attribute__((noinline)) int to_roman(int x, char *out)
{
    int k = 0;
    for (int i = 0; i < 13; i++)
        while (x >= val[i]) {
            for (const char *p = sym[i]; *p; p++) out[k++] = *p;
            x -= val[i];
        }
    out[k] = 0;
    return k;
}

static int from_roman(const char *s)
{
    int v = 0;
    for (int i = 0; s[i]; i++) {
        int a = s[i] == 'M' ? 1000 : s[i] == 'D' ? 500 : s[i] == 'C' ? 100 : s[i] == 'L' ? 50 : s[i] == 'X' ? 10 : s[i] == 'V' ? 5 : 1;
        int b = !s[i + 1] ? 0 : s[i + 1] == 'M' ? 1000 : s[i + 1] == 'D' ? 500 : s[i + 1] == 'C' ? 100 : s[i + 1] == 'L' ? 50 : s[i + 1] == 'X' ? 10 : s[i + 1] == 'V' ? 5 : 1;
        v += a < b ? -a : a;
    }
    return v;
}

int main(void)
{
    int lo, hi, reps;
    if (scanf("%d %d %d", &lo, &hi, &reps) != 3 || lo < 1 || hi > 3999 || lo > hi) { puts("out of range"); return 0; }
    char buf[32];
    long total = 0;
    int ok = 1;
    for (int r = 0; r < reps; r++)
        for (int x = lo; x <= hi; x++) {
            total += to_roman(x, buf);
            if (r == 0 && from_roman(buf) != x) ok = 0;
        }
    printf("%ld %s\n", total, ok ? "ok" : "broken");
    return 0;
}
