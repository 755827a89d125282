/* ==========================================================================
 * 7. Sets of element references (p2_refset: cursors that move the element under them)
 * ========================================================================== */

#define P2_REFSET_EMPTY UINT64_MAX

static uint64_t refset_home(uint64_t ref, uint64_t cap)
{
    ref ^= ref >> 33;                      /* a 64-bit mix (murmur3's finaliser) */
    ref *= UINT64_C(0xff51afd7ed558ccd);
    ref ^= ref >> 33;
    return ref & (cap - 1);
}

static void refset_put(uint64_t *slot, uint64_t cap, uint64_t ref)
{
    uint64_t i = refset_home(ref, cap);
    while (slot[i] != P2_REFSET_EMPTY && slot[i] != ref) i = (i + 1) & (cap - 1);
    slot[i] = ref;
}

static uint64_t *refset_table(uint64_t cap)
{
    uint64_t *t = malloc(cap * sizeof *t);
    if (t != NULL) memset(t, 0xff, cap * sizeof *t);   /* every slot P2_REFSET_EMPTY */
    return t;
}

int p2_refset_reserve(p2_refset *s, int remap)
{
    if ((s->n + 1) * 2 > s->cap) {         /* keep the load at most one half */
        uint64_t cap = s->cap ? s->cap * 2 : 16, i;
        uint64_t *t;
        if (cap > (UINT64_MAX / sizeof *t) / 2) return P2_ENOMEM;
        t = refset_table(cap);
        if (t == NULL) return P2_ENOMEM;
        for (i = 0; i < s->cap; i++)
            if (s->slot[i] != P2_REFSET_EMPTY) refset_put(t, cap, s->slot[i]);
        free(s->slot);
        free(s->spare);
        s->slot = t;
        s->spare = NULL;
        s->cap = cap;
    }
    if (remap && s->spare == NULL) {
        s->spare = refset_table(s->cap);
        if (s->spare == NULL) return P2_ENOMEM;
    }
    return P2_OK;
}

void p2_refset_add(p2_refset *s, uint64_t ref)
{
    uint64_t i;
    if (s->cap == 0 || ref == P2_REFSET_EMPTY) return;   /* not reserved: nothing to add to */
    i = refset_home(ref, s->cap);
    while (s->slot[i] != P2_REFSET_EMPTY) {
        if (s->slot[i] == ref) return;
        i = (i + 1) & (s->cap - 1);
    }
    if (s->n + 1 >= s->cap) return;        /* not reserved: one slot always stays empty */
    s->slot[i] = ref;
    s->n++;
}

int p2_refset_has(const p2_refset *s, uint64_t ref)
{
    uint64_t i;
    if (s->n == 0 || ref == P2_REFSET_EMPTY) return 0;
    i = refset_home(ref, s->cap);
    while (s->slot[i] != P2_REFSET_EMPTY) {
        if (s->slot[i] == ref) return 1;
        i = (i + 1) & (s->cap - 1);
    }
    return 0;
}

void p2_refset_del(p2_refset *s, uint64_t ref)
{
    uint64_t i, j, mask;
    if (s->n == 0 || ref == P2_REFSET_EMPTY) return;
    mask = s->cap - 1;
    i = refset_home(ref, s->cap);
    while (s->slot[i] != ref) {
        if (s->slot[i] == P2_REFSET_EMPTY) return;
        i = (i + 1) & mask;
    }
    /* backward-shift deletion: members after the hole that may live there move up */
    for (j = (i + 1) & mask; s->slot[j] != P2_REFSET_EMPTY; j = (j + 1) & mask) {
        uint64_t h = refset_home(s->slot[j], s->cap);
        if (((j - h) & mask) >= ((j - i) & mask)) {   /* its home is not in (i, j] */
            s->slot[i] = s->slot[j];
            i = j;
        }
    }
    s->slot[i] = P2_REFSET_EMPTY;
    s->n--;
}

void p2_refset_remap(p2_refset *s, uint64_t (*f)(uint64_t r, uint64_t a, uint64_t b),
                     uint64_t a, uint64_t b)
{
    uint64_t i, *t;
    if (s->n == 0 || s->spare == NULL) return;
    t = s->spare;
    for (i = 0; i < s->cap; i++)
        if (s->slot[i] != P2_REFSET_EMPTY) refset_put(t, s->cap, f(s->slot[i], a, b));
    memset(s->slot, 0xff, s->cap * sizeof *s->slot);
    s->spare = s->slot;                    /* the old table, emptied, is the next spare */
    s->slot = t;
}

/* A big block's mapping: whole pages. 0 if size cannot be mapped. */
static size_t heap_big_len(uint64_t size)
{
    uint64_t pg = page_size();
    if (size == 0 || size > (uint64_t)SIZE_MAX - pg)
        return 0;
    return (size_t)((size + pg - 1) / pg * pg);
}

/* Huge pages for the whole mapping: faults, not zeroing, are what a first touch of fresh
   memory costs most (a 1,000,000-row bulk load spent most of its time in them). Advice for
   a 2 MiB-aligned part of it only would split the mapping in three, and mremap cannot move
   a range that spans more than one. Advice only: a refusal changes nothing. */
static void heap_big_advise(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE);
#else
    (void)p; (void)len;
#endif
}

void *p2_heap_big_alloc(uint64_t size)
{
    size_t len = heap_big_len(size);
    void *p = len ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                  : MAP_FAILED;
    if (p == MAP_FAILED)
        return NULL;
    heap_big_advise(p, len);
    return p;
}

void *p2_heap_big_realloc(void *p, uint64_t old_size, uint64_t new_size)
{
    size_t ol = heap_big_len(old_size), nl = heap_big_len(new_size);
    if (p == NULL || ol == 0 || nl == 0)
        return NULL;
    void *q = ol == nl ? p : mremap(p, ol, nl, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
        return NULL;
    if (new_size > old_size) {
        /* the rest of the old last page may hold what a shrink left behind; the pages
           after it are new, and zero */
        uint64_t end = (uint64_t)ol < new_size ? (uint64_t)ol : new_size;
        if (end > old_size)
            memset((char *)q + old_size, 0, (size_t)(end - old_size));
        heap_big_advise(q, nl);
    }
    return q;
}

void p2_heap_big_free(void *p, uint64_t size)
{
    size_t len = heap_big_len(size);
    if (p != NULL && len)
        (void)munmap(p, len);
}

void p2_refset_free(p2_refset *s)
{
    free(s->slot);
    free(s->spare);
    memset(s, 0, sizeof *s);
}
