/* Computed goto through a table the program writes: it stays in the frame, run is not searched. */
#include <stdio.h>
__attribute__((noinline)) long run(const unsigned char *code, long acc, int patch)
{
    static const void *table[] = { &&op_inc, &&op_dbl, &&op_halt };
    const unsigned char *pc = code;
    if (patch)
        table[1] = &&op_inc;
    goto *table[*pc++];
op_inc: acc += 1; goto *table[*pc++];
op_dbl: acc *= 2; goto *table[*pc++];
op_halt: return acc;
}
int main(int argc, char **argv)
{
    static const unsigned char prog[] = {0, 1, 1, 0, 2};
    (void)argv;
    printf("%ld\n", run(prog, 3, argc > 1));
    return 0;
}
