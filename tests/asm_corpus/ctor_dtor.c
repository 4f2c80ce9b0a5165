/* Constructors and destructors (.init_array / .fini_array entries point at units). */
#include <stdio.h>

static int initialized;

__attribute__((constructor)) static void setup(void)
{
    initialized = 42;
    puts("ctor");
}

__attribute__((destructor)) static void teardown(void)
{
    printf("dtor %d\n", initialized);
}

__attribute__((constructor(200))) void early_setup(void)
{
    initialized += 1000;
}

int main(void)
{
    printf("main sees %d\n", initialized);
    return 0;
}
