/* bad_ub (deliberately bad): breaks C's strict-aliasing rule by writing an int through a
   float pointer. At -O0 the value is reloaded from memory (the float's bits); at -O3 gcc
   assumes an int* and a float* never alias and reuses the int it stored, so -O0 and -O3
   print different numbers: undefined behaviour, which the dataset build must drop.
   Input: "n". */
#include <stdio.h>

__attribute__((noinline)) int store_both(int *i, float *f, int n)
{
    *i = n;
    *f = 2.0f;
    return *i;
}

int main(void)
{
    int n, x = 0;
    if (scanf("%d", &n) != 1) n = 1;
    long s = 0;
    for (int k = 0; k < 3; k++) s += store_both(&x, (float *)&x, n + k);
    printf("%ld\n", s);
    return 0;
}
