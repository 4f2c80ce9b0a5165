/* sgcc's entry-state capture runtime (sgcc.verify.funcstate).

   Linked only into a capture build of gcc's own program, never into a candidate or a shipped
   binary. Each captured function starts with `call __sgcc_cap_<i>`; that stub (generated in
   assembly by funcstate.py) saves every general register, the flags and xmm0-7 into
   __sgcc_regs and calls __sgcc_dump(i), which writes one file per call:

     "SGCCCAP1", u64 function index, u64 runtime address of __sgcc_dump,
     u64 regs[18] (rax rbx rcx rdx rsi rdi rbp rsp r8..r15 rflags fsbase), u8 xmm[8][16],
     then per region: u64 start, u64 end, u64 prot (1 r, 2 w), bytes[end - start];
     a region of start = end = 0 ends the file.

   It uses no libc (raw system calls) and no vector registers (-mgeneral-regs-only), so the
   program's state is what gcc's function sees, unchanged. Bounded: MAX_CALLS dumps per
   function, MAX_REGION bytes per region, MAX_FILE per dump, MAX_TOTAL per process. */

typedef unsigned long u64;

#define MAX_FUNCS 256
#define MAX_CALLS 2
#define MAX_REGION (40UL << 20)
#define MAX_FILE (48UL << 20)
#define MAX_TOTAL (160UL << 20)

extern const char __sgcc_cap_dir[];
u64 __sgcc_regs[18 + 16] __attribute__((aligned(16)));
static unsigned __sgcc_calls[MAX_FUNCS];
static u64 __sgcc_total;
static char maps[1 << 16];

static long sys3(long n, long a, long b, long c)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}

static int wr(int fd, const void *p, u64 n)
{
    const char *c = p;
    while (n) {
        long w = sys3(1, fd, (long)c, (long)(n > (1UL << 30) ? (1UL << 30) : n));
        if (w <= 0)
            return -1;
        c += w;
        n -= (u64)w;
    }
    return 0;
}

static u64 hex(const char **s)
{
    u64 v = 0;
    for (;;) {
        char c = **s;
        if (c >= '0' && c <= '9') v = v * 16 + (u64)(c - '0');
        else if (c >= 'a' && c <= 'f') v = v * 16 + (u64)(c - 'a' + 10);
        else return v;
        (*s)++;
    }
}

static char *put(char *p, const char *s)
{
    while (*s) *p++ = *s++;
    return p;
}

static char *putnum(char *p, u64 v)
{
    char t[24];
    int n = 0;
    do { t[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *p++ = t[--n];
    return p;
}

void __sgcc_dump(u64 index)
{
    if (index >= MAX_FUNCS || __sgcc_calls[index] >= MAX_CALLS || __sgcc_total >= MAX_TOTAL)
        return;
    unsigned seq = __sgcc_calls[index]++;
    char path[512], *p = path;
    p = put(p, __sgcc_cap_dir);
    p = put(p, "/cap-");
    p = putnum(p, (u64)sys3(39, 0, 0, 0)); /* getpid */
    *p++ = '-';
    p = putnum(p, index);
    *p++ = '-';
    p = putnum(p, seq);
    p = put(p, ".bin");
    *p = 0;
    int mfd = (int)sys3(2, (long)"/proc/self/maps", 0, 0);
    if (mfd < 0)
        return;
    u64 got = 0;
    for (;;) {
        long r = sys3(0, mfd, (long)(maps + got), (long)(sizeof maps - 1 - got));
        if (r <= 0) break;
        got += (u64)r;
    }
    sys3(3, mfd, 0, 0);
    maps[got] = 0;
    int fd = (int)sys3(2, (long)path, 01 | 0100 | 0200 /* O_WRONLY|O_CREAT|O_EXCL */, 0600);
    if (fd < 0)
        return;
    sys3(158, 0x1003 /* ARCH_GET_FS */, (long)&__sgcc_regs[17], 0);
    u64 head[3] = {0x3150414343434753UL /* "SGCCCAP1" */, index, (u64)&__sgcc_dump};
    wr(fd, head, sizeof head);
    wr(fd, __sgcc_regs, sizeof __sgcc_regs);
    u64 used = 0;
    const char *s = maps;
    while (*s) {
        u64 start = hex(&s);
        s++; /* '-' */
        u64 end = hex(&s);
        s++; /* ' ' */
        int rd = s[0] == 'r', wt = s[1] == 'w', ex = s[2] == 'x';
        const char *line = s;
        while (*s && *s != '\n') s++;
        int special = 0;
        for (const char *q = line; q < s; q++)
            if (*q == '[' && (q[1] == 'v')) special = 1; /* [vvar] [vdso] [vsyscall] */
        if (*s) s++;
        u64 size = end - start;
        if (!rd || ex || special || size > MAX_REGION || used + size > MAX_FILE)
            continue;
        u64 rec[3] = {start, end, (u64)(1 | (wt ? 2 : 0))};
        wr(fd, rec, sizeof rec);
        wr(fd, (const void *)start, size);
        used += size;
    }
    u64 last[3] = {0, 0, 0};
    wr(fd, last, sizeof last);
    sys3(3, fd, 0, 0);
    __sgcc_total += used;
}
