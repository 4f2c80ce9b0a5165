#include "bits.h"

static unsigned long rng_state;

void seed_rand(unsigned long seed) { rng_state = seed; }

unsigned long next_rand(void)
{
    unsigned long z = (rng_state += 0x9E3779B97F4A7C15UL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}
