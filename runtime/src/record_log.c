/* ------------------------------------------------------------------------
 * 5.5a Record log: the write hook, commit and abort of record-logged segments
 * ------------------------------------------------------------------------ */

/* Room for `need` more bytes in a growable buffer (never shrinks while open). */
static int grow_buf(void *pp, uint64_t *cap, uint64_t need)
{
    if (need <= *cap)
        return 0;
    uint64_t want = *cap ? *cap : 4096;
    while (want < need)
        want *= 2;
    void *np = want <= SIZE_MAX ? realloc(*(void **)pp, (size_t)want) : NULL;
    if (np == NULL)
        return -1;
    *(void **)pp = np;
    *cap = want;
    return 0;
}

/* The first index in [i, end) of a bitmap whose bit is `val`, or end. */
static uint64_t bits_find(const uint64_t *w, uint64_t i, uint64_t end, int val)
{
    while (i < end) {
        uint64_t word = w[i >> 6] ^ (val ? 0 : ~UINT64_C(0));   /* the sought bits as 1s */
        word &= ~UINT64_C(0) << (i & 63);
        if (word != 0) {
            uint64_t at = (i & ~UINT64_C(63)) + (uint64_t)__builtin_ctzll(word);
            return at < end ? at : end;
        }
        i = (i | 63) + 1;
    }
    return end;
}

/* Set bits [i, end) of a bitmap. */
static void bits_fill(uint64_t *w, uint64_t i, uint64_t end)
{
    while (i < end) {
        uint64_t top = (i | 63) + 1 < end ? (i | 63) + 1 : end;   /* within this word */
        uint64_t nb = top - i;
        uint64_t mask = nb == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << nb) - 1) << (i & 63);
        w[i >> 6] |= mask;
        i = top;
    }
}

/* Keep the bytes [off, off + n) hold now as an undo entry: appended to the last entry
 * when it ends at off (adjacent writes, such as a record filled field by field, make one
 * entry), else a new one. 0, or -1 out of memory. */
static int undo_keep(p2_seg *seg, uint64_t off, uint64_t n)
{
    if (seg->nundo > 0) {
        uint8_t *e = seg->undo + seg->undo_at[seg->nundo - 1];
        uint64_t eoff, elen;
        memcpy(&eoff, e, 8);
        memcpy(&elen, e + 8, 8);
        if (eoff + elen == off) {
            uint64_t at = seg->undo_at[seg->nundo - 1];
            uint64_t need = at + 16 + round_up(elen + n, 8);
            if (grow_buf(&seg->undo, &seg->undo_cap, need) != 0)
                return -1;
            e = seg->undo + at;
            memcpy(e + 16 + elen, seg->base + off, (size_t)n);
            elen += n;
            memcpy(e + 8, &elen, 8);
            seg->undo_len = need;
            return 0;
        }
    }
    uint64_t need = seg->undo_len + 16 + round_up(n, 8);
    if (grow_buf(&seg->undo, &seg->undo_cap, need) != 0 ||
        grow_buf(&seg->undo_at, &seg->undo_at_cap, (seg->nundo + 1) * sizeof(uint64_t)) != 0)
        return -1;
    uint8_t *e = seg->undo + seg->undo_len;
    memcpy(e, &off, 8);
    memcpy(e + 8, &n, 8);
    memcpy(e + 16, seg->base + off, (size_t)n);
    seg->undo_at[seg->nundo++] = seg->undo_len;
    seg->undo_len = need;
    return 0;
}

/* The write hook of a record-logged segment: [off, off + n) is about to be written. Keep
 * the old bytes of what this transaction has not announced before (an abort copies them
 * back; a byte announced again already has its bytes from before the transaction kept,
 * so a field set ten thousand times keeps eight bytes, not eighty thousand) and note its
 * pages as changed (they go into the data file at the next checkpoint after the commit).
 * Which bytes are kept: a bitmap per changed page, a bit per byte (cov). A range outside
 * the mapping cannot be kept: like a failed allocation, it loses the transaction
 * (undo_lost). */
