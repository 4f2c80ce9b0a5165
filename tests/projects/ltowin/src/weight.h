#ifndef WEIGHT_H
#define WEIGHT_H
unsigned weight(unsigned x);
#endif
