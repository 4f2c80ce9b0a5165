#ifndef SCALE_BIAS
#define SCALE_BIAS 2.25
#endif
