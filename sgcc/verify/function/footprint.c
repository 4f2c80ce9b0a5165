/* The footprint rule's memory hook (sgcc.verify.function.footprint), run by Unicorn on every
   memory access of an emulated run.

   Record mode (gcc's function): every byte it reads or writes outside its own frame is noted
   (per page, a read bitmap and a write bitmap); afterwards the notes are read out as sorted
   spans. Check mode (a candidate): each access must lie where the positive rule allows it:

   - a read: in what gcc's function read or wrote on the same state (its "footprint"), in the
     candidate's own constants (spans given), or in its own frame below the entry stack pointer
     at bytes it wrote itself in this run;
   - a write: in what gcc's function wrote, or in its own frame.

   The first access outside stops the run (uc_emu_stop) and is kept for the report: address,
   size, read or write, the instruction's address. C, not Python: a Python callback costs
   about 1.3 us per access (a million-word array is seconds), this one tens of nanoseconds.

   Also here: an instruction counter for the cost comparison (a block hook that adds the
   number of instruction starts in each block executed, from a sorted table of starts).

   Built on first use by the host's gcc against the unicorn wheel's headers and library. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unicorn/unicorn.h>

#define PAGE 4096u
#define NBUCKET 8192u

typedef struct page {
    uint64_t no;
    struct page *next;
    uint8_t r[PAGE / 8], w[PAGE / 8];
} page_t;

typedef struct span {
    uint64_t lo, hi; /* [lo, hi) */
} span_t;

enum { OFF = 0, RECORD = 1, CHECK = 2 };
enum { V_NONE = 0, V_READ = 1, V_WRITE = 2, V_FRAME = 3 };

typedef struct fp {
    int mode;
    uint64_t frame_lo, frame_hi; /* its own frame: [frame_lo, frame_hi), frame_hi = entry sp */
    uint8_t *frame_w;            /* check mode: frame bytes written in this run, a bitmap */
    uint64_t frame_w_lo;         /* lowest frame byte written (what reset must clear) */
    uint64_t frame_cap;          /* bytes the frame_w bitmap covers */
    page_t *buckets[NBUCKET];    /* record mode */
    size_t npages;
    const span_t *rw; size_t nrw; /* check mode: reads allowed (gcc's reads and writes) */
    const span_t *w; size_t nw;   /* check mode: writes allowed (gcc's writes) */
    const span_t *own; size_t nown; /* check mode: reads allowed besides (its constants) */
    int violation;
    uint64_t v_addr, v_pc;
    int v_size;
    uint64_t accesses;
    /* instruction counting */
    const uint64_t *starts; size_t nstarts;
    uint64_t insns;
    int overflow; /* record mode ran out of memory for pages */
    page_t *last; /* record mode: the page of the last access (most accesses are sequential) */
    size_t hit_rw, hit_w, hit_own; /* check mode: the span of the last access, per set */
} fp_t;

#define MAX_PAGES (1u << 17) /* 512 MB of touched memory */

fp_t *fp_new(uint64_t frame_bytes) {
    fp_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->frame_w = calloc(frame_bytes / 8 + 1, 1);
    if (!f->frame_w) { free(f); return NULL; }
    f->frame_lo = 0; f->frame_hi = frame_bytes; f->frame_cap = frame_bytes;
    return f;
}

static void clear_pages(fp_t *f) {
    for (unsigned i = 0; i < NBUCKET; i++) {
        page_t *p = f->buckets[i];
        while (p) { page_t *n = p->next; free(p); p = n; }
        f->buckets[i] = NULL;
    }
    f->npages = 0;
}

void fp_free(fp_t *f) {
    if (!f) return;
    clear_pages(f);
    free(f->frame_w);
    free(f);
}

/* Start a run: mode, its own frame ([frame_lo, entry_sp), at most the frame_bytes given to
   fp_new), and the allowed spans (check mode; sorted, disjoint; the arrays must outlive the run). */
