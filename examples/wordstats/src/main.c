#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include "words.h"

/* Reads text on stdin; prints the number of words, distinct words, and the top ten. */
int main(void)
{
    table t;
    table_init(&t, 64);
    char buf[256];
    size_t n = 0;
    unsigned long words = 0;
    int c;
    while ((c = getchar()) != EOF) {
        if (isalpha(c)) {
            if (n < sizeof buf)
                buf[n++] = (char)tolower(c);
        } else if (n) {
            table_add(&t, buf, n);
            words++;
            n = 0;
        }
    }
    if (n) {
        table_add(&t, buf, n);
        words++;
    }
    entry *sorted = malloc((t.used ? t.used : 1) * sizeof(entry));
    size_t k = table_sorted(&t, sorted);
    printf("words %lu distinct %zu\n", words, k);
    for (size_t i = 0; i < k && i < 10; i++)
        printf("%s %lu\n", sorted[i].word, sorted[i].count);
    free(sorted);
    table_free(&t);
    return 0;
}
