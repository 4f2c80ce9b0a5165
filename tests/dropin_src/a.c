#include <stdio.h>
#include "inc/config.h"
static const char *names[] = {"zero", "one", "two"};
int classify(int x)
{
    switch (x) {
    case 0: return 3; case 1: return 7; case 2: return 9;
    case 3: return 11; case 4: return 13; case 5: return 17;
    default: return x * x;
    }
}
double scale(double x) { return x * 1.5 + SCALE_BIAS; }
int main(int argc, char **argv)
{
    (void)argv;
    printf("%d %.2f %s\n", classify(argc), scale(argc), names[argc % 3]);
    return 0;
}
