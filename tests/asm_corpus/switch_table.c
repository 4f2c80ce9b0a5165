/* Dense switches: -O2/-O3 turn these into jump tables (.L4: .quad/.long .Lx-.L4 in .rodata)
 * and value tables (CSWTCH.N objects). */
#include <stdio.h>

__attribute__((noinline)) long dispatch(int op, long a, long b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return b ? a / b : 0;
    case 4: return a << (b & 15);
    case 5: return a ^ (b * 3);
    case 6: puts("six"); return a | b;
    case 7: return a & ~b;
    case 8: return a % (b | 1);
    case 9: return -a;
    default: return -1;
    }
}

__attribute__((noinline)) int lookup(unsigned x)
{
    switch (x) {
    case 0: return 11; case 1: return 23; case 2: return 37; case 3: return 41;
    case 4: return 53; case 5: return 67; case 6: return 71; case 7: return 89;
    default: return 0;
    }
}

int main(void)
{
    long acc = 0;
    for (int op = -1; op < 12; op++) {
        long r = dispatch(op, 1000 + op, 7);
        printf("op %d -> %ld\n", op, r);
        acc += r;
    }
    for (unsigned x = 0; x < 10; x++)
        acc += lookup(x);
    printf("acc %ld\n", acc);
    return 0;
}