static void wal_note(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    (void)ctx;
    if (n == 0 || seg->undo_lost)
        return;
    if (off > seg->mapped || n > seg->mapped - off) {
        seg->undo_lost = 1;
        return;
    }
    uint64_t ps = seg->pgsize, words = ps / 64, end = off + n;
    for (uint64_t pg = off / ps; pg <= (end - 1) / ps; pg++) {
        if (!bit_get(seg->dirty_bits, pg)) {
            if (grow_buf(&seg->cov, &seg->cov_cap, (seg->ndirty + 1) * words * 8) != 0) {
                seg->undo_lost = 1;
                return;
            }
            memset(seg->cov + seg->ndirty * words, 0, (size_t)(words * 8));
            seg->cov_slot[pg] = (uint32_t)seg->ndirty;
            bit_set(seg->dirty_bits, pg);
            seg->dirty[seg->ndirty++] = (uint32_t)pg;
        }
        uint64_t *cov = seg->cov + (uint64_t)seg->cov_slot[pg] * words;
        uint64_t first = pg * ps, from = off > first ? off - first : 0;
        uint64_t to = end - first < ps ? end - first : ps;
        for (uint64_t i = bits_find(cov, from, to, 0); i < to; i = bits_find(cov, i, to, 0)) {
            uint64_t j = bits_find(cov, i, to, 1);       /* [i, j): not kept yet */
            if (undo_keep(seg, first + i, j - i) != 0) {
                seg->undo_lost = 1;
                return;
            }
            bits_fill(cov, i, j);
            i = j;
        }
    }
}

struct wal_span { uint64_t off, end; };

/* Up to this many entries are sorted by insertion, in place: qsort's calls through its
 * comparison function cost more than the few moves a handful of entries need. */
#define SMALL_SORT 32

static int cmp_span(const void *a, const void *b)
{
    const struct wal_span *x = (const struct wal_span *)a, *y = (const struct wal_span *)b;
    return (x->off > y->off) - (x->off < y->off);
}

/* The undo entries' ranges, sorted and merged: overlapping ones, and those a few bytes
 * apart (a gap shorter than a record header costs less logged than a second header). */
static uint64_t wal_spans(p2_seg *seg, struct wal_span *sp)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < seg->nundo; i++) {
        uint64_t off, len;
        memcpy(&off, seg->undo + seg->undo_at[i], 8);
        memcpy(&len, seg->undo + seg->undo_at[i] + 8, 8);
        sp[n].off = off;
        sp[n].end = off + len;
        n++;
    }
    if (n <= SMALL_SORT) {          /* a typical transaction: a handful of ranges */
        for (uint64_t i = 1; i < n; i++) {
            struct wal_span v = sp[i];
            uint64_t j = i;
            for (; j > 0 && sp[j - 1].off > v.off; j--)
                sp[j] = sp[j - 1];
            sp[j] = v;
        }
    } else {
        qsort(sp, (size_t)n, sizeof *sp, cmp_span);
    }
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (m > 0 && sp[i].off <= sp[m - 1].end + sizeof(struct log_range)) {
            if (sp[i].end > sp[m - 1].end)
                sp[m - 1].end = sp[i].end;
        } else {
            sp[m++] = sp[i];
        }
    }
    return m;
}

/* The commit record of a transaction whose records were appended at `at`, `bytes` long. */
static uint64_t commit_record_at(uint64_t at, uint64_t bytes)
{
    return at + bytes - sizeof(struct log_commit);
}

/* The record log's bytes [0, end) mapped shared, to append into with stores instead of a
 * system call (the page cache holds them as soon as they are stored: a process crash keeps
 * them, fdatasync of the file makes them durable), or NULL where that is not safe: past
 * the blocks the log has reserved (journal_room), a store would extend nothing (SIGBUS). */
static uint8_t *log_window(p2_seg *seg, uint64_t end)
{
    if (end > seg->log_alloc)
        return NULL;
    if (end <= seg->log_mapped)
        return (uint8_t *)seg->log_map;
    void *p = seg->log_map != NULL
        ? mremap(seg->log_map, (size_t)seg->log_mapped, (size_t)seg->log_alloc, MREMAP_MAYMOVE)
        : mmap(NULL, (size_t)seg->log_alloc, PROT_READ | PROT_WRITE, MAP_SHARED, seg->log_fd, 0);
    if (p == MAP_FAILED)
        return NULL;            /* the caller writes with pwrite instead */
    seg->log_map = (char *)p;
    seg->log_mapped = seg->log_alloc;
    return (uint8_t *)p;
}

static void log_unmap(p2_seg *seg)
{
    if (seg->log_map != NULL)
        munmap(seg->log_map, (size_t)seg->log_mapped);
    seg->log_map = NULL;
    seg->log_mapped = 0;
}

/* Append the open transaction of a record-logged segment to its log -- the records (each
 * merged range with the bytes it holds now; first, for a transaction over several files,
 * the transaction record `x` with its parts) and the commit record, built in memory and
 * written with one pwrite -- without syncing it or counting it as committed (wal_done).
 * Fails with nothing of the transaction counted: a torn or unsynced append is never
 * replayed on its own (no commit record, or one a later append overwrites). */
