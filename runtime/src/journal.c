/* ==========================================================================
 * 5. Journalled segments (design in p2_runtime.h, @ref journal)
 * ========================================================================== */

/* ------------------------------------------------------------------------
 * 5.1 Journalled segments: journal format, process-wide state
 * ------------------------------------------------------------------------ */

#define LOG_MAGIC    "P2GENJL"     /* 7 characters + NUL = 8 bytes */
#define LOG_VERSION  1u          /* the page journal's; a record log's before CRC-32C */
#define LOG_VERSION_RECORD 2u      /* the record log's: its records are checksummed with
                                      CRC-32C (3a); version 1 logs (CRC-32) are still read */
#define LOG_HDR_SIZE 64u
#define REC_PAGE     0x50414745u   /* "PAGE": one page image */
#define REC_COMMIT   0x434f4d54u   /* "COMT": the end of a transaction */
#define REC_RANGE    0x52414e47u   /* "RANG": bytes written at an offset (record log) */
#define REC_XACT     0x58414354u   /* "XACT": the files a transaction spans (record log) */
#define RANGE_OFF_BITS 46          /* a range record's offset: below MAX_RESERVE's 2^46 */
#define RANGE_MAX    (UINT32_C(1) << (64 - RANGE_OFF_BITS))   /* its length: 1 .. 256 KiB */
#define MAX_JSEGS    64            /* journalled segments open at once in a process */
#define IOV_BATCH    512

struct log_header {
    char     magic[8];
    uint32_t version;
    uint32_t page_size;
    uint64_t fingerprint;          /* the data file's: a journal is never replayed elsewhere */
    uint64_t base_seq;             /* the transaction the data file held when this journal
                                      was (re)started: its records continue from base_seq + 1;
                                      older records left behind by a crash are skipped */
    uint8_t  zero[28];
    uint32_t crc;                  /* CRC-32 of the header with this field 0 */
};
struct log_page {                  /* followed by the page's bytes */
    uint32_t magic;                /* REC_PAGE */
    uint32_t crc;                  /* CRC-32 of seq, pgno and the page bytes */
    uint64_t seq;                  /* the transaction */
    uint64_t pgno;                 /* page number in the data file */
};
struct log_commit {
    uint32_t magic;                /* REC_COMMIT */
    uint32_t crc;                  /* CRC-32 of this record with this field 0 */
    uint64_t seq;
    uint64_t npages;               /* page records of this transaction, just before */
    uint32_t pages_crc;            /* CRC-32 of their crc fields, in order */
    uint32_t zero;
};
/* A record log's unit: what a transaction wrote at one place. 16 bytes of header for a
 * TPC-B balance's 8 (a page record is 24 for 4096): offset and length share a word. */
struct log_range {                 /* followed by the bytes, zero-padded to a multiple of 8 */
    uint32_t magic;                /* REC_RANGE */
    uint32_t crc;                  /* CRC-32 of the transaction's seq, `where` and the bytes */
    uint64_t where;                /* offset | (length - 1) << RANGE_OFF_BITS */
};
/* A transaction over several files (p2_seg_commit_all) opens its records in each of them
 * with this: every file taking part and the transaction number it has there, so that
 * replay can tell whether each of them holds it (p2_wal_resolve). */
struct log_xact {                  /* followed by nparts struct log_xpart */
    uint32_t magic;                /* REC_XACT */
    uint32_t crc;                  /* CRC-32 of the transaction's seq, this record (crc 0)
                                      and its parts */
    uint64_t gtid;                 /* drawn for the transaction: the same in every file */
    uint32_t self;                 /* this file's number among the spec's logged files */
    uint32_t nparts;               /* 2 .. MAX_JSEGS */
};
struct log_xpart {
    uint32_t file;                 /* a file's number among the spec's logged files */
    uint32_t zero;
    uint64_t seq;                  /* the transaction's number in that file */
};
_Static_assert(sizeof(struct log_range) == 16, "range record header is 16 bytes");
_Static_assert(sizeof(struct log_xact) == 24 && sizeof(struct log_xpart) == 16,
               "transaction record layout");
_Static_assert(sizeof(struct log_header) == LOG_HDR_SIZE, "journal header is 64 bytes");
_Static_assert(sizeof(struct log_page) == 24, "page record header is 24 bytes");
_Static_assert(sizeof(struct log_commit) == 32, "commit record is 32 bytes");

static const p2_journal_opts journal_defaults = {1, 1, UINT64_C(4) << 20, 0, 0, 0};

static p2_seg *volatile jsegs[MAX_JSEGS];
static struct sigaction jprev;          /* the SIGSEGV action before ours */
static int jinstalled;
static volatile sig_atomic_t jchaining; /* inside the chained call of journal_fault */

static int bit_get(const uint8_t *bits, uint64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }
static void bit_set(uint8_t *bits, uint64_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static void bit_clear(uint8_t *bits, uint64_t i) { bits[i >> 3] &= (uint8_t)~(1u << (i & 7)); }

/* ------------------------------------------------------------------------
 * 5.2 Journalled segments: write tracking (the SIGSEGV handler)
 * ------------------------------------------------------------------------ */

/* The first write to a read-only page of a journalled segment lands here: note
 * the page as dirty and let the write through (into a private copy).  Any other
 * fault goes to the previous handler, or takes the default action. */
static void journal_fault(int sig, siginfo_t *si, void *uc)
{
    char *a = (char *)si->si_addr;
    for (int i = 0; i < MAX_JSEGS; i++) {
        p2_seg *s = jsegs[i];
        if (s == NULL || a < s->base || a >= s->base + s->mapped)
            continue;
        uint64_t pg = (uint64_t)(a - s->base) / s->pgsize;
        if (bit_get(s->dirty_bits, pg))
            break;                       /* already writable: a real fault */
        bit_set(s->dirty_bits, pg);
        s->dirty[s->ndirty++] = (uint32_t)pg;
        if (mprotect(s->base + pg * s->pgsize, (size_t)s->pgsize, PROT_READ | PROT_WRITE) == 0)
            return;
        break;
    }
    /* Back here from the handler we chain to: it faulted, or (as Python's faulthandler
     * does after printing its report) it put us back and raised the signal again.
     * Chaining again would recurse without end: take the default action instead. */
    if (jchaining) {
        signal(sig, SIG_DFL);
        return;
    }
    jchaining = 1;
    if (jprev.sa_flags & SA_SIGINFO) {
        if (jprev.sa_sigaction != NULL) {
            jprev.sa_sigaction(sig, si, uc);
            jchaining = 0;
            return;
        }
    } else if (jprev.sa_handler != SIG_DFL && jprev.sa_handler != SIG_IGN) {
        jprev.sa_handler(sig);
        jchaining = 0;
        return;
    }
    jchaining = 0;
    signal(sig, SIG_DFL);                /* the faulting access now takes the default action */
}

static int journal_install(p2_err *err, const char *why)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = journal_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old) != 0) {
        int e = errno;
        return p2_err_set(err, P2_EIO, "%s: cannot install the journal's SIGSEGV handler: %s",
                          why, strerror(e));
    }
    jprev = old;
    jinstalled = 1;
    return P2_OK;
}

