/* An assert in a function its callers inline: gcc splits the failing branch into a local
   .part.0 and calls it last, resolved by the assembler without a relocation (PolyBench's
   polybench_flush_cache). The call does not return, so nothing follows it. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

void flush_cache(void) {
    int n = 32770 * 1024 / (int)sizeof(double);
    double *c = (double *)calloc(n, sizeof(double));
    double s = 0.0;
    for (int i = 0; i < n; i++) s += c[i];
    assert(s <= 10.0);
    free(c);
}

void prepare(void) { flush_cache(); }

int main(void) {
    prepare();
    puts("flushed");
    return 0;
}