static int wal_append(p2_seg *seg, const struct log_xact *x, const struct log_xpart *xparts,
                      uint64_t *at_out, uint64_t *bytes_out, p2_err *err)
{
    if (seg->undo_lost)
        return seg_fail(seg, err, P2_ENOMEM, "record log: a write of this transaction could not "
                        "be recorded (out of memory); it cannot be committed: abort it, or close "
                        "the database (the next open replays the committed transactions)");
    struct p2_seg_header *h = seg->hdr;
    if (!h->journal) {                        /* initialised: a reopen will not re-create it */
        wal_note(NULL, seg, offsetof(struct p2_seg_header, journal), sizeof h->journal);
        h->journal = 1;
    }
    if (h->state != SEG_STATE_OPEN) {         /* once a session: a crash leaves it OPEN */
        wal_note(NULL, seg, offsetof(struct p2_seg_header, state), sizeof h->state);
        h->state = SEG_STATE_OPEN;
    }
    if (bit_get(seg->dirty_bits, 0)) {        /* the header changed: its checksum with it */
        wal_note(NULL, seg, offsetof(struct p2_seg_header, checksum), sizeof h->checksum);
        h->checksum = header_crc(h);
    }
    if (seg->undo_lost)       /* the notes just above could not be kept */
        return seg_fail(seg, err, P2_ENOMEM, "record log: out of memory recording the commit; "
                        "the transaction was not committed: abort it, or close the database");
    struct wal_span *sp = (struct wal_span *)malloc((size_t)(seg->nundo + 1) * sizeof *sp);
    if (sp == NULL)
        return seg_fail(seg, err, P2_ENOMEM, "record log: out of memory building the commit; "
                        "the transaction was not committed and is still open");
    uint64_t nsp = wal_spans(seg, sp), bytes = 0, nrec = 0;
    for (uint64_t i = 0; i < nsp; i++) {
        uint64_t len = sp[i].end - sp[i].off;
        uint64_t recs = (len + RANGE_MAX - 1) / RANGE_MAX;
        nrec += recs;
        bytes += recs * sizeof(struct log_range) + round_up(len, 8);
    }
    uint64_t xbytes = x != NULL ? sizeof *x + (uint64_t)x->nparts * sizeof *xparts : 0;
    bytes += xbytes + sizeof(struct log_commit);
    uint64_t seq = seg->seq + 1, at = seg->log_end;
    int rc = journal_room(seg, at + bytes, err);
    /* built in place in the mapped log where it can be (no copy, no system call), else
     * in memory and written with one pwrite. Stores only go to log pages a pwrite of this
     * open already brought into the page cache (log_hot): a store to one that is not there
     * would fault it in from the file (a major fault, a read for blocks just reserved),
     * where a pwrite fills it without reading; a commit reaching a new page writes. */
    uint8_t *win = rc == P2_OK && at + bytes <= seg->log_hot ? log_window(seg, at + bytes) : NULL;
    if (rc == P2_OK && win == NULL && grow_buf(&seg->redo, &seg->redo_cap, bytes) != 0)
        rc = seg_fail(seg, err, P2_ENOMEM, "record log: out of memory building the commit; "
                      "the transaction was not committed and is still open");
    if (rc != P2_OK) {
        free(sp);
        return rc;
    }
    uint8_t *b = win != NULL ? win + at : seg->redo;
    uint32_t recs_crc = 0;
    if (x != NULL) {
        struct log_xact xr = *x;
        xr.magic = REC_XACT;
        xr.crc = xact_crc(1, seq, &xr, xparts);
        recs_crc = p2_crc32c(recs_crc, &xr.crc, sizeof xr.crc);
        memcpy(b, &xr, sizeof xr);
        memcpy(b + sizeof xr, xparts, (size_t)(xbytes - sizeof xr));
        b += xbytes;
        nrec++;
    }
    for (uint64_t i = 0; i < nsp; i++) {
        for (uint64_t off = sp[i].off; off < sp[i].end;) {
            uint64_t len = sp[i].end - off < RANGE_MAX ? sp[i].end - off : RANGE_MAX;
            struct log_range r;
            r.magic = REC_RANGE;
            r.where = off | (len - 1) << RANGE_OFF_BITS;
            r.crc = range_crc(1, seq, r.where, seg->base + off, len);
            recs_crc = p2_crc32c(recs_crc, &r.crc, sizeof r.crc);
            memcpy(b, &r, sizeof r);
            memcpy(b + sizeof r, seg->base + off, (size_t)len);
            memset(b + sizeof r + len, 0, (size_t)(round_up(len, 8) - len));
            b += sizeof r + round_up(len, 8);
            off += len;
        }
    }
    free(sp);
    struct log_commit c;
    memset(&c, 0, sizeof c);
    c.magic = REC_COMMIT;
    c.seq = seq;
    c.npages = nrec;
    c.pages_crc = recs_crc;
    c.crc = commit_crc(1, &c);     /* a record log of this build: CRC-32C */
    /* the commit record is stored last: a process killed before it leaves a torn tail */
    atomic_signal_fence(memory_order_seq_cst);
    memcpy(b, &c, sizeof c);
    if (win == NULL) {
        if (full_pwrite(seg->log_fd, seg->redo, (size_t)bytes, at) != 0) {
            int e = errno;      /* a torn tail without its commit record: never replayed */
            return seg_fail(seg, err, P2_EIO,
                            "journal: cannot append the transaction to %s%s: %s; it was not "
                            "committed and is still open (commit again, or abort it)",
                            seg->path, LOG_SUFFIX(seg), strerror(e));
        }
        if (round_up(at + bytes, seg->pgsize) > seg->log_hot)
            seg->log_hot = round_up(at + bytes, seg->pgsize);
    }
    *at_out = at;
    *bytes_out = bytes;
    return P2_OK;
}

