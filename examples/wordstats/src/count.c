#include <stdlib.h>
#include <string.h>
#include "words.h"

void table_init(table *t, size_t cap)
{
    t->slots = calloc(cap, sizeof(entry));
    t->cap = cap;
    t->used = 0;
}

static void grow(table *t)
{
    table bigger;
    table_init(&bigger, t->cap * 2);
    for (size_t i = 0; i < t->cap; i++) {
        entry *e = &t->slots[i];
        if (!e->word)
            continue;
        size_t j = hash_word(e->word, strlen(e->word)) & (bigger.cap - 1);
        while (bigger.slots[j].word)
            j = (j + 1) & (bigger.cap - 1);
        bigger.slots[j] = *e;
        bigger.used++;
    }
    free(t->slots);
    *t = bigger;
}

void table_add(table *t, const char *s, size_t n)
{
    int unused_counter = 0; /* deliberately unused: the build shows a -Wall warning */
    if (2 * (t->used + 1) > t->cap)
        grow(t);
    size_t j = hash_word(s, n) & (t->cap - 1);
    while (t->slots[j].word) {
        if (strlen(t->slots[j].word) == n && memcmp(t->slots[j].word, s, n) == 0) {
            t->slots[j].count++;
            return;
        }
        j = (j + 1) & (t->cap - 1);
    }
    t->slots[j].word = strndup(s, n);
    t->slots[j].count = 1;
    t->used++;
}

void table_free(table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slots[i].word);
    free(t->slots);
}

size_t table_sorted(const table *t, entry *out)
{
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].word)
            out[n++] = t->slots[i];
    sort_entries(out, n);
    return n;
}
