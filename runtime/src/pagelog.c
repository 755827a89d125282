/* ==========================================================================
 * 9.5 Page servers: transactions through a log export, the writer's lease, readers
 *     (design in p2_runtime.h, @ref server, "Transactions")
 *
 * A `journal` or `wal` over `pageserver(log = ...)`: the log lives on a second export.
 * Its first page is the lease block (who writes, until when, the last generation written
 * back whole, the one being written back); its second page on, the log record of the last
 * commit (header, page numbers, page images, one CRC over all of it).  The buffer keeps a
 * transaction's dirty pages in memory until it commits (no steal: the clock passes over
 * them, and a transaction larger than the buffer takes more frames until it ends), so
 * the data export only ever holds committed pages.  A commit: the record written and
 * flushed on the log export (the commit point), the lease block marks the write-back,
 * the pages go to the data export and are flushed, the lease block marks it done.
 * ========================================================================== */

#define PL_LEASE_MAGIC "P2GENLS"
#define PL_REC_MAGIC   "P2GENPR"
#define PL_VERSION     1u
#define PL_DELTA_MS    50       /* Fischer's bound: a lease write lands within this of its read */

struct pl_lease {               /* page 0 of the log export */
    char     magic[8];          /* PL_LEASE_MAGIC; all zero: a new log, nobody holds it */
    uint32_t version;
    uint32_t crc;               /* CRC-32 of this block's first sizeof bytes, this field 0 */
    uint64_t token;             /* the holder's, drawn at its open; 0: free */
    uint64_t expiry_ms;         /* CLOCK_REALTIME, ms: after it, the lease may be taken over */
    uint64_t gen;               /* the last commit the data export holds whole */
    uint64_t wb;                /* the commit being written back into it, 0: none */
    char     owner[96];         /* "pid N on HOST": named in the refusal of a second writer */
};
struct pl_rec {                 /* page 1 of the log export: the last commit */
    char     magic[8];          /* PL_REC_MAGIC */
    uint32_t version;
    uint32_t crc;               /* CRC-32 of this header (crc 0), the page numbers and images */
    uint64_t seq;               /* the commit's generation: the data header's data_seq after it */
    uint64_t fingerprint;       /* of the database: a log is never replayed elsewhere */
    uint64_t npages;
    uint32_t page;
    uint32_t zero;
};                              /* then npages uint64_t page numbers, zero-padded to a page,
                                   then the npages images in that order */

void p2_server_open_reader(int on) { pl_reader_next = on != 0; }

static uint64_t pl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void pl_sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static uint32_t pl_lease_crc(const struct pl_lease *l)
{
    struct pl_lease c = *l;
    c.crc = 0;
    return p2_crc32(0, &c, sizeof c);
}

static uint64_t pl_lease_ms(void)
{
    const char *t = getenv("P2_SERVER_LEASE_MS");
    long v = t != NULL ? strtol(t, NULL, 10) : 0;
    return v > 0 ? (uint64_t)v : P2_SERVER_LEASE_MS;
}

/* Read the lease block. P2_EFORMAT where it is neither zero nor a lease. */
static int pl_lease_read(p2_pagebuf *pb, struct pl_lease *l, p2_err *err)
{
    p2_io io = {l, sizeof *l, 0};
    int rc = pb->log.ops->readv(&pb->log, &io, 1, err);
    if (rc != P2_OK)
        return rc;
    static const struct pl_lease zero;
    if (memcmp(l, &zero, sizeof zero) == 0)
        return P2_OK;
    if (memcmp(l->magic, PL_LEASE_MAGIC, sizeof l->magic) != 0 || l->version != PL_VERSION ||
        l->crc != pl_lease_crc(l))
        return seg_fail(pb->seg, err, P2_EFORMAT, "the log export %s is not a p2gen page-server log "
                        "(its lease block is damaged or of another program)", pb->log.uri);
    return P2_OK;
}

static int pl_lease_write(p2_pagebuf *pb, struct pl_lease *l, p2_err *err)
{
    memcpy(l->magic, PL_LEASE_MAGIC, sizeof l->magic);
    l->version = PL_VERSION;
    l->crc = pl_lease_crc(l);
    p2_io io = {l, sizeof *l, 0};
    return pb->log.ops->writev(&pb->log, &io, 1, err);
}