/* Sync a segment's log for a commit appended at `at`: on failure the commit record is
 * voided and the transaction stays open. */
static int wal_sync(p2_seg *seg, uint64_t at, uint64_t bytes, p2_err *err)
{
    if (fdatasync(seg->log_fd) == 0)
        return P2_OK;
    int e = errno;
    commit_record_void(seg, commit_record_at(at, bytes));
    return seg_fail(seg, err, P2_EIO,
                    "journal: cannot sync %s%s: %s; the transaction was not committed "
                    "and is still open (commit again, or abort it)", seg->path, LOG_SUFFIX(seg),
                    strerror(e));
}

/* After the commit point: the appended transaction is committed; its pages go into the
 * data file at the next checkpoint. */
static void wal_done(p2_seg *seg, uint64_t at, uint64_t bytes)
{
    seg->log_end = at + bytes;
    seg->seq++;
    for (uint64_t i = 0; i < seg->ndirty; i++) {
        uint64_t pg = seg->dirty[i];
        if (!bit_get(seg->unflushed_bits, pg)) {
            bit_set(seg->unflushed_bits, pg);
            seg->unflushed[seg->nunflushed++] = (uint32_t)pg;
        }
    }
    journal_protect(seg);
    seg->undo_len = seg->nundo = 0;
}

/* A group of commits ended (its log synced, sync permitting): checkpoint when the log has
 * grown past its size; a failure is not the commit's (see p2_seg_commit). */
static void wal_group_end(p2_seg *seg, p2_err *err)
{
    seg->unsynced = 0;
    if (seg->log_end >= seg->jopts.checkpoint && journal_checkpoint(seg, err) != P2_OK) {
        seg->ckpt_failed = 1;   /* committed all the same, as in p2_seg_commit */
        p2_err_clear(err);
    }
}

/* Commit of a record-logged segment by itself (the page journal's rules: see p2_seg_commit). */
static int wal_commit(p2_seg *seg, p2_err *err)
{
    uint64_t at = 0, bytes = 0;
    int rc = wal_append(seg, NULL, NULL, &at, &bytes, err);
    if (rc == P2_OK && seg->unsynced + 1 >= seg->jopts.group && seg->jopts.sync)
        rc = wal_sync(seg, at, bytes, err);
    if (rc != P2_OK)
        return rc;
    /* ---- the commit point: the transaction is durable (as far as sync and group say) ---- */
    wal_done(seg, at, bytes);
    if (++seg->unsynced >= seg->jopts.group)
        wal_group_end(seg, err);
    return P2_OK;
}

/* The segments committed together with `seg` (p2_seg_commit_all) sync their logs before
 * its data file takes a checkpoint's pages: else an OS crash could leave this file holding
 * a transaction over several files that another file's log has lost. */
static int peers_sync(p2_seg *seg, p2_err *err)
{
    for (uint32_t i = 0; seg->peers != NULL && i < seg->npeers; i++) {
        p2_seg *o = &seg->peers[seg->peer_idx[i]];
        if (o == seg || o->base == NULL || !o->journal || o->unsynced == 0)
            continue;
        if (o->jopts.sync && fdatasync(o->log_fd) != 0)
            return log_fail(o, err, P2_EIO, "cannot sync it before a checkpoint of a file "
                            "it commits with");
        o->unsynced = 0;
    }
    return P2_OK;
}

/* A transaction's identifier, the same in each file it spans: told apart from the
 * identifiers of transactions that reused its numbers after a crash dropped it. */
static uint64_t xact_id(void)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
    z ^= (uint64_t)getpid() << 40 ^ ++counter * UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);     /* splitmix64's finaliser */
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

