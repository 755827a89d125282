/* ==========================================================================
 * 9. Page servers: the client buffer (design in p2_runtime.h, @ref server)
 *
 * A segment whose bytes live behind a backend (section 8).  Its reservation is the
 * persistent segment's, but nothing is mapped from a file: a page not in a frame is
 * brought into one on its first touch, through userfaultfd where the kernel lets this
 * process have one (the page readable and writable but missing: the kernel stops the
 * toucher and a handler thread fills the page with UFFDIO_COPY, section 9.1), else
 * through SIGSEGV (the page PROT_NONE: the handler below fills it in the toucher's
 * thread).  Either way the clock's reference bits and the first write to a clean page
 * are seen by mprotect and SIGSEGV.  Per page one state byte (in a frame, dirty,
 * protected by the clock, held on the server, written back before, ranges pending under
 * ship = ranges); per frame the page it holds and its reference bit.
 * The segment's own code (section 4) reaches the server through four hooks: reading the
 * header at open (pb_read), growth (pb_grow), and writing back what is dirty where a
 * local file is msync'ed (pb_sync at create, attach, sync; pb_close).
 * ========================================================================== */

#define PB_RES    1u    /* in a frame */
#define PB_DIRTY  2u    /* written since it was last written back (writable) */
#define PB_PROT   4u    /* in a frame but made inaccessible by the clock's hand */
#define PB_SRV    8u    /* the server holds its bytes (else: a new page, zero) */
#define PB_WB     16u   /* written back at least once since the open or the last reset */
#define PB_PEND   32u   /* ship = ranges: its announced ranges wait in the pending store */
#define MAX_PBUFS 64    /* page-server segments open at once in a process */
/* pageserver(ship = ranges): the announced bytes of a page, in granules of 1/256 page */
#define PB_GRANULES 256u
/* announced runs closer than this many granules ship as one range: a one-granule gap
   (16 bytes of a 4 KiB page) costs less than a request's header (NBD's: 28 bytes) */
#define PB_GAP      2u
#define PB_MAXR     ((PB_GRANULES + PB_GAP) / (PB_GAP + 1))   /* ranges of a page at most */
#define PB_IOS      (P2_SERVER_INFLIGHT * 8)  /* ranges a write-back sends at once, at most */
_Static_assert(PB_MAXR <= PB_IOS, "a write-back sends a page's ranges at once");
#define PB_RECENT   256u /* the last notices, applied again to a page turning dirty */

/* ship = ranges: a page evicted dirty keeps its announced ranges here until the next sync
 * (section 9.4): the granules held (runs closer than PB_GAP filled in) and their bytes */
typedef struct pb_pend {
    uint64_t page;
    uint64_t mask[PB_GRANULES / 64];
    char    *bytes;         /* the held granules' bytes, in granule order */
    uint64_t nbytes;
} pb_pend;

typedef struct p2_pagebuf {
    p2_backend be;
    p2_seg  *seg;
    uint64_t pg;            /* page: the unit of faults, frames and requests */
    uint64_t npages;        /* pages of the reservation */
    uint32_t nframes, used, hand;
    uint8_t *state;         /* per page */
    uint32_t *frame_of;     /* per page in a frame: its frame */
    uint32_t *frame_page;   /* per frame: its page */
    uint8_t *frame_ref;     /* per frame: referenced since the hand last passed */
    uint64_t track_bytes;   /* of the mapping holding the four arrays above */
    p2_server_stats st;
    int      failed;        /* a page could not be read inside a fault: see @ref server */
    char     why[P2_ERR_MSG_SIZE];
    struct p2_objcache *oc; /* an object server's cache (section 10), else NULL */
    /* transactions through a log export (section 9.5): a journal or wal above */
    uint32_t cap;           /* frames the tables hold: nframes, or npages under txn */
    int      txn;           /* no steal: dirty pages stay until commit or abort */
    int      sync;          /* flush the log and the data at commit (the journal's sync) */
    int      reader;        /* opened read-only: no lease, commits of changes refused */
    int      stale;         /* a reader's page was read after a newer commit began */
    p2_backend log;         /* the log export (ops NULL: none) */
    p2_server_stats log_st; /* its requests (not in the buffer's counters) */
    uint64_t gen;           /* the commit the buffer's clean pages are of */
    uint64_t replayed;      /* the commit the open wrote back from the log, 0: none */
    uint64_t token, expiry_ms, lease_ms;   /* the writer's lease */
    char     owner[96];     /* "pid N on HOST" */
    /* ship = ranges (section 9.4): per page PB_GRANULES bits, the granules announced by
       p2_seg_will_write since the page was last written back; NULL: whole pages */
    uint64_t *wmask;
    uint64_t  wmask_bytes;
    uint32_t *mask_gen;               /* per page: the sync its granules are of (else stale) */
    uint32_t  sync_gen;               /* syncs so far: masks of an older one are empty */
    uint64_t  recent[PB_RECENT][2];   /* the last notices (offset, bytes), a ring */
    uint32_t  nrecent;                /* notices so far (the ring's next is nrecent % size) */
    uint32_t *pend_of;                /* per page: its pending entry + 1, 0: none */
    pb_pend  *pend;                   /* the pending store: entries [0, npend) */
    uint32_t  npend, pend_cap;
    uint64_t  pend_bytes, pend_max;   /* bytes held; at most (P2_SERVER_PENDING_BYTES) */
    /* faults through userfaultfd (section 9.1) */
    int      uffd_on;           /* pages fault in through the userfaultfd (else SIGSEGV) */
    int      uffd_tried;        /* asked the kernel for one (once per open) */
    int      uffd, uffd_stop;   /* the userfaultfd; an eventfd that stops its thread */
    char    *uffd_base;         /* the reservation registered with it, NULL: none */
    char    *bounce;            /* pages the thread reads into, then copies in place (one
                                   and the read-ahead's: P2_SERVER_INFLIGHT) */
    /* read-ahead (section 9: pb_ahead): P2_SERVER_READAHEAD at open, 0 or 1: off */
    uint32_t ra_max, ra_win;    /* pages a miss may bring in at most; the window now */
    uint64_t ra_next;           /* the page after the last run brought in by a miss */
#ifdef __linux__
    pthread_t uffd_thread;
#endif
} p2_pagebuf;

static __thread int pl_reader_next;   /* p2_server_open_reader: the next open is a reader's */
static void pl_reader_check(p2_pagebuf *pb);
static int pl_close(p2_seg *seg, p2_err *err);
static int pl_open(p2_seg *seg, const char *log_uri, int sync, uint64_t fingerprint, p2_err *err);
static void pl_drop_frame(p2_pagebuf *pb, uint32_t f);

/* An object server's segment (section 10) is a p2_pagebuf with an object cache: these
 * hooks are its where the page server's are a page buffer's. */
struct p2_objcache;
static int ob_sync(p2_seg *seg, p2_err *err);
static int ob_close(p2_seg *seg, p2_err *err);
static int ob_grow(p2_seg *seg, uint64_t want, p2_err *err);
static int ob_drop(p2_seg *seg, p2_err *err);
static void ob_free(p2_pagebuf *pb);
static void ob_forget_writebacks(p2_pagebuf *pb);

static p2_pagebuf *volatile pbufs[MAX_PBUFS];
static struct sigaction pbprev;
static int pbinstalled;
static volatile sig_atomic_t pbchaining;

static char *pb_addr(const p2_pagebuf *pb, uint64_t p) { return pb->seg->base + p * pb->pg; }

static int pb_protect(p2_pagebuf *pb, uint64_t p, int prot)
{
    return mprotect(pb_addr(pb, p), (size_t)pb->pg, prot);
}

/* Page p leaves its frame: its memory given back, and its next touch a fault (a missing
 * page under userfaultfd, PROT_NONE under SIGSEGV).  Under ship = ranges its announced
 * granules stay: a clean page's were announced for a write still to come. */
static void pb_mask_clear(p2_pagebuf *pb, uint64_t p);

