#ifndef WORDS_H
#define WORDS_H
#include <stddef.h>

typedef struct {
    char *word;
    unsigned long count;
} entry;

typedef struct {
    entry *slots;
    size_t cap;
    size_t used;
} table;

unsigned long hash_word(const char *s, size_t n);
void table_init(table *t, size_t cap);
void table_add(table *t, const char *s, size_t n);
void table_free(table *t);
size_t table_sorted(const table *t, entry *out);
void sort_entries(entry *e, size_t n);
#endif
