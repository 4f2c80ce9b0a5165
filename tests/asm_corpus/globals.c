/* Global objects in .data, .bss, .rodata (and .data.rel.ro under -fPIC), function-pointer
 * tables, and objects that refer to functions. */
#include <stdio.h>

int counter = 5;
long zeroes[128];
static int hidden_state;
const char banner[] = "globals";
const int primes[] = {2, 3, 5, 7, 11, 13, 17, 19};
static const char *const names[] = {"zero", "one", "two"};

static int twice(int x) { return 2 * x; }
static int thrice(int x) { return 3 * x; }
int (*const ops[])(int) = {twice, thrice};

__attribute__((noinline)) int step(int i)
{
    hidden_state += primes[i & 7];
    zeroes[i & 127] += hidden_state;
    return ops[i & 1](counter++);
}

__attribute__((noinline)) const char *name_of(unsigned i)
{
    return i < 3 ? names[i] : banner;
}

int main(void)
{
    int s = 0;
    for (int i = 0; i < 20; i++)
        s += step(i);
    printf("%s %d %d %ld %s %s\n", banner, s, hidden_state, zeroes[19], name_of(1), name_of(7));
    return 0;
}