void fp_reset(fp_t *f, int mode, uint64_t entry_sp, uint64_t frame_lo,
              const span_t *rw, size_t nrw, const span_t *w, size_t nw, const span_t *own, size_t nown) {
    if (f->frame_w_lo < f->frame_hi) {
        uint64_t from = f->frame_w_lo - f->frame_lo;
        uint64_t to = f->frame_hi - f->frame_lo;
        memset(f->frame_w + from / 8, 0, (to - from) / 8 + 1);
    }
    clear_pages(f);
    f->mode = mode;
    f->frame_hi = entry_sp;
    f->frame_lo = (frame_lo < entry_sp && entry_sp - frame_lo <= f->frame_cap) ? frame_lo
                  : (entry_sp > f->frame_cap ? entry_sp - f->frame_cap : 0);
    f->frame_w_lo = entry_sp;
    f->rw = rw; f->nrw = nrw; f->w = w; f->nw = nw; f->own = own; f->nown = nown;
    f->violation = V_NONE; f->v_addr = f->v_pc = 0; f->v_size = 0;
    f->accesses = 0; f->insns = 0; f->overflow = 0;
    f->last = NULL; f->hit_rw = f->hit_w = f->hit_own = 0;
}

static page_t *page_for(fp_t *f, uint64_t no) {
    if (f->last && f->last->no == no) return f->last;
    unsigned b = (unsigned)((no * 0x9E3779B97F4A7C15ull) >> 51) & (NBUCKET - 1);
    for (page_t *p = f->buckets[b]; p; p = p->next)
        if (p->no == no) return f->last = p;
    if (f->npages >= MAX_PAGES) { f->overflow = 1; return NULL; }
    page_t *p = calloc(1, sizeof *p);
    if (!p) { f->overflow = 1; return NULL; }
    p->no = no; p->next = f->buckets[b]; f->buckets[b] = p;
    f->npages++;
    return f->last = p;
}

static void set_bits(uint8_t *bits, unsigned from, unsigned to) {
    while (from < to && (from & 7)) { bits[from >> 3] |= (uint8_t)(1u << (from & 7)); from++; }
    while (from + 8 <= to) { bits[from >> 3] = 0xff; from += 8; }
    while (from < to) { bits[from >> 3] |= (uint8_t)(1u << (from & 7)); from++; }
}

static void record(fp_t *f, uint64_t addr, uint64_t size, int write) {
    while (size) {
        uint64_t no = addr / PAGE;
        unsigned off = (unsigned)(addr % PAGE);
        unsigned n = (unsigned)((PAGE - off) < size ? (PAGE - off) : size);
        page_t *p = page_for(f, no);
        if (!p) return;
        set_bits(write ? p->w : p->r, off, off + n);
        addr += n; size -= n;
    }
}

/* Whether [lo, hi) lies inside the union of the sorted disjoint spans (``hit``: the span that
   held the last access, tried first). */
static int covered(const span_t *s, size_t n, size_t *hit, uint64_t lo, uint64_t hi) {
    if (*hit < n && s[*hit].lo <= lo && hi <= s[*hit].hi) return 1;
    while (lo < hi) {
        size_t a = 0, b = n; /* first span with s.hi > lo */
        while (a < b) { size_t m = (a + b) / 2; if (s[m].hi <= lo) a = m + 1; else b = m; }
        if (a == n || s[a].lo > lo) return 0;
        *hit = a;
        lo = s[a].hi;
    }
    return 1;
}

static int frame_written(fp_t *f, uint64_t lo, uint64_t hi) {
    uint64_t i0 = lo - f->frame_lo;
    if (hi - lo == 8 && !(i0 & 7)) return f->frame_w[i0 >> 3] == 0xff;
    for (uint64_t a = lo; a < hi; a++) {
        uint64_t i = a - f->frame_lo;
        if (!(f->frame_w[i >> 3] & (1u << (i & 7)))) return 0;
    }
    return 1;
}

static void frame_write(fp_t *f, uint64_t lo, uint64_t hi) {
    set_bits(f->frame_w, (unsigned)(lo - f->frame_lo), (unsigned)(hi - f->frame_lo));
    if (lo < f->frame_w_lo) f->frame_w_lo = lo;
}