int p2_journal_guard(p2_err *err)
{
    struct sigaction cur;
    if (!jinstalled)
        return P2_OK;
    if (sigaction(SIGSEGV, NULL, &cur) != 0) {
        int e = errno;
        return p2_err_set(err, P2_EIO, "cannot read the SIGSEGV action (the journal needs its "
                          "handler): %s", strerror(e));
    }
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == journal_fault)
        return P2_OK;
    /* Another handler replaced ours (Python's faulthandler.enable() or signal.signal, a
     * crash reporter): the next write to a journalled page would go to it and crash or
     * spin.  Put ours back on top; it passes that handler every fault that is not a
     * journal page's first write, as it passed the one before. */
    return journal_install(err, "the journal's SIGSEGV handler was replaced by another");
}

static void wal_note(void *ctx, p2_seg *seg, uint64_t off, uint64_t n);

static int journal_register(p2_seg *seg, p2_err *err)
{
    if (seg->jopts.record) {      /* told of every write by the hook: no faults to catch */
        seg->will_write = wal_note;
        seg->will_write_ctx = NULL;
        return P2_OK;
    }
    if (!jinstalled || p2_journal_guard(NULL) != P2_OK) {
        int rc = journal_install(NULL, "open");
        if (rc != P2_OK) {
            int e = errno;
            return seg_fail(seg, err, rc, "cannot install the journal's SIGSEGV handler: %s",
                            strerror(e));
        }
    }
    for (int i = 0; i < MAX_JSEGS; i++) {
        if (jsegs[i] == NULL) {
            jsegs[i] = seg;
            return P2_OK;
        }
    }
    return seg_fail(seg, err, P2_ENOMEM, "more than %d journalled files open in this process",
                    MAX_JSEGS);
}

static void journal_unregister(p2_seg *seg)
{
    for (int i = 0; i < MAX_JSEGS; i++)
        if (jsegs[i] == seg)
            jsegs[i] = NULL;
}

/* Per-page bookkeeping for the whole reservation, in one lazily backed mapping. */
static int journal_track(p2_seg *seg, p2_err *err)
{
    uint64_t n = seg->reserved / seg->pgsize;
    uint64_t bits = round_up((n + 7) / 8, 8);
    uint64_t bytes = 3 * bits + 4 * round_up(n * 4, 8) + n * 8;
    void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        return seg_fail(seg, err, P2_ENOMEM, "cannot reserve the journal's page tables: %s",
                        strerror(e));
    }
    char *c = (char *)p;
    seg->track_bytes = bytes;
    seg->dirty_bits = (uint8_t *)c;
    seg->unflushed_bits = (uint8_t *)(c + bits);
    seg->dirty = (uint32_t *)(void *)(c + 2 * bits);
    seg->unflushed = (uint32_t *)(void *)(c + 2 * bits + round_up(n * 4, 8));
    seg->img_off = (uint64_t *)(void *)(c + 2 * bits + 2 * round_up(n * 4, 8));
    seg->cov_slot = (uint32_t *)(void *)(c + 2 * bits + 2 * round_up(n * 4, 8) + n * 8);
    seg->kept_bits = (uint8_t *)(c + 2 * bits + 3 * round_up(n * 4, 8) + n * 8);
    seg->kept = (uint32_t *)(void *)(c + 3 * bits + 3 * round_up(n * 4, 8) + n * 8);
    seg->nkept = 0;
    return P2_OK;
}

static void journal_untrack(p2_seg *seg)
{
    free(seg->open_undo);
    seg->open_undo = NULL;
    seg->open_undo_len = seg->open_undo_cap = 0;
    seg->open_keep = 0;
    free(seg->undo);
    free(seg->undo_at);
    free(seg->redo);
    free(seg->cov);
    seg->undo = seg->redo = NULL;
    seg->undo_at = NULL;
    seg->cov = NULL;
    seg->undo_len = seg->undo_cap = seg->redo_cap = seg->nundo = seg->undo_at_cap = 0;
    seg->cov_cap = 0;
    if (seg->dirty_bits != NULL)
        munmap(seg->dirty_bits, (size_t)seg->track_bytes);
    seg->dirty_bits = seg->unflushed_bits = seg->kept_bits = NULL;
    seg->dirty = seg->unflushed = seg->kept = NULL;
    seg->nkept = 0;
    seg->img_off = NULL;
    seg->cov_slot = NULL;
}

/* ------------------------------------------------------------------------
 * 5.3 Journalled segments: journal file I/O, records, header
 * ------------------------------------------------------------------------ */

/* All of len bytes at off, or -1: pread / pwrite retried across short transfers and
 * EINTR (write: 1 to write buf, 0 to read into it). */
