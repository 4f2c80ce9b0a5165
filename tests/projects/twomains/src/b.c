/* prog_b: another program with its own main, which neither the workload nor the tests run:
   sgcc must never search it, nor ship anything into it. */
#include <stdio.h>

int main(int argc, char **argv)
{
    unsigned long h = 5381;
    for (int i = 0; i < argc; i++)
        for (const char *p = argv[i]; *p; p++)
            h = h * 33 + (unsigned char)*p;
    printf("%lu\n", h);
    return 0;
}
