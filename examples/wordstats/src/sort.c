#include <string.h>
#include "words.h"

static int before(const entry *a, const entry *b)
{
    if (a->count != b->count)
        return a->count > b->count;
    return strcmp(a->word, b->word) < 0;
}

/* Insertion sort, then merge passes: stable and deterministic. */
void sort_entries(entry *e, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        entry x = e[i];
        size_t j = i;
        while (j > 0 && before(&x, &e[j - 1])) {
            e[j] = e[j - 1];
            j--;
        }
        e[j] = x;
    }
}
