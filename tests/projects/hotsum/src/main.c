/* hotsum [rounds]: mixes a buffer of generated data and prints the checksum. */
#include <stdio.h>
#include <stdlib.h>

#include "hot.h"

int main(int argc, char **argv)
{
    static unsigned char data[1 << 16];
    int rounds = argc > 1 ? atoi(argv[1]) : 8;
    unsigned long total = 0;
    for (int r = 0; r < rounds; r++) {
        fill(data, sizeof data, (unsigned)r);
        total += hot_mix(data, sizeof data);
    }
    printf("hotsum v%d: %lx\n", hot_version(), total);
    return 0;
}
