int warns(int x)
{
    int unused;
    if (x = 3)
        return x;
    return 0;
}
