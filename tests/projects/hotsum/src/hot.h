/* hotsum: a tiny library (libhot) and a program, for sgcc's build-system tests. */
#ifndef HOT_H
#define HOT_H

#include <stddef.h>

unsigned long hot_mix(const unsigned char *data, size_t n);
int hot_version(void);
void fill(unsigned char *data, size_t n, unsigned seed);

#endif
