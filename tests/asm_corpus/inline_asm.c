/* Inline asm (#APP/#NO_APP), including asm that switches sections itself, and a
 * function written entirely in top-level asm. */
#include <stdio.h>

__asm__(".text\n"
        ".globl asm_triple\n"
        ".type asm_triple, @function\n"
        "asm_triple:\n"
        "\tleal (%rdi,%rdi,2), %eax\n"
        "\tret\n"
        ".size asm_triple, .-asm_triple\n");

int asm_triple(int);

__attribute__((noinline)) int add_asm(int a, int b)
{
    __asm__ volatile("addl %1, %0" : "+r"(a) : "r"(b));
    return a;
}

__attribute__((noinline)) int tagged(int x)
{
    int r;
    /* The asm parks a constant in its own section and comes back with .popsection. */
    __asm__ volatile(".pushsection .rodata.sgcc_tag,\"a\"\n"
                     "\t.long 0x5eed\n"
                     "\t.popsection\n"
                     "\tleal 1(%1), %0"
                     : "=r"(r)
                     : "r"(x));
    return r;
}

int main(void)
{
    printf("%d %d %d\n", add_asm(20, 22), tagged(9), asm_triple(14));
    return 0;
}
