/* String literals: one shared by two functions (one .LC, stays in the frame) and some private
 * to a single function (their .LC blocks travel with it). */
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) void greet(const char *who)
{
    printf("shared: %s\n", who);
    puts("private to greet");
}

__attribute__((noinline)) void farewell(const char *who)
{
    printf("shared: %s\n", who);
    puts("private to farewell, and a rather longer literal so that gcc aligns it");
}

__attribute__((noinline)) size_t count_vowels(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += strchr("aeiouAEIOU", *s) != NULL;
    return n;
}

int main(void)
{
    greet("world");
    farewell("moon");
    printf("%zu\n", count_vowels("The quick brown fox jumps over the lazy dog"));
    return 0;
}