static void pb_unmap(p2_pagebuf *pb, uint64_t p)
{
    (void)madvise(pb_addr(pb, p), (size_t)pb->pg, MADV_DONTNEED);
    (void)pb_protect(pb, p, pb->uffd_on ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static int pb_failed(p2_pagebuf *pb, p2_err *err)
{
    return seg_fail(pb->seg, err, P2_EIO, "%s", pb->why);
}

/* P2_EIO where the segment has failed (see @ref server), else P2_OK. */
static int pb_check(const p2_seg *seg, p2_err *err)
{
    return seg->pb->failed ? pb_failed(seg->pb, err) : P2_OK;
}

/* Announced granules m[] with the gaps between runs closer than PB_GAP filled in: what
 * ships (a few bytes more, one request less). */
static void pb_mask_fill(uint64_t *m)
{
    unsigned end = 0;     /* after the last set granule, 0: none yet */
    for (unsigned i = 0; i < PB_GRANULES; i++) {
        if (!(m[i / 64] >> (i % 64) & 1))
            continue;
        if (end != 0 && i - end < PB_GAP)
            for (unsigned j = end; j < i; j++)
                m[j / 64] |= 1ull << (j % 64);
        end = i + 1;
    }
}

/* The next run of set granules of m[] at or after *i: [*a, *i) after the call; 0: none. */
static int pb_mask_run(const uint64_t *m, unsigned *i, unsigned *a)
{
    while (*i < PB_GRANULES && !(m[*i / 64] >> (*i % 64) & 1))
        (*i)++;
    if (*i >= PB_GRANULES)
        return 0;
    *a = *i;
    while (*i < PB_GRANULES && (m[*i / 64] >> (*i % 64) & 1))
        (*i)++;
    return 1;
}

static int pb_mask_any(const uint64_t *m)
{
    return (m[0] | m[1] | m[2] | m[3]) != 0;
}

/* Page p's announced granules since the last sync (a mask of an older sync is emptied
 * here first: a sync forgets every page's at once). */
static uint64_t *pb_mask(p2_pagebuf *pb, uint64_t p)
{
    uint64_t *m = pb->wmask + p * (PB_GRANULES / 64);
    if (pb->mask_gen[p] != pb->sync_gen) {
        memset(m, 0, PB_GRANULES / 8);
        pb->mask_gen[p] = pb->sync_gen;
    }
    return m;
}

/* A sync (a commit, an abort) wrote or dropped every page's changes: what was announced
 * before it is forgotten, for every page at once. */
static void pb_masks_forget(p2_pagebuf *pb)
{
    if (pb->wmask != NULL && ++pb->sync_gen == 0)
        pb->sync_gen = 1;        /* 0 is a fresh page's: never current */
}

/* Does dirty page p go back as its announced ranges (else whole)?  Not a page the server
 * does not hold yet, nor the header's page (the runtime writes its header without
 * notices), nor a page dirtied with nothing announced. */
static int pb_by_ranges(p2_pagebuf *pb, uint64_t p)
{
    return pb->wmask != NULL && p != 0 && (pb->state[p] & PB_SRV) && pb_mask_any(pb_mask(pb, p));
}

/* What of dirty page p goes back to the server, into io (PB_MAXR entries at most): the
 * whole page, or under ship = ranges the announced ranges, coalesced (PB_GAP). */
static unsigned pb_ranges(p2_pagebuf *pb, uint64_t p, p2_io *io)
{
    if (!pb_by_ranges(pb, p)) {
        io[0] = (p2_io){pb_addr(pb, p), pb->pg, p * pb->pg};
        return 1;
    }
    uint64_t m[PB_GRANULES / 64], g = pb->pg / PB_GRANULES;
    memcpy(m, pb_mask(pb, p), sizeof m);
    pb_mask_fill(m);
    unsigned n = 0, i = 0, a;
    while (pb_mask_run(m, &i, &a))
        io[n++] = (p2_io){pb_addr(pb, p) + a * g, (i - a) * g, p * pb->pg + a * g};
    pb->st.ranges += n;
    return n;
}

static void pb_mask_clear(p2_pagebuf *pb, uint64_t p)
{
    if (pb->wmask != NULL)
        memset(pb_mask(pb, p), 0, PB_GRANULES / 8);
}

/* The granules of [off, off + n) announced, n > 0, off + n within the reservation. */
static void pb_mark(p2_pagebuf *pb, uint64_t off, uint64_t n)
{
    uint64_t g = pb->pg / PB_GRANULES;
    for (uint64_t i = off / g; i <= (off + n - 1) / g; i++) {
        unsigned k = (unsigned)(i % PB_GRANULES);
        pb_mask(pb, i / PB_GRANULES)[k / 64] |= 1ull << (k % 64);
    }
}

/* ship = ranges: the bytes [off, off + n) are about to be written (p2_seg_will_write). */
static void pb_note(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    p2_pagebuf *pb = (p2_pagebuf *)ctx;
    uint64_t top = pb->npages * pb->pg;
    (void)seg;
    if (n == 0 || off >= top)
        return;
    if (off + n > top || off + n < off)
        n = top - off;
    pb_mark(pb, off, n);
    uint32_t r = pb->nrecent++ % PB_RECENT;
    pb->recent[r][0] = off;
    pb->recent[r][1] = n;
}

/* Page p turns dirty: its first write since it was last written back is happening.  The
 * write was announced before it, maybe before a sync forgot p's notices (a sync between
 * an operation's notice and its write): the recent notices that touch p are its again. */
static void pb_turns_dirty(p2_pagebuf *pb, uint64_t p)
{
    pb->state[p] |= PB_DIRTY;
    pb->st.dirty++;
    if (pb->wmask == NULL)
        return;
    uint64_t lo = p * pb->pg, hi = lo + pb->pg;
    uint32_t n = pb->nrecent < PB_RECENT ? pb->nrecent : PB_RECENT;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = pb->recent[i][0], b = a + pb->recent[i][1];
        if (a < hi && b > lo)
            pb_mark(pb, a < lo ? lo : a, (b > hi ? hi : b) - (a < lo ? lo : a));
    }
}

/* ------------------------------------------------------------------------
 * ship = ranges: the pending store (section 9.4)
 *
 * A dirty page evicted under ship = ranges is not written back: its announced ranges
 * (with the ones it had pending, and the gaps shorter than PB_GAP filled in) are copied
 * into the store, a few bytes each, and the page leaves its frame clean.  A fetch of the
 * page applies them over what the server sends, so the process reads its own writes; a
 * write-back of the page (at sync, or of a page dirtied with nothing announced) takes
 * them with it; the sync ships the rest in one batch.  So a page evicted and fetched many
 * times between two syncs is written once, as the object server writes an object.  A
 * crash before the sync loses them, as it loses a transaction's pages.  The store holds
 * at most pend_max bytes (P2_SERVER_PENDING_BYTES): beyond it, it is written back whole
 * and the page that overflowed it is written back as before.
 * ------------------------------------------------------------------------ */

static pb_pend *pb_pend_of(const p2_pagebuf *pb, uint64_t p)
{
    return (pb->state[p] & PB_PEND) ? &pb->pend[pb->pend_of[p] - 1] : NULL;
}

static uint64_t pb_mask_bytes(const p2_pagebuf *pb, const uint64_t *m)
{
    uint64_t n = 0;
    for (unsigned w = 0; w < PB_GRANULES / 64; w++)
        n += (uint64_t)__builtin_popcountll(m[w]);
    return n * (pb->pg / PB_GRANULES);
}

/* Copy the granules of m between the page at `page` and the packed bytes at `packed`
 * (to_page: onto the page, else from it). */
static void pb_mask_copy(const p2_pagebuf *pb, const uint64_t *m, char *page, char *packed, int to_page)
{
    uint64_t g = pb->pg / PB_GRANULES, at = 0;
    unsigned i = 0, a;
    while (pb_mask_run(m, &i, &a)) {
        if (to_page)
            memcpy(page + a * g, packed + at, (size_t)((i - a) * g));
        else
            memcpy(packed + at, page + a * g, (size_t)((i - a) * g));
        at += (i - a) * g;
    }
}

/* Page p's entry dropped (the last entry takes its place). */
static void pb_pend_drop(p2_pagebuf *pb, uint64_t p)
{
    uint32_t k = pb->pend_of[p] - 1, last = --pb->npend;
    pb->pend_bytes -= pb->pend[k].nbytes;
    free(pb->pend[k].bytes);
    if (k != last) {
        pb->pend[k] = pb->pend[last];
        pb->pend_of[pb->pend[k].page] = k + 1;
    }
    pb->pend_of[p] = 0;
    pb->state[p] &= (uint8_t)~PB_PEND;
}

/* Page p's announced granules get m's too. */
static void pb_mask_or(p2_pagebuf *pb, uint64_t p, const uint64_t *m)
{
    uint64_t *t = pb_mask(pb, p);
    for (unsigned w = 0; w < PB_GRANULES / 64; w++)
        t[w] |= m[w];
}

/* Page p, fetched into buf, gets the bytes it has pending: the process reads its writes. */
static void pb_pend_apply(const p2_pagebuf *pb, uint64_t p, char *buf)
{
    const pb_pend *e = pb_pend_of(pb, p);
    if (e != NULL)
        pb_mask_copy(pb, e->mask, buf, e->bytes, 1);
}

/* Dirty page p is about to be written back: its entry goes with it (its granules join
 * the page's announced ones, or the page goes whole). */
static void pb_pend_fold(p2_pagebuf *pb, uint64_t p)
{
    const pb_pend *e = pb_pend_of(pb, p);
    if (e == NULL)
        return;
    if (pb_by_ranges(pb, p))
        pb_mask_or(pb, p, e->mask);
    pb_pend_drop(pb, p);
}

/* Every entry written back (several requests in flight), then the store emptied, its
 * granules the pages' again until the sync (see pb_write_back).  On a failure the entries
 * stay: the next sync writes them again. */
static int pb_pend_flush(p2_pagebuf *pb, p2_err *err)
{
    p2_io io[PB_IOS];
    uint64_t g = pb->pg / PB_GRANULES;
    for (uint32_t k = 0; k < pb->npend;) {
        unsigned m = 0;
        uint32_t first = k;
        for (; k < pb->npend && m + PB_MAXR <= sizeof io / sizeof io[0]; k++) {
            const pb_pend *e = &pb->pend[k];
            uint64_t at = 0;
            unsigned i = 0, a;
            while (pb_mask_run(e->mask, &i, &a)) {
                io[m++] = (p2_io){e->bytes + at, (i - a) * g, e->page * pb->pg + a * g};
                at += (i - a) * g;
            }
        }
        int rc = pb->be.ops->writev(&pb->be, io, m, err);
        if (rc != P2_OK)
            return rc;
        pb->st.ranges += m;
        for (uint32_t j = first; j < k; j++) {
            uint64_t p = pb->pend[j].page;
            if (pb->state[p] & PB_WB)
                pb->st.rewrites++;
            pb->state[p] |= PB_WB;
            pb->st.writebacks++;
        }
    }
    while (pb->npend > 0) {
        const pb_pend *e = &pb->pend[pb->npend - 1];
        pb_mask_or(pb, e->page, e->mask);
        pb_pend_drop(pb, e->page);
    }
    return P2_OK;
}

/* Dirty page p leaves its frame under ship = ranges (readable: its bytes are copied).
 * *kept: its ranges are in the store; else it is to be written back as before (the store
 * full: written back first, so that nothing older follows the page's write). */
static int pb_pend_put(p2_pagebuf *pb, uint64_t p, int *kept, p2_err *err)
{
    uint64_t m[PB_GRANULES / 64];
    const pb_pend *e = pb_pend_of(pb, p);
    memcpy(m, pb_mask(pb, p), sizeof m);
    for (unsigned w = 0; e != NULL && w < PB_GRANULES / 64; w++)
        m[w] |= e->mask[w];
    pb_mask_fill(m);
    uint64_t n = pb_mask_bytes(pb, m), old = e != NULL ? e->nbytes : 0;
    char *b = pb->pend_bytes - old + n <= pb->pend_max ? (char *)malloc((size_t)n) : NULL;
    if (b != NULL && e == NULL && pb->npend == pb->pend_cap) {
        uint32_t cap = pb->pend_cap ? 2 * pb->pend_cap : 64;
        pb_pend *t = (pb_pend *)realloc(pb->pend, cap * sizeof *t);
        if (t == NULL) {
            free(b);
            b = NULL;
        } else {
            pb->pend = t;
            pb->pend_cap = cap;
        }
    }
    *kept = b != NULL;
    if (b == NULL)            /* full (or no memory): written back, as without the store */
        return pb_pend_flush(pb, err);
    if (!(pb->state[p] & PB_PEND)) {
        pb->pend[pb->npend] = (pb_pend){p, {0}, NULL, 0};
        pb->pend_of[p] = ++pb->npend;
        pb->state[p] |= PB_PEND;
    }
    pb_pend *t = &pb->pend[pb->pend_of[p] - 1];
    pb_mask_copy(pb, m, pb_addr(pb, p), b, 0);
    free(t->bytes);
    t->bytes = b;
    pb->pend_bytes += n - t->nbytes;
    t->nbytes = n;
    memcpy(t->mask, m, sizeof m);
    return P2_OK;
}

/* Write back dirty pages list[0..n): read-only first (so a write after this faults and
 * marks the page dirty again), then all of them in one vectored request.  Under ship =
 * ranges a page's announced granules are forgotten only at a sync (pb_masks_forget): a
 * write-back keeps them, since a write announced before it may come after it (an
 * operation announces a block once, at its allocation, and may write it after hundreds
 * of other notices), so each later write-back ships every granule announced since the
 * last sync. */
static int pb_write_back(p2_pagebuf *pb, const uint32_t *list, unsigned n, p2_err *err)
{
    p2_io io[PB_IOS];
    while (n > 0) {
        unsigned k = 0, m = 0;
        for (; k < n && m + PB_MAXR <= sizeof io / sizeof io[0]; k++) {
            uint64_t p = list[k];
            pb_pend_fold(pb, p);
            m += pb_ranges(pb, p, io + m);
            if (pb->state[p] & PB_PROT)
                pb->state[p] &= (uint8_t)~PB_PROT;
            (void)pb_protect(pb, p, PROT_READ);
        }
        int rc = pb->be.ops->writev(&pb->be, io, m, err);
        for (unsigned i = 0; i < k; i++) {
            uint64_t p = list[i];
            if (rc != P2_OK) {          /* still dirty: writable again */
                (void)pb_protect(pb, p, PROT_READ | PROT_WRITE);
                continue;
            }
            if (pb->state[p] & PB_WB)
                pb->st.rewrites++;
            pb->state[p] = (uint8_t)((pb->state[p] & ~PB_DIRTY) | PB_SRV | PB_WB);
            pb->st.writebacks++;
            pb->st.dirty--;
        }
        if (rc != P2_OK)
            return rc;
        list += k;
        n -= k;
    }
    return P2_OK;
}

/* Drop frame f's page (written back first if dirty): the next touch faults it in.  Once
 * the segment has failed nothing more reaches the server: a dirty page is dropped
 * unwritten (the server keeps what was written before the failure). */
static int pb_evict(p2_pagebuf *pb, uint32_t f, p2_err *err)
{
    uint32_t p = pb->frame_page[f];
    if ((pb->state[p] & PB_DIRTY) && pb->failed) {
        pb->state[p] &= (uint8_t)~PB_DIRTY;
        pb->st.dirty--;
    } else if (pb->state[p] & PB_DIRTY) {
        int kept = 0, rc = P2_OK;
        if (pb->pend_of != NULL && !pb->txn && pb_by_ranges(pb, p)) {
            pb->state[p] &= (uint8_t)~PB_PROT;
            (void)pb_protect(pb, p, PROT_READ);      /* its bytes are read */
            rc = pb_pend_put(pb, p, &kept, err);
        }
        if (kept) {
            pb_mask_clear(pb, p);                     /* in its entry now */
            pb->state[p] &= (uint8_t)~PB_DIRTY;
            pb->st.dirty--;
        } else if (rc == P2_OK) {
            rc = pb_write_back(pb, &p, 1, err);
        }
        if (rc != P2_OK) {            /* still dirty: writable again */
            (void)pb_protect(pb, p, PROT_READ | PROT_WRITE);
            return rc;
        }
    }
    pb_unmap(pb, p);
    pb->state[p] &= (uint8_t)~(PB_RES | PB_PROT);
    pb->st.evictions++;
    pb->st.resident--;
    return P2_OK;
}

/* The clock: the first frame not referenced since the hand last passed.  A referenced
 * one is spared, its bit cleared and its page made inaccessible, so that its next touch
 * is seen (a hit) and sets the bit again.  Two turns at most.  Under a transaction the
 * hand passes over dirty pages (no steal): UINT32_MAX when every frame holds one.  It
 * passes over a frame being filled (its page not resident yet). */
static uint32_t pb_victim(p2_pagebuf *pb)
{
    for (uint64_t seen = 0; seen <= 2 * (uint64_t)pb->used; seen++) {
        uint32_t f = pb->hand;
        pb->hand = f + 1 >= pb->used ? 0 : f + 1;
        if (pb->txn && (pb->state[pb->frame_page[f]] & PB_DIRTY))
            continue;
        if (!(pb->state[pb->frame_page[f]] & PB_RES))
            continue;                    /* being filled: a miss's or its read-ahead's */
        if (!pb->frame_ref[f])
            return f;
        pb->frame_ref[f] = 0;
        uint32_t p = pb->frame_page[f];
        if (!(pb->state[p] & PB_PROT)) {
            pb->state[p] |= PB_PROT;
            (void)pb_protect(pb, p, PROT_NONE);
        }
    }
    return UINT32_MAX;
}

/* A page fell out of the fault: zeros, the segment failed (see @ref server). */
static void pb_fail_page(p2_pagebuf *pb, const p2_err *e)
{
    if (!pb->failed)
        snprintf(pb->why, sizeof pb->why, "a page could not be brought in from the server inside a "
                 "fault, so the operation read zeros for it; nothing more is written to the server "
                 "(%.300s)", e->msg);
    pb->failed = 1;
}

/* Dirty page p could not be written back to free a frame for `what` inside a fault: the
 * segment failed (see @ref server), as when a page cannot be read, naming the write-back. */
static void pb_fail_writeback(p2_pagebuf *pb, uint64_t p, const char *what, const p2_err *e)
{
    if (!pb->failed)
        snprintf(pb->why, sizeof pb->why, "page %" PRIu64 " could not be written back to free a frame "
                 "for %s inside a fault, so its changes since its last write-back are lost; nothing "
                 "more is written to the server (%.300s)", p, what, e->msg);
    pb->failed = 1;
}

/* Page p could not be placed in its frame inside a fault (`what` failed, errno says why):
 * the segment failed (see @ref server), as when a page cannot be read. */
static void pb_fail_place(p2_pagebuf *pb, uint64_t p, const char *what)
{
    if (!pb->failed)
        snprintf(pb->why, sizeof pb->why, "page %" PRIu64 " could not be placed in its frame inside a "
                 "fault (%s: %s), so it was left out; nothing more is written to the server",
                 p, what, strerror(errno));
    pb->failed = 1;
}

/* Under userfaultfd: page p copied in place from bounce page i (UFFDIO_COPY), with the
 * protection its range has now; wake: the copy wakes its toucher.  1: woken; 0: placed,
 * not woken (a page already there is left as it is); -1: failed (errno says why). */
static int pb_copy(p2_pagebuf *pb, uint64_t p, unsigned i, int wake)
{
#ifdef __linux__
    struct uffdio_copy c = {(uintptr_t)pb_addr(pb, p), (uintptr_t)(pb->bounce + i * pb->pg), pb->pg,
                            wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE, 0};
    if (!FI_INJECTED(UFFDIO_COPY) && ioctl(pb->uffd, UFFDIO_COPY, &c) == 0)
        return wake;
    return errno == EEXIST ? 0 : -1;
#else
    (void)pb; (void)p; (void)i; (void)wake;
    return 0;
#endif
}

/* Fill pages pages[0..*k) (k <= P2_SERVER_INFLIGHT; more than one only when fetched): their
 * bytes from the server (fetch), one read request a page, all in flight at once, else
 * zeros.  Under SIGSEGV the pages are made readable and writable and read in place; one
 * that cannot be made so ends the run before it (*k, and the segment failed).  Under
 * userfaultfd the reads land in the bounce pages, which pb_settle copies in place.
 * 1: the bytes arrived from the server; 0: zeros (not fetched, or the read failed and the
 * segment with it); -1: not even pages[0] could be made accessible. */
static int pb_fill(p2_pagebuf *pb, const uint64_t *pages, unsigned *k, int fetch)
{
    p2_io io[P2_SERVER_INFLIGHT];
    for (unsigned i = 0; i < *k; i++) {
        if (!pb->uffd_on && pb_protect(pb, pages[i], PROT_READ | PROT_WRITE) != 0) {
            pb_fail_place(pb, pages[i], "mprotect");
            *k = i;
            break;
        }
        io[i] = (p2_io){pb->uffd_on ? pb->bounce + i * pb->pg : pb_addr(pb, pages[i]), pb->pg,
                        pages[i] * pb->pg};
    }
    if (*k == 0)
        return -1;
    if (!fetch) {
        if (pb->uffd_on)
            memset(pb->bounce, 0, (size_t)pb->pg);
        return 0;
    }
    p2_err e;
    p2_err_clear(&e);
    if (pb->be.ops->readv(&pb->be, io, *k, &e) != P2_OK) {
        for (unsigned i = 0; i < *k; i++)
            memset(io[i].buf, 0, (size_t)pb->pg);
        pb_fail_page(pb, &e);
        return 0;
    }
    if (pb->reader)
        pl_reader_check(pb);
    for (unsigned i = 0; i < *k; i++)
        pb_pend_apply(pb, pages[i], io[i].buf);
    return 1;
}

/* Filled pages pages[0..k) into their frames frames[0..k), in order: each marked resident
 * and, under userfaultfd, copied in place (wake: pages[0]'s copy wakes its toucher, so its
 * state is final before it: a toucher let go may fault on it again at once).  A copy that
 * fails ends the run there, that page not resident (the segment failed).  How many were
 * placed; *woke: the toucher was woken. */
static unsigned pb_settle(p2_pagebuf *pb, const uint64_t *pages, const uint32_t *frames, unsigned k,
                          int wake, int *woke)
{
    *woke = 0;
    for (unsigned i = 0; i < k; i++) {
        uint64_t q = pages[i];
        pb->frame_of[q] = frames[i];
        pb->state[q] |= PB_RES;
        pb->st.resident++;
        int r = pb->uffd_on ? pb_copy(pb, q, i, i == 0 && wake) : 0;
        if (r < 0) {
            pb_fail_place(pb, q, "UFFDIO_COPY");
            pb->state[q] &= (uint8_t)~PB_RES;
            pb->st.resident--;
            return i;
        }
        *woke |= r;
    }
    return k;
}

/* Frame f free again: the last frame takes its place (the frames in use stay 0..used). */
static void pb_free_frame(p2_pagebuf *pb, uint32_t f)
{
    uint32_t last = --pb->used;
    if (f != last) {
        pb->frame_page[f] = pb->frame_page[last];
        pb->frame_ref[f] = pb->frame_ref[last];
        pb->frame_of[pb->frame_page[f]] = f;
    }
    if (pb->hand >= pb->used)
        pb->hand = 0;
}

/* Pages pages[0..k), claimed by a miss but not placed, given up: each absent again (its
 * next touch faults it in) and its frame frames[i] free.  The highest frame first, so
 * that the last frame, which takes a freed one's place, is none of the others. */
static void pb_give_back(p2_pagebuf *pb, const uint64_t *pages, uint32_t *frames, unsigned k)
{
    for (unsigned i = 0; i < k; i++)
        pb_unmap(pb, pages[i]);
    while (k > 0) {
        unsigned top = 0;
        for (unsigned i = 1; i < k; i++)
            if (frames[i] > frames[top])
                top = i;
        pb_free_frame(pb, frames[top]);
        frames[top] = frames[--k];
    }
}

/* A frame for a page read ahead: a free one, else the clock's victim, written back first
 * if dirty.  UINT32_MAX: none (every frame dirty under a transaction, or the victim could
 * not be written back: the segment failed, saying so). */
static uint32_t pb_frame(p2_pagebuf *pb)
{
    if (pb->used < pb->nframes)
        return pb->used++;
    uint32_t f = pb_victim(pb);
    p2_err e;
    p2_err_clear(&e);
    if (f != UINT32_MAX && pb_evict(pb, f, &e) != P2_OK) {
        pb_fail_writeback(pb, pb->frame_page[f], "a read-ahead", &e);
        return UINT32_MAX;
    }
    return f;
}

/* Read-ahead (P2_SERVER_READAHEAD=N at open; off by default, so that the page server's
 * requests are the paper's, one page a miss): a miss near the end of the run the last
 * miss brought in (within PB_RA_SLOP pages: a scan through clustered objects touches its
 * pages a little out of order) is a scan's, and brings in with it the pages in the window
 * after it that the server holds and no frame does, the window doubling at each such miss
 * (2, 4, ... N, at most P2_SERVER_INFLIGHT and a quarter of the frames) and falling back
 * to one page at a miss elsewhere.  So a scan keeps up to N requests in flight where it
 * waited for each.  The pages after p into pages[], their frames into frames[]; returns
 * how many (0: p alone).  Each frame is taken as a miss's (a victim written back first);
 * the clock passes over frames whose page is not resident yet, so none holding this
 * run's pages is taken again. */
#define PB_RA_SLOP 4u
static unsigned pb_ahead(p2_pagebuf *pb, uint64_t p, uint64_t *pages, uint32_t *frames)
{
    uint32_t cap = pb->nframes / 4 < pb->ra_max ? pb->nframes / 4 : pb->ra_max;
    int near = pb->ra_next != UINT64_MAX && p + PB_RA_SLOP >= pb->ra_next && p <= pb->ra_next + PB_RA_SLOP;
    pb->ra_win = near ? (pb->ra_win * 2 > cap ? cap : pb->ra_win * 2) : 1;
    unsigned n = 0;
    uint64_t q = p + 1, end = pb->seg->mapped / pb->pg;
    for (; q < p + pb->ra_win && q < end; q++) {
        if (pb->state[q] & PB_RES)
            continue;                    /* touched already, out of order */
        if (!(pb->state[q] & PB_SRV))
            break;                       /* past what the server holds */
        uint32_t f = pb_frame(pb);
        if (f == UINT32_MAX)
            break;
        pages[n] = q;
        frames[n++] = f;
        pb->frame_page[f] = (uint32_t)q;    /* claimed: not resident yet, the clock passes over it */
        pb->frame_ref[f] = 1;
    }
    pb->ra_next = q > pb->ra_next || !near ? q : pb->ra_next;
    return n;
}

/* Bring page p into a frame (a miss), and with it what read-ahead brings (pb_ahead);
 * write: the access writes.  0 on success, 1 where the toucher was woken already (under
 * userfaultfd a read's page is made read-only before it is placed, and its copy wakes the
 * toucher: one system call less than a copy, an mprotect and a wake), -1 on failure. */
static int pb_fault_in(p2_pagebuf *pb, uint64_t p, int write)
{
    p2_err e;
    p2_err_clear(&e);
    uint32_t f;
    pb->st.misses++;
    if (pb->used < pb->nframes) {
        f = pb->used++;
    } else if ((f = pb_victim(pb)) == UINT32_MAX) {
        if (pb->used == pb->cap)        /* cannot be: cap is every page of the reservation */
            return -1;
        f = pb->used++;                 /* a transaction larger than the buffer: one more */
    } else {
        if (pb_evict(pb, f, &e) != P2_OK) {
            /* the victim cannot be written back: the segment fails, and the victim is
               dropped unwritten (pb_evict once failed); the page coming in gets zeros */
            pb_fail_writeback(pb, pb->frame_page[f], "a miss", &e);
            (void)pb_evict(pb, f, &e);
        }
    }
    pb->frame_page[f] = (uint32_t)p;    /* claimed: not resident yet, the clock passes over it */
    pb->frame_ref[f] = 1;
    int fetch = (pb->state[p] & PB_SRV) && !pb->failed;
    uint64_t pages[P2_SERVER_INFLIGHT];
    uint32_t frames[P2_SERVER_INFLIGHT];
    pages[0] = p;
    frames[0] = f;
    unsigned n = 1 + (fetch && pb->ra_max > 1 ? pb_ahead(pb, p, pages + 1, frames + 1) : 0);
    int later = pb->uffd_on && !write;     /* placed read-only, waking the toucher */
    /* a page is resident once placed: read in place (SIGSEGV) or copied there (userfaultfd);
       those a failure left out (m..n) are given back, to be faulted in again */
    unsigned m = n;
    int arrived = pb_fill(pb, pages, &m, fetch);
    for (unsigned i = 0; i < m; i++)      /* read-only: a write to a read-ahead page is seen */
        if ((i > 0 || later) && pb_protect(pb, pages[i], PROT_READ) != 0) {
            pb_fail_place(pb, pages[i], "mprotect");
            m = i;
        }
    int woke = 0;
    m = pb_settle(pb, pages, frames, m, later, &woke);
    pb_give_back(pb, pages + m, frames + m, n - m);
    if (m == 0)
        return -1;
    if (arrived > 0)
        pb->st.bundled += m - 1;        /* what arrived with the miss, and stayed */
    if (later)
        return woke;
    if (write) {
        pb_turns_dirty(pb, p);
        return 0;
    }
    return pb_protect(pb, p, PROT_READ);
}

/* Handle a fault at a, in pb's reservation.  0: handled; -1: not ours to handle. */
static int pb_fault(p2_pagebuf *pb, char *a, int write)
{
    uint64_t off = (uint64_t)(a - pb->seg->base);
    if (off >= pb->seg->mapped)
        return -1;                       /* outside the database: a real fault */
    uint64_t p = off / pb->pg;
    uint8_t s = pb->state[p];
    if (!(s & PB_RES) && pb->uffd_on)   /* left inaccessible by the thread: missing again */
        return pb_protect(pb, p, PROT_READ | PROT_WRITE);
    if (!(s & PB_RES))
        return pb_fault_in(pb, p, write) < 0 ? -1 : 0;
    if (s & PB_PROT) {                   /* the clock had taken its reference bit */
        pb->st.hits++;
        pb->frame_ref[pb->frame_of[p]] = 1;
        pb->state[p] &= (uint8_t)~PB_PROT;
        if ((s & PB_DIRTY) || !write)
            return pb_protect(pb, p, (s & PB_DIRTY) ? PROT_READ | PROT_WRITE : PROT_READ);
    } else if (s & PB_DIRTY) {
        return -1;                       /* writable already: a real fault */
    }
    pb_turns_dirty(pb, p);               /* the first write since the last write-back */
    pb->frame_ref[pb->frame_of[p]] = 1;
    return pb_protect(pb, p, PROT_READ | PROT_WRITE);
}

static void pb_handler(int sig, siginfo_t *si, void *uc)
{
    char *a = (char *)si->si_addr;
    int write = 0;
#if defined(__x86_64__) && defined(REG_ERR)
    write = uc != NULL && (((ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
    for (int i = 0; i < MAX_PBUFS; i++) {
        p2_pagebuf *pb = pbufs[i];
        if (pb == NULL || a < pb->seg->base || a >= pb->seg->base + pb->seg->reserved)
            continue;
        if (pb_fault(pb, a, write) == 0)
            return;
        break;
    }
    /* not a page of ours: the previous handler's, as the journal's handler does */
    if (pbchaining) {
        signal(sig, SIG_DFL);
        return;
    }
    pbchaining = 1;
    if (pbprev.sa_flags & SA_SIGINFO) {
        if (pbprev.sa_sigaction != NULL) {
            pbprev.sa_sigaction(sig, si, uc);
            pbchaining = 0;
            return;
        }
    } else if (pbprev.sa_handler != SIG_DFL && pbprev.sa_handler != SIG_IGN) {
        pbprev.sa_handler(sig);
        pbchaining = 0;
        return;
    }
    pbchaining = 0;
    signal(sig, SIG_DFL);
}

/* Install the handler (again, on top, if another replaced it). */
static int pb_install(p2_seg *seg, p2_err *err)
{
    struct sigaction cur;
    if (pbinstalled && sigaction(SIGSEGV, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == pb_handler)
        return P2_OK;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = pb_handler;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;   /* on the thread's stack: a fault may wait on the server */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old) != 0)
        return seg_fail(seg, err, P2_EIO, "cannot install the page server's SIGSEGV handler: %s",
                        strerror(errno));
    pbprev = old;
    pbinstalled = 1;
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * 9.1 faults through userfaultfd
 *
 * Per open, a userfaultfd with the reservation registered for missing pages, and a
 * thread that serves them: the toucher stops in the kernel, the thread runs the same
 * buffer code the SIGSEGV handler runs (pb_fault_in: a frame, a victim written back,
 * the page read) and wakes it.  Cheaper than a signal and two mprotects per fault (the
 * spec's acob.md, section 8), and a system call given a missing page waits for it rather
 * than failing with EFAULT (where the kernel lets user faults alone be handled,
 * UFFD_USER_MODE_ONLY, it still fails).  Where the kernel refuses one (EPERM:
 * vm.unprivileged_userfaultfd = 0 without CAP_SYS_PTRACE; ENOSYS), or
 * P2_SERVER_FAULTS=sigsegv says so, the open keeps the SIGSEGV path; the counters say
 * which (p2_server_stats.userfaultfd).
 * ------------------------------------------------------------------------ */

#ifdef __linux__
/* A missing page at a was touched (write: by a write). */
static void pb_uffd_fault(p2_pagebuf *pb, char *a, int write)
{
    uint64_t p = (uint64_t)(a - pb->seg->base) / pb->pg;
    int rc = 0;
    if ((uint64_t)(a - pb->seg->base) >= pb->seg->mapped) {
        (void)pb_protect(pb, p, PROT_NONE);    /* outside the database: SIGSEGV says so */
    } else if (!(pb->state[p] & PB_RES) && (rc = pb_fault_in(pb, p, write)) < 0) {
        if (!pb->failed)
            snprintf(pb->why, sizeof pb->why, "page %" PRIu64 " could not be given a frame inside "
                     "a fault (%s), so the operation read zeros for it; nothing more is written to "
                     "the server", p, strerror(errno));
        pb->failed = 1;
        memset(pb->bounce, 0, (size_t)pb->pg);
        struct uffdio_copy c = {(uintptr_t)pb_addr(pb, p), (uintptr_t)pb->bounce, pb->pg,
                                UFFDIO_COPY_MODE_DONTWAKE, 0};
        (void)ioctl(pb->uffd, UFFDIO_COPY, &c);
    }
    if (rc == 1)
        return;                                /* the page's copy woke the toucher */
    struct uffdio_range r = {(uintptr_t)pb_addr(pb, p), pb->pg};
    (void)ioctl(pb->uffd, UFFDIO_WAKE, &r);
}

static void *pb_uffd_thread(void *arg)
{
    p2_pagebuf *pb = (p2_pagebuf *)arg;
    struct pollfd fds[2] = {{pb->uffd, POLLIN, 0}, {pb->uffd_stop, POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        if (fds[1].revents != 0)
            break;
        struct uffd_msg m;
        if (read(pb->uffd, &m, sizeof m) != (ssize_t)sizeof m || m.event != UFFD_EVENT_PAGEFAULT)
            continue;
        pb_uffd_fault(pb, (char *)(uintptr_t)m.arg.pagefault.address,
                      (m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0);
    }
    return NULL;
}
#endif

/* The segment's reservation (new, or made again by seg_create) under userfaultfd: the
 * descriptor and its thread at the first call; the reservation registered, readable and
 * writable (every page missing).  Where the kernel says no, the SIGSEGV path. */
static void pb_uffd_attach(p2_pagebuf *pb)
{
#ifdef __linux__
    const char *want = getenv("P2_SERVER_FAULTS");
    if (pb->uffd_base == pb->seg->base || (want != NULL && strcmp(want, "sigsegv") == 0))
        return;
    if (!pb->uffd_tried) {
        pb->uffd_tried = 1;
        int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
#ifdef UFFD_USER_MODE_ONLY
        if (fd < 0 && errno == EPERM)
            fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
#endif
        if (fd < 0)
            return;
        struct uffdio_api api = {UFFD_API, 0, 0};
        pb->bounce = (char *)mmap(NULL, (size_t)pb->pg * P2_SERVER_INFLIGHT, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        pb->uffd_stop = eventfd(0, EFD_CLOEXEC);
        pb->uffd = fd;
        if (ioctl(fd, UFFDIO_API, &api) != 0 || pb->bounce == MAP_FAILED || pb->uffd_stop < 0 ||
            pthread_create(&pb->uffd_thread, NULL, pb_uffd_thread, pb) != 0) {
            if (pb->bounce != MAP_FAILED)
                munmap(pb->bounce, (size_t)pb->pg * P2_SERVER_INFLIGHT);
            pb->bounce = NULL;
            if (pb->uffd_stop >= 0)
                close(pb->uffd_stop);
            close(fd);
            return;
        }
        pb->uffd_on = 1;
    }
    if (!pb->uffd_on)
        return;
    struct uffdio_register reg = {{(uintptr_t)pb->seg->base, pb->seg->reserved},
                                  UFFDIO_REGISTER_MODE_MISSING, 0};
    if (ioctl(pb->uffd, UFFDIO_REGISTER, &reg) == 0 &&
        mprotect(pb->seg->base, (size_t)pb->seg->reserved, PROT_READ | PROT_WRITE) == 0) {
        pb->uffd_base = pb->seg->base;
        return;
    }
    /* cannot be registered: its pages PROT_NONE again, and faults through SIGSEGV from now
       (the thread is stopped at close) */
    (void)mprotect(pb->seg->base, (size_t)pb->seg->reserved, PROT_NONE);
    pb->uffd_on = 0;
#else
    (void)pb;
#endif
}

/* The thread stopped, the descriptor closed (before the reservation is unmapped). */
static void pb_uffd_detach(p2_pagebuf *pb)
{
#ifdef __linux__
    if (pb->bounce != NULL) {         /* the thread was started */
        uint64_t one = 1;
        if (write(pb->uffd_stop, &one, sizeof one) == (ssize_t)sizeof one)
            (void)pthread_join(pb->uffd_thread, NULL);
        close(pb->uffd_stop);
        close(pb->uffd);
        pb->uffd_on = 0;
    }
#endif
    if (pb->bounce != NULL)
        munmap(pb->bounce, (size_t)pb->pg * P2_SERVER_INFLIGHT);
    pb->bounce = NULL;
}

/* ------------------------------------------------------------------------
 * 9.2 the hooks of section 4
 * ------------------------------------------------------------------------ */

/* Read n bytes at off from the server, around the buffer (the header at open). */
static int pb_read(p2_seg *seg, void *buf, uint64_t n, uint64_t off, p2_err *err)
{
    if (seg->pb->oc != NULL) {      /* an object server: its meta is here since the open */
        if (off + n > seg->mapped)
            return seg_fail(seg, err, P2_EFORMAT, "%" PRIu64 " bytes at %" PRIu64 " lie past the "
                            "database's cells", n, off);
        memcpy(buf, seg->base + off, (size_t)n);
        return P2_OK;
    }
    p2_io io = {buf, n, off};
    return seg->pb->be.ops->readv(&seg->pb->be, &io, 1, err);
}

/* The segment grows to `want` bytes: the server must hold them; the new pages are zero. */
static int pb_grow(p2_seg *seg, uint64_t want, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed)
        return pb_failed(pb, err);
    if (pb->oc != NULL)
        return ob_grow(seg, want, err);
    if (pb->uffd_on && pb->uffd_base != seg->base)   /* seg_create's reservation */
        pb_uffd_attach(pb);
    if (want > pb->be.size && pb->be.ops->grow(&pb->be, want, err) != P2_OK)
        return P2_ENOMEM;
    return P2_OK;
}

/* Write back every dirty page and flush the server. */
static int pb_sync(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->oc != NULL)
        return ob_sync(seg, err);
    if (pb->failed)
        return pb_failed(pb, err);
    if (pb->txn)
        return P2_OK;   /* only commits write (section 9.5): a new database's first too */
    uint32_t list[256];
    unsigned n = 0;
    for (uint32_t f = 0; f < pb->used; f++) {
        uint32_t p = pb->frame_page[f];
        if ((pb->state[p] & (PB_PEND | PB_DIRTY)) == PB_PEND) {
            /* in a frame: its entry goes back with it, as its ranges */
            pb_mask_or(pb, p, pb_pend_of(pb, p)->mask);
            pb->state[p] |= PB_DIRTY;
            pb->st.dirty++;
        }
        if (!(pb->state[p] & PB_DIRTY))
            continue;
        list[n++] = p;
        if (n == sizeof list / sizeof list[0]) {
            int rc = pb_write_back(pb, list, n, err);
            if (rc != P2_OK)
                return rc;
            n = 0;
        }
    }
    int rc = n ? pb_write_back(pb, list, n, err) : P2_OK;
    if (rc == P2_OK)
        rc = pb_pend_flush(pb, err);
    if (rc == P2_OK)
        rc = pb->be.ops->flush(&pb->be, err);
    if (rc == P2_OK)
        pb_masks_forget(pb);
    return rc;
}

static void pb_unregister(p2_pagebuf *pb)
{
    for (int i = 0; i < MAX_PBUFS; i++)
        if (pbufs[i] == pb)
            pbufs[i] = NULL;
}

/* Release everything but the reservation (the segment's close unmaps it). */
static void pb_free(p2_seg *seg)
{
    p2_pagebuf *pb = seg->pb;
    if (pb == NULL)
        return;
    pb_unregister(pb);
    pb_uffd_detach(pb);
    ob_free(pb);
    if (pb->be.ops != NULL)
        pb->be.ops->close(&pb->be);
    if (pb->log.ops != NULL)
        pb->log.ops->close(&pb->log);
    if (pb->frame_of != NULL)     /* the tables' mapping starts with frame_of */
        munmap(pb->frame_of, (size_t)pb->track_bytes);
    if (pb->wmask != NULL)        /* the mapping holds pend_of too */
        munmap(pb->wmask, (size_t)pb->wmask_bytes);
    for (uint32_t k = 0; k < pb->npend; k++)
        free(pb->pend[k].bytes);
    free(pb->pend);
    free(pb);
    seg->pb = NULL;
}

/* Close: data first, then the CLEAN mark, as a local file's close. */
static int pb_close(p2_seg *seg, p2_err *err)
{
    if (seg->pb->oc != NULL)
        return ob_close(seg, err);
    if (seg->pb->txn)
        return pl_close(seg, err);
    struct p2_seg_header *h = seg->hdr;
    int rc = P2_OK;
    if (seg->pb->failed) {
        rc = pb_failed(seg->pb, err);
    } else {
        roots_seal(seg);
        h->checksum = header_crc(h);
        rc = pb_sync(seg, err);
        if (rc == P2_OK) {
            h->state = SEG_STATE_CLEAN;
            h->checksum = header_crc(h);
            rc = pb_sync(seg, err);
        }
    }
    pb_free(seg);
    munmap(seg->base, (size_t)seg->reserved);
    seg_reset(seg);
    return rc;
}

/* ------------------------------------------------------------------------
 * 9.3 open, counters
 * ------------------------------------------------------------------------ */

int p2_seg_open_server_log(p2_seg *seg, const char *uri, uint32_t frames, uint32_t page,
                           const char *log_uri, int sync, uint64_t fingerprint, uint32_t nroots,
                           const char *const *root_names, const uint64_t *root_sizes,
                           uint64_t reserve, int *created, p2_err *err)
{
    if (created != NULL)
        *created = 0;
    if (seg == NULL || uri == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_open_server: seg or uri is NULL");
    if (log_uri == NULL && pl_reader_next)
        return p2_err_set(err, P2_EINVAL, "%s: a reader needs the log export that holds the "
                          "commit generation (pageserver(log = ...) under a journal or wal)", uri);
    seg_reset(seg);
    seg->pb = NULL;
    snprintf(seg->path, sizeof seg->path, "%s", uri);
    if ((page != 4096 && page != 8192) || page % page_size() != 0)
        return seg_fail(seg, err, P2_EINVAL, "page size %" PRIu32 " is not supported (4096 or 8192, "
                        "a multiple of the machine's %" PRIu64 ")", page, page_size());
    if (frames < 2)
        return seg_fail(seg, err, P2_EINVAL, "a client buffer of %" PRIu32 " frames: at least 2 are needed", frames);
    seg->alloc_exact = root_names != NULL && roots_exact(nroots, root_names);
    int rc = check_roots(seg, nroots, root_names, root_sizes, err);
    if (rc != P2_OK)
        return rc;
    p2_pagebuf *pb = (p2_pagebuf *)calloc(1, sizeof *pb);
    if (pb == NULL)
        return seg_fail(seg, err, P2_ENOMEM, "out of memory for the client buffer");
    seg->pb = pb;
    pb->seg = seg;
    pb->pg = page;
    pb->be.st = &pb->st;
    rc = backend_open(&pb->be, uri, err);
    if (rc != P2_OK) {
        pb->be.ops = NULL;   /* nothing to close: the open undid itself */
        if (pb->be.nbd != NULL || pb->be.fd >= 0)
            pb->be.ops = strncmp(uri, "file://", 7) == 0 ? &file_ops : &nbd_ops;
        pb_free(seg);
        seg_reset(seg);
        return rc;
    }
    if (reserve == 0)
        reserve = P2_SEG_DEFAULT_RESERVE;
    uint64_t g = seg_granule();
    seg->reserved = round_up(reserve > SEG_MAX_RESERVE ? SEG_MAX_RESERVE : reserve, g);
    if (!pb->be.growable && pb->be.size / g * g < seg->reserved)
        seg->reserved = pb->be.size / g * g;     /* an export holds what it holds */
    if (seg->reserved < 2 * g) {
        rc = seg_fail(seg, err, P2_ENOMEM, "the export holds %" PRIu64 " bytes: too small for a database "
                      "(%" PRIu64 " at least)", pb->be.size, 2 * g);
        goto fail;
    }
    pb->npages = seg->reserved / pb->pg;
    pb->nframes = frames;
    {   /* read-ahead: off unless P2_SERVER_READAHEAD asks (pb_ahead) */
        const char *ra = getenv("P2_SERVER_READAHEAD");
        long v = ra != NULL ? strtol(ra, NULL, 10) : 0;
        pb->ra_max = v < 0 ? 0 : v > P2_SERVER_INFLIGHT ? P2_SERVER_INFLIGHT : (uint32_t)v;
        pb->ra_win = 1;
        pb->ra_next = UINT64_MAX;
    }
    pb->st.frames = frames;
    /* a transaction keeps its dirty pages (no steal): the frame tables may need a frame
       per page of the reservation (lazily backed: only what is used costs memory) */
    pb->cap = log_uri != NULL && pb->npages > frames ? (uint32_t)pb->npages : frames;
    {   /* per page: state and frame; per frame: page and reference bit (lazily backed) */
        uint64_t bytes = round_up(pb->npages, 8) + 4 * pb->npages + 5 * (uint64_t)pb->cap;
        bytes = round_up(bytes, page_size());
        void *t = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (t == MAP_FAILED) {
            rc = seg_fail(seg, err, P2_ENOMEM, "cannot map the client buffer's tables: %s", strerror(errno));
            goto fail;
        }
        pb->track_bytes = bytes;
        pb->frame_of = (uint32_t *)t;
        pb->frame_page = pb->frame_of + pb->npages;
        pb->state = (uint8_t *)(pb->frame_page + pb->cap);
        pb->frame_ref = pb->state + round_up(pb->npages, 8);
    }
    if ((rc = seg_reserve(seg, err)) != P2_OK)
        goto fail;
    if ((rc = pb_install(seg, err)) != P2_OK)
        goto fail;
    pb_uffd_attach(pb);
    for (int i = 0;; i++) {
        if (i == MAX_PBUFS) {
            rc = seg_fail(seg, err, P2_ENOMEM, "more than %d page-server segments open in this process", MAX_PBUFS);
            goto fail;
        }
        if (pbufs[i] == NULL) {
            pbufs[i] = pb;
            break;
        }
    }

    /* with a log: the lease, and the last commit written back if it was not whole */
    if (log_uri != NULL && (rc = pl_open(seg, log_uri, sync, fingerprint, err)) != P2_OK)
        goto fail;
    /* an export of zeros is empty: a new database; anything else is validated */
    struct p2_seg_header h;
    static const struct p2_seg_header zero_header;
    /* a file that grows and holds nothing yet (a new NFS or local file) is empty too */
    if (pb->be.size == 0 && pb->be.growable && !pb->reader &&
        (rc = pb->be.ops->grow(&pb->be, P2_SEG_HEADER_SIZE, err)) != P2_OK)
        goto fail;
    if (pb->be.size < sizeof h) {
        rc = seg_fail(seg, err, P2_EFORMAT, "truncated: the server holds %" PRIu64 " bytes, "
                      "smaller than the %d-byte header", pb->be.size, P2_SEG_HEADER_SIZE);
        goto fail;
    }
    if ((rc = pb_read(seg, &h, sizeof h, 0, err)) != P2_OK)
        goto fail;
    if (memcmp(&h, &zero_header, sizeof h) == 0 && pb->reader) {
        rc = seg_fail(seg, err, P2_EINVAL, "a reader cannot create the database: the export holds "
                      "none yet (a writer's open creates it)");
        goto fail;
    } else if (memcmp(&h, &zero_header, sizeof h) == 0) {
        /* seg_create reserves again: give it a fresh segment state with the same buffer */
        munmap(seg->base, (size_t)seg->reserved);
        seg->base = NULL;
        pb->uffd_base = NULL;      /* the registration went with the mapping */
        rc = seg_create(seg, fingerprint, nroots, root_names, root_sizes, err);
        if (rc != P2_OK)
            goto fail;
        if (created != NULL)
            *created = 1;
    } else if (memcmp(h.magic, SEG_MAGIC, sizeof h.magic) == 0 && h.state == SEG_STATE_OPEN &&
               !pb->txn) {
        /* a server has no lock: the header a client marks OPEN is the lock. Its checksum is
           not asked for: the client's writes of the header between its open and its close
           (the file's size, evicted with its page) reach the server unchecksummed. */
        rc = seg_fail(seg, err, P2_EBUSY, "in use by another client (its header is marked open; "
                      "if no client uses it, one crashed without closing it)");
        goto fail;
    } else {
        rc = seg_validate(seg, &h, pb->be.size, fingerprint, nroots, root_names, root_sizes, err);
        if (rc == P2_OK && h.file_size > seg->reserved)
            rc = seg_fail(seg, err, P2_ENOMEM, "the database is %" PRIu64 " bytes, more than the %" PRIu64
                          " this open may map (pageserver(reserve = ...))", h.file_size, seg->reserved);
        if (rc != P2_OK)
            goto fail;
        seg->mapped = h.file_size;
        for (uint64_t p = 0; p < h.file_size / pb->pg; p++)
            pb->state[p] = PB_SRV;
        seg->hdr = (struct p2_seg_header *)(void *)seg->base;
        if (!pb->txn) {   /* with a log the lease marks the writer, and commits alone write */
            seg->hdr->state = SEG_STATE_OPEN;   /* faults the header page in */
            seg->hdr->checksum = header_crc(seg->hdr);
            if ((rc = pb_sync(seg, err)) != P2_OK)
                goto fail;
        }
    }
    if (seg->alloc_exact)
        seg->class_table = seg->hdr->roots[nroots - 1].off;
    return P2_OK;
fail:
    pb_free(seg);
    if (seg->base != NULL)
        munmap(seg->base, (size_t)seg->reserved);
    seg_reset(seg);
    return rc;
}

int p2_seg_open_server(p2_seg *seg, const char *uri, uint32_t frames, uint32_t page,
                       uint64_t fingerprint, uint32_t nroots, const char *const *root_names,
                       const uint64_t *root_sizes, uint64_t reserve, int *created, p2_err *err)
{
    return p2_seg_open_server_log(seg, uri, frames, page, NULL, 1, fingerprint, nroots, root_names,
                                  root_sizes, reserve, created, err);
}

int p2_seg_server_stats(const p2_seg *seg, p2_server_stats *out)
{
    if (seg == NULL || seg->pb == NULL || out == NULL)
        return 0;
    const p2_server_stats *s = &seg->pb->st;
    out->reads += s->reads;
    out->writes += s->writes;
    out->flushes += s->flushes;
    out->bytes_read += s->bytes_read;
    out->bytes_written += s->bytes_written;
    out->misses += s->misses;
    out->hits += s->hits;
    out->evictions += s->evictions;
    out->writebacks += s->writebacks;
    out->rewrites += s->rewrites;
    out->frames += s->frames;
    out->resident += s->resident;
    out->dirty += s->dirty;
    out->bundled += s->bundled;
    out->userfaultfd += seg->pb->uffd_on ? 1u : 0u;
    out->ranges += s->ranges;
    out->conflicts += s->conflicts;
    if (s->inflight > out->inflight)    /* a peak: the files' largest */
        out->inflight = s->inflight;
    return 1;
}

/* ------------------------------------------------------------------------
 * 9.4 ship = ranges: the hybrid (pages read, announced byte ranges written back)
 * ------------------------------------------------------------------------ */

int p2_seg_server_ship_ranges(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || seg->pb->oc != NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_server_ship_ranges: not a page-server segment");
    p2_pagebuf *pb = seg->pb;
    if (pb->wmask != NULL)
        return P2_OK;
    /* per page: its announced granules, their sync, and its entry in the pending store */
    uint64_t bytes = round_up(pb->npages * (PB_GRANULES / 8 + 8), page_size());
    void *t = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (t == MAP_FAILED)
        return seg_fail(seg, err, P2_ENOMEM, "cannot map the table of announced ranges: %s",
                        strerror(errno));
    pb->wmask = (uint64_t *)t;
    pb->wmask_bytes = bytes;
    pb->pend_of = (uint32_t *)(void *)(pb->wmask + pb->npages * (PB_GRANULES / 64));
    pb->mask_gen = pb->pend_of + pb->npages;
    pb->sync_gen = 1;
    const char *max = getenv("P2_SERVER_PENDING_BYTES");
    pb->pend_max = max != NULL ? strtoull(max, NULL, 10) : P2_SERVER_PENDING_BYTES;
    /* pages dirty before now have nothing announced: they go back whole */
    seg->will_write = pb_note;
    seg->will_write_ctx = pb;
    return P2_OK;
}

void p2_seg_server_stats_reset(p2_seg *seg)
{
    if (seg == NULL || seg->pb == NULL)
        return;
    p2_server_stats *s = &seg->pb->st;
    uint64_t frames = s->frames, resident = s->resident, dirty = s->dirty;
    memset(s, 0, sizeof *s);
    s->frames = frames;
    s->resident = resident;
    s->dirty = dirty;
    /* rewrites count from here: what was written back before is forgotten */
    if (seg->pb->oc != NULL) {
        ob_forget_writebacks(seg->pb);
        return;
    }
    for (uint64_t p = 0; p < seg->pb->npages; p++)
        seg->pb->state[p] &= (uint8_t)~PB_WB;
}

int p2_seg_server_drop(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_server_drop: not a page-server segment");
    p2_pagebuf *pb = seg->pb;
    if (pb->oc != NULL)
        return ob_drop(seg, err);
    if (pb->txn) {   /* an open transaction's pages stay: the server has not got them */
        for (uint32_t f = pb->used; f > 0;)
            if (!(pb->state[pb->frame_page[--f]] & PB_DIRTY))
                pl_drop_frame(pb, f);
        pb->hand = 0;
        return P2_OK;
    }
    int rc = pb_sync(seg, err);
    if (rc != P2_OK)
        return rc;
    for (uint32_t f = 0; f < pb->used; f++) {
        uint32_t p = pb->frame_page[f];
        pb_unmap(pb, p);
        pb->state[p] &= (uint8_t)~(PB_RES | PB_PROT);
        pb->frame_ref[f] = 0;
    }
    pb->used = 0;
    pb->hand = 0;
    pb->st.resident = 0;
    return P2_OK;
}