/* One access of ``size`` bytes at ``addr``; returns 0 when it breaks the rule (check mode). */
int fp_access(fp_t *f, uint64_t addr, uint64_t size, int write) {
    if (f->mode == OFF || f->violation || size == 0) return 1;
    f->accesses++;
    uint64_t end = addr + size;
    int in_frame = addr >= f->frame_lo && end <= f->frame_hi;
    if (f->mode == RECORD) {
        if (!in_frame) {
            /* The part below the entry sp is its own frame; only the rest is its footprint. */
            if (addr < f->frame_hi && end > f->frame_hi && addr >= f->frame_lo) addr = f->frame_hi;
            record(f, addr, end - addr, write);
        }
        return 1;
    }
    int kind = V_NONE;
    if (in_frame) {
        if (write) frame_write(f, addr, end);
        else if (!frame_written(f, addr, end)) kind = V_FRAME;
    } else if (write) {
        if (!covered(f->w, f->nw, &f->hit_w, addr, end)) kind = V_WRITE;
    } else if (!covered(f->rw, f->nrw, &f->hit_rw, addr, end) && !covered(f->own, f->nown, &f->hit_own, addr, end)) {
        kind = V_READ;
    }
    if (kind != V_NONE) {
        f->violation = kind; f->v_addr = addr; f->v_size = (int)size;
        return 0;
    }
    return 1;
}

void fp_mem_hook(uc_engine *uc, uc_mem_type type, uint64_t address, int size, int64_t value, void *user) {
    fp_t *f = user;
    (void)value;
    if (f->mode == OFF || f->violation) return;
    int write = type == UC_MEM_WRITE;
    if (!fp_access(f, address, (uint64_t)size, write)) {
        uc_reg_read(uc, UC_X86_REG_RIP, &f->v_pc);
        uc_emu_stop(uc);
    }
}

void fp_set_starts(fp_t *f, const uint64_t *starts, size_t n) { f->starts = starts; f->nstarts = n; }

static size_t lower_bound(const uint64_t *a, size_t n, uint64_t x) {
    size_t lo = 0, hi = n;
    while (lo < hi) { size_t m = (lo + hi) / 2; if (a[m] < x) lo = m + 1; else hi = m; }
    return lo;
}

void fp_block_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user) {
    fp_t *f = user;
    (void)uc;
    if (!f->starts) { f->insns += 1; return; }
    f->insns += lower_bound(f->starts, f->nstarts, address + size) - lower_bound(f->starts, f->nstarts, address);
}

/* Read out: the violation, counters, and (record mode) the touched bytes as spans. */
int fp_violation(fp_t *f, uint64_t *addr, int *size, uint64_t *pc) {
    *addr = f->v_addr; *size = f->v_size; *pc = f->v_pc;
    return f->violation;
}

uint64_t fp_insns(fp_t *f) { return f->insns; }
uint64_t fp_count(fp_t *f) { return f->accesses; }
int fp_overflow(fp_t *f) { return f->overflow; }

static int cmp_page(const void *a, const void *b) {
    uint64_t x = (*(page_t *const *)a)->no, y = (*(page_t *const *)b)->no;
    return (x > y) - (x < y);
}

/* The recorded bytes as sorted disjoint spans: ``which`` 0 for reads or writes, 1 for writes.
   Writes at most ``cap`` spans into ``out``; returns how many there are (call again with a
   larger buffer when that is more than ``cap``). */
size_t fp_spans(fp_t *f, int which, span_t *out, size_t cap) {
    page_t **pages = malloc((f->npages ? f->npages : 1) * sizeof *pages);
    if (!pages) return 0;
    size_t k = 0;
    for (unsigned i = 0; i < NBUCKET; i++)
        for (page_t *p = f->buckets[i]; p; p = p->next) pages[k++] = p;
    qsort(pages, k, sizeof *pages, cmp_page);
    size_t n = 0;
    int open = 0;
    uint64_t lo = 0, last = 0;
    for (size_t j = 0; j < k; j++) {
        page_t *p = pages[j];
        for (unsigned b = 0; b < PAGE; ) {
            uint8_t byte = which ? p->w[b >> 3] : (uint8_t)(p->r[b >> 3] | p->w[b >> 3]);
            uint64_t a = p->no * PAGE + b;
            if (byte == 0) { b += 8; continue; }
            if (byte == 0xff && open && a == last) { last = a + 8; b += 8; continue; }
            for (unsigned k = 0; k < 8; k++, b++, a++) {
                if (!((byte >> k) & 1)) continue;
                if (open && a == last) { last = a + 1; continue; }
                if (open) { if (n < cap) { out[n].lo = lo; out[n].hi = last; } n++; }
                open = 1; lo = a; last = a + 1;
            }
        }
    }
    if (open) { if (n < cap) { out[n].lo = lo; out[n].hi = last; } n++; }
    free(pages);
    return n;
}
