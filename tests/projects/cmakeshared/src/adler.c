#include "adler.h"

#define BASE 65521u

/* Adler-32, one byte and two remainders at a time: correct and slow (zlib defers the
 * remainders over 5552 bytes). */
unsigned long adler32(unsigned long adler, const unsigned char *buf, unsigned int len)
{
    unsigned long a = adler & 0xffff, b = (adler >> 16) & 0xffff;
    for (unsigned int i = 0; i < len; i++) {
        a = (a + buf[i]) % BASE;
        b = (b + a) % BASE;
    }
    return (b << 16) | a;
}

const char *zlibVersion(void)
{
    return "1.0-adlersum";
}
