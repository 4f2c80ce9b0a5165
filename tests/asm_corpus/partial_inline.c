/* Partial inlining: gcc splits the cheap early-exit test off a big static function and
 * emits the rest as NAME.part.0, called from several places. */
#include <stdio.h>
#include <string.h>
struct buf { char *data; int len; int cap; };
static int grow(struct buf *b, const char *s)
{
    if (b->len >= b->cap)
        return 0;
    int n = strlen(s);
    for (int i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'a' && c <= 'z') c -= 32;
        else if (c == ' ') c = '_';
        else if (c >= '0' && c <= '9') c = '0' + (9 - (c - '0'));
        if (b->len < b->cap) b->data[b->len++] = c;
        else { printf("overflow at %d/%d\n", i, n); break; }
    }
    printf("grew to %d of %d\n", b->len, b->cap);
    return n;
}
int a1(struct buf *b) { return grow(b, "hello world 123"); }
int a2(struct buf *b) { return grow(b, "second text"); }
int a3(struct buf *b) { return grow(b, "third one 99"); }
int a4(struct buf *b) { return grow(b, "fourth"); }
int main(void) { char d[40]; struct buf b = {d, 0, 39}; int r = a1(&b)+a2(&b)+a3(&b)+a4(&b); d[b.len]=0; printf("%d %s\n", r, d); return 0; }
