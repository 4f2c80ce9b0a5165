#ifndef BITS_H
#define BITS_H
long count_bits(const unsigned long *a, int n);
long parity_sum(const unsigned long *a, int n);
unsigned long next_rand(void);
void seed_rand(unsigned long seed);
#endif
