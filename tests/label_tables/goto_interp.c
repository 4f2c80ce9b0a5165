/* A bytecode interpreter with computed goto: its label table (read-only) is used by run only. */
#include <stdio.h>
enum { OP_ADD, OP_SUB, OP_MUL, OP_XOR, OP_JNZ, OP_HALT };
__attribute__((noinline)) long run(const unsigned char *code, long acc, long n)
{
    static const void *const table[] = { &&op_add, &&op_sub, &&op_mul, &&op_xor, &&op_jnz, &&op_halt };
    const unsigned char *pc = code;
#define NEXT goto *table[*pc++]
    NEXT;
op_add: acc += *pc++; NEXT;
op_sub: acc -= *pc++; NEXT;
op_mul: acc = acc * *pc++ % 1000003; NEXT;
op_xor: acc ^= *pc++; NEXT;
op_jnz: { unsigned char t = *pc++; if (--n > 0) pc = code + t; } NEXT;
op_halt: return acc;
}
int main(void)
{
    static const unsigned char prog[] = {OP_ADD, 7, OP_MUL, 3, OP_XOR, 5, OP_SUB, 1, OP_JNZ, 0, OP_HALT};
    long n;
    if (scanf("%ld", &n) != 1) return 1;
    printf("%ld\n", run(prog, 1, n));
    return 0;
}
