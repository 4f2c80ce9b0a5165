/* A library translation unit with no main: exported, static and inline-able functions,
 * a constant pool, and a string table. */
#include <stddef.h>

static const char *const level_names[] = {"debug", "info", "warn", "error"};

const char *level_name(unsigned level)
{
    return level < 4 ? level_names[level] : "unknown";
}

static int clamp(int x, int lo, int hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

int clamp_byte(int x)
{
    return clamp(x, 0, 255);
}

double lerp(double a, double b, double t)
{
    return a + (b - a) * t * 0.999;
}

size_t my_strlen(const char *s)
{
    const char *p = s;
    while (*p)
        p++;
    return (size_t)(p - s);
}