int p2_seg_commit_all(p2_seg *segs, const uint32_t *idx, uint32_t n, p2_err *err)
{
    if (segs == NULL || idx == NULL || n == 0 || n > MAX_JSEGS)
        return p2_err_set(err, P2_EINVAL, "p2_seg_commit_all: between 1 and %d segments",
                          MAX_JSEGS);
    uint32_t part[MAX_JSEGS], np = 0;
    for (uint32_t i = 0; i < n; i++) {
        p2_seg *seg = &segs[idx[i]];
        if (seg->base == NULL)
            return p2_err_set(err, P2_ECLOSED, "p2_seg_commit_all: segment is not open");
        if (!seg->journal || !seg->jopts.record)
            return seg_fail(seg, err, P2_EINVAL, "p2_seg_commit_all: not a record-logged segment");
        seg->peers = segs;
        seg->peer_idx = idx;
        seg->npeers = n;
    }
    for (uint32_t i = 0; i < n; i++) {
        p2_seg *seg = &segs[idx[i]];
        if (seg->ckpt_failed) {      /* as in p2_seg_commit: before anything is written */
            int rc = journal_checkpoint(seg, err);
            if (rc != P2_OK) {
                checkpoint_failed(seg, rc, err);
                if (err != NULL) {
                    size_t m = strnlen(err->msg, sizeof err->msg);
                    snprintf(err->msg + m, sizeof err->msg - m,
                             "; the current transaction was not committed and is still open");
                }
                return rc;
            }
            seg->ckpt_failed = 0;
        }
        if (seg->ndirty > 0 || seg->undo_lost)
            part[np++] = i;
    }
    if (np == 0)
        return P2_OK;
    struct log_xact x;
    struct log_xpart xp[MAX_JSEGS];
    memset(&x, 0, sizeof x);
    memset(xp, 0, sizeof xp);
    x.gtid = xact_id();
    x.nparts = np;
    for (uint32_t k = 0; k < np; k++) {
        xp[k].file = part[k];
        xp[k].seq = segs[idx[part[k]]].seq + 1;
    }
    uint64_t at[MAX_JSEGS], bytes[MAX_JSEGS];
    int group_end = 0, rc = P2_OK;
    uint32_t written = 0;
    for (; written < np && rc == P2_OK; written++) {
        p2_seg *seg = &segs[idx[part[written]]];
        x.self = part[written];
        rc = wal_append(seg, np > 1 ? &x : NULL, xp, &at[written], &bytes[written], err);
        if (rc != P2_OK)
            break;
        if (seg->unsynced + 1 >= seg->jopts.group)
            group_end = 1;
    }
    /* a group ends for all of them together: each part's log synced before any counts */
    for (uint32_t k = 0; k < np && rc == P2_OK && group_end; k++) {
        p2_seg *seg = &segs[idx[part[k]]];
        if (seg->jopts.sync)
            rc = wal_sync(seg, at[k], bytes[k], err);
    }
    if (rc != P2_OK) {
        /* not committed: no file may replay its part alone (wal_sync voided its own) */
        for (uint32_t k = 0; k < written && k < np; k++)
            commit_record_void(&segs[idx[part[k]]], commit_record_at(at[k], bytes[k]));
        return rc;
    }
    /* ---- the commit point: every part is in its log (synced, as sync and group say) ---- */
    for (uint32_t k = 0; k < np; k++) {
        p2_seg *seg = &segs[idx[part[k]]];
        wal_done(seg, at[k], bytes[k]);
        seg->unsynced++;
    }
    if (group_end) {
        /* the other files' logs too, before any checkpoint (peers_sync); one that cannot
         * sync keeps its commits counted, and its checkpoint waits for a sync that works */
        uint32_t k = 0;
        for (uint32_t i = 0; i < n; i++) {
            p2_seg *seg = &segs[idx[i]];
            int synced = k < np && part[k] == i;
            k += synced ? 1u : 0u;
            if (!synced && seg->unsynced > 0 && seg->jopts.sync && fdatasync(seg->log_fd) != 0)
                continue;
            wal_group_end(seg, err);
        }
    }
    return P2_OK;
}

/* Abort of a record-logged segment: every announced byte gets back the value it had
 * before the transaction (undo keeps each byte once, from its first announcement). */
static int wal_abort(p2_seg *seg, p2_err *err)
{
    for (uint64_t i = seg->nundo; i-- > 0;) {
        const uint8_t *e = seg->undo + seg->undo_at[i];
        uint64_t off, len;
        memcpy(&off, e, 8);
        memcpy(&len, e + 8, 8);
        if (off <= seg->mapped && len <= seg->mapped - off)
            memcpy(seg->base + off, e + 16, (size_t)len);
    }
    seg->undo_len = seg->nundo = 0;
    if (seg->undo_lost)
        return seg_fail(seg, err, P2_EIO, "record log: a write of the aborted transaction could "
                        "not be recorded (out of memory), so memory may still hold some of it; "
                        "close the database: its file and log are as of the last commit, and the "
                        "next open replays them");
    return P2_OK;
}

