unsigned long kernel(int op, unsigned long n, unsigned long d);
