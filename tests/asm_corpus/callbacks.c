/* Static functions whose addresses gcc's code takes without a relocation (lea f(%rip) in the
   same section), as Lua's lua_pcallk passes f_call and qsort gets a comparator. */
#include <stdio.h>
#include <stdlib.h>

typedef int (*step_fn)(void *state, int x);

static int triple(void *state, int x) { return x * 3 + (state != 0); }
static int halve(void *state, int x) { (void)state; return x / 2; }

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* noipa: -O3 must not clone run for triple (then gcc's -O3 code takes no address of triple, and a
   variant that does is refused on purpose: see the address rule in sgcc/verify/controlflow.py). */
__attribute__((noipa)) int run(step_fn f, void *state, int x) { return f(state, x) + 1; }

int protected_call(void *state, int x) { return run(triple, state, x) + run(halve, state, x); }

int main(void) {
    int v[8] = {5, 3, 9, 1, 7, 2, 8, 4};
    qsort(v, 8, sizeof v[0], cmp_int);
    printf("%d %d\n", v[0], protected_call(v, v[7]));
    return 0;
}