/* Commit. The commit point is the commit record in the journal: written (and synced,
 * when this commit ends a group and sync is on). Whatever fails before it leaves the
 * transaction open and untouched (nothing of the bookkeeping changes), so that a retry
 * commits it and an abort undoes it; whatever fails after it -- the checkpoint -- does not
 * make the commit fail: the transaction is durable in the journal, and the checkpoint is
 * retried (before the next commit, at sync and at close, which report its failure). */
int p2_seg_commit(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->base == NULL)
        return p2_err_set(err, P2_ECLOSED, "p2_seg_commit: segment is not open");
    if (pl_txn(seg))
        return pl_commit(seg, err);
    if (!seg->journal)
        return p2_seg_sync(seg, err);
    if (seg->ckpt_failed) {
        /* before this transaction goes into the journal: if the retry fails, this commit
         * fails with nothing of it written, and the transaction stays open */
        int rc = journal_checkpoint(seg, err);
        if (rc != P2_OK) {
            checkpoint_failed(seg, rc, err);
            if (err != NULL && seg->ndirty > 0) {
                size_t n = strnlen(err->msg, sizeof err->msg);
                snprintf(err->msg + n, sizeof err->msg - n,
                         "; the current transaction was not committed and is still open");
            }
            return rc;
        }
        seg->ckpt_failed = 0;
    }
    if (seg->ndirty == 0 && !seg->undo_lost)
        return P2_OK;
    if (seg->jopts.record)
        return wal_commit(seg, err);
    struct p2_seg_header *h = seg->hdr;
    if (!h->journal)
        h->journal = 1;                      /* initialised: a reopen will not re-create it */
    if (h->state != SEG_STATE_OPEN)
        h->state = SEG_STATE_OPEN;           /* once a session: a crash leaves it OPEN */
    if (bit_get(seg->dirty_bits, 0))
        h->checksum = header_crc(h);
    uint64_t seq = seg->seq + 1, start = seg->log_end, off = start, ps = seg->pgsize;
    uint32_t pages_crc = 0;
    int rc = journal_room(seg, off + seg->ndirty * (sizeof(struct log_page) + ps) +
                          sizeof(struct log_commit), err);
    if (rc != P2_OK)
        return rc;
    struct log_page recs[IOV_BATCH / 2];
    struct iovec iov[IOV_BATCH];
    struct log_commit c;
    memset(&c, 0, sizeof c);
    for (uint64_t i = 0; i < seg->ndirty;) {
        int k = 0, cnt;
        uint64_t at = off;
        size_t len = 0;
        for (; i < seg->ndirty && k < IOV_BATCH / 2 - 1; i++, k++) {
            uint64_t pg = seg->dirty[i];
            struct log_page *r = &recs[k];
            r->magic = REC_PAGE;
            r->seq = seq;
            r->pgno = pg;
            r->crc = page_crc(seq, pg, seg->base + pg * ps, ps);
            pages_crc = p2_crc32(pages_crc, &r->crc, sizeof r->crc);
            iov[2 * k].iov_base = r;
            iov[2 * k].iov_len = sizeof *r;
            iov[2 * k + 1].iov_base = seg->base + pg * ps;
            iov[2 * k + 1].iov_len = (size_t)ps;
            off += sizeof *r + ps;
            len += sizeof *r + (size_t)ps;
        }
        cnt = 2 * k;
        if (i == seg->ndirty) {    /* the last batch carries the commit record: one system call */
            c.magic = REC_COMMIT;
            c.seq = seq;
            c.npages = seg->ndirty;
            c.pages_crc = pages_crc;
            c.crc = commit_crc(0, &c);
            iov[cnt].iov_base = &c;
            iov[cnt].iov_len = sizeof c;
            cnt++;
            len += sizeof c;
        }
        ssize_t n = pwritev(seg->log_fd, iov, cnt, (off_t)at);
        if (n != (ssize_t)len) {   /* a torn tail without its commit record: never replayed */
            int e = n < 0 ? errno : ENOSPC;
            return seg_fail(seg, err, P2_EIO,
                            "journal: cannot append the transaction to %s%s: %s; it was not "
                            "committed and is still open (commit again, or abort it)",
                            seg->path, LOG_SUFFIX(seg), strerror(e));
        }
    }
    if (seg->unsynced + 1 >= seg->jopts.group && seg->jopts.sync && fdatasync(seg->log_fd) != 0) {
        int e = errno;
        commit_record_void(seg, off);
        return seg_fail(seg, err, P2_EIO,
                        "journal: cannot sync %s%s: %s; the transaction was not committed "
                        "and is still open (commit again, or abort it)", seg->path, LOG_SUFFIX(seg),
                        strerror(e));
    }
    /* ---- the commit point: the transaction is durable (as far as sync and group say) ---- */
    seg->log_end = off + sizeof c;
    seg->seq = seq;
    for (uint64_t i = 0; i < seg->ndirty; i++) {
        uint64_t pg = seg->dirty[i];
        /* an abort restores a committed page not yet in the data file from here */
        seg->img_off[pg] = start + i * (sizeof(struct log_page) + ps) + sizeof(struct log_page);
        if (!bit_get(seg->unflushed_bits, pg)) {
            bit_set(seg->unflushed_bits, pg);
            seg->unflushed[seg->nunflushed++] = (uint32_t)pg;
        }
    }
    journal_protect(seg);
    if (++seg->unsynced >= seg->jopts.group) {
        seg->unsynced = 0;   /* synced above */
        if (seg->log_end >= seg->jopts.checkpoint && journal_checkpoint(seg, err) != P2_OK) {
            /* committed all the same: the failure surfaces when the retry fails too */
            seg->ckpt_failed = 1;
            p2_err_clear(err);
        }
    }
    return P2_OK;
}