/* A holder on this machine whose process is gone: its lease need not run out. */
static int pl_holder_dead(const struct pl_lease *l)
{
    char host[64] = "";
    long pid = 0;
    char at[80];
    (void)gethostname(host, sizeof host - 1);
    if (sscanf(l->owner, "pid %ld on %79s", &pid, at) != 2 || pid <= 0 || strcmp(at, host) != 0)
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static int pl_busy(p2_pagebuf *pb, const struct pl_lease *l, uint64_t now, p2_err *err)
{
    return seg_fail(pb->seg, err, P2_EBUSY, "another writer holds the lease of this database: %.96s, "
                    "for %" PRIu64 " ms more unless it renews it (a writer that crashed is taken over "
                    "once its lease runs out; readers may open with <prefix>_open_reader)",
                    l->owner, l->expiry_ms > now ? l->expiry_ms - now : 0);
}

/* Take the lease, Fischer's way (no compare-and-swap over NBD): see it free, write ours
 * within PL_DELTA_MS of that read, wait twice that, and read it back: of writers racing,
 * only the last one's write is still there. */
static int pl_lease_take(p2_pagebuf *pb, struct pl_lease *l, p2_err *err)
{
    for (int attempt = 0;; attempt++) {
        uint64_t t0 = pl_now_ms();
        int rc = pl_lease_read(pb, l, err);
        if (rc != P2_OK)
            return rc;
        if (l->token != 0 && l->token != pb->token && l->expiry_ms > t0 && !pl_holder_dead(l))
            return pl_busy(pb, l, t0, err);
        l->token = pb->token;
        l->expiry_ms = t0 + pb->lease_ms;
        snprintf(l->owner, sizeof l->owner, "%s", pb->owner);
        if ((rc = pl_lease_write(pb, l, err)) != P2_OK)
            return rc;
        if (pl_now_ms() - t0 > PL_DELTA_MS) {   /* too slow to be sure: once more */
            if (attempt < 3)
                continue;
            return seg_fail(pb->seg, err, P2_EBUSY, "cannot take the lease on %s: the server took "
                            "more than %d ms to answer, four times", pb->log.uri, PL_DELTA_MS);
        }
        pl_sleep_ms(2 * PL_DELTA_MS);
        if ((rc = pl_lease_read(pb, l, err)) != P2_OK)
            return rc;
        if (l->token != pb->token)
            return pl_busy(pb, l, pl_now_ms(), err);
        pb->expiry_ms = l->expiry_ms;
        return P2_OK;
    }
}

/* The writer still holds its lease (read back: a writer paused past its expiry may have
 * been taken over), renewed with `gen` and `wb` as given. */
static int pl_lease_renew(p2_pagebuf *pb, uint64_t gen, uint64_t wb, p2_err *err)
{
    struct pl_lease l;
    int rc = pl_lease_read(pb, &l, err);
    if (rc != P2_OK)
        return rc;
    if (l.token != pb->token)
        return seg_fail(pb->seg, err, P2_EBUSY, "this writer's lease ran out and %.96s took it over: "
                        "nothing more is written (the transaction was not committed; close)", l.owner);
    l.gen = gen;
    l.wb = wb;
    l.expiry_ms = pl_now_ms() + pb->lease_ms;
    if ((rc = pl_lease_write(pb, &l, err)) != P2_OK)
        return rc;
    pb->expiry_ms = l.expiry_ms;
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * the buffer without steal
 * ------------------------------------------------------------------------ */

/* Drop frame f (its page must be clean, or be dropped as an abort drops it); the last
 * frame takes its place, so that frames stay [0, used). */
static void pl_drop_frame(p2_pagebuf *pb, uint32_t f)
{
    uint32_t p = pb->frame_page[f];
    pb_unmap(pb, p);
    if (pb->state[p] & PB_DIRTY)
        pb->st.dirty--;
    pb->state[p] &= (uint8_t)~(PB_RES | PB_PROT | PB_DIRTY);
    pb->st.resident--;
    pb_free_frame(pb, f);
}

/* After a commit or an abort: a transaction that took more frames than the buffer has
 * gives them back (clean pages, the newest frames first). */
static void pl_shrink(p2_pagebuf *pb)
{
    for (uint32_t f = pb->used; f > pb->nframes;) {
        f--;
        if (!(pb->state[pb->frame_page[f]] & PB_DIRTY))
            pl_drop_frame(pb, f);
    }
}

/* Every page of the buffer dropped (dirty ones too: an abort's, or a reader's), the pages
 * the database holds marked as on the server: the next touch reads each again. */
static void pl_drop_all(p2_pagebuf *pb, uint64_t file_size)
{
    while (pb->used > 0)
        pl_drop_frame(pb, pb->used - 1);
    for (uint64_t p = 0; p < pb->npages; p++)
        pb->state[p] = p < file_size / pb->pg ? PB_SRV : 0;
}

/* A reader's page just read: was it of the generation the read transaction started at?
 * Read after it, the lease block says whether a write-back had begun since. */
static void pl_reader_check(p2_pagebuf *pb)
{
    struct pl_lease l;
    p2_err e;
    p2_err_clear(&e);
    p2_io io = {&l, sizeof l, 0};
    if (pb->log.ops->readv(&pb->log, &io, 1, &e) != P2_OK || l.gen != pb->gen || l.wb != 0)
        pb->stale = 1;
}

/* ------------------------------------------------------------------------
 * recovery: the last commit's record into the data export
 * ------------------------------------------------------------------------ */

static uint64_t pl_rec_head_bytes(uint64_t npages, uint64_t pg)
{
    return round_up(sizeof(struct pl_rec) + 8 * npages, pg);
}

/* The data export lacks the log's last commit (a writer died between the commit point and
 * the end of its write-back): write it there.  A record that does not check is a commit
 * that never reached its commit point (a torn write) and is ignored. */
static int pl_recover(p2_pagebuf *pb, uint64_t fingerprint, p2_err *err)
{
    struct pl_rec r;
    struct p2_seg_header h;
    p2_io io = {&r, sizeof r, pb->pg};
    if (pb->log.size < 2 * pb->pg)
        return seg_fail(pb->seg, err, P2_ENOMEM, "the log export %s holds %" PRIu64 " bytes: too small "
                        "for a log (%" PRIu64 " at least)", pb->log.uri, pb->log.size, 2 * pb->pg);
    int rc = pb->log.ops->readv(&pb->log, &io, 1, err);
    if (rc != P2_OK)
        return rc;
    if (memcmp(r.magic, PL_REC_MAGIC, sizeof r.magic) != 0 || r.page != pb->pg || r.npages == 0 ||
        r.npages > pb->npages || r.version != PL_VERSION)
        return P2_OK;                     /* no commit yet, or a torn first one */
    uint64_t head = pl_rec_head_bytes(r.npages, pb->pg), bytes = head + r.npages * pb->pg;
    if (pb->pg + bytes > pb->log.size)
        return P2_OK;                     /* a header torn into a size that cannot be */
    p2_io hio = {&h, sizeof h, 0};
    if ((rc = pb->be.ops->readv(&pb->be, &hio, 1, err)) != P2_OK)
        return rc;
    uint64_t held = memcmp(h.magic, SEG_MAGIC, sizeof h.magic) == 0 ? h.data_seq : 0;
    if (r.seq <= held)
        return P2_OK;                     /* written back whole before */
    char *buf = (char *)malloc((size_t)bytes);
    if (buf == NULL)
        return seg_fail(pb->seg, err, P2_ENOMEM, "out of memory reading the log's last commit");
    p2_io rio = {buf, bytes, pb->pg};
    if ((rc = pb->log.ops->readv(&pb->log, &rio, 1, err)) != P2_OK)
        goto out;
    struct pl_rec *c = (struct pl_rec *)(void *)buf;
    uint32_t want = c->crc;
    c->crc = 0;
    if (p2_crc32(0, buf, (size_t)bytes) != want)
        goto out;                         /* never committed: its commit point is its CRC */
    if (c->fingerprint != fingerprint) {
        rc = seg_fail(pb->seg, err, P2_EMISMATCH, "the log export %s holds a commit of another "
                      "database (fingerprint %016" PRIx64 ")", pb->log.uri, c->fingerprint);
        goto out;
    }
    if (c->npages != r.npages) {         /* the list read is the one the buffer was sized for */
        rc = seg_fail(pb->seg, err, P2_EFORMAT, "the log export %s changed its last commit's "
                      "page count while it was read", pb->log.uri);
        goto out;
    }
    const uint64_t *pgno = (const uint64_t *)(const void *)(buf + sizeof *c);
    uint64_t top = 0;
    for (uint64_t i = 0; i < c->npages; i++) {
        if (pgno[i] >= pb->npages) {     /* each one, before top + 1 can wrap */
            rc = seg_fail(pb->seg, err, P2_EFORMAT, "the log export %s names page %" PRIu64
                          ", past the database's reservation", pb->log.uri, pgno[i]);
            goto out;
        }
        top = pgno[i] + 1 > top ? pgno[i] + 1 : top;
    }
    if (top * pb->pg > pb->be.size && (rc = pb->be.ops->grow(&pb->be, top * pb->pg, err)) != P2_OK)
        goto out;
    for (uint64_t i = 0; i < c->npages && rc == P2_OK; i += P2_SERVER_INFLIGHT) {
        p2_io w[P2_SERVER_INFLIGHT];
        unsigned k = 0;
        for (; k < P2_SERVER_INFLIGHT && i + k < c->npages; k++) {
            w[k].buf = buf + head + (i + k) * pb->pg;
            w[k].len = pb->pg;
            w[k].off = pgno[i + k] * pb->pg;
        }
        rc = pb->be.ops->writev(&pb->be, w, k, err);
    }
    if (rc == P2_OK)
        rc = pb->be.ops->flush(&pb->be, err);
    if (rc == P2_OK)
        pb->replayed = c->seq;
out:
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------------
 * begin, commit, abort, close
 * ------------------------------------------------------------------------ */

static int pl_txn(const p2_seg *seg)
{
    return seg != NULL && seg->base != NULL && seg->pb != NULL && seg->pb->txn;
}

static uint64_t pl_pending(const p2_seg *seg)
{
    return seg->pb->st.dirty;
}

static int pl_reader(const p2_seg *seg)
{
    return seg->pb->reader;
}

/* ------------------------------------------------------------------------
 * ------------------------------------------------------------------------ */

/* A read transaction starts at the last generation written back whole (a reader's buffer
 * of an older one is dropped); a writer renews its lease when half of it has run. */
static int pl_begin(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed)
        return pb_failed(pb, err);
    if (!pb->reader) {
        if (pl_now_ms() + pb->lease_ms / 2 < pb->expiry_ms)
            return P2_OK;
        return pl_lease_renew(pb, pb->gen, 0, err);
    }
    struct pl_lease l;
    uint64_t deadline = pl_now_ms() + (uint64_t)pb->be.timeout_ms;
    for (;;) {
        int rc = pl_lease_read(pb, &l, err);
        if (rc != P2_OK)
            return rc;
        if (l.wb == 0)
            break;
        if (l.expiry_ms < pl_now_ms() || pl_now_ms() > deadline)
            return seg_fail(seg, err, P2_EBUSY, "the writer %.96s stopped in the middle of writing "
                            "back commit %" PRIu64 ": a reader waits for a writer's open to finish "
                            "it from the log", l.owner, l.wb);
        pl_sleep_ms(1);
    }
    if (l.gen != pb->gen || pb->st.dirty > 0) {
        pb->gen = l.gen;
        pl_drop_all(pb, pb->be.size);     /* bounded below by the header's size */
        seg->mapped = pb->pg;             /* the header's page, to read its size */
        seg->mapped = seg->hdr->file_size > pb->npages * pb->pg ? pb->npages * pb->pg
                                                                : seg->hdr->file_size;
        if (seg->mapped < pb->pg)
            seg->mapped = pb->pg;
    }
    pb->stale = 0;
    return P2_OK;
}

int p2_seg_server_begin(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || !seg->pb->txn)
        return P2_OK;
    return pl_begin(seg, err);
}

/* Abort: the transaction's pages are dropped; the server holds them as committed. */
static int pl_abort(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    for (uint32_t f = pb->used; f > 0;) {
        f--;
        if (pb->state[pb->frame_page[f]] & PB_DIRTY)
            pl_drop_frame(pb, f);
    }
    pl_shrink(pb);
    pb_masks_forget(pb);          /* the abort's announcements die with its pages */
    if (pb->failed)
        return pb_failed(pb, err);
    uint64_t keep = seg->hdr->file_size;   /* the committed header, read again */
    if (keep >= P2_SEG_HEADER_SIZE && keep <= seg->reserved)
        seg->mapped = keep;
    return P2_OK;
}

/* Commit: the record on the log export (the commit point), then the write-back. */
static int pl_commit(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed)
        return pb_failed(pb, err);
    if (pb->reader) {
        if (pb->st.dirty > 0)
            return seg_fail(seg, err, P2_EINVAL, "opened as a reader: it cannot commit changes "
                            "(abort them; open with <prefix>_open to write)");
        if (pb->stale)
            return seg_fail(seg, err, P2_EBUSY, "a writer committed while this read transaction "
                            "read: what it read may mix two commits; read again after begin");
        return P2_OK;
    }
    if (pb->st.dirty == 0)
        return P2_OK;
    int rc = P2_OK;   /* the record's writes loop while it is: the lease renewed or not */
    if (pl_now_ms() + PL_DELTA_MS >= pb->expiry_ms && (rc = pl_lease_renew(pb, pb->gen, 0, err)) != P2_OK)
        return rc;
    struct p2_seg_header *h = seg->hdr;
    uint64_t seq = pb->gen + 1;
    h->state = SEG_STATE_CLEAN;           /* the lease, not the header, says who writes */
    h->journal = 1;
    h->data_seq = seq;
    roots_seal(seg);
    h->checksum = header_crc(h);
    uint64_t n = 0;
    uint32_t *list = (uint32_t *)malloc((size_t)pb->used * sizeof *list);
    if (list == NULL)
        return seg_fail(seg, err, P2_ENOMEM, "out of memory for the commit's page list");
    for (uint32_t f = 0; f < pb->used; f++)
        if (pb->state[pb->frame_page[f]] & PB_DIRTY)
            list[n++] = pb->frame_page[f];
    uint64_t head = pl_rec_head_bytes(n, pb->pg), bytes = head + n * pb->pg;
    char *hb = NULL;
    if (pb->pg + bytes > pb->log.size &&
        (!pb->log.growable || (rc = pb->log.ops->grow(&pb->log, pb->pg + bytes, err)) != P2_OK)) {
        rc = seg_fail(seg, err, P2_ENOMEM, "the log export %s holds %" PRIu64 " bytes: this commit "
                      "needs %" PRIu64 "; it was not committed and is still open", pb->log.uri,
                      pb->log.size, pb->pg + bytes);
        goto out;
    }
    hb = (char *)calloc(1, (size_t)head);
    if (hb == NULL) {
        rc = seg_fail(seg, err, P2_ENOMEM, "out of memory for the commit's record");
        goto out;
    }
    struct pl_rec *r = (struct pl_rec *)(void *)hb;
    memcpy(r->magic, PL_REC_MAGIC, sizeof r->magic);
    r->version = PL_VERSION;
    r->seq = seq;
    r->fingerprint = h->fingerprint;
    r->npages = n;
    r->page = (uint32_t)pb->pg;
    uint64_t *pgno = (uint64_t *)(void *)(hb + sizeof *r);
    for (uint64_t i = 0; i < n; i++)
        pgno[i] = list[i];
    uint32_t crc = p2_crc32(0, hb, (size_t)head);
    for (uint64_t i = 0; i < n; i++)
        crc = p2_crc32(crc, pb_addr(pb, list[i]), (size_t)pb->pg);
    r->crc = crc;
    {   /* the record: its head, then the images, several requests in flight */
        p2_io io[P2_SERVER_INFLIGHT];
        io[0] = (p2_io){hb, head, pb->pg};
        unsigned k = 1;
        for (uint64_t i = 0; i <= n && rc == P2_OK; i++) {
            if (i < n) {
                io[k++] = (p2_io){pb_addr(pb, list[i]), pb->pg, pb->pg + head + i * pb->pg};
                if (k < P2_SERVER_INFLIGHT)
                    continue;
            }
            rc = k ? pb->log.ops->writev(&pb->log, io, k, err) : P2_OK;
            k = 0;
        }
    }
    if (rc == P2_OK && pb->sync)
        rc = pb->log.ops->flush(&pb->log, err);
    if (rc != P2_OK && err != NULL) {
        size_t m = strnlen(err->msg, sizeof err->msg);
        snprintf(err->msg + m, sizeof err->msg - m, "; the transaction was not committed and is "
                 "still open (commit again, or abort it)");
    }
    if (rc != P2_OK)
        goto out;
    /* ---- the commit point: the record is on the log export ---- */
    pb->gen = seq;
    rc = pl_lease_renew(pb, seq - 1, seq, err);
    if (rc == P2_OK)
        rc = pb_write_back(pb, list, (unsigned)n, err);
    if (rc == P2_OK && pb->sync)
        rc = pb->be.ops->flush(&pb->be, err);
    if (rc == P2_OK)
        rc = pl_lease_renew(pb, seq, 0, err);
    if (rc != P2_OK) {
        /* committed all the same: the next writer's open writes it back from the log */
        if (!pb->failed)
            snprintf(pb->why, sizeof pb->why, "commit %" PRIu64 " is durable on the log export "
                     "%.120s but could not be written back to the data (%.200s): nothing more is "
                     "written; the next open writes it back from the log", seq, pb->log.uri,
                     err != NULL ? err->msg : "");
        pb->failed = 1;
        rc = pb_failed(pb, err);
        goto out;
    }
    pb_masks_forget(pb);
    pl_shrink(pb);
out:
    free(hb);
    free(list);
    return rc;
}

