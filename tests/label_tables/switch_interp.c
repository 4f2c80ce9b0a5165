/* A bytecode interpreter whose dispatch is a big switch: gcc compiles it to a jump table. */
#include <stdio.h>
__attribute__((noinline)) long run(const unsigned char *code, long acc, long n)
{
    const unsigned char *pc = code;
    for (;;) {
        switch (*pc++) {
        case 0: acc += *pc++; break;
        case 1: acc -= *pc++; break;
        case 2: acc = acc * *pc++ % 1000003; break;
        case 3: acc ^= *pc++; break;
        case 4: { unsigned char t = *pc++; if (--n > 0) pc = code + t; } break;
        case 5: acc <<= 1; break;
        case 6: acc >>= 1; break;
        case 7: acc = -acc; break;
        default: return acc;
        }
    }
}
int main(void)
{
    static const unsigned char prog[] = {0, 7, 2, 3, 3, 5, 1, 1, 5, 6, 4, 0, 9};
    long n;
    if (scanf("%ld", &n) != 1) return 1;
    printf("%ld\n", run(prog, 1, n));
    return 0;
}
