/* word_freq: Reads a text from stdin, counts words (letters only, case-folded) in a chained hash table, and prints the number of distinct words and the most frequent one. Input: any text; a first line "REP n" repeats the count n times (for timing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

#define BUCKETS 4096
struct word { char text[32]; int count; struct word *next; };
static struct word *table[BUCKETS];

__attribute__((noinline)) struct word *count_word(const char *w)
{
    unsigned h = 2166136261u;
    for (const char *p = w; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    struct word **slot = &table[h % BUCKETS];
    for (struct word *e = *slot; e; e = e->next)
        if (strcmp(e->text, w) == 0) { e->count++; return e; }
    struct word *e = calloc(1, sizeof *e);
    strcpy(e->text, w);
    e->count = 1;
    e->next = *slot;
    *slot = e;
    return e;
}

int main(void)
{
    static char buf[1 << 18];
    size_t n = fread(buf, 1, sizeof buf - 1, stdin);
    buf[n] = 0;
    int distinct = 0, reps = 1;
    if (n > 4 && memcmp(buf, "REP ", 4) == 0) reps = atoi(buf + 4);
    struct word *best = NULL;
    for (int r = 0; r < reps; r++) {
        char w[32];
        int k = 0;
        for (size_t i = 0; i <= n; i++) {
            int c = (unsigned char)buf[i];
            if (isalpha(c) && k < 31) {
                w[k++] = (char)tolower(c);
            } else if (!isalpha(c) && k) {
                w[k] = 0;
                k = 0;
                struct word *e = count_word(w);
                if (e->count == 1) distinct++;
                if (!best || e->count > best->count || (e->count == best->count && strcmp(e->text, best->text) < 0)) best = e;
            }
        }
    }
    if (best) printf("%d %s %d\n", distinct, best->text, best->count);
    else puts("0");
    return 0;
}
