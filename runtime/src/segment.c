/* ==========================================================================
 * 4. Persistent segment (design in p2_runtime.h, @ref segment)
 * ========================================================================== */

/* ------------------------------------------------------------------------
 * 4.1 Persistent segment: on-disk layout
 * ------------------------------------------------------------------------ */

#define SEG_MAGIC       "P2GENDB"   /* 7 characters + NUL = 8 bytes */
#define SEG_STATE_CLEAN 0u
#define SEG_STATE_OPEN  1u
#define SEG_ALIGN       16u         /* alignment of every block */
#define SMALL_MIN       16u         /* smallest size class */
#define SMALL_MAX       2048u       /* largest size class */
#define NCLASSES        8           /* 16, 32, 64, ..., 2048 */
#define NEXACT          (SMALL_MAX / SEG_ALIGN)   /* exact size classes: 16, 32, 48, ..., 2048 */
#define EXACT_TABLE     (NEXACT * sizeof(p2_off)) /* their free-list heads (the class table) */
#define LARGE_UNIT      4096u       /* large blocks are multiples of this */
#define SEG_LINE        64u         /* a large block taken at brk starts on a line */
#define SEG_MAX_RESERVE (UINT64_C(1) << 60)  /* keeps offset arithmetic overflow-free */

struct p2_seg_root_entry {
    char     name[P2_ROOT_NAME_SIZE];  /* NUL-terminated */
    p2_off   off;                      /* root block */
    uint64_t size;                     /* its size, as passed to p2_seg_open() */
};

struct p2_seg_header {
    char     magic[8];                 /* SEG_MAGIC */
    uint32_t version;                  /* P2_SEG_VERSION */
    uint32_t header_size;              /* P2_SEG_HEADER_SIZE */
    uint32_t page_size;                /* of the creating machine; informational */
    uint32_t state;                    /* SEG_STATE_CLEAN or SEG_STATE_OPEN */
    uint64_t fingerprint;              /* of the spec / equation */
    uint64_t file_size;                /* the file is at least this long */
    uint64_t brk;                      /* end of the allocated area */
    p2_off   free_small[NCLASSES];     /* LIFO lists of free 16..2048-byte blocks */
    p2_off   free_large;               /* address-ordered list of free large blocks */
    uint32_t nroots;                   /* entries used in roots[] */
    uint32_t checksum;                 /* CRC-32 of the header with this field 0 */
    uint32_t journal;                  /* 1: a journalled file, committed at least once */
    uint32_t roots_sealed;             /* 1: roots_crc is set */
    uint32_t roots_crc;                /* CRC-32 of every root block, in order, as of the last
                                          sync or close (a journalled file: close) */
    uint32_t zero0;                    /* zero (alignment) */
    uint64_t data_seq;                 /* journalled files: the last transaction whose pages
                                          are in this file (written at every journal flush) */
    char     desc[P2_SEG_DESC_SIZE];   /* what made the file: spec and equations, NUL-padded,
                                          possibly cut short; all zero in older files */
    uint64_t map_base;                 /* 0: references are offsets; else a fixed-address
                                          file (p2_seg_open_fixed): the address it maps at */
    struct p2_seg_root_entry roots[P2_MAX_ROOTS];
};

_Static_assert(sizeof(p2_off) == 8, "offsets are 64-bit");
_Static_assert(sizeof(struct p2_seg_root_entry) == 64, "root entry is 64 bytes");
_Static_assert(offsetof(struct p2_seg_header, magic) == 0, "header layout");
_Static_assert(offsetof(struct p2_seg_header, version) == 8, "header layout");
_Static_assert(offsetof(struct p2_seg_header, header_size) == 12, "header layout");
_Static_assert(offsetof(struct p2_seg_header, page_size) == 16, "header layout");
_Static_assert(offsetof(struct p2_seg_header, state) == 20, "header layout");
_Static_assert(offsetof(struct p2_seg_header, fingerprint) == 24, "header layout");
_Static_assert(offsetof(struct p2_seg_header, file_size) == 32, "header layout");
_Static_assert(offsetof(struct p2_seg_header, brk) == 40, "header layout");
_Static_assert(offsetof(struct p2_seg_header, free_small) == 48, "header layout");
_Static_assert(offsetof(struct p2_seg_header, free_large) == 112, "header layout");
_Static_assert(offsetof(struct p2_seg_header, nroots) == 120, "header layout");
_Static_assert(offsetof(struct p2_seg_header, checksum) == 124, "header layout");
_Static_assert(offsetof(struct p2_seg_header, journal) == 128, "header layout");
_Static_assert(offsetof(struct p2_seg_header, roots_crc) == 136, "header layout");
_Static_assert(offsetof(struct p2_seg_header, data_seq) == 144, "header layout");
_Static_assert(offsetof(struct p2_seg_header, desc) == 152, "header layout");
_Static_assert(offsetof(struct p2_seg_header, map_base) == 248, "header layout");
_Static_assert(offsetof(struct p2_seg_header, roots) == 256, "header layout");
_Static_assert(sizeof(struct p2_seg_header) == P2_SEG_HEADER_SIZE, "header is one 4096-byte page");
_Static_assert(sizeof(SEG_MAGIC) == 8, "magic is 8 bytes");
_Static_assert((SMALL_MIN << (NCLASSES - 1)) == SMALL_MAX, "size classes");
_Static_assert(P2_SEG_HEADER_SIZE % SEG_ALIGN == 0, "first block is aligned");
_Static_assert(EXACT_TABLE == P2_SEG_EXACT_TABLE_SIZE, "class table size");
_Static_assert(sizeof(P2_SEG_EXACT_ROOT) <= P2_ROOT_NAME_SIZE, "class table root name fits");

/* Bookkeeping stored inside free blocks (in-use blocks have none). */
struct small_free { p2_off next; };
struct large_free { p2_off next; uint64_t size; };

/* ------------------------------------------------------------------------
 * 4.2 Persistent segment: helpers
 * ------------------------------------------------------------------------ */

static int seg_fail(const p2_seg *seg, p2_err *err, int code, const char *fmt, ...) P2_PRINTF_LIKE(4, 5);

/* A page-server segment (seg->pb, section 9) reaches its server through these where a
 * local file is read, extended or msync'ed. */
static int pb_read(p2_seg *seg, void *buf, uint64_t n, uint64_t off, p2_err *err);
static int pb_grow(p2_seg *seg, uint64_t want, p2_err *err);
static int pb_sync(p2_seg *seg, p2_err *err);
static int pb_close(p2_seg *seg, p2_err *err);
static int pb_check(const p2_seg *seg, p2_err *err);
/* ... and one under a journal or wal commits through its log export (section 9.5). */
static int pl_txn(const p2_seg *seg);
static uint64_t pl_pending(const p2_seg *seg);
static int pl_reader(const p2_seg *seg);
static int pl_commit(p2_seg *seg, p2_err *err);
static int pl_abort(p2_seg *seg, p2_err *err);

