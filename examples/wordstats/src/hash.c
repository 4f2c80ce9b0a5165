#include "words.h"

/* FNV-1a over the bytes of one word. */
unsigned long hash_word(const char *s, size_t n)
{
    unsigned long h = 1469598103934665603UL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211UL;
    }
    return h;
}