static int full_io(int fd, void *buf, size_t len, uint64_t off, int write)
{
    char *b = (char *)buf;
    while (len > 0) {
        ssize_t n = write ? pwrite(fd, b, len, (off_t)off) : pread(fd, b, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        b += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

static int full_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
    return full_io(fd, (void *)(uintptr_t)buf, len, off, 1);
}

static int full_pread(int fd, void *buf, size_t len, uint64_t off)
{
    return full_io(fd, buf, len, off, 0);
}

static uint32_t log_header_crc(const struct log_header *h)
{
    struct log_header c = *h;
    c.crc = 0;
    return p2_crc32(0, &c, sizeof c);
}

static uint32_t page_crc(uint64_t seq, uint64_t pgno, const void *data, uint64_t len)
{
    uint64_t k[2] = {seq, pgno};
    return p2_crc32(p2_crc32(0, k, sizeof k), data, (size_t)len);
}

/* The records' checksum in a log of version `version`: CRC-32C in a record log of
 * LOG_VERSION_RECORD, CRC-32 in the page journal and in record logs of earlier builds.
 * (The log header's own checksum is CRC-32 in every version: it is checked before the
 * version is believed.) */
static int log_c32c(uint32_t version)
{
    return version == LOG_VERSION_RECORD;
}

/* The version this segment writes. */
static uint32_t log_version(const p2_seg *seg)
{
    return seg->jopts.record ? LOG_VERSION_RECORD : LOG_VERSION;
}

/* Can this segment read a log of `version`: a page journal its own; a record log its own
 * and the CRC-32 one of earlier builds (replayed, then restarted in the new version). */
static int log_version_read(const p2_seg *seg, uint32_t version)
{
    return seg->jopts.record ? version == LOG_VERSION || version == LOG_VERSION_RECORD
                             : version == LOG_VERSION;
}

static uint32_t log_crc(int c32c, uint32_t crc, const void *data, size_t len)
{
    return c32c ? p2_crc32c(crc, data, len) : p2_crc32(crc, data, len);
}

static uint32_t range_crc(int c32c, uint64_t seq, uint64_t where, const void *data, uint64_t len)
{
    uint64_t k[2] = {seq, where};
    return log_crc(c32c, log_crc(c32c, 0, k, sizeof k), data, (size_t)len);
}

static uint32_t xact_crc(int c32c, uint64_t seq, const struct log_xact *x,
                         const struct log_xpart *parts)
{
    struct log_xact h = *x;
    h.crc = 0;
    uint32_t c = log_crc(c32c, 0, &seq, sizeof seq);
    c = log_crc(c32c, c, &h, sizeof h);
    return log_crc(c32c, c, parts, (size_t)h.nparts * sizeof *parts);
}

static uint32_t commit_crc(int c32c, const struct log_commit *c)
{
    struct log_commit x = *c;
    x.crc = 0;
    return log_crc(c32c, 0, &x, sizeof x);
}

static int log_fail(const p2_seg *seg, p2_err *err, int code, const char *what)
{
    int e = errno;
    return seg_fail(seg, err, code, "journal: %s: %s", what, strerror(e));
}

/* Empty the journal: a header continuing from seg->seq, synced.  The file keeps its size
 * and is overwritten in place (a sync then writes data, not file size and block maps): the
 * old records after the header have transactions <= base_seq, where recovery stops. */
static int journal_reset(p2_seg *seg, uint64_t fingerprint, p2_err *err)
{
    struct log_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, LOG_MAGIC, sizeof h.magic);
    h.version = log_version(seg);
    h.page_size = (uint32_t)seg->pgsize;
    h.fingerprint = fingerprint;
    h.base_seq = seg->seq;
    h.crc = log_header_crc(&h);
    if (full_pwrite(seg->log_fd, &h, sizeof h, 0) != 0 ||
        (seg->jopts.sync && fdatasync(seg->log_fd) != 0))
        return log_fail(seg, err, P2_EIO, "cannot write its header");
    struct stat st;
    seg->log_alloc = fstat(seg->log_fd, &st) == 0 ? (uint64_t)st.st_size : LOG_HDR_SIZE;
    seg->log_end = LOG_HDR_SIZE;
    return P2_OK;
}

/* Room in the journal file up to `need` bytes, allocated ahead in growing chunks, so that
 * most commits overwrite allocated blocks instead of extending the file, and so that a
 * full disk is found here, before anything of the transaction is written, not halfway
 * through its records. */
static int journal_room(p2_seg *seg, uint64_t need, p2_err *err)
{
    if (need <= seg->log_alloc)
        return P2_OK;
    /* a 1 MiB chunk at least; the journal rarely outgrows checkpoint + one transaction */
    uint64_t want = need + (UINT64_C(1) << 20);
    int e = posix_fallocate(seg->log_fd, (off_t)seg->log_alloc, (off_t)(want - seg->log_alloc));
    if (e == ENOSPC || e == EDQUOT) {    /* no room for the chunk: what this commit needs? */
        want = need;
        e = posix_fallocate(seg->log_fd, (off_t)seg->log_alloc, (off_t)(want - seg->log_alloc));
    }
    if (e == 0) {
        seg->log_alloc = want;
        return P2_OK;
    }
    if (e == EOPNOTSUPP || e == EINVAL || e == ENOSYS)
        return P2_OK;     /* the file system cannot reserve: the appends extend the file */
    return seg_fail(seg, err, P2_EIO,
                    "journal: cannot reserve %" PRIu64 " bytes for the transaction in %s%s "
                    "(%s); the transaction was not committed and is still open: free some space "
                    "and commit again, or abort it", need - seg->log_alloc, seg->path, LOG_SUFFIX(seg), strerror(e));
}

/* Record in the data file's header that it holds every transaction up to seg->seq (the
 * in-memory header is the committed one: no transaction is open when this runs). */
static int data_seq_write(p2_seg *seg, p2_err *err)
{
    struct p2_seg_header h = *seg->hdr;
    h.data_seq = seg->seq;
    h.checksum = header_crc(&h);
    if (full_pwrite(seg->fd, &h, sizeof h, 0) != 0)
        return log_fail(seg, err, P2_EIO, "cannot write the data file's header");
    return P2_OK;
}

/* Does a data file's header, as found at open, check out?  As it is; or, for a record log,
 * with data_seq read as the log's base_seq.  The record log logs the header's changed
 * fields and its checksum as they were in memory, where data_seq is always the log's
 * base_seq (a checkpoint writes the new data_seq and drops the cached header page before
 * the log restarts from it); data_seq itself is not logged.  So replaying a log over a
 * header whose data_seq was already advanced (by the replay's own last step, or by a
 * checkpoint that wrote the header and then died before restarting the log) leaves the
 * header's checksum computed for base_seq.  Such a header still says truly that the file
 * holds every transaction up to its data_seq: replay only writes newer values. */
static int data_header_ok(const struct p2_seg_header *h, const struct log_header *lh)
{
    if (memcmp(h->magic, SEG_MAGIC, sizeof h->magic) != 0)
        return 0;
    if (h->checksum == header_crc(h))
        return 1;
    if (lh == NULL || h->data_seq == lh->base_seq)
        return 0;
    struct p2_seg_header at_base = *h;
    at_base.data_seq = lh->base_seq;
    return h->checksum == header_crc(&at_base);
}

/* ------------------------------------------------------------------------
 * 5.4 Journalled segments: replay at open
 * ------------------------------------------------------------------------ */

/* The highest transaction number of a valid commit record in [from, size) that is above
 * `last` (0: none). Tells a torn tail (the last transaction was being written) from damage
 * in the middle of the journal, with committed transactions after it. */
static uint64_t commit_follows(int fd, int c32c, uint64_t from, uint64_t size, uint64_t last)
{
    enum { CHUNK = 1 << 20 };
    char *buf = (char *)malloc(CHUNK + sizeof(struct log_commit));
    uint64_t found = 0;
    if (buf == NULL)
        return UINT64_MAX;    /* cannot tell: assume the worst (refuse) */
    from = round_up(from, 8);
    for (uint64_t off = from; off + sizeof(struct log_commit) <= size; off += CHUNK) {
        uint64_t n = size - off < CHUNK + sizeof(struct log_commit) ? size - off
                                                                    : CHUNK + sizeof(struct log_commit);
        if (full_pread(fd, buf, (size_t)n, off) != 0)
            break;
        for (uint64_t i = 0; i + sizeof(struct log_commit) <= n && i < CHUNK; i += 8) {
            struct log_commit c;
            memcpy(&c, buf + i, sizeof c);
            if (c.magic == REC_COMMIT && c.seq > last && c.seq > found &&
                c.crc == commit_crc(c32c, &c))
                found = c.seq;
        }
    }
    free(buf);
    return found;
}

/* The complete transactions over several files a scan found (p2_wal_resolve): in
 * transaction order, each with its parts (struct log_xpart) in `parts`. */
struct wal_txn { uint64_t seq, gtid, first; uint32_t nparts, self; };
struct wal_txns {
    struct wal_txn *tx;
    uint64_t ntx, txcap;
    struct log_xpart *parts;
    uint64_t nparts, partcap;
};

/* The open transaction's records during a scan: (page number or `where`, offset of the
 * bytes in the journal) pairs, in a growing array. */
static int pend_push(p2_seg *seg, uint64_t **pend, uint64_t *npend, uint64_t *cap,
                     uint64_t key, uint64_t data_off, p2_err *err)
{
    if (*npend == *cap) {
        uint64_t ncap = *cap ? *cap * 2 : 64;
        uint64_t *np = (uint64_t *)realloc(*pend, (size_t)ncap * 2 * sizeof **pend);
        if (np == NULL)
            return seg_fail(seg, err, P2_ENOMEM, "journal: out of memory");
        *pend = np;
        *cap = ncap;
    }
    (*pend)[2 * *npend] = key;
    (*pend)[2 * *npend + 1] = data_off;
    (*npend)++;
    return P2_OK;
}

/* The data file is missing or empty but the journal holds committed changes: replaying
 * them alone would make a file of holes. */
static int journal_without_data(p2_seg *seg, p2_err *err)
{
    return seg_fail(seg, err, P2_EFORMAT, "journal: holds committed pages but the data "
                    "file is empty (was it deleted or truncated?); refusing to open");
}

/* A record that lies outside the data file as its own transaction committed it (a
 * crafted or corrupt log whose checksums hold): where, and what it would write. */
struct scan_beyond { uint64_t rec, seq, at, end, size; };

/* Keep the data file's bytes [at, at + len) that exist before the open (below
 * open_data_bytes), before the replay overwrites them: an entry of the bytes, then their
 * offset and length, so that open_undo_apply walks them back from the end. */
static int grow_buf(void *pp, uint64_t *cap, uint64_t need);
static int open_undo_keep(p2_seg *seg, uint64_t at, uint64_t len, p2_err *err)
{
    if (!seg->open_keep)
        return P2_OK;
    uint64_t n = at >= seg->open_data_bytes ? 0
               : (len < seg->open_data_bytes - at ? len : seg->open_data_bytes - at);
    uint64_t need = seg->open_undo_len + n + 16;
    if (grow_buf(&seg->open_undo, &seg->open_undo_cap, need) != 0)
        return seg_fail(seg, err, P2_ENOMEM, "journal: out of memory keeping what the replay "
                        "overwrites");
    uint8_t *e = seg->open_undo + seg->open_undo_len;
    if (n > 0 && full_pread(seg->fd, e, (size_t)n, at) != 0)
        return log_fail(seg, err, P2_EIO, "cannot read the data file before replaying into it");
    memcpy(e + n, &at, 8);
    memcpy(e + n + 8, &n, 8);
    seg->open_undo_len = need;
    return P2_OK;
}

/* Put back what the open wrote, for an open refused after its replay: the data file's
 * bytes, newest first, and its size; the log's first bytes and size, or no log if the
 * open made it. Synced. Every file is then byte for byte as before the open, and holds
 * the same committed transactions (the log still has those the replay had written). */
static int open_undo_apply(p2_seg *seg, p2_err *err)
{
    if (!seg->open_keep)
        return P2_OK;
    int bad = 0;
    for (uint64_t end = seg->open_undo_len; end >= 16;) {
        uint64_t at, n;
        memcpy(&at, seg->open_undo + end - 16, 8);
        memcpy(&n, seg->open_undo + end - 8, 8);
        end -= 16 + n;
        if (n > 0 && full_pwrite(seg->fd, seg->open_undo + end, (size_t)n, at) != 0)
            bad = 1;
    }
    struct stat st;
    if (fstat(seg->fd, &st) != 0)
        bad = 1;
    else if (seg->open_undo_len > 0 || (uint64_t)st.st_size != seg->open_data_bytes) {
        if (((uint64_t)st.st_size != seg->open_data_bytes &&
             ftruncate(seg->fd, (off_t)seg->open_data_bytes) != 0) || fdatasync(seg->fd) != 0)
            bad = 1;
    }
    char lpath[4096 + 16];
    snprintf(lpath, sizeof lpath, "%s%s", seg->path, LOG_SUFFIX(seg));
    if (seg->open_log_made) {
        if (unlink(lpath) != 0)
            bad = 1;
    } else if (seg->log_fd >= 0) {
        /* written only if the open restarted it (a refusal before that wrote nothing) */
        uint8_t now[sizeof seg->open_log_hdr];
        uint64_t n = seg->open_log_bytes < sizeof now ? seg->open_log_bytes : sizeof now;
        int same = fstat(seg->log_fd, &st) == 0 && (uint64_t)st.st_size == seg->open_log_bytes &&
                   (n == 0 || (full_pread(seg->log_fd, now, (size_t)n, 0) == 0 &&
                               memcmp(now, seg->open_log_hdr, (size_t)n) == 0));
        if (!same &&
            ((n > 0 && full_pwrite(seg->log_fd, seg->open_log_hdr, (size_t)n, 0) != 0) ||
             ftruncate(seg->log_fd, (off_t)seg->open_log_bytes) != 0 ||
             fdatasync(seg->log_fd) != 0))
            bad = 1;
    }
    seg->open_keep = 0;
    if (bad)
        return log_fail(seg, err, P2_EIO, "the open was refused after its replay and what the "
                        "replay wrote could not all be put back (the files hold the same "
                        "committed transactions; the next open replays the log again)");
    return P2_OK;
}

/* One pass over the journal from its header: the complete, checksummed transactions that
 * continue from base_seq, in order. Pass 0 only reads (to decide); pass 1 writes their
 * pages into the data file, up to transaction `upto`. *last: the last complete one;
 * *bad: where a damaged record stopped the walk (0: it ended at a torn tail or the end). */
static int journal_scan(p2_seg *seg, const struct log_header *lh, uint64_t size, uint64_t data_bytes,
                        int apply, uint64_t upto, uint64_t *last_out, uint64_t *bad_out,
                        uint64_t *applied_out, struct wal_txns *txns, struct scan_beyond *beyond,
                        p2_err *err)
{
    /* a page journal's records are pages; a record log's, ranges of up to RANGE_MAX bytes */
    uint64_t unit = seg->jopts.record ? RANGE_MAX : seg->pgsize;
    char *page = (char *)malloc((size_t)unit);
    /* the data file's header as the log leaves it after each transaction: the file's size
     * each commit committed (its file_size), which every record of it must lie inside */
    uint8_t *himg = (uint8_t *)calloc(1, P2_SEG_HEADER_SIZE);
    for (uint64_t got = 0; himg != NULL && seg->fd >= 0 && data_bytes > 0 && got < P2_SEG_HEADER_SIZE;) {
        ssize_t n = pread(seg->fd, himg + got, (size_t)(P2_SEG_HEADER_SIZE - got), (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(himg);
            free(page);
            return log_fail(seg, err, P2_EIO, "cannot read the data file's header");
        }
        if (n == 0)
            break;                  /* a shorter file: the rest of the header reads as 0 */
        got += (uint64_t)n;
    }
    if (beyond != NULL)
        memset(beyond, 0, sizeof *beyond);
    uint64_t *pend = NULL, npend = 0, cap = 0;   /* (pgno or `where`, data offset) of the open
                                                    transaction */
    uint64_t off = LOG_HDR_SIZE, applied = 0, last = lh->base_seq, bad = 0;
    uint32_t pages_crc = 0;
    int c32c = log_c32c(lh->version);
    int rc = P2_OK;
    int have_x = 0;                  /* the open transaction spans files (REC_XACT) */
    struct log_xact xh;
    struct log_xpart xp[MAX_JSEGS];
    memset(&xh, 0, sizeof xh);
    if (page == NULL || himg == NULL) {
        free(page);
        free(himg);
        return seg_fail(seg, err, P2_ENOMEM, "journal: out of memory");
    }
    while (rc == P2_OK && off + sizeof(struct log_page) <= size && !(apply && last >= upto)) {
        struct log_page r;
        if (full_pread(seg->log_fd, &r, sizeof r, off) != 0) {
            rc = log_fail(seg, err, P2_EIO, "cannot read it");
            break;
        }
        if ((r.magic == REC_PAGE || r.magic == REC_COMMIT) && r.seq <= lh->base_seq)
            break;        /* an older generation's record: the journal is reused in place */
        if (r.magic == REC_XACT && seg->jopts.record) {
            struct log_xact x;
            memcpy(&x, &r, sizeof x);
            if (x.nparts < 2 || x.nparts > MAX_JSEGS || have_x || npend != 0) {
                bad = off;     /* only first in a transaction, and only once */
                break;
            }
            uint64_t plen = (uint64_t)x.nparts * sizeof(struct log_xpart);
            if (off + sizeof x + plen > size)
                break;                                   /* torn tail */
            if (full_pread(seg->log_fd, xp, (size_t)plen, off + sizeof x) != 0) {
                rc = log_fail(seg, err, P2_EIO, "cannot read it");
                break;
            }
            if (x.crc != xact_crc(c32c, last + 1, &x, xp)) {
                bad = off;
                break;
            }
            have_x = 1;
            xh = x;
            pages_crc = log_crc(c32c, pages_crc, &x.crc, sizeof x.crc);
            off += sizeof x + plen;
        } else if (r.magic == REC_RANGE && seg->jopts.record) {
            struct log_range g;
            memcpy(&g, &r, sizeof g);
            uint64_t len = (g.where >> RANGE_OFF_BITS) + 1;
            uint64_t at = g.where & ((UINT64_C(1) << RANGE_OFF_BITS) - 1);
            if (off + sizeof g + round_up(len, 8) > size)
                break;                                   /* torn tail */
            if (full_pread(seg->log_fd, page, (size_t)len, off + sizeof g) != 0) {
                rc = log_fail(seg, err, P2_EIO, "cannot read it");
                break;
            }
            if (g.crc != range_crc(c32c, last + 1, g.where, page, len)) {
                bad = off;      /* damaged, or left behind by an earlier generation of the log */
                break;
            }
            if (at > seg->reserved || len > seg->reserved - at) {
                bad = off;
                break;
            }
            if (data_bytes == 0) {
                rc = journal_without_data(seg, err);
                break;
            }
            if ((rc = pend_push(seg, &pend, &npend, &cap, g.where, off + sizeof g, err)) != P2_OK)
                break;
            pages_crc = log_crc(c32c, pages_crc, &g.crc, sizeof g.crc);
            off += sizeof g + round_up(len, 8);
        } else if (r.magic == REC_PAGE && !seg->jopts.record) {
            if (off + sizeof r + seg->pgsize > size)
                break;                                   /* torn tail */
            if (full_pread(seg->log_fd, page, (size_t)seg->pgsize, off + sizeof r) != 0) {
                rc = log_fail(seg, err, P2_EIO, "cannot read it");
                break;
            }
            if (r.crc != page_crc(r.seq, r.pgno, page, seg->pgsize) ||
                r.pgno >= seg->reserved / seg->pgsize) {
                bad = off;
                break;
            }
            if (data_bytes == 0) {
                rc = journal_without_data(seg, err);
                break;
            }
            if ((rc = pend_push(seg, &pend, &npend, &cap, r.pgno, off + sizeof r, err)) != P2_OK)
                break;
            pages_crc = log_crc(c32c, pages_crc, &r.crc, sizeof r.crc);
            off += sizeof r + seg->pgsize;
        } else if (r.magic == REC_COMMIT) {
            struct log_commit c;
            if (off + sizeof c > size)
                break;                                   /* torn tail */
            if (full_pread(seg->log_fd, &c, sizeof c, off) != 0) {
                rc = log_fail(seg, err, P2_EIO, "cannot read it");
                break;
            }
            if (c.crc != commit_crc(c32c, &c) || c.npages != npend + (uint64_t)have_x ||
                c.pages_crc != pages_crc || c.seq != last + 1) {
                bad = off;
                break;
            }
            /* What the transaction committed as the data file's size: its header as the
             * log leaves it (the records' bytes that fall in the header, in order, over
             * the header before).  Every record of it must lie inside that size, and the
             * size inside the reservation: checked before any of it is written. */
            uint64_t fsize = 0, beyond_at = 0;
            for (uint64_t i = 0; i < npend && rc == P2_OK; i++) {
                uint64_t len = seg->pgsize, at = pend[2 * i] * seg->pgsize;
                if (seg->jopts.record) {
                    len = (pend[2 * i] >> RANGE_OFF_BITS) + 1;
                    at = pend[2 * i] & ((UINT64_C(1) << RANGE_OFF_BITS) - 1);
                } else if (pend[2 * i] >= seg->reserved / seg->pgsize) {
                    continue;               /* refused below (no overflow in at) */
                }
                if (at < P2_SEG_HEADER_SIZE &&
                    full_pread(seg->log_fd, himg + at,
                               (size_t)(len < P2_SEG_HEADER_SIZE - at ? len : P2_SEG_HEADER_SIZE - at),
                               pend[2 * i + 1]) != 0)
                    rc = log_fail(seg, err, P2_EIO, "cannot read it");
            }
            if (rc != P2_OK)
                break;
            memcpy(&fsize, himg + offsetof(struct p2_seg_header, file_size), sizeof fsize);
            for (uint64_t i = 0; i < npend; i++) {
                uint64_t len = seg->pgsize, at;
                if (seg->jopts.record) {
                    len = (pend[2 * i] >> RANGE_OFF_BITS) + 1;
                    at = pend[2 * i] & ((UINT64_C(1) << RANGE_OFF_BITS) - 1);
                } else {
                    at = pend[2 * i] < seg->reserved / seg->pgsize ? pend[2 * i] * seg->pgsize
                                                                  : seg->reserved;
                }
                if (fsize > seg->reserved || at > fsize || len > fsize - at) {
                    beyond_at = pend[2 * i + 1] - (seg->jopts.record ? sizeof(struct log_range)
                                                                     : sizeof(struct log_page));
                    if (beyond != NULL) {
                        beyond->rec = beyond_at;
                        beyond->seq = c.seq;
                        beyond->at = at;
                        beyond->end = at + len;
                        beyond->size = fsize;
                    }
                    break;
                }
            }
            if (beyond_at != 0) {
                bad = beyond_at;
                break;
            }
            if (have_x && txns != NULL) {
                if (grow_buf(&txns->tx, &txns->txcap, (txns->ntx + 1) * sizeof *txns->tx) != 0 ||
                    grow_buf(&txns->parts, &txns->partcap,
                             (txns->nparts + xh.nparts) * sizeof *txns->parts) != 0) {
                    rc = seg_fail(seg, err, P2_ENOMEM, "journal: out of memory");
                    break;
                }
                struct wal_txn *t = &txns->tx[txns->ntx++];
                t->seq = c.seq;
                t->gtid = xh.gtid;
                t->first = txns->nparts;
                t->nparts = xh.nparts;
                t->self = xh.self;
                memcpy(txns->parts + txns->nparts, xp, xh.nparts * sizeof *xp);
                txns->nparts += xh.nparts;
            }
            have_x = 0;
            for (uint64_t i = 0; apply && i < npend && rc == P2_OK; i++) {
                uint64_t len = seg->pgsize, at = pend[2 * i] * seg->pgsize;
                if (seg->jopts.record) {
                    len = (pend[2 * i] >> RANGE_OFF_BITS) + 1;
                    at = pend[2 * i] & ((UINT64_C(1) << RANGE_OFF_BITS) - 1);
                }
                if ((rc = open_undo_keep(seg, at, len, err)) != P2_OK)
                    break;
                if (full_pread(seg->log_fd, page, (size_t)len, pend[2 * i + 1]) != 0 ||
                    full_pwrite(seg->fd, page, (size_t)len, at) != 0)
                    rc = log_fail(seg, err, P2_EIO, "cannot replay it into the data file");
            }
            applied++;
            last = c.seq;
            npend = 0;
            pages_crc = 0;
            off += sizeof c;
        } else {
            bad = off;
            break;
        }
    }
    free(page);
    free(pend);
    free(himg);
    *last_out = last;
    *bad_out = bad;
    *applied_out = applied;
    return rc;
}

/* Open the journal and replay every complete transaction into the data file
 * (data_bytes long before recovery).  The journal is read once to decide -- checksums,
 * order, and every record inside the data file's size its own transaction committed
 * (journal_scan) -- and written into the data file only when it will be opened: a refusal
 * leaves both files as they were.  What the replay overwrites is kept (open_undo_keep),
 * so that a refusal after it (the replayed header, the caller's integrity check:
 * p2_seg_close_refused) puts every byte back (open_undo_apply).  The data file's header says up to which transaction its pages were written
 * (data_seq); the journal must reach at least that far, else committed transactions
 * were lost from it and replaying the rest over newer pages would make a mixture:
 * refused.  Damage in the journal's last transaction (its commit record intact, a page
 * record torn) drops that transaction, like a torn tail: its records went out in one
 * write, and its commit was acknowledged only after that write was synced (sync on, one
 * commit per group), so a torn page proves the commit never returned; with group commit
 * or nosync the promise already leaves the last group to an OS crash.  Damage with later
 * transactions after it is refused.  In recovery mode (seg->recovering, `p2gen recover`)
 * the dead ends are taken instead: the transactions before the damage are replayed and
 * the later ones dropped; a journal that is missing or ends too early is not replayed
 * and the data file is taken as it is (seg->rec_journal says which, rec_tx_dropped how
 * many transactions were lost). */
static int journal_recover(p2_seg *seg, uint64_t fingerprint, uint64_t data_bytes, p2_err *err)
{
    uint64_t dseq = 0;          /* 0: unknown (no file yet, or its header is damaged) */
    int dopen = 0;              /* the data file was committed to and not closed cleanly */
    int dnever = 0;             /* it was made and never checkpointed: it needs its journal */
    int dread = 0;              /* dh holds the data file's header as found */
    struct p2_seg_header dh;
    if (data_bytes >= P2_SEG_HEADER_SIZE && full_pread(seg->fd, &dh, sizeof dh, 0) == 0) {
        dread = 1;
        if (data_header_ok(&dh, NULL)) {
            dseq = dh.data_seq;
            dopen = dh.state == SEG_STATE_OPEN && dh.journal;
            dnever = dh.state == SEG_STATE_OPEN && !dh.journal;
        }
    }
    char lpath[4096 + 16];
    snprintf(lpath, sizeof lpath, "%s%s", seg->path, LOG_SUFFIX(seg));
    seg->log_fd = open(lpath, O_RDWR | O_CLOEXEC);
    if (seg->log_fd < 0 && errno == ENOENT) {
        seg->log_fd = open(lpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        seg->open_log_made = seg->log_fd >= 0;
    }
    if (seg->log_fd < 0)
        return log_fail(seg, err, P2_EIO, "cannot open it");
    struct stat st;
    if (fstat(seg->log_fd, &st) != 0)
        return log_fail(seg, err, P2_EIO, "cannot stat it");
    uint64_t size = (uint64_t)st.st_size;
    /* what the open may write, kept so that a refusal after it puts every byte back */
    seg->open_data_bytes = data_bytes;
    seg->open_log_bytes = size;
    memset(seg->open_log_hdr, 0, sizeof seg->open_log_hdr);
    if (size > 0 && full_pread(seg->log_fd, seg->open_log_hdr,
                               (size_t)(size < sizeof seg->open_log_hdr ? size : sizeof seg->open_log_hdr), 0) != 0)
        return log_fail(seg, err, P2_EIO, "cannot read its header");
    seg->open_keep = 1;
    if (size < LOG_HDR_SIZE) {    /* new, or torn while being created: nothing to replay */
        /* A data file is made only after its journal has a header (synced): a data file
         * without one lost its journal, and with it every transaction not checkpointed. */
        if ((dopen || dnever) && !seg->recovering)
            return seg_fail(seg, err, P2_EFORMAT, "journal: %s%s is missing or empty but the "
                            "data file was not closed cleanly and depends on it (%s); refusing to "
                            "open without the journal that makes it consistent (`p2gen recover` "
                            "offers the data file as it is)", seg->path, LOG_SUFFIX(seg),
                            dopen ? "its last transactions are only in the journal"
                                  : "it was never checkpointed: every committed transaction is "
                                    "only in the journal");
        if (dopen || dnever)
            seg->rec_journal = 1;
        seg->seq = dseq;
        return journal_reset(seg, fingerprint, err);
    }
    struct log_header lh;
    if (full_pread(seg->log_fd, &lh, sizeof lh, 0) != 0)
        return log_fail(seg, err, P2_EIO, "cannot read its header");
    if (memcmp(lh.magic, LOG_MAGIC, sizeof lh.magic) != 0)
        return seg_fail(seg, err, P2_EFORMAT, "journal: %s%s is not a p2gen journal (bad magic)",
                        seg->path, LOG_SUFFIX(seg));
    if (lh.crc != log_header_crc(&lh))
        return seg_fail(seg, err, P2_EFORMAT, "journal: header checksum mismatch: the journal is "
                        "corrupt; refusing to open (committed transactions may be in it)");
    if (!log_version_read(seg, lh.version) || lh.page_size != seg->pgsize)
        return seg_fail(seg, err, P2_EFORMAT, "journal: %s%s is version %" PRIu32 " with %"
                        PRIu32 "-byte pages; this build reads %s with %" PRIu64 "-byte pages "
                        "(a log of a newer build, or of the other kind of journal)",
                        seg->path, LOG_SUFFIX(seg), lh.version, lh.page_size,
                        seg->jopts.record ? "record logs of versions 1 and 2" :
                                            "page journals of version 1", seg->pgsize);
    if (lh.fingerprint != fingerprint)
        return seg_fail(seg, err, P2_EMISMATCH, "journal: written by a different spec or equation "
                        "(fingerprint 0x%016" PRIx64 ", expected 0x%016" PRIx64 ")",
                        lh.fingerprint, fingerprint);
    if (seg->jopts.record && dseq == 0 && dread && data_header_ok(&dh, &lh))
        dseq = dh.data_seq;       /* a header replayed over an advanced data_seq (see there) */

    uint64_t last = 0, bad = 0, applied = 0;
    struct scan_beyond beyond;
    int rc = journal_scan(seg, &lh, size, data_bytes, 0, 0, &last, &bad, &applied, NULL, &beyond, err);
    if (rc != P2_OK)
        return rc;
    seg->log_fresh = lh.base_seq == 0 && last == 0 && bad == 0;   /* nothing ever committed */
    if (beyond.rec != 0 && !seg->recovering)
        return seg_fail(seg, err, P2_EFORMAT,
                        "journal: the record at offset %" PRIu64 " (transaction %" PRIu64 ") writes "
                        "bytes %" PRIu64 "..%" PRIu64 " of the data file, beyond the %" PRIu64
                        " bytes its transaction commits as the file's size (reservation %" PRIu64
                        "): a crafted or corrupt journal; refusing to open, nothing was written "
                        "(%" PRIu64 " transactions before it are intact; `p2gen recover` keeps "
                        "those and drops the rest)", beyond.rec, beyond.seq, beyond.at, beyond.end,
                        beyond.size, seg->reserved, applied);
    uint64_t later = bad != 0 ? commit_follows(seg->log_fd, log_c32c(lh.version), bad + 8, size, last + 1) : 0;
    if (beyond.rec != 0 && later == 0)
        later = last + 1;         /* recovery: the transaction is dropped, not taken as torn */
    if (later != 0 && !seg->recovering)
        return seg_fail(seg, err, P2_EFORMAT,
                        "journal: damaged at offset %" PRIu64 " with committed transactions after it; "
                        "refusing to open rather than lose them (%" PRIu64 " transactions before it "
                        "are intact; `p2gen recover` keeps those and drops the rest)", bad, applied);
    if (dseq > last && !seg->recovering)
        return seg_fail(seg, err, P2_EFORMAT,
                        "journal: ends at transaction %" PRIu64 " but the data file already holds "
                        "transactions up to %" PRIu64 ": committed transactions are missing from the "
                        "journal (truncated or damaged?); refusing to open a mixture of both "
                        "(`p2gen recover` offers the data file as it is)", last, dseq);
    if (dseq > last) {            /* recovery: replaying older pages over newer ones would mix */
        seg->rec_journal = 3;
        seg->rec_tx_dropped = dseq - last;
        seg->seq = dseq;
        return journal_reset(seg, fingerprint, err);
    }
    if (later != 0) {
        seg->rec_journal = 2;
        seg->rec_tx_dropped = later == UINT64_MAX ? 1 : later - last;
    }
    if (seg->jopts.limited && seg->jopts.upto < last) {
        /* a transaction over several files that one of them lacks (p2_wal_resolve), and
         * every later one: the crash came between the files' writes of its commit */
        uint64_t held = dseq > lh.base_seq ? dseq : lh.base_seq;
        if (seg->jopts.upto < held && !seg->recovering)
            return seg_fail(seg, err, P2_EFORMAT,
                            "record log: the data file already holds transaction %" PRIu64
                            ", which spans several files, and another of them lacks it; "
                            "refusing to open a mixture of the files", seg->jopts.upto + 1);
        if (seg->jopts.upto >= held)
            last = seg->jopts.upto;
    }
    if (last > lh.base_seq) {
        rc = journal_scan(seg, &lh, size, data_bytes, 1, last, &last, &bad, &applied, NULL, NULL, err);
        if (rc != P2_OK)
            return rc;
    }
    seg->seq = last;
    if (last > lh.base_seq) {
        /* the replayed header: now holds everything up to last */
        if (full_pread(seg->fd, &dh, sizeof dh, 0) != 0)
            return log_fail(seg, err, P2_EIO, "cannot read the replayed header");
        if (data_header_ok(&dh, seg->jopts.record ? &lh : NULL)) {
            dh.data_seq = last;
            dh.checksum = header_crc(&dh);
            if ((rc = open_undo_keep(seg, 0, sizeof dh, err)) != P2_OK)
                return rc;
            if (full_pwrite(seg->fd, &dh, sizeof dh, 0) != 0)
                return log_fail(seg, err, P2_EIO, "cannot write the replayed header");
        }
        if (fdatasync(seg->fd) != 0)
            return log_fail(seg, err, P2_EIO, "cannot sync the replayed data file");
    }
    return journal_reset(seg, fingerprint, err);
}

/* ------------------------------------------------------------------------
 * 5.5 Journalled segments: commit, checkpoint, abort
 * ------------------------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Write-protect the dirty pages again (contiguous runs in one call) and forget them. */
static void journal_protect(p2_seg *seg)
{
    uint64_t n = seg->ndirty;
    /* in page order, so that neighbours share one mprotect; the record log protects
     * nothing and only clears their bits */
    if (!seg->jopts.record)
        qsort(seg->dirty, (size_t)n, sizeof *seg->dirty, cmp_u32);
    for (uint64_t i = 0; i < n && !seg->jopts.record;) {
        uint64_t j = i + 1;
        while (j < n && seg->dirty[j] == seg->dirty[j - 1] + 1)
            j++;
        (void)mprotect(seg->base + (uint64_t)seg->dirty[i] * seg->pgsize,
                       (size_t)((j - i) * seg->pgsize), PROT_READ);
        i = j;
    }
    for (uint64_t i = 0; i < n; i++)
        bit_clear(seg->dirty_bits, seg->dirty[i]);
    seg->ndirty = 0;
}

/* Checkpoint: write every committed page that is not in the data file yet, sync the data
 * file, drop the private copies of those pages (the page cache serves them again, so a
 * long session does not keep its whole working set as anonymous memory), and empty the
 * journal.  Runs when the journal passes its checkpoint size, at the end of a group, and
 * at close; only then is the data file written, and always after the journal records of
 * what it receives were synced. */
static int peers_sync(p2_seg *seg, p2_err *err);

/* Record log, at a checkpoint (the data file now holds every committed page): which
 * private copies to keep. Dropping one makes the next write to its page fault and copy
 * it again, and under a working set larger than an interval's writes (TPC-B's accounts)
 * that fault is most of what a commit costs. So the pages written in this interval keep
 * their copies for one more; the ones kept from the interval before and not written
 * again are dropped (the page cache serves them). Private memory stays within the pages
 * written in two intervals; a page the page journal tracks is always dropped (its write
 * faults are how it learns of writes), and so is the header's, whose data_seq the
 * checkpoint has just advanced in the file (the logged header checksums assume the
 * in-memory data_seq is the log's base: data_header_ok). Leaves in unflushed only the
 * pages to drop. */
static void wal_keep_pages(p2_seg *seg)
{
    for (uint64_t i = 0; i < seg->nkept; i++) {
        uint64_t pg = seg->kept[i];
        bit_clear(seg->kept_bits, pg);
        if (!bit_get(seg->unflushed_bits, pg))
            (void)madvise(seg->base + pg * seg->pgsize, (size_t)seg->pgsize, MADV_DONTNEED);
    }
    seg->nkept = 0;
    uint64_t drop = 0;
    for (uint64_t i = 0; i < seg->nunflushed; i++) {
        uint32_t pg = seg->unflushed[i];
        if (pg == 0) {
            seg->unflushed[drop++] = pg;
            continue;
        }
        bit_clear(seg->unflushed_bits, pg);
        bit_set(seg->kept_bits, pg);
        seg->kept[seg->nkept++] = pg;
    }
    seg->nunflushed = drop;
}

static int journal_checkpoint(p2_seg *seg, p2_err *err)
{
    int prc = peers_sync(seg, err);
    if (prc != P2_OK)
        return prc;
    if (seg->open_keep) {
        /* the files move on from what the open found: nothing of it is put back any more */
        free(seg->open_undo);
        seg->open_undo = NULL;
        seg->open_undo_len = seg->open_undo_cap = 0;
        seg->open_keep = 0;
    }
    if (seg->nunflushed > 0) {
        /* The header claims the new data_seq before the pages go out: the journal holds
         * them, so a crash in between only makes recovery stricter.  Page 0 itself is
         * written as that header, never with the stale in-memory value. */
        int rc = data_seq_write(seg, err);
        if (rc != P2_OK)
            return rc;
        for (uint64_t i = 0; i < seg->nunflushed; i++) {
            uint64_t pg = seg->unflushed[i];
            if (pg == 0) {
                if (seg->pgsize > P2_SEG_HEADER_SIZE &&
                    full_pwrite(seg->fd, seg->base + P2_SEG_HEADER_SIZE,
                                (size_t)(seg->pgsize - P2_SEG_HEADER_SIZE), P2_SEG_HEADER_SIZE) != 0)
                    return log_fail(seg, err, P2_EIO, "cannot write committed pages into the data file");
                continue;                /* the header itself went out just above */
            }
            if (full_pwrite(seg->fd, seg->base + pg * seg->pgsize, (size_t)seg->pgsize,
                            pg * seg->pgsize) != 0)
                return log_fail(seg, err, P2_EIO, "cannot write committed pages into the data file");
        }
    }
    if (seg->jopts.sync && fdatasync(seg->fd) != 0)
        return log_fail(seg, err, P2_EIO, "cannot sync the data file at a checkpoint");
    if (seg->jopts.record)
        wal_keep_pages(seg);
    for (uint64_t i = 0; i < seg->nunflushed; i++) {
        uint64_t pg = seg->unflushed[i];
        (void)madvise(seg->base + pg * seg->pgsize, (size_t)seg->pgsize, MADV_DONTNEED);
        bit_clear(seg->unflushed_bits, pg);
    }
    seg->nunflushed = 0;
    return journal_reset(seg, seg->hdr->fingerprint, err);
}

/* A checkpoint failed (err holds why): say that nothing committed is lost, and remember
 * to retry it. The journal still holds every transaction the data file may lack (it is
 * emptied only after a checkpoint succeeded), and the next open replays it. */
static int checkpoint_failed(p2_seg *seg, int rc, p2_err *err)
{
    seg->ckpt_failed = 1;
    if (err != NULL) {
        size_t n = strnlen(err->msg, sizeof err->msg);
        snprintf(err->msg + n, sizeof err->msg - n,
                 " (checkpoint failed: the committed transactions are safe in %s%s; the "
                 "checkpoint is retried at the next commit, sync or close, and the next open "
                 "replays the journal)", seg->path, LOG_SUFFIX(seg));
    }
    return rc;
}

/* End a group of commits: make the journal durable (sync on), and checkpoint when it has
 * grown past its checkpoint size (or when asked, at close, or when one failed before). */
static int journal_flush(p2_seg *seg, int force_checkpoint, p2_err *err)
{
    if (seg->unsynced > 0 && seg->jopts.sync && fdatasync(seg->log_fd) != 0)
        return log_fail(seg, err, P2_EIO, "cannot sync it");
    seg->unsynced = 0;
    if (force_checkpoint || seg->ckpt_failed || seg->log_end >= seg->jopts.checkpoint) {
        int rc = journal_checkpoint(seg, err);
        if (rc != P2_OK)
            return checkpoint_failed(seg, rc, err);
        seg->ckpt_failed = 0;
    }
    return P2_OK;
}

/* The commit record at `at` could not be made durable: overwrite it, so that neither a
 * later open nor a later commit takes the transaction for committed (the next commit
 * writes over it anyway), and try to make that durable. */
static void commit_record_void(p2_seg *seg, uint64_t at)
{
    static const struct log_commit zero;
    if (full_pwrite(seg->log_fd, &zero, sizeof zero, at) == 0)
        (void)fdatasync(seg->log_fd);
}
