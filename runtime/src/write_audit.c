/* ------------------------------------------------------------------------
 * 4.4a Write audit (test builds, -DP2_WRITE_AUDIT): every change of a watched file
 * must have been announced through the write hook since the last check.
 * ------------------------------------------------------------------------ */
#ifdef P2_WRITE_AUDIT
#define WRITE_AUDIT_MAX 16     /* files watched at once */
#define WRITE_AUDIT_REPORT 8   /* problems printed per check */

struct write_audit {
    p2_seg *seg;
    unsigned char *shadow;     /* the mapping as of the last check */
    uint64_t len;              /* its length */
    unsigned char *declared;   /* per byte: announced since the last check */
    uint64_t dlen;
    uint64_t outside;          /* announcements outside the mapping since the last check */
    uint64_t outside_off, outside_n;   /* the first of them */
};

static struct write_audit write_audits[WRITE_AUDIT_MAX];

static void write_audit_fatal(const char *what)
{
    fprintf(stderr, "write audit: out of memory (%s)\n", what);
    abort();
}

static void write_audit_hook(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    struct write_audit *a = (struct write_audit *)ctx;
    if (off > seg->mapped || n > seg->mapped - off) {
        if (a->outside++ == 0) {
            a->outside_off = off;
            a->outside_n = n;
        }
        return;
    }
    if (off + n > a->dlen) {
        unsigned char *d = (unsigned char *)realloc(a->declared, (size_t)seg->mapped);
        if (d == NULL)
            write_audit_fatal("announced ranges");
        memset(d + a->dlen, 0, (size_t)(seg->mapped - a->dlen));
        a->declared = d;
        a->dlen = seg->mapped;
    }
    memset(a->declared + off, 1, (size_t)n);
}

/* Copy the mapping and forget the announcements. */
static void write_audit_snap(struct write_audit *a)
{
    p2_seg *seg = a->seg;
    if (a->len != seg->mapped) {
        unsigned char *sh = (unsigned char *)realloc(a->shadow, (size_t)seg->mapped);
        if (sh == NULL)
            write_audit_fatal("copy of the file");
        a->shadow = sh;
        a->len = seg->mapped;
    }
    memcpy(a->shadow, seg->base, (size_t)seg->mapped);
    if (a->dlen != seg->mapped) {
        free(a->declared);
        a->declared = (unsigned char *)malloc((size_t)seg->mapped);
        if (a->declared == NULL)
            write_audit_fatal("announced ranges");
        a->dlen = seg->mapped;
    }
    memset(a->declared, 0, (size_t)a->dlen);
    a->outside = 0;
}

static void write_audit_attach(p2_seg *seg)
{
    for (int i = 0; i < WRITE_AUDIT_MAX; i++) {
        struct write_audit *a = &write_audits[i];
        if (a->seg != NULL)
            continue;
        memset(a, 0, sizeof *a);
        a->seg = seg;
        seg->will_write = write_audit_hook;
        seg->will_write_ctx = a;
        write_audit_snap(a);
        return;
    }
    fprintf(stderr, "write audit: more than %d files open at once\n", WRITE_AUDIT_MAX);
    abort();
}

static void write_audit_detach(p2_seg *seg)
{
    for (int i = 0; i < WRITE_AUDIT_MAX; i++) {
        struct write_audit *a = &write_audits[i];
        if (a->seg != seg)
            continue;
        free(a->shadow);
        free(a->declared);
        memset(a, 0, sizeof *a);
        seg->will_write = NULL;
        seg->will_write_ctx = NULL;
    }
}

/* Which part of the file holds offset off: the header (its field) or a block. */
static const char *write_audit_where(const p2_seg *seg, uint64_t off)
{
    if (off >= P2_SEG_HEADER_SIZE)
        return "a block";
    if (off >= offsetof(struct p2_seg_header, roots))
        return "the header's root table";
    if (off >= offsetof(struct p2_seg_header, free_small)
        && off < offsetof(struct p2_seg_header, nroots))
        return "the header's free lists (allocator)";
    if (off >= offsetof(struct p2_seg_header, file_size)
        && off < offsetof(struct p2_seg_header, free_small))
        return "the header's size or brk (allocator)";
    (void)seg;
    return "the header";
}

int p2_write_audit_check(const char *what)
{
    int problems = 0;
    for (int i = 0; i < WRITE_AUDIT_MAX; i++) {
        struct write_audit *a = &write_audits[i];
        p2_seg *seg = a->seg;
        if (seg == NULL)
            continue;
        if (a->outside) {
            if (problems++ < WRITE_AUDIT_REPORT)
                fprintf(stderr, "write audit: %s: %s announced %" PRIu64 " range(s) outside the "
                        "mapping of %" PRIu64 " bytes, first [%" PRIu64 ", +%" PRIu64 ")\n",
                        seg->path, what, a->outside, seg->mapped, a->outside_off, a->outside_n);
        }
        const unsigned char *now = (const unsigned char *)seg->base;
        uint64_t end = seg->mapped;
        for (uint64_t off = 0; off < end; off++) {
            unsigned char was = off < a->len ? a->shadow[off] : 0;   /* growth reads as zero */
            if (now[off] == was || (off < a->dlen && a->declared[off]))
                continue;
            /* one report per run of unannounced changed bytes */
            uint64_t run = off;
            while (off + 1 < end && !(off + 1 < a->dlen && a->declared[off + 1])
                   && now[off + 1] != (off + 1 < a->len ? a->shadow[off + 1] : 0))
                off++;
            if (problems++ < WRITE_AUDIT_REPORT)
                fprintf(stderr, "write audit: %s: `%s` changed bytes [%" PRIu64 ", %" PRIu64 ") in "
                        "%s without announcing them (first byte was 0x%02x, now 0x%02x)\n",
                        seg->path, what, run, off + 1, write_audit_where(seg, run),
                        was, now[run]);
        }
        write_audit_snap(a);
    }
    return problems;
}
#endif