/* Store an error whose message starts with the segment's path. */
static int seg_fail(const p2_seg *seg, p2_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, code, seg->path, fmt, ap);
    va_end(ap);
    return code;
}

static void seg_reset(p2_seg *seg)
{
    seg->fd = -1;
    seg->base = NULL;
    seg->mapped = 0;
    seg->reserved = 0;
    seg->hdr = NULL;
    seg->journal = 0;
    seg->log_fd = -1;
    seg->pgsize = 0;
    seg->log_end = 0;
    seg->log_alloc = 0;
    seg->log_fresh = 0;
    seg->seq = 0;
    seg->unsynced = 0;
    seg->dirty_bits = seg->unflushed_bits = seg->kept_bits = NULL;
    seg->dirty = seg->unflushed = seg->kept = NULL;
    seg->ndirty = seg->nunflushed = seg->nkept = 0;
    seg->img_off = NULL;
    seg->track_bytes = 0;
    seg->ckpt_failed = 0;
    seg->recovering = 0;
    seg->fixed = 0;
    seg->reloc_allowed = 0;
    seg->relocated = 0;
    seg->reloc_from = 0;
    seg->reloc_pct = 0;
    seg->reloc_written = 0;
    seg->reloc_disk_hdr = NULL;
    seg->rec_unclean = 0;
    seg->rec_lists_dropped = 0;
    seg->rec_journal = 0;
    seg->alloc_exact = 0;
    seg->class_table = 0;
    seg->rec_tx_dropped = 0;
    seg->will_write = NULL;
    seg->will_write_ctx = NULL;
    seg->undo = seg->redo = NULL;
    seg->undo_len = seg->undo_cap = seg->redo_cap = 0;
    seg->undo_at = NULL;
    seg->nundo = seg->undo_at_cap = 0;
    seg->cov = NULL;
    seg->cov_cap = 0;
    seg->cov_slot = NULL;
    seg->undo_lost = 0;
    seg->peers = NULL;
    seg->peer_idx = NULL;
    seg->npeers = 0;
    seg->log_map = NULL;
    seg->log_mapped = 0;
    seg->log_hot = 0;
    seg->open_keep = seg->open_log_made = 0;
    seg->open_data_bytes = seg->open_log_bytes = seg->open_seq = 0;
    seg->open_undo = NULL;
    seg->open_undo_len = seg->open_undo_cap = 0;
    seg->pb = NULL;
}

/* How a journalled segment's private mapping is protected: read-only under the page journal
 * (the first write to each page faults: that is how it learns the page changed), writable
 * under the record log (every write is announced through the write hook instead). */
static int journal_prot(const p2_seg *seg)
{
    return seg->journal && !seg->jopts.record ? PROT_READ : PROT_READ | PROT_WRITE;
}

/* The side file of a journalled segment: `<path>-journal` (pages) or `<path>-wal` (records). */
#define LOG_SUFFIX(seg) ((seg)->jopts.record ? "-wal" : "-journal")

static uint64_t page_size(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    return pg > 0 ? (uint64_t)pg : 4096u;
}

/* Files grow in whole granules: 64 KiB, or the page size if that is larger. */
static uint64_t seg_granule(void)
{
    uint64_t pg = page_size();
    return pg > P2_SEG_GRANULE ? pg : P2_SEG_GRANULE;
}

/* x rounded up to a multiple of the power of two a (x must not overflow). */
static uint64_t round_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) & ~(a - 1);
}

/* CRC-32 of a header, its checksum field taken as 0. */
static uint32_t header_crc(const struct p2_seg_header *h)
{
    static const unsigned char zero[sizeof h->checksum];
    const unsigned char *p = (const unsigned char *)h;
    const size_t at = offsetof(struct p2_seg_header, checksum);
    uint32_t crc = p2_crc32(0, p, at);
    crc = p2_crc32(crc, zero, sizeof zero);
    return p2_crc32(crc, p + at + sizeof zero, P2_SEG_HEADER_SIZE - at - sizeof zero);
}

/* CRC-32 of every root block of a mapped segment, in root order. */
static uint32_t roots_crc_mapped(const p2_seg *seg)
{
    uint32_t crc = 0;
    for (uint32_t i = 0; i < seg->hdr->nroots; i++)
        crc = p2_crc32(crc, seg->base + seg->hdr->roots[i].off, (size_t)seg->hdr->roots[i].size);
    return crc;
}

/* Seal the roots: record their checksum in the header (which the caller checksums). */
static void roots_seal(p2_seg *seg)
{
    uint32_t crc = roots_crc_mapped(seg);
    if (!seg->hdr->roots_sealed || seg->hdr->roots_crc != crc) {   /* no needless page write */
        seg->hdr->roots_crc = crc;
        seg->hdr->roots_sealed = 1;
    }
}

/* Size of the block actually used for a request of size bytes under the segment's size
 * classes: up to 2048 bytes a power of two from 16 (pow2) or a multiple of 16 (exact),
 * else a multiple of 4096; 0 if too large. */
static uint64_t block_size_for(int exact, uint64_t size)
{
    if (size <= SMALL_MAX) {
        if (exact)
            return size == 0 ? SMALL_MIN : round_up(size, SEG_ALIGN);
        uint64_t b = SMALL_MIN;
        while (b < size)
            b <<= 1;
        return b;
    }
    if (size > SEG_MAX_RESERVE)
        return 0;
    return round_up(size, LARGE_UNIT);
}

static uint64_t block_size(const p2_seg *seg, uint64_t size)
{
    return block_size_for(seg->alloc_exact, size);
}

/* Number of small size classes of the segment: 8 (pow2) or 128 (exact). */
static unsigned nclasses(const p2_seg *seg)
{
    return seg->alloc_exact ? NEXACT : NCLASSES;
}

/* Block size of small class c (pow2: 16 << c; exact: 16 * (c + 1)). */
static uint64_t class_size(const p2_seg *seg, unsigned c)
{
    return seg->alloc_exact ? (uint64_t)SEG_ALIGN * (c + 1) : (uint64_t)SMALL_MIN << c;
}

/* Free-list index of a small block size (pow2: 16 -> 0, ..., 2048 -> 7; exact: 16 -> 0,
 * 32 -> 1, ..., 2048 -> 127). */
static unsigned small_class(const p2_seg *seg, uint64_t bs)
{
    if (seg->alloc_exact)
        return (unsigned)(bs / SEG_ALIGN - 1);
    unsigned c = 0;
    while (((uint64_t)SMALL_MIN << c) < bs)
        c++;
    return c;
}

/* The head of small free list c: in the header (pow2), or in the class table, a block of
 * the file named by the root table (exact: 128 heads do not fit in the header). */
