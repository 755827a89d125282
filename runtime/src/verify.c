/* ==========================================================================
 * 6. Integrity checks (p2_verify, p2_seg_verify, p2_seg_contains): used by the
 * generated <prefix>_verify functions.  Read-only; they read the allocator's
 * structures through the helpers of 4.2.
 * ========================================================================== */

int p2_seg_contains(const p2_seg *seg, p2_off off, uint64_t len)
{
    uint64_t used;
    if (seg == NULL || seg->base == NULL)
        return 0;
    used = p2_seg_used(seg);
    if (used > seg->mapped)
        used = seg->mapped;
    return off >= P2_SEG_HEADER_SIZE && off % 16 == 0 && off <= used && len <= used - off;
}

/* A block in use or free, as seen by the integrity check. */
struct p2_verify_claim {
    const p2_seg *seg;
    p2_off off;
    uint64_t end;               /* off + the allocator's block size */
    const char *what;           /* NULL: a free block */
    uint64_t cls;               /* free blocks: size class (0: large) */
};

static void claim_add(p2_verify *v, const p2_seg *seg, p2_off off, uint64_t end, const char *what,
                      uint64_t cls)
{
    if (v->claims_lost)
        return;
    if (v->nclaims == v->capclaims) {
        size_t ncap = v->capclaims ? v->capclaims * 2 : 256;
        void *p = ncap < SIZE_MAX / sizeof *v->claims ? realloc(v->claims, ncap * sizeof *v->claims) : NULL;
        if (p == NULL) {
            v->claims_lost = 1;
            return;
        }
        v->claims = (struct p2_verify_claim *)p;
        v->capclaims = ncap;
    }
    struct p2_verify_claim c = { seg, off, end, what, cls };
    v->claims[v->nclaims++] = c;
}

void p2_verify_claim(p2_verify *v, const p2_seg *seg, p2_off off, uint64_t len, const char *what)
{
    if (v == NULL || seg == NULL || seg->base == NULL)
        return;
    uint64_t bs = block_size(seg, len);
    if (bs == 0 || !p2_seg_contains(seg, off, bs))
        return;
    claim_add(v, seg, off, off + bs, what, 0);
}

