#include <stdio.h>
#include <math.h>
unsigned long triangle(unsigned long n);
int main(void)
{
    printf("%lu %.3f\n", triangle(100), sqrt((double)triangle(10)));
    return 0;
}
