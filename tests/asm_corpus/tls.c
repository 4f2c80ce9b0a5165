/* Thread-local storage: .tbss/.tdata, %fs: accesses (and __tls_get_addr under -fPIC). */
#include <stdio.h>

__thread int counter;
__thread long history[4] = {1, 2, 3, 4};
static __thread unsigned scratch;

__attribute__((noinline)) int bump(int by)
{
    counter += by;
    history[counter & 3] += by;
    scratch ^= (unsigned)by * 2654435761u;
    return counter;
}

__attribute__((noinline)) long history_sum(void)
{
    long s = scratch & 0xff;
    for (int i = 0; i < 4; i++)
        s += history[i];
    return s;
}

int main(void)
{
    for (int i = 1; i <= 10; i++)
        bump(i);
    printf("%d %ld\n", counter, history_sum());
    return 0;
}