int p2_seg_abort(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->base == NULL)
        return p2_err_set(err, P2_ECLOSED, "p2_seg_abort: segment is not open");
    if (pl_txn(seg))
        return pl_abort(seg, err);
    if (!seg->journal)
        return seg_fail(seg, err, P2_EINVAL, "abort: the segment has no journal");
    int rc = seg->jopts.record ? wal_abort(seg, err) : P2_OK;
    for (uint64_t i = 0; i < seg->ndirty && !seg->jopts.record; i++) {
        uint64_t pg = seg->dirty[i];
        char *a = seg->base + pg * seg->pgsize;
        if (bit_get(seg->unflushed_bits, pg)) {
            /* committed, not yet in the data file: its last image is in the journal */
            if (full_pread(seg->log_fd, a, (size_t)seg->pgsize, seg->img_off[pg]) != 0 && rc == P2_OK)
                rc = log_fail(seg, err, P2_EIO, "cannot read a committed page back");
        } else if (madvise(a, (size_t)seg->pgsize, MADV_DONTNEED) != 0 && rc == P2_OK) {
            rc = log_fail(seg, err, P2_EIO, "cannot drop a changed page");
        }
    }
    journal_protect(seg);
    /* A transaction that grew the file mapped more of it; the restored header says how
     * much is in use again, so give the rest back to the reservation (the file stays
     * longer, which is harmless): later growth then goes through seg_grow and the
     * header's file size, as it must. */
    uint64_t keep = seg->hdr->file_size;
    if (rc == P2_OK && keep >= P2_SEG_HEADER_SIZE && keep < seg->mapped) {
        void *p = mmap(seg->base + keep, (size_t)(seg->mapped - keep), PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        if (p == MAP_FAILED)
            rc = log_fail(seg, err, P2_EIO, "cannot unmap the pages an aborted transaction added");
        else
            seg->mapped = keep;
    }
    return rc;
}

uint64_t p2_seg_pending(const p2_seg *seg)
{
    if (pl_txn(seg))
        return pl_pending(seg);
    return seg != NULL && seg->base != NULL && seg->journal ? seg->ndirty : 0;
}

int p2_seg_commit_idle(const p2_seg *seg)
{
    /* what p2_seg_commit returns P2_OK for before it touches anything (a reader's commit
       checks what it read) */
    if (pl_txn(seg))
        return pl_pending(seg) == 0 && !pl_reader(seg);
    return seg != NULL && seg->base != NULL && seg->journal && !seg->ckpt_failed &&
           seg->ndirty == 0 && !seg->undo_lost;
}

/* ------------------------------------------------------------------------
 * 5.5b Record log: which transactions over several files every file holds
 * ------------------------------------------------------------------------ */

/* What p2_wal_resolve knows of one file: `known` 0 if its log could not be read or judged
 * (its own open says why); `held` the last transaction its data file holds; `cut` the last
 * one it may replay (its log's last complete transaction, lowered by the resolution). */
struct wal_view {
    int known;
    uint64_t held, cut;
    struct wal_txns txns;
};

