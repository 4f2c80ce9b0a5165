/* Computed goto: a label-address table that refers to labels inside the function. */
#include <stdio.h>

__attribute__((noinline)) long run(const unsigned char *code, long x)
{
    static void *ops[] = {&&op_inc, &&op_dbl, &&op_neg, &&op_sq, &&op_halt};
    const unsigned char *pc = code;
    goto *ops[*pc++];
op_inc:
    x += 1;
    goto *ops[*pc++];
op_dbl:
    x *= 2;
    goto *ops[*pc++];
op_neg:
    x = -x;
    goto *ops[*pc++];
op_sq:
    x = x * x % 1000003;
    goto *ops[*pc++];
op_halt:
    return x;
}

int main(void)
{
    static const unsigned char prog[] = {0, 1, 3, 0, 2, 1, 3, 1, 0, 4};
    printf("%ld %ld\n", run(prog, 3), run(prog, 12345));
    return 0;
}
