unsigned long triangle(unsigned long n)
{
    unsigned long s = 0;
    for (unsigned long i = 0; i <= n; i++)
        s += i;
    return s;
}
