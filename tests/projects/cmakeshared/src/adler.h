/* The two functions of zlib's interface this library provides, with zlib's signatures. */
unsigned long adler32(unsigned long adler, const unsigned char *buf, unsigned int len);
const char *zlibVersion(void);