static p2_off *small_head(const p2_seg *seg, unsigned c)
{
    if (seg->alloc_exact)
        return (p2_off *)(void *)(seg->base + seg->class_table) + c;
    return &seg->hdr->free_small[c];
}

/* Does a root list end with the class table of exact size classes? */
static int roots_exact(uint32_t nroots, const char *const *names)
{
    return nroots > 0 && names[nroots - 1] != NULL && strcmp(names[nroots - 1], P2_SEG_EXACT_ROOT) == 0;
}

/* ... and the root table of a header? */
static int header_exact(const struct p2_seg_header *h)
{
    if (h->nroots == 0 || h->nroots > P2_MAX_ROOTS)
        return 0;
    const struct p2_seg_root_entry *r = &h->roots[h->nroots - 1];
    return memcmp(r->name, P2_SEG_EXACT_ROOT, sizeof P2_SEG_EXACT_ROOT) == 0;
}

/* Does [off, off + bs) lie inside the allocated area [header, brk)? */
static int block_ok(const p2_seg *seg, p2_off off, uint64_t bs)
{
    uint64_t brk = seg->hdr->brk;
    return off >= P2_SEG_HEADER_SIZE && off % SEG_ALIGN == 0 && off <= brk && bs <= brk - off;
}

static struct small_free *small_at(const p2_seg *seg, p2_off off)
{
    return (struct small_free *)(void *)(seg->base + off);
}

static struct large_free *large_at(const p2_seg *seg, p2_off off)
{
    return (struct large_free *)(void *)(seg->base + off);
}

/* Is off a plausible node of the large free list?  Checking that the list is
 * address-ordered also guarantees that every walk terminates. */
static int large_node_ok(const p2_seg *seg, p2_off off)
{
    if (!block_ok(seg, off, LARGE_UNIT))
        return 0;
    const struct large_free *b = large_at(seg, off);
    if (b->size < LARGE_UNIT || b->size % LARGE_UNIT != 0 || b->size > seg->hdr->brk - off)
        return 0;
    return b->next == 0 || b->next >= off + b->size;
}

static int corrupt_list(const p2_seg *seg, p2_err *err, uint64_t bs, p2_off off)
{
    if (bs <= SMALL_MAX)
        return seg_fail(seg, err, P2_EFORMAT,
                        "corrupt free list for %" PRIu64 "-byte blocks: bad block at offset %" PRIu64,
                        bs, off);
    return seg_fail(seg, err, P2_EFORMAT,
                    "corrupt free list for large blocks: bad block at offset %" PRIu64, off);
}

/* What a user can do about a reservation too small (or too large to get): the generated
 * code passes the spec's persistent(reserve = ...) of the file (messages start with the
 * file's path). */
#define SEG_RESERVE_HINT "set by persistent(reserve = ...) for this file in the spec"

/* Reserve the address range [base, base + seg->reserved). */
static int seg_reserve(p2_seg *seg, p2_err *err)
{
    void *p = mmap(NULL, (size_t)seg->reserved, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        return seg_fail(seg, err, P2_ENOMEM, "cannot reserve %" PRIu64 " bytes of address space (%s): "
                        "%s", seg->reserved, SEG_RESERVE_HINT, strerror(e));
    }
    seg->base = (char *)p;
    return P2_OK;
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000   /* Linux >= 4.17; older C libraries lack the name */
#endif

/* Fixed-address segments: reserve exactly [at, at + seg->reserved), never replacing a
 * mapping already there (MAP_FIXED_NOREPLACE). Returns P2_OK, or -1 if the range is
 * taken (errno EEXIST), with nothing reserved; other failures are errors. A kernel older
 * than 4.17 takes the flag for a hint and may map elsewhere: that is refused too. */
static int seg_reserve_at(p2_seg *seg, uint64_t at, p2_err *err)
{
    void *p = mmap((void *)(uintptr_t)at, (size_t)seg->reserved, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        if (e == EEXIST)
            return -1;
        return seg_fail(seg, err, P2_ENOMEM, "cannot reserve %" PRIu64 " bytes of address space at 0x%"
                        PRIx64 " (%s): %s", seg->reserved, at, SEG_RESERVE_HINT, strerror(e));
    }
    if ((uint64_t)(uintptr_t)p != at) {
        munmap(p, (size_t)seg->reserved);
        return seg_fail(seg, err, P2_ENOMEM, "the kernel does not support MAP_FIXED_NOREPLACE (Linux 4.17 "
                        "or later is needed to map a file at a fixed address without replacing what "
                        "is there): cannot open a mapped file");
    }
    seg->base = (char *)p;
    return P2_OK;
}

/* A new fixed-address segment: the first free slot of the quiet range, slots being the
 * reservation rounded up to 1 GiB, starting from one that differs per file and per
 * creation (path, fingerprint, clock, process), so that files created apart rarely
 * claim the same range and can be opened together. */
static int seg_reserve_new_fixed(p2_seg *seg, uint64_t fingerprint, p2_err *err)
{
    const uint64_t gib = UINT64_C(1) << 30;
    uint64_t slot = round_up(seg->reserved, gib);
    uint64_t nslots = (P2_SEG_FIXED_HI - P2_SEG_FIXED_LO) / slot;
    if (nslots == 0)
        return seg_fail(seg, err, P2_ENOMEM, "a reservation of %" PRIu64 " bytes does not fit the %" PRIu64
                        " bytes of address space mapped files share (%s)", seg->reserved,
                        P2_SEG_FIXED_HI - P2_SEG_FIXED_LO, SEG_RESERVE_HINT);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const char *c = seg->path; *c; c++)
        h = (h ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
    h ^= fingerprint;
    h = (h ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32)) * UINT64_C(0x9e3779b97f4a7c15);
    h = (h ^ (uint64_t)getpid()) * UINT64_C(0x9e3779b97f4a7c15);
    uint64_t start = (h >> 17) % nslots, tries = nslots < 256 ? nslots : 256;
    for (uint64_t i = 0; i < tries; i++) {
        int rc = seg_reserve_at(seg, P2_SEG_FIXED_LO + ((start + i) % nslots) * slot, err);
        if (rc >= 0)
            return rc;
    }
    return seg_fail(seg, err, P2_ENOMEM, "no free range of %" PRIu64 " bytes left for a mapped file in "
                    "[0x%" PRIx64 ", 0x%" PRIx64 ") (%" PRIu64 " tried)", slot, P2_SEG_FIXED_LO,
                    P2_SEG_FIXED_HI, tries);
}

/* Forced relocation for measurements (see @ref fixed): P2_MAPPED_RELOCATE=P, 1..100;
 * 0 when unset or not a number in that range. */
static unsigned forced_relocation(void)
{
    const char *s = getenv("P2_MAPPED_RELOCATE");
    char *end;
    if (s == NULL || *s == '\0')
        return 0;
    unsigned long v = strtoul(s, &end, 10);
    return *end == '\0' && v >= 1 && v <= 100 ? (unsigned)v : 0;
}