/* Close: an uncommitted transaction dropped, the lease given back. */
static int pl_close(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    int rc = pb->failed ? pb_failed(pb, err) : P2_OK;
    if (!pb->failed && !pb->reader) {
        struct pl_lease l;
        if (pl_lease_read(pb, &l, err) == P2_OK && l.token == pb->token) {
            l.token = 0;
            l.expiry_ms = 0;
            l.wb = 0;
            rc = pl_lease_write(pb, &l, err);
            if (rc == P2_OK && pb->sync)
                rc = pb->log.ops->flush(&pb->log, err);
        }
    }
    pb_free(seg);
    munmap(seg->base, (size_t)seg->reserved);
    seg_reset(seg);
    return rc;
}

/* Open's part: the log export, the lease (a writer's), recovery; the header is read
 * after it. A reader takes no lease and waits out a write-back in progress. */
static int pl_open(p2_seg *seg, const char *log_uri, int sync, uint64_t fingerprint, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    pb->txn = 1;
    pb->sync = sync;
    pb->reader = pl_reader_next;
    pb->lease_ms = pl_lease_ms();
    pb->log.st = &pb->log_st;
    int rc = backend_open(&pb->log, log_uri, err);
    if (rc != P2_OK) {
        pb->log.ops = NULL;
        if (pb->log.nbd != NULL || pb->log.fd >= 0)
            pb->log.ops = strncmp(log_uri, "file://", 7) == 0 ? &file_ops : &nbd_ops;
        return rc;
    }
    if (pb->log.size < 2 * pb->pg && pb->log.growable &&
        (rc = pb->log.ops->grow(&pb->log, 2 * pb->pg, err)) != P2_OK)
        return rc;
    char host[64] = "";
    (void)gethostname(host, sizeof host - 1);
    snprintf(pb->owner, sizeof pb->owner, "pid %ld on %s", (long)getpid(), host);
    pb->token = ((uint64_t)getpid() << 40) ^ pl_now_ms() ^ (uint64_t)(uintptr_t)pb;
    if (pb->token == 0)
        pb->token = 1;
    struct pl_lease l;
    if (pb->reader) {
        rc = pl_lease_read(pb, &l, err);
        if (rc == P2_OK && l.wb != 0)
            rc = seg_fail(seg, err, P2_EBUSY, "the writer %.96s is writing back commit %" PRIu64
                          " (or stopped in the middle): a reader opens once a writer finished it", l.owner, l.wb);
        if (rc == P2_OK)
            pb->gen = l.gen;
        return rc;
    }
    if ((rc = pl_lease_take(pb, &l, err)) != P2_OK)
        return rc;
    if ((rc = pl_recover(pb, fingerprint, err)) != P2_OK)
        return rc;
    struct p2_seg_header h;
    p2_io hio = {&h, sizeof h, 0};
    if ((rc = pb->be.ops->readv(&pb->be, &hio, 1, err)) != P2_OK)
        return rc;
    pb->gen = memcmp(h.magic, SEG_MAGIC, sizeof h.magic) == 0 ? h.data_seq : 0;
    return pl_lease_renew(pb, pb->gen, 0, err);
}