static int claim_cmp(const void *a, const void *b)
{
    const struct p2_verify_claim *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static void claim_name(const struct p2_verify_claim *c, char *buf, size_t n)
{
    if (c->what != NULL)
        snprintf(buf, n, "%s at offset %" PRIu64, c->what, c->off);
    else if (c->cls != 0)
        snprintf(buf, n, "free %" PRIu64 "-byte block at offset %" PRIu64, c->cls, c->off);
    else
        snprintf(buf, n, "free large block at offset %" PRIu64, c->off);
}

void p2_seg_verify(const p2_seg *seg, p2_verify *v, const char *file)
{
    if (seg == NULL || seg->base == NULL || v == NULL)
        return;
    const struct p2_seg_header *h = seg->hdr;
    uint64_t brk = p2_seg_used(seg);
    size_t first = v->nclaims;
    if (brk > seg->mapped || brk < P2_SEG_HEADER_SIZE) {
        p2_verify_fail(v, "file %s: allocator: brk %" PRIu64 " outside the mapped file", file, brk);
        return;
    }
    for (uint32_t i = 0; i < h->nroots && i < P2_MAX_ROOTS; i++)
        if (p2_seg_contains(seg, h->roots[i].off, block_size(seg, h->roots[i].size)))
            claim_add(v, seg, h->roots[i].off, h->roots[i].off + block_size(seg, h->roots[i].size),
                      seg->alloc_exact && i == h->nroots - 1 ? "the allocator's class table"
                                                             : "a container root block", 0);
    if (seg->alloc_exact)
        for (unsigned c = 0; c < NCLASSES; c++)
            if (h->free_small[c] != 0)
                p2_verify_fail(v, "file %s: allocator: a power-of-two free list (%" PRIu64 "-byte blocks) "
                               "in a file of exact size classes", file, (uint64_t)SMALL_MIN << c);
    /* small free lists: each a chain of blocks of one class, at most as many as fit */
    for (unsigned c = 0; c < nclasses(seg); c++) {
        uint64_t bs = class_size(seg, c), n = 0, limit = (brk - P2_SEG_HEADER_SIZE) / bs;
        for (p2_off off = *small_head(seg, c); off != 0; off = small_at(seg, off)->next) {
            if (!block_ok(seg, off, bs)) {
                p2_verify_fail(v, "file %s: allocator: free list for %" PRIu64 "-byte blocks: block at offset %"
                               PRIu64 " lies outside the allocated area", file, bs, off);
                break;
            }
            if (++n > limit) {
                p2_verify_fail(v, "file %s: allocator: free list for %" PRIu64 "-byte blocks is longer than "
                               "the blocks that fit (a cycle)", file, bs);
                break;
            }
            claim_add(v, seg, off, off + bs, NULL, bs);
        }
    }
    /* the large free list: address-ordered, so a bounded walk */
    uint64_t n = 0;
    for (p2_off off = h->free_large; off != 0; off = large_at(seg, off)->next) {
        if (!large_node_ok(seg, off)) {
            p2_verify_fail(v, "file %s: allocator: free list for large blocks: bad block at offset %" PRIu64
                           " (outside the allocated area, bad size, or out of address order)", file, off);
            break;
        }
        if (++n > brk / LARGE_UNIT)
            break;   /* cannot happen: the list is address-ordered */
        claim_add(v, seg, off, off + large_at(seg, off)->size, NULL, 0);
    }
    if (v->claims_lost) {
        p2_verify_fail(v, "file %s: allocator: out of memory: overlaps between blocks not checked", file);
        return;
    }
    /* this segment's blocks (claimed by the layers, roots, free ones), sorted: no overlaps */
    for (size_t i = 0; i < first; i++)     /* gather this segment's claims after the others */
        if (v->claims[i].seg == seg) {
            struct p2_verify_claim t = v->claims[i];
            claim_add(v, seg, t.off, t.end, t.what, t.cls);
        }
    if (v->claims_lost) {
        p2_verify_fail(v, "file %s: allocator: out of memory: overlaps between blocks not checked", file);
        return;
    }
    size_t cnt = v->nclaims - first;
    struct p2_verify_claim *cl = v->claims + first;
    qsort(cl, cnt, sizeof *cl, claim_cmp);
    size_t reported = 0;
    uint64_t reach = 0;
    size_t reach_i = 0;
    for (size_t i = 0; i < cnt; i++) {
        if (i > 0 && cl[i].off < reach && reported < 20) {
            char a[160], b[160];
            claim_name(&cl[reach_i], a, sizeof a);
            claim_name(&cl[i], b, sizeof b);
            p2_verify_fail(v, "file %s: allocator: %s overlaps %s", file, b, a);
            reported++;
        }
        if (cl[i].end > reach) {
            reach = cl[i].end;
            reach_i = i;
        }
    }
    v->nclaims = first;   /* drop the sorted copy; the claims of this segment stay as gathered */
}

void p2_verify_done(p2_verify *v)
{
    if (v == NULL)
        return;
    free(v->claims);
    v->claims = NULL;
    v->nclaims = v->capclaims = 0;
}

void p2_verify_init(p2_verify *v, char *buf, size_t cap, int max)
{
    v->claims = NULL;
    v->nclaims = v->capclaims = 0;
    v->claims_lost = 0;
    v->errors = 0;
    v->buf = buf;
    v->cap = buf != NULL ? cap : 0;
    v->len = 0;
    v->max = max;
    if (v->cap > 0)
        v->buf[0] = '\0';
}

void p2_verify_fail(p2_verify *v, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (v == NULL)
        return;
    if (v->errors < INT_MAX)
        v->errors++;
    if (v->errors > v->max || v->buf == NULL || v->len + 1 >= v->cap)
        return;
    va_start(ap, fmt);
    n = vsnprintf(v->buf + v->len, v->cap - v->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        v->buf[v->len] = '\0';
        return;
    }
    if ((size_t)n >= v->cap - v->len) {   /* truncated: keep what fitted, end with a newline */
        v->len = v->cap - 1;
        v->buf[v->len - 1] = '\n';
        v->buf[v->len] = '\0';
        return;
    }
    v->len += (size_t)n;
    if (v->len + 1 < v->cap) {
        v->buf[v->len++] = '\n';
        v->buf[v->len] = '\0';
    }
}