/* An existing fixed-address segment: its recorded base, checked before anything is
 * mapped (a base this runtime never chooses is a corrupt or crafted header), then
 * reserved; if the range is taken, the open is refused, or with relocation allowed the
 * file goes to a free slot of the quiet range (seg->relocated: the caller relocates). */
static int seg_reserve_recorded(p2_seg *seg, uint64_t at, uint64_t file_size, uint64_t fingerprint,
                                p2_err *err)
{
    if (at % P2_SEG_GRANULE != 0 || at < P2_SEG_FIXED_LO || at >= P2_SEG_FIXED_HI
        || file_size > P2_SEG_FIXED_HI - at)
        return seg_fail(seg, err, P2_EFORMAT, "recorded base address 0x%" PRIx64 " is not valid (mapped "
                        "files lie at multiples of %u in [0x%" PRIx64 ", 0x%" PRIx64 ")): file is corrupt",
                        at, (unsigned)P2_SEG_GRANULE, P2_SEG_FIXED_LO, P2_SEG_FIXED_HI);
    uint64_t want = seg->reserved;
    if (seg->reserved > P2_SEG_FIXED_HI - at)
        seg->reserved = P2_SEG_FIXED_HI - at;   /* the quiet range ends there; the file fits */
    unsigned forced = seg->reloc_allowed ? forced_relocation() : 0;
    int rc = seg_reserve_at(seg, at, err);
    if (rc > 0)
        return rc;
    if (rc == 0 && forced > 0 && forced < 100) {
        /* a share of the file relocated in place (delta 0): mapped privately at its base */
        seg->relocated = 1;
        seg->reloc_from = at;
        seg->reloc_pct = forced;
        return P2_OK;
    }
    if (rc == 0 && forced == 0)
        return P2_OK;
    if (!seg->reloc_allowed)
        return seg_fail(seg, err, P2_ENOMEM, "the address range [0x%" PRIx64 ", 0x%" PRIx64 ") the file "
                        "is mapped at is taken by another mapping in this process (another mapped "
                        "file, or a library): its references are addresses there, so it cannot be "
                        "opened elsewhere (mapped(relocate = true) would relocate it in memory)",
                        at, at + seg->reserved);
    /* Taken (or forced whole: the recorded range, reserved just now, stays taken while the
     * new slot is chosen, so that it cannot be chosen again). */
    char *held = rc == 0 ? seg->base : NULL;
    uint64_t held_len = seg->reserved;
    seg->base = NULL;
    seg->reserved = want;
    rc = seg_reserve_new_fixed(seg, fingerprint, err);
    if (held != NULL)
        munmap(held, (size_t)held_len);
    if (rc != P2_OK)
        return rc;
    if (seg->reserved < file_size) {
        munmap(seg->base, (size_t)seg->reserved);
        seg->base = NULL;
        return seg_fail(seg, err, P2_ENOMEM, "file is %" PRIu64 " bytes, more than the address-space "
                        "reservation of %" PRIu64 " bytes (" SEG_RESERVE_HINT ")", file_size, seg->reserved);
    }
    seg->relocated = 1;
    seg->reloc_from = at;
    seg->reloc_pct = 100;
    return P2_OK;
}

/* A relocated segment's write hook: the first write marks the open as written (its close
 * writes the image back); then the hook is not needed any more. */
static void reloc_note_write(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    (void)ctx;
    (void)off;
    (void)n;
    seg->reloc_written = 1;
    seg->will_write = NULL;
    seg->will_write_ctx = NULL;
}

void p2_seg_reloc_begin(p2_seg *seg, p2_reloc *rl)
{
    rl->lo = seg->reloc_from + P2_SEG_HEADER_SIZE;
    rl->span = seg->hdr->brk - P2_SEG_HEADER_SIZE;
    rl->delta = (uint64_t)(uintptr_t)seg->base - seg->reloc_from;
    rl->base = seg->base;
    rl->pct = seg->reloc_pct;
    rl->moved = 0;
}

void p2_seg_reloc_end(p2_seg *seg, const p2_reloc *rl)
{
    (void)rl;
    seg->hdr->map_base = (uint64_t)(uintptr_t)seg->base;   /* this copy only */
}

/* Extend the file from seg->mapped to want bytes with its disk blocks reserved
 * (posix_fallocate), not sparsely: in a sparse file the first write to a new page of the
 * shared mapping is what allocates its block, and on a full file system that write is a
 * SIGBUS that kills the process (and leaves a plain file marked OPEN). Reserved here, a
 * full disk is an error of the call that grows. Where the file system cannot reserve
 * (EOPNOTSUPP, EINVAL) the file is extended sparsely, as before. */
static int seg_extend_file(p2_seg *seg, uint64_t want, p2_err *err)
{
    int e = posix_fallocate(seg->fd, (off_t)seg->mapped, (off_t)(want - seg->mapped));
    if (e == EOPNOTSUPP || e == EINVAL || e == ENOSYS)
        e = ftruncate(seg->fd, (off_t)want) == 0 ? 0 : errno;
    if (e == 0)
        return P2_OK;
    if (e == ENOSPC || e == EDQUOT)
        return seg_fail(seg, err, P2_EIO,
                        "disk full: cannot reserve %" PRIu64 " more bytes to grow the file to %" PRIu64
                        " bytes (%s); nothing was changed: free some space and retry",
                        want - seg->mapped, want, strerror(e));
    return seg_fail(seg, err, P2_EIO, "cannot extend the file to %" PRIu64 " bytes: %s",
                    want, strerror(e));
}

/* A growing file is extended past what it needs by 1/2^SEG_GROW_SHIFT of its mapped size. */
#define SEG_GROW_SHIFT 5

/* Make sure at least need bytes of the file are mapped: extend the file and map the new
 * tail right after the mapped part. The file grows geometrically, by a small factor: to
 * need plus 1/32 of its mapped size (a granule at least). Nothing is copied (the base
 * never moves), so a growth costs two system calls besides the new tail's blocks; a step
 * in proportion to the size keeps the growths few (logarithmic: about 370 from one
 * granule to 64 GiB; the kernel merges the tails into one mapping) and their calls
 * amortised O(1) per byte, while the file's allocated size stays within about 3 % of what
 * is in use, where doubling left up to half of a large file unused. */