static void wal_view_read(struct wal_view *v, const char *path)
{
    memset(v, 0, sizeof *v);
    p2_seg *seg = (p2_seg *)calloc(1, sizeof *seg);
    if (seg == NULL)
        return;
    uint64_t dseq = 0;
    int dread = 0;
    struct p2_seg_header dh;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        dread = full_pread(fd, &dh, sizeof dh, 0) == 0;
        if (dread && data_header_ok(&dh, NULL))
            dseq = dh.data_seq;
    }
    seg->fd = fd;                   /* the scan reads its header (the sizes committed) */
    snprintf(seg->path, sizeof seg->path, "%s", path);
    seg->jopts.record = 1;
    seg->reserved = SEG_MAX_RESERVE;
    char lpath[4096 + 16];
    snprintf(lpath, sizeof lpath, "%s%s", path, LOG_SUFFIX(seg));
    seg->log_fd = open(lpath, O_RDONLY | O_CLOEXEC);
    struct stat st;
    struct log_header lh;
    if (seg->log_fd < 0 || fstat(seg->log_fd, &st) != 0 || (uint64_t)st.st_size < LOG_HDR_SIZE) {
        v->known = seg->log_fd >= 0 || errno == ENOENT;    /* no log: nothing to replay */
        v->held = v->cut = dseq;
    } else if (full_pread(seg->log_fd, &lh, sizeof lh, 0) == 0 &&
               memcmp(lh.magic, LOG_MAGIC, sizeof lh.magic) == 0 &&
               lh.crc == log_header_crc(&lh) && log_version_read(seg, lh.version) &&
               lh.page_size >= 512 && (lh.page_size & (lh.page_size - 1)) == 0) {
        uint64_t last = 0, bad = 0, applied = 0;
        p2_err err;
        p2_err_clear(&err);
        seg->pgsize = lh.page_size;
        if (dseq == 0 && dread && data_header_ok(&dh, &lh))
            dseq = dh.data_seq;   /* replayed over an advanced data_seq (data_header_ok) */
        if (journal_scan(seg, &lh, (uint64_t)st.st_size, 1, 0, 0, &last, &bad, &applied,
                         &v->txns, NULL, &err) == P2_OK) {
            v->known = 1;
            v->held = dseq > lh.base_seq ? dseq : lh.base_seq;
            v->cut = last;
        }
    }
    if (seg->log_fd >= 0)
        close(seg->log_fd);
    if (fd >= 0)
        close(fd);
    free(seg);
}

/* Does file v hold transaction `seq` of the transaction drawn `gtid`: in its data file
 * already (whose transactions cannot be told apart any more), or complete in its log up
 * to the cut, as the same transaction. A file that cannot be judged is taken to hold it:
 * its own open refuses it. */
static int wal_view_holds(const struct wal_view *v, uint64_t seq, uint64_t gtid)
{
    if (!v->known || seq <= v->held)
        return 1;
    if (seq > v->cut)
        return 0;
    uint64_t lo = 0, hi = v->txns.ntx;          /* the transactions are in seq order */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (v->txns.tx[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < v->txns.ntx && v->txns.tx[lo].seq == seq && v->txns.tx[lo].gtid == gtid;
}

int p2_wal_resolve(const char *const *paths, uint32_t n, uint64_t *upto, p2_err *err)
{
    if (paths == NULL || upto == NULL || n > MAX_JSEGS)
        return p2_err_set(err, P2_EINVAL, "p2_wal_resolve: between 0 and %d files", MAX_JSEGS);
    struct wal_view *v = (struct wal_view *)calloc(n ? n : 1, sizeof *v);
    if (v == NULL)
        return p2_err_set(err, P2_ENOMEM, "record log: out of memory reading the logs");
    for (uint32_t i = 0; i < n; i++)
        wal_view_read(&v[i], paths[i]);
    /* Cut each file before the first transaction that another file taking part in it
     * lacks; a cut can make another file lack one of its own: again until none moves. */
    for (int moved = 1; moved;) {
        moved = 0;
        for (uint32_t i = 0; i < n; i++) {
            for (uint64_t t = 0; v[i].known && t < v[i].txns.ntx; t++) {
                const struct wal_txn *tx = &v[i].txns.tx[t];
                if (tx->seq > v[i].cut)
                    break;
                if (tx->seq <= v[i].held)
                    continue;
                int whole = tx->self == i;
                for (uint32_t k = 0; whole && k < tx->nparts; k++) {
                    const struct log_xpart *pt = &v[i].txns.parts[tx->first + k];
                    whole = pt->file < n &&
                            (pt->file == i ? pt->seq == tx->seq
                                           : wal_view_holds(&v[pt->file], pt->seq, tx->gtid));
                }
                if (!whole) {
                    v[i].cut = tx->seq - 1;
                    moved = 1;
                    break;
                }
            }
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        upto[i] = v[i].known ? v[i].cut : UINT64_MAX;
        free(v[i].txns.tx);
        free(v[i].txns.parts);
    }
    free(v);
    return P2_OK;
}
