/* Inline asm with character constants and strings holding ';' and '#': gas reads '# and ';
 * as characters (not a comment, not a statement separator), and ';' or '#' inside a string
 * as text. A lexer that gets any of this wrong cuts statements apart or loses them. */
#include <stdio.h>

__attribute__((noinline)) int hash_char(int x)
{
    int r;
    __asm__ volatile("movl $'#, %0 ; addl %1, %0 # a real comment" : "=&r"(r) : "r"(x));
    return r;
}

__attribute__((noinline)) int semi_char(int x)
{
    int r;
    __asm__ volatile("leal ';(%1), %0 ; subl $'\\n, %0" : "=r"(r) : "r"(x));
    return r;
}

__attribute__((noinline)) int in_string(int x)
{
    int r;
    /* A constant string with ';' and '#' in its own section, then back with .popsection. */
    __asm__ volatile(".pushsection .rodata.sgcc_str,\"a\"\n"
                     "\t.string \"a;b#c\" ; .byte ';, '#\n"
                     "\t.popsection\n"
                     "\tleal 3(%1), %0"
                     : "=r"(r)
                     : "r"(x));
    return r;
}

int main(void)
{
    printf("%d %d %d\n", hash_char(1), semi_char(2), in_string(3));
    return 0;
}