static int seg_grow(p2_seg *seg, uint64_t need, p2_err *err)
{
    if (need <= seg->mapped)
        return P2_OK;
    if (need > seg->reserved && seg->pb != NULL)
        return seg_fail(seg, err, P2_ENOMEM,
                        "the database needs %" PRIu64 " bytes, more than the %" PRIu64 " this open may "
                        "use (the export's size, or pageserver(reserve = ...))", need, seg->reserved);
    if (need > seg->reserved)
        return seg_fail(seg, err, P2_ENOMEM,
                        "segment needs %" PRIu64 " bytes, more than its address-space reservation "
                        "of %" PRIu64 " bytes (" SEG_RESERVE_HINT ")",
                        need, seg->reserved);
    uint64_t g = seg_granule();
    uint64_t step = seg->mapped >> SEG_GROW_SHIFT;
    if (step < g)
        step = g;
    uint64_t want = need + step;        /* no overflow: need <= reserved <= 2^60 */
    if (want > seg->reserved)
        want = seg->reserved;           /* a multiple of g, and >= need */
    want = round_up(want, g);

    if (seg->pb != NULL) {              /* a page server: new pages are zero, faulted in */
        int prc = pb_grow(seg, want, err);
        if (prc != P2_OK)
            return prc;
        seg->mapped = want;
        if (seg->hdr != NULL)
            seg->hdr->file_size = want;
        return P2_OK;
    }
    int rc = seg_extend_file(seg, want, err);
    if (rc != P2_OK && want > round_up(need, g)) {
        want = round_up(need, g);       /* no room for the step: what this call needs may fit */
        rc = seg_extend_file(seg, want, err);
    }
    if (rc != P2_OK)
        return rc;
    /* A journalled segment maps private and read-only: writes fault and are tracked. */
    void *p = mmap(seg->base + seg->mapped, (size_t)(want - seg->mapped),
                   journal_prot(seg),
                   (seg->journal || seg->relocated ? MAP_PRIVATE : MAP_SHARED) | MAP_FIXED, seg->fd,
                   (off_t)seg->mapped);
    if (p == MAP_FAILED) {
        int e = errno;
        /* Undo: shrink the file back and make sure the tail is reserved again. */
        if (ftruncate(seg->fd, (off_t)seg->mapped) != 0) {
            /* nothing more to do; the header still records the old size */
        }
        (void)mmap(seg->base + seg->mapped, (size_t)(seg->reserved - seg->mapped), PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        return seg_fail(seg, err, P2_ENOMEM, "cannot map %" PRIu64 " more bytes of the file: %s",
                        want - seg->mapped, strerror(e));
    }
    seg->mapped = want;
    if (seg->hdr != NULL) {
        p2_seg_will_write(seg, &seg->hdr->file_size, sizeof seg->hdr->file_size);
        seg->hdr->file_size = want;
    }
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * 4.3 Persistent segment: allocator
 * ------------------------------------------------------------------------ */

/* Take bs bytes at brk, extending the file as needed. */
static int brk_take(p2_seg *seg, uint64_t bs, p2_off *out, p2_err *err)
{
    p2_off off = seg->hdr->brk;
    int rc = seg_grow(seg, off + bs, err);   /* no overflow: off, bs <= reserved <= 2^60 */
    if (rc != P2_OK)
        return rc;
    p2_seg_will_write(seg, &seg->hdr->brk, sizeof seg->hdr->brk);
    seg->hdr->brk = off + bs;
    *out = off;
    return P2_OK;
}

/* First fit on the large free list; splits off the tail of a bigger block.
 * *out = 0 if no free block is big enough. */
static int large_take(p2_seg *seg, uint64_t bs, p2_off *out, p2_err *err)
{
    p2_off *link = &seg->hdr->free_large;
    *out = 0;
    while (*link != 0) {
        p2_off off = *link;
        if (!large_node_ok(seg, off))
            return corrupt_list(seg, err, LARGE_UNIT, off);
        struct large_free *b = large_at(seg, off);
        if (b->size >= bs) {
            if (b->size == bs) {
                p2_seg_will_write(seg, link, sizeof *link);
                *link = b->next;
            } else {
                p2_seg_will_write(seg, &b->size, sizeof b->size);
                b->size -= bs;        /* keep the head on the list, hand out the tail */
                off += b->size;
            }
            *out = off;
            return P2_OK;
        }
        link = &b->next;
    }
    return P2_OK;
}

/* Take the first extra bytes of the free large block starting exactly at
 * `at`, if there is one that big.  Returns 1 if taken. */
static int large_take_at(p2_seg *seg, p2_off at, uint64_t extra)
{
    p2_off *link = &seg->hdr->free_large;
    while (*link != 0 && *link < at) {
        if (!large_node_ok(seg, *link))
            return 0;
        link = &large_at(seg, *link)->next;
    }
    if (*link != at || !large_node_ok(seg, at))
        return 0;
    struct large_free *b = large_at(seg, at);
    if (b->size < extra)
        return 0;
    p2_seg_will_write(seg, link, sizeof *link);
    if (b->size == extra) {
        *link = b->next;
    } else {
        struct large_free rest = { b->next, b->size - extra };
        p2_seg_will_write(seg, large_at(seg, at + extra), sizeof rest);
        *large_at(seg, at + extra) = rest;
        *link = at + extra;
    }
    return 1;
}

/* Insert [off, off + bs) into the address-ordered large free list, merging
 * it with free neighbours.  A corrupt list or a block overlapping a free one
 * (double free) is left alone: the block is leaked rather than the damage
 * spread. */
static void large_release(p2_seg *seg, p2_off off, uint64_t bs)
{
    p2_off *link = &seg->hdr->free_large;
    p2_off prev = 0;
    while (*link != 0 && *link < off) {
        if (!large_node_ok(seg, *link))
            return;
        prev = *link;
        link = &large_at(seg, prev)->next;
    }
    p2_off next = *link;
    if (next != 0 && (!large_node_ok(seg, next) || next < off + bs))
        return;
    if (prev != 0 && prev + large_at(seg, prev)->size > off)
        return;

    struct large_free *b = large_at(seg, off);
    p2_seg_will_write(seg, b, sizeof *b);
    b->size = bs;
    b->next = next;
    if (next != 0 && off + bs == next) {
        b->size += large_at(seg, next)->size;
        b->next = large_at(seg, next)->next;
    }
    if (prev != 0 && prev + large_at(seg, prev)->size == off) {
        p2_seg_will_write(seg, large_at(seg, prev), sizeof *b);
        large_at(seg, prev)->size += b->size;
        large_at(seg, prev)->next = b->next;
    } else {
        p2_seg_will_write(seg, link, sizeof *link);
        *link = off;
    }
}

static void small_push(p2_seg *seg, unsigned cls, p2_off off)
{
    p2_off *head = small_head(seg, cls);
    p2_seg_will_write(seg, small_at(seg, off), sizeof(struct small_free));
    p2_seg_will_write(seg, head, sizeof(p2_off));
    small_at(seg, off)->next = *head;
    *head = off;
}

/* Pop a block of size class cls; refill the class from a free large block
 * if possible, else take it at brk. */
static int small_take(p2_seg *seg, uint64_t bs, p2_off *out, p2_err *err)
{
    unsigned cls = small_class(seg, bs);
    p2_off *head = small_head(seg, cls);
    p2_off off = *head;
    if (off != 0) {
        if (!block_ok(seg, off, bs))
            return corrupt_list(seg, err, bs, off);
        p2_off next = small_at(seg, off)->next;
        if (next != 0 && !block_ok(seg, next, bs))
            return corrupt_list(seg, err, bs, next);
        p2_seg_will_write(seg, head, sizeof(p2_off));
        *head = next;
        *out = off;
        return P2_OK;
    }
    p2_off chunk;
    int rc = large_take(seg, LARGE_UNIT, &chunk, err);
    if (rc != P2_OK)
        return rc;
    if (chunk != 0) {
        /* Cut the 4 KiB piece into blocks of this class; push from the top
         * so that the list hands them out in address order.  An exact class need not
         * divide 4096: the rest at the top (a multiple of 16) goes to its own class. */
        uint64_t fit = LARGE_UNIT / bs * bs;
        if (fit < LARGE_UNIT)
            small_push(seg, small_class(seg, LARGE_UNIT - fit), chunk + fit);
        for (uint64_t o = fit - bs; o >= bs; o -= bs)
            small_push(seg, cls, chunk + o);
        *out = chunk;
        return P2_OK;
    }
    return brk_take(seg, bs, out, err);
}

/* Take a large block at brk, starting on a 64-byte line whatever small blocks came
 * before it. A large block handed out again from the free list keeps its start, so large
 * blocks start on lines (those of files made before this rule need not); iarray(slots =
 * line) relies on it for speed, never for correctness. The 16 to 48 bytes skipped go to
 * the 16-byte class's free list. */
static int brk_take_line(p2_seg *seg, uint64_t bs, p2_off *out, p2_err *err)
{
    p2_off gap = seg->hdr->brk, at = round_up(gap, SEG_LINE);
    int rc = brk_take(seg, at - gap + bs, out, err);
    if (rc != P2_OK)
        return rc;
    for (; gap < at; gap += SEG_ALIGN)
        small_push(seg, small_class(seg, SEG_ALIGN), gap);
    *out = at;
    return P2_OK;
}

/* Allocate a block for size bytes (contents undefined). */
static int seg_alloc_block(p2_seg *seg, uint64_t size, p2_off *out, p2_err *err)
{
    uint64_t bs = block_size(seg, size);
    if (bs == 0 || bs > seg->reserved)
        return seg_fail(seg, err, P2_ENOMEM,
                        "cannot allocate %" PRIu64 " bytes: more than the segment's address-space "
                        "reservation of %" PRIu64 " bytes (" SEG_RESERVE_HINT ")",
                        size, seg->reserved);
    if (bs <= SMALL_MAX)
        return small_take(seg, bs, out, err);
    int rc = large_take(seg, bs, out, err);
    if (rc != P2_OK || *out != 0)
        return rc;
    return brk_take_line(seg, bs, out, err);
}

p2_off p2_seg_alloc(p2_seg *seg, uint64_t size, p2_err *err)
{
    if (seg == NULL || seg->base == NULL) {
        p2_err_set(err, P2_ECLOSED, "p2_seg_alloc: segment is not open");
        return 0;
    }
    p2_off off = 0;
    if (seg_alloc_block(seg, size, &off, err) != P2_OK)
        return 0;
    p2_seg_will_write(seg, seg->base + off, size);
    memset(seg->base + off, 0, (size_t)size);
    return off;
}

void p2_seg_free(p2_seg *seg, p2_off off, uint64_t size)
{
    if (seg == NULL || seg->base == NULL || off == 0)
        return;
    uint64_t bs = block_size(seg, size);
    if (bs == 0 || !block_ok(seg, off, bs))
        return;
    if (bs <= SMALL_MAX)
        small_push(seg, small_class(seg, bs), off);
    else
        large_release(seg, off, bs);
}

p2_off p2_seg_realloc(p2_seg *seg, p2_off off, uint64_t old_size, uint64_t new_size, p2_err *err)
{
    if (seg == NULL || seg->base == NULL) {
        p2_err_set(err, P2_ECLOSED, "p2_seg_realloc: segment is not open");
        return 0;
    }
    if (off == 0)
        return p2_seg_alloc(seg, new_size, err);
    uint64_t ob = block_size(seg, old_size), nb = block_size(seg, new_size);
    if (ob == 0 || !block_ok(seg, off, ob)) {
        seg_fail(seg, err, P2_EINVAL,
                 "p2_seg_realloc: block at offset %" PRIu64 " of %" PRIu64
                 " bytes lies outside the allocated area",
                 off, old_size);
        return 0;
    }
    if (nb == 0 || nb > seg->reserved) {
        seg_fail(seg, err, P2_ENOMEM,
                 "cannot allocate %" PRIu64 " bytes: more than the segment's address-space "
                 "reservation of %" PRIu64 " bytes (" SEG_RESERVE_HINT ")",
                 new_size, seg->reserved);
        return 0;
    }
    char *p = seg->base + off;   /* stays valid: the base never moves */
    if (nb == ob) {
        if (new_size > old_size) {
            p2_seg_will_write(seg, p + old_size, new_size - old_size);
            memset(p + old_size, 0, (size_t)(new_size - old_size));
        }
        return off;
    }
    if (ob > SMALL_MAX && nb > SMALL_MAX) {
        if (nb < ob) {                      /* shrink in place, free the tail */
            large_release(seg, off + nb, ob - nb);
            return off;
        }
        uint64_t extra = nb - ob;
        p2_off end = off + ob;
        int grown = 0;
        if (end == seg->hdr->brk) {         /* last block: extend the allocated area */
            if (seg_grow(seg, end + extra, err) != P2_OK)
                return 0;
            p2_seg_will_write(seg, &seg->hdr->brk, sizeof seg->hdr->brk);
            seg->hdr->brk = end + extra;
            grown = 1;
        } else {                            /* followed by a big enough free block */
            grown = large_take_at(seg, end, extra);
        }
        if (grown) {
            p2_seg_will_write(seg, p + old_size, new_size - old_size);
            memset(p + old_size, 0, (size_t)(new_size - old_size));
            return off;
        }
    }
    p2_off moved = p2_seg_alloc(seg, new_size, err);
    if (moved == 0)
        return 0;
    /* the copy lands in the block p2_seg_alloc just announced (and zero-filled) */
    memcpy(seg->base + moved, p, (size_t)(old_size < new_size ? old_size : new_size));
    p2_seg_free(seg, off, old_size);
    return moved;
}

uint64_t p2_seg_used(const p2_seg *seg)
{
    return seg != NULL && seg->base != NULL ? seg->hdr->brk : 0;
}

p2_off p2_seg_root(const p2_seg *seg, uint32_t i)
{
    if (seg == NULL || seg->base == NULL || i >= seg->hdr->nroots)
        return 0;
    return seg->hdr->roots[i].off;
}

/* ------------------------------------------------------------------------
 * 4.4 Persistent segment: validation of an existing file, in the documented order
 * ------------------------------------------------------------------------ */

static int check_roots(const p2_seg *seg, uint32_t nroots, const char *const *names,
                       const uint64_t *sizes, p2_err *err)
{
    if (nroots > P2_MAX_ROOTS)
        return seg_fail(seg, err, P2_EINVAL, "%" PRIu32 " roots requested, at most %d supported",
                        nroots, P2_MAX_ROOTS);
    if (nroots > 0 && (names == NULL || sizes == NULL))
        return seg_fail(seg, err, P2_EINVAL, "root_names or root_sizes is NULL");
    for (uint32_t i = 0; i < nroots; i++) {
        if (names[i] == NULL || names[i][0] == '\0')
            return seg_fail(seg, err, P2_EINVAL, "root %" PRIu32 " has no name", i);
        size_t len = strlen(names[i]);
        if (len >= P2_ROOT_NAME_SIZE)
            return seg_fail(seg, err, P2_EINVAL,
                            "root name \"%s\" is %zu bytes long, at most %d allowed",
                            names[i], len, P2_ROOT_NAME_SIZE - 1);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return seg_fail(seg, err, P2_EINVAL, "root name \"%s\" is given twice", names[i]);
        if (strcmp(names[i], P2_SEG_EXACT_ROOT) == 0 && (i != nroots - 1 || sizes[i] != EXACT_TABLE))
            return seg_fail(seg, err, P2_EINVAL, "root \"%s\" (exact size classes) must be the last "
                            "root, of %u bytes", P2_SEG_EXACT_ROOT, (unsigned)EXACT_TABLE);
    }
    return P2_OK;
}

/* Length of a stored root name, at most P2_ROOT_NAME_SIZE - 1 for printing. */
static int stored_name_len(const struct p2_seg_root_entry *r)
{
    size_t n = strnlen(r->name, P2_ROOT_NAME_SIZE);
    return (int)(n < P2_ROOT_NAME_SIZE ? n : P2_ROOT_NAME_SIZE - 1);
}

/* The description stored in a header (from the file: at most P2_SEG_DESC_SIZE bytes, maybe
 * without a NUL), as printable ASCII in out (NUL-terminated, same size): bytes outside
 * 0x20..0x7e become '?', so a crafted file cannot put control sequences into messages. */
static void desc_printable(const char *desc, char *out)
{
    size_t n = strnlen(desc, P2_SEG_DESC_SIZE - 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)desc[i];
        out[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    out[n] = '\0';
}

void p2_seg_set_desc(p2_seg *seg, const char *desc)
{
    char buf[P2_SEG_DESC_SIZE];
    if (seg == NULL || seg->base == NULL || desc == NULL)
        return;
    memset(buf, 0, sizeof buf);
    size_t n = strlen(desc);
    if (n < sizeof buf) {
        memcpy(buf, desc, n);
    } else {                              /* cut short, and say so */
        memcpy(buf, desc, sizeof buf - 4);
        memcpy(buf + sizeof buf - 4, "...", 3);
    }
    if (memcmp(seg->hdr->desc, buf, sizeof buf) != 0) {   /* no needless page write */
        p2_seg_will_write(seg, seg->hdr->desc, sizeof buf);
        memcpy(seg->hdr->desc, buf, sizeof buf);
    }
}

static int not_closed(const p2_seg *seg, p2_err *err)
{
    return seg_fail(seg, err, P2_EFORMAT,
                    "was not closed cleanly (a process crashed or is still using it); "
                    "refusing to open a possibly half-written file (if no process uses it, "
                    "`p2gen recover` rebuilds it)");
}

/* Validate the header h of an existing file of file_bytes bytes, in the
 * documented order. */
static int seg_validate(const p2_seg *seg, const struct p2_seg_header *h, uint64_t file_bytes,
                        uint64_t fingerprint, uint32_t nroots, const char *const *names,
                        const uint64_t *sizes, p2_err *err)
{
    static const char no_magic[sizeof h->magic];
    if (memcmp(h->magic, no_magic, sizeof h->magic) == 0)
        /* creation stores the magic last: a header without one is what a file whose
         * creation was cut short has (a journalled one with nothing committed starts
         * again, see seg_open_journalled) */
        return seg_fail(seg, err, P2_EFORMAT, "not a p2gen database (bad magic): its header has "
                        "no magic, as a file whose creation was cut short (truncated) has");
    if (memcmp(h->magic, SEG_MAGIC, sizeof h->magic) != 0)
        return seg_fail(seg, err, P2_EFORMAT, "not a p2gen database (bad magic)");
    if (h->version != P2_SEG_VERSION)
        return seg_fail(seg, err, P2_EFORMAT, "format version %" PRIu32 ", this build reads version %d",
                        h->version, P2_SEG_VERSION);
    /* The checksum is brought up to date only by sync and close, so the
     * header of a file left OPEN by a crashed process usually fails it: that
     * file is reported as not closed cleanly, not as corrupt. */
    uint32_t crc = header_crc(h);
    if (crc != h->checksum && h->state == SEG_STATE_OPEN && !seg->journal && !seg->recovering)
        return not_closed(seg, err);
    if (crc != h->checksum && !(seg->recovering && !seg->journal && h->state == SEG_STATE_OPEN))
        return seg_fail(seg, err, P2_EFORMAT,
                        "header checksum mismatch (stored 0x%08" PRIx32 ", computed 0x%08" PRIx32
                        "): file is corrupt",
                        h->checksum, crc);
    /* References in a fixed-address file are addresses, elsewhere offsets: neither open
     * may follow the other's (the base itself is checked before it is mapped). */
    if (h->map_base != 0 && !seg->fixed)
        return seg_fail(seg, err, P2_EMISMATCH, "a file of the mapped memory layer (its references are "
                        "addresses at 0x%" PRIx64 "): this open expects offsets", h->map_base);
    if (h->map_base == 0 && seg->fixed)
        return seg_fail(seg, err, P2_EMISMATCH, "its references are offsets (persistent memory), not "
                        "addresses: not a file of the mapped memory layer");
    /* The size classes are the file's from its creation (the last root is the class table
     * of exact ones): blocks of the other policy's sizes would not fit its free lists. */
    if (header_exact(h) != seg->alloc_exact)
        return seg_fail(seg, err, P2_EMISMATCH,
                        "refused: the file's allocator uses %s size classes (alloc = %s), this "
                        "program's %s (alloc = %s); a file keeps the allocator policy it was "
                        "created with",
                        header_exact(h) ? "exact 16-byte" : "power-of-two",
                        header_exact(h) ? "exact" : "pow2",
                        seg->alloc_exact ? "exact 16-byte" : "power-of-two",
                        seg->alloc_exact ? "exact" : "pow2");
    if (h->fingerprint != fingerprint) {
        char made[P2_SEG_DESC_SIZE];
        desc_printable(h->desc, made);
        return seg_fail(seg, err, P2_EMISMATCH,
                        "created by a different spec or equation (the file was made by %s%s%s; "
                        "fingerprint 0x%016" PRIx64 ", expected 0x%016" PRIx64 ")",
                        made[0] ? "\"" : "", made[0] ? made : "a program that did not record its spec",
                        made[0] ? "\"" : "", h->fingerprint, fingerprint);
    }

    if (h->nroots > P2_MAX_ROOTS)
        return seg_fail(seg, err, P2_EFORMAT, "corrupt header: %" PRIu32 " roots, at most %d fit",
                        h->nroots, P2_MAX_ROOTS);
    uint32_t common = h->nroots < nroots ? h->nroots : nroots;
    for (uint32_t i = 0; i < common; i++) {
        const struct p2_seg_root_entry *r = &h->roots[i];
        int len = stored_name_len(r);
        if ((size_t)len != strlen(names[i]) || memcmp(r->name, names[i], (size_t)len) != 0)
            return seg_fail(seg, err, P2_EMISMATCH,
                            "root %" PRIu32 " is \"%.*s\" in the file, the spec expects \"%s\"",
                            i, len, r->name, names[i]);
        if (r->size != sizes[i])
            return seg_fail(seg, err, P2_EMISMATCH,
                            "root \"%s\" is %" PRIu64 " bytes in the file, the spec expects %" PRIu64,
                            names[i], r->size, sizes[i]);
    }
    if (h->nroots > nroots) {
        const struct p2_seg_root_entry *r = &h->roots[nroots];
        return seg_fail(seg, err, P2_EMISMATCH,
                        "the file has %" PRIu32 " roots, the spec %" PRIu32
                        ": root \"%.*s\" is not in the spec",
                        h->nroots, nroots, stored_name_len(r), r->name);
    }
    if (h->nroots < nroots)
        return seg_fail(seg, err, P2_EMISMATCH,
                        "the file has %" PRIu32 " roots, the spec %" PRIu32
                        ": root \"%s\" is missing from the file",
                        h->nroots, nroots, names[h->nroots]);

    if (file_bytes < h->file_size)
        return seg_fail(seg, err, P2_EFORMAT,
                        "truncated: header says %" PRIu64 " bytes, file has %" PRIu64,
                        h->file_size, file_bytes);

    if (h->header_size != P2_SEG_HEADER_SIZE)
        return seg_fail(seg, err, P2_EFORMAT, "corrupt header: header size %" PRIu32 ", expected %d",
                        h->header_size, P2_SEG_HEADER_SIZE);
    uint64_t pg = page_size();
    if (h->file_size < P2_SEG_HEADER_SIZE || h->file_size % pg != 0 || h->file_size > SEG_MAX_RESERVE)
        return seg_fail(seg, err, P2_EFORMAT,
                        "corrupt header: file size %" PRIu64 " is not a multiple of the page size %" PRIu64,
                        h->file_size, pg);
    uint64_t brk = h->brk;
    if (brk < P2_SEG_HEADER_SIZE || brk > h->file_size || brk % SEG_ALIGN != 0)
        return seg_fail(seg, err, P2_EFORMAT,
                        "corrupt header: brk %" PRIu64 " is outside the file (%d..%" PRIu64 ")",
                        brk, P2_SEG_HEADER_SIZE, h->file_size);
    for (uint32_t i = 0; i < h->nroots; i++) {
        const struct p2_seg_root_entry *r = &h->roots[i];
        uint64_t bs = block_size(seg, r->size);
        if (bs == 0 || r->off < P2_SEG_HEADER_SIZE || r->off % SEG_ALIGN != 0 || r->off > brk ||
            bs > brk - r->off)
            return seg_fail(seg, err, P2_EFORMAT,
                            "corrupt header: root \"%.*s\" (offset %" PRIu64 ", %" PRIu64
                            " bytes) lies outside the allocated area (%d..%" PRIu64 ")",
                            stored_name_len(r), r->name, r->off, r->size, P2_SEG_HEADER_SIZE, brk);
    }
    if (h->roots_sealed && h->state == SEG_STATE_CLEAN) {
        uint32_t rcrc = 0;
        char buf[4096];
        for (uint32_t i = 0; i < h->nroots; i++) {
            for (uint64_t done = 0; done < h->roots[i].size;) {
                uint64_t n = h->roots[i].size - done < sizeof buf ? h->roots[i].size - done : sizeof buf;
                if (seg->pb != NULL ? pb_read((p2_seg *)seg, buf, n, h->roots[i].off + done, NULL) != P2_OK
                                    : pread(seg->fd, buf, (size_t)n, (off_t)(h->roots[i].off + done)) != (ssize_t)n)
                    return seg_fail(seg, err, P2_EIO, "cannot read root \"%.*s\"",
                                    stored_name_len(&h->roots[i]), h->roots[i].name);
                rcrc = p2_crc32(rcrc, buf, (size_t)n);
                done += n;
            }
        }
        if (rcrc != h->roots_crc)
            return seg_fail(seg, err, P2_EFORMAT,
                            "container roots checksum mismatch (stored 0x%08" PRIx32 ", computed 0x%08"
                            PRIx32 "): a container's root block is corrupt", h->roots_crc, rcrc);
    }
    for (unsigned c = 0; c <= NCLASSES; c++) {
        p2_off f = c < NCLASSES ? h->free_small[c] : h->free_large;
        /* exact size classes keep their lists in the class table: these heads stay 0 */
        if (seg->alloc_exact && c < NCLASSES && f != 0)
            return seg_fail(seg, err, P2_EFORMAT,
                            "corrupt header: a power-of-two free list (%" PRIu64 "-byte blocks) in a "
                            "file of exact size classes", (uint64_t)SMALL_MIN << c);
        uint64_t bs = c < NCLASSES ? (uint64_t)SMALL_MIN << c : LARGE_UNIT;
        if (f != 0 && (f < P2_SEG_HEADER_SIZE || f % SEG_ALIGN != 0 || f > brk || bs > brk - f))
            return seg_fail(seg, err, P2_EFORMAT,
                            "corrupt header: free list for %s%" PRIu64 "-byte blocks starts at offset %" PRIu64
                            ", outside the allocated area (%d..%" PRIu64 ")",
                            c < NCLASSES ? "" : ">= ", bs, f, P2_SEG_HEADER_SIZE, brk);
    }

    /* A journalled file is as of its last commit once the journal is replayed. */
    if (h->state == SEG_STATE_OPEN && !seg->journal && !seg->recovering)
        return not_closed(seg, err);
    if (h->state != SEG_STATE_CLEAN && h->state != SEG_STATE_OPEN)
        return seg_fail(seg, err, P2_EFORMAT, "corrupt header: state flag %" PRIu32, h->state);
    return P2_OK;
}
