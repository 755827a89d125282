/* ==========================================================================
 * 10. Object servers: a client object cache over Redis (design in p2_runtime.h,
 *     @ref objserver)
 *
 * The segment of a persistent file, reserved in this process as anonymous memory: the
 * header, the container roots and the allocator's state (its free lists, threaded
 * through the free blocks) are always here, kept on the server as 64-byte cells of one
 * hash (`p2:meta`) read whole at open; every block the layers allocate (an element under
 * malloc storage, a bucket table, a btree node, a text) is an object, the key
 * `p2:o:<offset>`, brought to its place in the segment by p2_obj_ptr() on a miss.  At
 * most `objects` of them are here between calls into the API (a software check per
 * reference: a hash lookup); an object touched since the API was last entered is pinned
 * (the cache overflows rather than evict it), so that a pointer stays valid until the
 * next call.  An evicted object is written back first if dirty, then its bytes are
 * zeroed: a read that skipped p2_obj_ptr reads zeros, never stale data.  Writes are
 * known from the write-intent notices (seg->will_write): inside an object they make it
 * dirty; anywhere else they make their cells dirty.  A dirty object is never evicted.
 * Several clients share the database with optimistic transactions (10.2): a commit
 * checks the versions of what it read (WATCH + HMGET p2:ver) and ships every dirty
 * object, every freed object's deletion, every dirty cell and the new versions in one
 * MULTI ... EXEC, or reports P2_ECONFLICT.
 * ========================================================================== */

#define OB_RES   1u     /* its bytes are at base + off */
#define OB_DIRTY 2u     /* written since it was last shipped */
#define OB_DEL   4u     /* freed: its key is deleted at the next sync */
#define OB_NEW   8u     /* never shipped: the server has no key for it */
#define OB_READ  16u    /* in the current transaction's read set */

#define OC_DIRTY  1u    /* cell: written, to be shipped */
#define OC_STORED 2u    /* cell: the server holds it */
#define OC_DEL    4u    /* cell: now inside an object, to be deleted from the server */
#define OC_LISTED 8u    /* cell: in the list of cells to visit at sync */

#define OB_CELL   64u
#define OB_NONE   UINT32_MAX
#define OB_FIELDS 512u  /* cells per HSET / HDEL command */

typedef struct ob_ent {
    uint64_t off, size;
    uint64_t gen;       /* the call generation of its last touch: pinned while oc->gen */
    uint64_t ver;       /* its version (p2:ver) when fetched or last shipped; 0: none yet */
    uint32_t flags;
    uint32_t ref;       /* the clock's reference bit */
} ob_ent;

typedef struct p2_objcache {
    uint32_t target;            /* objects = N */
    uint64_t gen;               /* bumped at each entry into the API */
    ob_ent  *ents;              /* dense; flags 0: a free slot */
    uint32_t nents, cap;
    uint32_t *freel;            /* free slots of ents */
    uint32_t nfree;
    uint32_t *table;            /* linear probing: ents index + 1, 0 empty */
    uint32_t tcap, count;
    uint32_t hand;
    uint32_t *pins;             /* entries touched since the API was entered */
    uint32_t npins, pcap;
    uint32_t last;              /* the entry p2_obj_ptr() handed out last */
    uint8_t *cells;             /* per 64-byte cell of the reservation: OC_* */
    uint64_t ncells, cells_bytes;
    uint64_t *clist;            /* cells with OC_LISTED */
    uint64_t nclist, clcap;
    uint64_t mver;              /* the version of the meta cells here (p2:ver field m) */
    uint64_t *rs_off, *rs_ver;  /* the read set: objects the transaction touched, with the
                                   version each had when fetched (an object fetched again
                                   after an eviction is listed again) */
    uint32_t nrs, rscap;
    int      conflict;          /* the last commit met a conflict: only abort is taken */
    int      meta_stale;        /* another client changed the meta cells: reloaded at abort */
    int      creating;          /* the open is making a new database: nothing is shipped
                                   until the caller's first commit, which ships it whole */
    unsigned char *hdr_copy;    /* the header as the server holds it */
    uint32_t bundle;            /* neighbours fetched with a miss (p2_obj_set_bundle) */
    uint64_t guess;             /* the size of the last object fetched: the stride */
    uint64_t *wb;               /* offsets written back since the open or the last stats
                                   reset, + 1 (0 empty) */
    uint64_t wbcap, wbcount;
} p2_objcache;

static const char OB_META[] = "p2:meta";
static const char OB_VER[] = "p2:ver";      /* field <offset>: an object's version; m: the meta's */

static int ob_grow_array(void **p, uint32_t *cap, size_t elem, uint32_t need)
{
    if (need <= *cap)
        return 1;
    uint32_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (q == NULL)
        return 0;
    *p = q;
    *cap = n;
    return 1;
}

static uint32_t ob_hash(uint64_t off, uint32_t tcap)
{
    return (uint32_t)((off >> 4) * 0x9E3779B97F4A7C15ull >> 32) & (tcap - 1);
}

static uint32_t ob_find(const p2_objcache *oc, uint64_t off)
{
    if (oc->tcap == 0)
        return OB_NONE;
    for (uint32_t i = ob_hash(off, oc->tcap);; i = (i + 1) & (oc->tcap - 1)) {
        uint32_t t = oc->table[i];
        if (t == 0)
            return OB_NONE;
        if (oc->ents[t - 1].off == off)
            return t - 1;
    }
}

static void ob_place(p2_objcache *oc, uint32_t idx)
{
    uint32_t i = ob_hash(oc->ents[idx].off, oc->tcap);
    while (oc->table[i] != 0)
        i = (i + 1) & (oc->tcap - 1);
    oc->table[i] = idx + 1;
}

static int ob_rehash(p2_objcache *oc, uint32_t tcap)
{
    uint32_t *t = (uint32_t *)calloc(tcap, sizeof *t);
    if (t == NULL)
        return 0;
    free(oc->table);
    oc->table = t;
    oc->tcap = tcap;
    for (uint32_t i = 0; i < oc->nents; i++)
        if (oc->ents[i].flags != 0)
            ob_place(oc, i);
    return 1;
}

/* A new entry for off (not in the table), or OB_NONE: out of memory. */
static uint32_t ob_add(p2_objcache *oc, uint64_t off, uint64_t size, uint32_t flags)
{
    if ((uint64_t)(oc->count + 1) * 2 > oc->tcap && !ob_rehash(oc, oc->tcap ? oc->tcap * 2 : 64))
        return OB_NONE;
    uint32_t idx;
    if (oc->nfree > 0) {
        idx = oc->freel[--oc->nfree];
    } else {
        if (!ob_grow_array((void **)&oc->ents, &oc->cap, sizeof *oc->ents, oc->nents + 1))
            return OB_NONE;
        idx = oc->nents++;
        uint32_t fcap = oc->cap;    /* the free list never holds more than the slots */
        void *f = realloc(oc->freel, (size_t)fcap * sizeof *oc->freel);
        if (f == NULL)
            return OB_NONE;
        oc->freel = (uint32_t *)f;
    }
    ob_ent *e = &oc->ents[idx];
    e->off = off;
    e->size = size;
    e->flags = flags;
    e->ref = 1;
    e->gen = 0;
    e->ver = 0;
    ob_place(oc, idx);
    oc->count++;
    return idx;
}

/* Remove entry idx (backward-shift deletion keeps the probe chains whole). */
static void ob_remove(p2_objcache *oc, uint32_t idx)
{
    uint32_t i = ob_hash(oc->ents[idx].off, oc->tcap);
    while (oc->table[i] != idx + 1)
        i = (i + 1) & (oc->tcap - 1);
    for (uint32_t j = (i + 1) & (oc->tcap - 1);; j = (j + 1) & (oc->tcap - 1)) {
        uint32_t t = oc->table[j];
        if (t == 0)
            break;
        uint32_t h = ob_hash(oc->ents[t - 1].off, oc->tcap);
        /* t may move to i if its home is not in (i, j] (cyclically) */
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            oc->table[i] = t;
            i = j;
        }
    }
    oc->table[i] = 0;
    oc->ents[idx].flags = 0;
    oc->freel[oc->nfree++] = idx;
    oc->count--;
    if (oc->last == idx)
        oc->last = OB_NONE;
}

/* The counters' reset: no object has been written back since. */
static void ob_forget_writebacks(p2_pagebuf *pb)
{
    p2_objcache *oc = pb->oc;
    if (oc->wb != NULL)
        memset(oc->wb, 0, (size_t)oc->wbcap * sizeof *oc->wb);
    oc->wbcount = 0;
}

/* An object at off was written back: counted a rewrite if it was before since the open
 * or the last reset (the entry itself may have been evicted in between). */
static void ob_wb_note(p2_pagebuf *pb, uint64_t off)
{
    p2_objcache *oc = pb->oc;
    pb->st.writebacks++;
    if ((oc->wbcount + 1) * 2 > oc->wbcap) {
        uint64_t n = oc->wbcap ? oc->wbcap * 2 : 256;
        uint64_t *t = (uint64_t *)calloc((size_t)n, sizeof *t);
        if (t == NULL)
            return;                      /* the counter only: it stays low */
        for (uint64_t i = 0; i < oc->wbcap; i++) {
            if (oc->wb[i] == 0)
                continue;
            uint64_t j = (oc->wb[i] * 0x9E3779B97F4A7C15ull >> 20) & (n - 1);
            while (t[j] != 0)
                j = (j + 1) & (n - 1);
            t[j] = oc->wb[i];
        }
        free(oc->wb);
        oc->wb = t;
        oc->wbcap = n;
    }
    uint64_t k = off + 1;
    for (uint64_t j = (k * 0x9E3779B97F4A7C15ull >> 20) & (oc->wbcap - 1);; j = (j + 1) & (oc->wbcap - 1)) {
        if (oc->wb[j] == k) {
            pb->st.rewrites++;
            return;
        }
        if (oc->wb[j] == 0) {
            oc->wb[j] = k;
            oc->wbcount++;
            return;
        }
    }
}

static void ob_pin(p2_objcache *oc, uint32_t idx)
{
    ob_ent *e = &oc->ents[idx];
    e->ref = 1;
    oc->last = idx;
    if (e->gen == oc->gen)
        return;
    e->gen = oc->gen;
    if (ob_grow_array((void **)&oc->pins, &oc->pcap, sizeof *oc->pins, oc->npins + 1))
        oc->pins[oc->npins++] = idx;
    /* else: the pin holds (gen), only the write classification will not find it */
}

/* The transaction read object idx: listed with the version it had (once per fetch). */
static void ob_read(p2_objcache *oc, uint32_t idx)
{
    ob_ent *e = &oc->ents[idx];
    if (e->flags & (OB_READ | OB_NEW))
        return;
    if (!ob_grow_array((void **)&oc->rs_off, &oc->rscap, sizeof *oc->rs_off, oc->nrs + 1))
        return;                 /* the commit finds the gap: rs_ver is one short */
    uint32_t cap = oc->rscap;
    void *q = realloc(oc->rs_ver, (size_t)cap * sizeof *oc->rs_ver);
    if (q == NULL) {
        oc->conflict = -1;      /* out of memory for the read set: the commit refuses */
        return;
    }
    oc->rs_ver = (uint64_t *)q;
    oc->rs_off[oc->nrs] = e->off;
    oc->rs_ver[oc->nrs++] = e->ver;
    e->flags |= OB_READ;
}

static void ob_cell_mark(p2_objcache *oc, uint64_t c, uint8_t set, uint8_t clear)
{
    if (c >= oc->ncells)
        return;
    oc->cells[c] = (uint8_t)((oc->cells[c] & ~clear) | set);
    if (!(oc->cells[c] & OC_LISTED)) {
        if (oc->nclist == oc->clcap) {
            uint64_t n = oc->clcap ? oc->clcap * 2 : 256;
            void *q = realloc(oc->clist, (size_t)n * sizeof *oc->clist);
            if (q == NULL)
                return;     /* not listed: the next header write lists it again */
            oc->clist = (uint64_t *)q;
            oc->clcap = n;
        }
        oc->clist[oc->nclist++] = c;
        oc->cells[c] |= OC_LISTED;
    }
}

/* Bytes [off, off + n) outside every object were written: their cells go at sync. */
static void ob_meta_dirty(p2_objcache *oc, uint64_t off, uint64_t n)
{
    if (n == 0)
        return;
    for (uint64_t c = off / OB_CELL; c <= (off + n - 1) / OB_CELL; c++)
        ob_cell_mark(oc, c, OC_DIRTY, OC_DEL);
}

/* [off, off + size) became an object: the cells wholly inside it are no longer meta
 * (deleted from the server at sync where it holds them). */
static void ob_meta_claim(p2_objcache *oc, uint64_t off, uint64_t size)
{
    uint64_t first = (off + OB_CELL - 1) / OB_CELL, end = (off + size) / OB_CELL;
    for (uint64_t c = first; c < end && c < oc->ncells; c++) {
        if (oc->cells[c] & OC_STORED)
            ob_cell_mark(oc, c, OC_DEL, OC_DIRTY);
        else
            oc->cells[c] &= (uint8_t)~OC_DIRTY;
    }
}

static void ob_mark_dirty(p2_pagebuf *pb, ob_ent *e)
{
    if (!(e->flags & OB_DIRTY)) {
        e->flags |= OB_DIRTY;
        pb->st.dirty++;
    }
}

/* The segment's write hook: inside an object it is dirty; elsewhere, the cells.  The
 * header is not marked here: the commit compares it whole with the server's copy
 * (ob_seal_header), since p2_seg_sync() announces all of it at every commit, and
 * marking it would ship it and move the meta cells' version, a conflict for every other
 * client, at every commit. */
static void ob_note(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    p2_pagebuf *pb = (p2_pagebuf *)ctx;
    p2_objcache *oc = pb->oc;
    uint64_t hdr = sizeof *seg->hdr;
    if (off < hdr) {
        if (off + n <= hdr)
            return;
        n -= hdr - off;
        off = hdr;
    }
    if (oc->last != OB_NONE) {
        ob_ent *e = &oc->ents[oc->last];
        if ((e->flags & OB_RES) && off >= e->off && off + n <= e->off + e->size) {
            ob_mark_dirty(pb, e);
            return;
        }
    }
    for (uint32_t i = oc->npins; i-- > 0;) {
        ob_ent *e = &oc->ents[oc->pins[i]];
        if (!(e->flags & OB_RES) || e->gen != oc->gen)
            continue;
        if (off >= e->off && off + n <= e->off + e->size) {
            ob_mark_dirty(pb, e);
            return;
        }
        if (off < e->off + e->size && e->off < off + n) {   /* straddles: both */
            ob_mark_dirty(pb, e);
            break;
        }
    }
    ob_meta_dirty(oc, off, n);
}

static void ob_fail(p2_pagebuf *pb, const p2_err *e)
{
    if (!pb->failed)
        snprintf(pb->why, sizeof pb->why, "an object could not be fetched from the server inside an "
                 "operation, so the operation read what the client held there; nothing more is "
                 "written to the server (%.300s)", e->msg);
    pb->failed = 1;
}

static int ob_key(char *buf, size_t n, uint64_t off)
{
    return snprintf(buf, n, "p2:o:%" PRIu64, off);
}

/* Zero an object's bytes (large ones' whole pages given back to the kernel). */
static void ob_wipe(p2_pagebuf *pb, uint64_t off, uint64_t size)
{
    char *p = pb->seg->base + off;
    uint64_t pg = page_size();
    uint64_t a = round_up(off, pg), b = (off + size) / pg * pg;
    if (b > a + pg) {
        memset(p, 0, (size_t)(a - off));
        (void)madvise(pb->seg->base + a, (size_t)(b - a), MADV_DONTNEED);
        memset(pb->seg->base + b, 0, (size_t)(off + size - b));
    } else {
        memset(p, 0, (size_t)size);
    }
}


/* Evict entry idx, a clean object: its bytes zeroed.  (A dirty object is never evicted:
 * the server holds committed states only, so it stays until its transaction ends.) */
static void ob_evict(p2_pagebuf *pb, uint32_t idx)
{
    p2_objcache *oc = pb->oc;
    ob_ent *e = &oc->ents[idx];
    ob_wipe(pb, e->off, e->size);
    ob_remove(oc, idx);
    pb->st.evictions++;
    pb->st.resident--;
}

/* The clock: the first resident clean object not pinned and not referenced since the
 * hand last passed; OB_NONE if every one is pinned or dirty. */
static uint32_t ob_victim(p2_objcache *oc)
{
    if (oc->nents == 0)
        return OB_NONE;
    for (uint64_t steps = 0; steps < 2 * (uint64_t)oc->nents + 1; steps++) {
        uint32_t i = oc->hand;
        oc->hand = i + 1 >= oc->nents ? 0 : i + 1;
        ob_ent *e = &oc->ents[i];
        if (!(e->flags & OB_RES) || (e->flags & OB_DIRTY) || e->gen == oc->gen)
            continue;
        if (e->ref) {
            e->ref = 0;
            continue;
        }
        return i;
    }
    return OB_NONE;
}

/* Room for one more object: evict until fewer than `target` are here, or every one left
 * is pinned or dirty (the cache overflows). */
static void ob_make_room(p2_pagebuf *pb, uint64_t want)
{
    p2_objcache *oc = pb->oc;
    while (pb->st.resident + want > oc->target && !pb->failed) {
        uint32_t v = ob_victim(oc);
        if (v == OB_NONE)
            return;
        ob_evict(pb, v);
    }
}

/* ------------------------------------------------------------------------
 * 10.1 what the memory layer calls
 * ------------------------------------------------------------------------ */

void p2_obj_enter(p2_seg *seg)
{
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    oc->gen++;
    oc->npins = 0;
    oc->last = OB_NONE;
    ob_make_room(pb, 0);
    /* a cache that overflowed far (a walk of everything in one call) gives its table back */
    if (oc->tcap > 1024 && (uint64_t)oc->count * 16 < oc->tcap && oc->nfree * 2 > oc->nents) {
        /* compact the entries (indexes change: nothing is pinned now) */
        uint32_t j = 0;
        for (uint32_t i = 0; i < oc->nents; i++)
            if (oc->ents[i].flags != 0)
                oc->ents[j++] = oc->ents[i];
        oc->nents = j;
        oc->nfree = 0;
        oc->hand = 0;
        uint32_t t = 64;
        while (t < 2 * (oc->count + 1))
            t *= 2;
        if (!ob_rehash(oc, t))
            (void)ob_rehash(oc, oc->tcap);
    }
}

struct ob_fetch {
    p2_pagebuf *pb;
    uint64_t off;
    int found;
    uint64_t size;
    uint64_t ver;
};

/* A version (an HGET or HMGET element of p2:ver): nil is 0 (never shipped); -1 if it is
 * not a number (the caller names it corrupt). */
static int64_t ob_version(const p2_rreply *r)
{
    if (r->type == REDIS_NIL)
        return 0;
    char num[24];
    if (r->type != REDIS_STRING || r->len == 0 || r->len >= sizeof num)
        return -1;
    memcpy(num, r->str, r->len);
    num[r->len] = '\0';
    char *end;
    unsigned long long v = strtoull(num, &end, 10);
    return *end != '\0' || num[0] == '-' || v > INT64_MAX ? -1 : (int64_t)v;
}

static int ob_take_object(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_fetch *f = (struct ob_fetch *)ctx;
    if (i == 0) {               /* HGET p2:ver <off>, sent first (see ob_fetch_cmds) */
        int64_t v = ob_version(r);
        if (v < 0)
            return P2_EFORMAT;
        f->ver = (uint64_t)v;
        return P2_OK;
    }
    if (r->type == REDIS_NIL)
        return P2_OK;
    p2_seg *seg = f->pb->seg;
    if (r->type != REDIS_STRING || r->len == 0 || f->off + r->len > seg->mapped)
        return P2_EFORMAT;      /* the caller names it */
    memcpy(seg->base + f->off, r->str, r->len);
    f->found = 1;
    f->size = r->len;
    return P2_OK;
}

void p2_obj_set_bundle(p2_seg *seg, uint32_t k)
{
    if (seg != NULL && seg->pb != NULL && seg->pb->oc != NULL)
        seg->pb->oc->bundle = k > 64 ? 64 : k;
}

/* MGET's answer: element 0 is the missed object (as GET's), the others neighbours, each
 * placed where the client has no object and the server holds one. */
struct ob_bundle {
    struct ob_fetch f;
    uint64_t off[65];
    uint64_t ver[65];
    unsigned n;
    uint64_t got, bytes;
};

static int ob_take_bundle(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_bundle *b = (struct ob_bundle *)ctx;
    if (r->type != REDIS_ARRAY || r->elements != b->n)
        return P2_EFORMAT;
    if (i == 0) {               /* HMGET p2:ver, sent before the MGET */
        for (unsigned k = 0; k < b->n; k++) {
            p2_rreply x;
            redis_read_reply(r->element[k], &x);
            int64_t v = ob_version(&x);
            if (v < 0)
                return P2_EFORMAT;
            b->ver[k] = (uint64_t)v;
        }
        b->f.ver = b->ver[0];
        return P2_OK;
    }
    p2_rreply first;
    redis_read_reply(r->element[0], &first);
    int rc = ob_take_object(&b->f, 1, &first);
    if (rc != P2_OK || !b->f.found)
        return rc;
    p2_pagebuf *pb = b->f.pb;
    p2_seg *seg = pb->seg;
    for (unsigned k = 1; k < b->n; k++) {
        p2_rreply x;
        redis_read_reply(r->element[k], &x);
        uint64_t off = b->off[k];
        if (x.type != REDIS_STRING || x.len == 0 || off + x.len > seg->mapped ||
            off < b->f.off + b->f.size || ob_find(pb->oc, off) != OB_NONE)
            continue;           /* none there, or the client's is newer (or freed) */
        ob_make_room(pb, 1);
        uint32_t idx = ob_add(pb->oc, off, x.len, OB_RES);
        if (idx == OB_NONE)
            break;
        memcpy(seg->base + off, x.str, x.len);
        pb->oc->ents[idx].ver = b->ver[k];
        pb->st.resident++;
        b->got++;
        b->bytes += x.len;
    }
    return P2_OK;
}

void *p2_obj_ptr(p2_seg *seg, uint64_t ref)
{
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    uint32_t idx = ob_find(oc, ref);
    if (idx != OB_NONE) {
        if (oc->ents[idx].flags & OB_RES) {
            pb->st.hits++;
            ob_pin(oc, idx);
            ob_read(oc, idx);
        }
        return seg->base + ref;          /* or freed: the allocator's bytes */
    }
    if (ref < P2_SEG_HEADER_SIZE || ref >= seg->mapped || pb->failed)
        return seg->base + ref;          /* no object there: the caller bounds references */
    ob_make_room(pb, 1);
    /* its version first, then its bytes (one round trip): a commit of another client
     * between the two gives an old version with new bytes, which the commit's check
     * takes for a conflict (never new version, old bytes: commits are atomic) */
    char key[40], field[24];
    ob_key(key, sizeof key, ref);
    snprintf(field, sizeof field, "%" PRIu64, ref);
    const char *vargv[] = {"HGET", OB_VER, field};
    const size_t vlens[] = {4, sizeof OB_VER - 1, strlen(field)};
    const char *argv[] = {"GET", key};
    const size_t lens[] = {3, strlen(key)};
    const int fargc[] = {3, 2};
    const char *const *fargv[] = {vargv, argv};
    const size_t *const flens[] = {vlens, lens};
    struct ob_fetch f = {pb, ref, 0, 0, 0};
    p2_err e;
    p2_err_clear(&e);
    if (oc->bundle > 0 && oc->guess > 0) {
        /* one MGET: the object and its neighbours at the last object's stride */
        struct ob_bundle b;
        memset(&b, 0, sizeof b);
        b.f = f;
        char keys[65][40], fields[65][24];
        const char *bargv[66], *hargv[67];
        size_t blens[66], hlens[67];
        bargv[0] = "MGET";
        blens[0] = 4;
        hargv[0] = "HMGET";
        hlens[0] = 5;
        hargv[1] = OB_VER;
        hlens[1] = sizeof OB_VER - 1;
        for (unsigned k = 0; k <= oc->bundle; k++) {
            uint64_t off = ref + k * oc->guess;
            if (k > 0 && off >= seg->mapped)
                break;
            b.off[k] = off;
            ob_key(keys[k], sizeof keys[k], off);
            bargv[k + 1] = keys[k];
            blens[k + 1] = strlen(keys[k]);
            snprintf(fields[k], sizeof fields[k], "%" PRIu64, off);
            hargv[k + 2] = fields[k];
            hlens[k + 2] = strlen(fields[k]);
            b.n = k + 1;
        }
        const int bargc[] = {(int)b.n + 2, (int)b.n + 1};
        const char *const *bargvs[] = {hargv, bargv};
        const size_t *const blenss[] = {hlens, blens};
        int rc = redis_pipe(&pb->be, 2, bargc, bargvs, blenss, ob_take_bundle, &b, "a read", &e);
        f = b.f;
        if (rc == P2_OK) {
            pb->st.bundled += b.got;
            pb->st.bytes_read += b.bytes;
        } else if (e.code == P2_OK) {
            p2_err_set(&e, P2_EFORMAT, "%s: the object at offset %" PRIu64 " is corrupt (not a "
                       "block inside the database)", pb->be.uri, ref);
        }
        if (rc != P2_OK) {
            ob_fail(pb, &e);
            return seg->base + ref;
        }
    } else if (redis_pipe(&pb->be, 2, fargc, fargv, flens, ob_take_object, &f, "a read", &e) != P2_OK) {
        if (e.code == P2_OK)
            p2_err_set(&e, P2_EFORMAT, "%s: the object at offset %" PRIu64 " is corrupt (not a "
                       "block inside the database)", pb->be.uri, ref);
        ob_fail(pb, &e);
        return seg->base + ref;
    }
    pb->st.reads++;
    if (!f.found)
        return seg->base + ref;          /* not an object: meta (the caller's business) */
    pb->st.misses++;
    pb->st.bytes_read += f.size;
    oc->guess = f.size;
    idx = ob_add(oc, ref, f.size, OB_RES);
    if (idx == OB_NONE) {
        p2_err_set(&e, P2_ENOMEM, "%s: out of memory for the object cache", pb->be.uri);
        ob_fail(pb, &e);
        return seg->base + ref;
    }
    oc->ents[idx].ver = f.ver;
    pb->st.resident++;
    ob_pin(oc, idx);
    ob_read(oc, idx);
    return seg->base + ref;
}

/* Register [off, off + size) as a new (dirty, pinned) object. */
static int ob_new_object(p2_pagebuf *pb, uint64_t off, uint64_t size, p2_err *err)
{
    p2_objcache *oc = pb->oc;
    uint32_t idx = ob_find(oc, off);
    if (idx != OB_NONE) {                /* freed since the last sync: its key is rewritten */
        ob_ent *e = &oc->ents[idx];
        e->flags = OB_RES;
        e->size = size;
    } else {
        idx = ob_add(oc, off, size, OB_RES | OB_NEW);
        if (idx == OB_NONE)
            return seg_fail(pb->seg, err, P2_ENOMEM, "out of memory for the object cache");
    }
    pb->st.resident++;
    ob_mark_dirty(pb, &oc->ents[idx]);
    ob_pin(oc, idx);
    ob_meta_claim(oc, off, size);
    return P2_OK;
}

/* An object stops being one (freed, or moved away by a realloc). */
static void ob_forget(p2_pagebuf *pb, uint64_t off, uint64_t size, int wipe)
{
    p2_objcache *oc = pb->oc;
    uint32_t idx = ob_find(oc, off);
    if (idx == OB_NONE) {                /* on the server only */
        if (wipe)
            memset(pb->seg->base + off, 0, (size_t)size);
        (void)ob_add(oc, off, size, OB_DEL);   /* out of memory: a stale key stays unread */
        return;
    }
    ob_ent *e = &oc->ents[idx];
    if (!(e->flags & OB_RES))
        return;
    pb->st.resident--;
    if (e->flags & OB_DIRTY)
        pb->st.dirty--;
    if (wipe)
        memset(pb->seg->base + off, 0, (size_t)size);
    if (e->flags & OB_NEW)
        ob_remove(oc, idx);
    else
        e->flags = OB_DEL;
}

p2_off p2_obj_alloc(p2_seg *seg, uint64_t size, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed) {
        seg_fail(seg, err, P2_EIO, "%s", pb->why);
        return 0;
    }
    ob_make_room(pb, 1);
    p2_off off = p2_seg_alloc(seg, size, err);
    if (!off)
        return 0;
    /* the whole block is the object: the allocator zero-filled it all */
    if (ob_new_object(pb, off, block_size(seg, size), err) != P2_OK) {
        p2_seg_free(seg, off, size);
        return 0;
    }
    return off;
}

void p2_obj_free(p2_seg *seg, p2_off ref, uint64_t size)
{
    ob_forget(seg->pb, ref, block_size(seg, size), 1);
    p2_seg_free(seg, ref, size);         /* its links: cells, no object is there now */
}

p2_off p2_obj_realloc(p2_seg *seg, p2_off ref, uint64_t old_size, uint64_t new_size, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed) {
        seg_fail(seg, err, P2_EIO, "%s", pb->why);
        return 0;
    }
    if (ref != 0)
        (void)p2_obj_ptr(seg, ref);      /* its bytes are copied: here first */
    p2_off off = p2_seg_realloc(seg, ref, old_size, new_size, err);
    if (!off)
        return 0;
    if (off == ref) {
        uint32_t idx = ob_find(pb->oc, ref);
        if (idx != OB_NONE) {
            pb->oc->ents[idx].size = block_size(seg, new_size);
            ob_mark_dirty(pb, &pb->oc->ents[idx]);
            ob_meta_claim(pb->oc, ref, block_size(seg, new_size));
        }
        return off;
    }
    if (ref != 0) {
        ob_forget(pb, ref, block_size(seg, old_size), 0);  /* the allocator's link is in it now */
        ob_meta_dirty(pb->oc, ref, block_size(seg, old_size));
    }
    if (ob_new_object(pb, off, block_size(seg, new_size), err) != P2_OK)
        return 0;
    return off;
}

/* ------------------------------------------------------------------------
 * 10.2 transactions: the check of the read set, commit (one MULTI ... EXEC), abort
 *
 * Several clients share the database, optimistically.  Each object has a version, the
 * field <offset> of the hash p2:ver (the meta cells theirs, the field m), raised by every
 * commit that ships it.  A fetch reads the version before the bytes (one round trip).  A
 * transaction lists what it reads (the read set: offset and version); its commit then
 *   1. WATCHes p2:meta and the key of every object read, and reads their versions now
 *      (HMGET p2:ver m ...): one round trip.  A version that moved is a conflict
 *      (another client committed the object, or the meta cells, since this one read it);
 *   2. ships the dirty objects (SET), the freed ones (DEL), the dirty cells (HSET / HDEL
 *      p2:meta) and the new versions in one MULTI ... EXEC: one round trip.  An EXEC
 *      the server aborts (nil: a watched key changed between 1 and 2) is a conflict.
 * A transaction that wrote nothing needs no WATCH: step 1 alone (the versions all still
 * as read: what it read was the committed state at that instant).  One that read and
 * wrote nothing sends nothing.  A conflict is P2_ECONFLICT: nothing was shipped, the
 * objects found changed are dropped from the cache, and the transaction stays open for
 * the caller to abort (which drops what it changed; meta cells changed here or by
 * another client make it drop the cache and read the cells again) and retry.  Nothing
 * reaches the server but through a commit: a dirty object is never evicted.
 * ------------------------------------------------------------------------ */

/* One pipeline of commands, its arrays sized by the caller's bounds. */
typedef struct ob_batch {
    unsigned ncmd;
    int *argc;
    const char ***argv;
    const size_t **lens;
    const char **args;
    size_t *alen;
    uint64_t narg, start;
    char *text;                 /* keys and numbers: 32 bytes each */
    uint64_t ntext;
    uint64_t infields;          /* fields in the hash command being built */
} ob_batch;

#define OB_TEXT 32u

static int ob_batch_init(ob_batch *b, uint64_t cmds, uint64_t args, uint64_t texts)
{
    memset(b, 0, sizeof *b);
    b->argc = (int *)calloc((size_t)cmds, sizeof *b->argc);
    b->argv = (const char ***)calloc((size_t)cmds, sizeof *b->argv);
    b->lens = (const size_t **)calloc((size_t)cmds, sizeof *b->lens);
    b->args = (const char **)calloc((size_t)args, sizeof *b->args);
    b->alen = (size_t *)calloc((size_t)args, sizeof *b->alen);
    b->text = (char *)malloc((size_t)(texts ? texts : 1) * OB_TEXT);
    return b->argc && b->argv && b->lens && b->args && b->alen && b->text;
}

static void ob_batch_free(ob_batch *b)
{
    free(b->argc);
    free(b->argv);
    free(b->lens);
    free(b->args);
    free(b->alen);
    free(b->text);
}

static void ob_cmd_begin(ob_batch *b)
{
    b->argv[b->ncmd] = &b->args[b->narg];
    b->lens[b->ncmd] = &b->alen[b->narg];
    b->start = b->narg;
}

static void ob_arg(ob_batch *b, const char *s, size_t n)
{
    b->args[b->narg] = s;
    b->alen[b->narg++] = n;
}

static void ob_cmd_end(ob_batch *b)
{
    b->argc[b->ncmd++] = (int)(b->narg - b->start);
}

/* An argument "<prefix><v>", kept in the batch's text. */
static void ob_num_arg(ob_batch *b, const char *prefix, uint64_t v)
{
    char *t = b->text + OB_TEXT * b->ntext++;
    int n = snprintf(t, OB_TEXT, "%s%" PRIu64, prefix, v);
    ob_arg(b, t, (size_t)n);
}

/* Fields of a hash command (HSET / HDEL key f [v] ...), OB_FIELDS per command. */
static void ob_field_begin(ob_batch *b, const char *cmd, const char *key)
{
    if (b->infields == 0) {
        ob_cmd_begin(b);
        ob_arg(b, cmd, strlen(cmd));
        ob_arg(b, key, strlen(key));
    }
}

static void ob_field_end(ob_batch *b, int last)
{
    if (!last && ++b->infields < OB_FIELDS)
        return;
    if (b->infields > 0 || !last)
        ob_cmd_end(b);
    b->infields = 0;
}

static uint64_t ob_chunks(uint64_t n)
{
    return (n + OB_FIELDS - 1) / OB_FIELDS;
}

/* The read set checked against the server's versions. */
struct ob_check {
    p2_objcache *oc;
    unsigned last;              /* the HMGET's command */
    uint8_t *moved;             /* per read-set entry */
    uint64_t nmoved;
    int meta_moved, bad;
};

static int ob_take_check(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_check *x = (struct ob_check *)ctx;
    if (i != x->last)
        return P2_OK;           /* WATCH: OK */
    if (r->type != REDIS_ARRAY || r->elements != (size_t)x->oc->nrs + 1) {
        x->bad = 1;
        return P2_OK;
    }
    for (size_t k = 0; k < r->elements; k++) {
        p2_rreply v;
        redis_read_reply(r->element[k], &v);
        int64_t ver = ob_version(&v);
        if (ver < 0) {
            x->bad = 1;
            return P2_OK;
        }
        if (k == 0) {
            x->meta_moved = (uint64_t)ver != x->oc->mver;
        } else if ((uint64_t)ver != x->oc->rs_ver[k - 1]) {
            x->moved[k - 1] = 1;
            x->nmoved++;
        }
    }
    return P2_OK;
}

/* Drop a clean object from the cache (another client changed it): the next touch fetches
 * it again.  A dirty one stays until the abort. */
static void ob_drop_stale(p2_pagebuf *pb, uint64_t off)
{
    p2_objcache *oc = pb->oc;
    uint32_t idx = ob_find(oc, off);
    if (idx == OB_NONE || (oc->ents[idx].flags & (OB_DIRTY | OB_NEW)) || !(oc->ents[idx].flags & OB_RES))
        return;
    ob_wipe(pb, off, oc->ents[idx].size);
    ob_remove(oc, idx);
    pb->st.resident--;
}

/* Read the versions of p2:meta and of every object of the read set (with watch, WATCH
 * their keys first, in the same round trip).  *moved: how many changed since they were
 * read (the meta counted); those objects are dropped from the cache. */
static int ob_check(p2_pagebuf *pb, int watch, uint64_t *moved, p2_err *err)
{
    p2_objcache *oc = pb->oc;
    uint64_t n = oc->nrs;
    ob_batch b;
    struct ob_check x = {oc, watch ? 1u : 0u, (uint8_t *)calloc((size_t)n + 1, 1), 0, 0, 0};
    int rc;
    if (!ob_batch_init(&b, 2, 2 * n + 6, 2 * n) || x.moved == NULL) {
        rc = seg_fail(pb->seg, err, P2_ENOMEM, "out of memory for the check of %" PRIu64 " objects", n);
        goto out;
    }
    if (watch) {
        ob_cmd_begin(&b);
        ob_arg(&b, "WATCH", 5);
        ob_arg(&b, OB_META, sizeof OB_META - 1);
        for (uint64_t k = 0; k < n; k++)
            ob_num_arg(&b, "p2:o:", oc->rs_off[k]);
        ob_cmd_end(&b);
    }
    ob_cmd_begin(&b);
    ob_arg(&b, "HMGET", 5);
    ob_arg(&b, OB_VER, sizeof OB_VER - 1);
    ob_arg(&b, "m", 1);
    for (uint64_t k = 0; k < n; k++)
        ob_num_arg(&b, "", oc->rs_off[k]);
    ob_cmd_end(&b);
    rc = redis_pipe(&pb->be, b.ncmd, b.argc, (const char *const *const *)b.argv,
                    (const size_t *const *)b.lens, ob_take_check, &x, "a commit's check", err);
    if (rc != P2_OK)
        goto out;
    /* not counted among reads, which stay the fetches (ACOB counts them: acob.md 6.1) */
    if (x.bad) {
        rc = seg_fail(pb->seg, err, P2_EFORMAT, "not a p2gen database: its %s hash holds something other "
                      "than versions", OB_VER);
        goto out;
    }
    for (uint64_t k = 0; k < n; k++)
        if (x.moved[k])
            ob_drop_stale(pb, oc->rs_off[k]);
    if (x.meta_moved)
        oc->meta_stale = 1;
    *moved = x.nmoved + (uint64_t)x.meta_moved;
out:
    ob_batch_free(&b);
    free(x.moved);
    return rc;
}

/* The transaction is over: its read set empties. */
static void ob_txn_end(p2_objcache *oc)
{
    for (uint32_t k = 0; k < oc->nrs; k++) {
        uint32_t idx = ob_find(oc, oc->rs_off[k]);
        if (idx != OB_NONE)
            oc->ents[idx].flags &= ~OB_READ;
    }
    oc->nrs = 0;
    oc->conflict = 0;
}

static int ob_conflict(p2_pagebuf *pb, uint64_t moved, p2_err *err)
{
    pb->oc->conflict = 1;
    pb->st.conflicts++;
    return seg_fail(pb->seg, err, P2_ECONFLICT, "another client committed %s%" PRIu64 " object%s this "
                    "transaction read since it read %s: nothing of it was shipped; abort it and retry",
                    pb->oc->meta_stale ? "the database's roots or allocator and " : "", moved,
                    moved == 1 ? "" : "s", moved == 1 ? "it" : "them");
}

/* The header as the server must hold it (clean, roots sealed, checksummed), its cells
 * dirty if that differs from what the server holds. */
static void ob_seal_header(p2_seg *seg)
{
    p2_objcache *oc = seg->pb->oc;
    struct p2_seg_header *h = seg->hdr;
    h->state = SEG_STATE_CLEAN;
    roots_seal(seg);
    h->checksum = header_crc(h);
    if (memcmp(h, oc->hdr_copy, sizeof *h) != 0)
        ob_meta_dirty(oc, 0, sizeof *h);
}

struct ob_exec {
    unsigned ncmds;
    int exec_ok;
};

static int ob_take_exec(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_exec *x = (struct ob_exec *)ctx;
    if (i == x->ncmds - 1)
        x->exec_ok = r->type == REDIS_ARRAY;
    return P2_OK;
}

/* Commit (sync and close too): check the read set, then ship in one MULTI ... EXEC. */
static int ob_sync(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    if (pb->failed)
        return pb_failed(pb, err);
    if (pb->be.dead)
        return seg_fail(seg, err, P2_EIO, "%s", pb->be.why);
    if (oc->conflict > 0)
        return seg_fail(seg, err, P2_ECONFLICT, "this transaction met a conflict at its commit: abort it, "
                        "then retry");
    if (oc->conflict < 0)
        return seg_fail(seg, err, P2_ENOMEM, "out of memory for the transaction's read set: abort it");
    if (oc->creating)
        return P2_OK;           /* seg_create's bare roots: the empty containers come first */
    ob_seal_header(seg);
    uint64_t nobj = 0, ndel = 0, ncell = 0, ncdel = 0;
    for (uint32_t i = 0; i < oc->nents; i++) {
        if ((oc->ents[i].flags & (OB_RES | OB_DIRTY)) == (OB_RES | OB_DIRTY))
            nobj++;
        else if (oc->ents[i].flags & OB_DEL)
            ndel++;
    }
    for (uint64_t k = 0; k < oc->nclist; k++) {
        uint8_t c = oc->cells[oc->clist[k]];
        ncell += (c & OC_DIRTY) != 0;
        ncdel += (c & OC_DEL) != 0;
    }
    int writes = nobj + ndel + ncell + ncdel > 0, meta = ncell + ncdel > 0;
    if (!writes && oc->nrs == 0)
        return P2_OK;           /* nothing read from the server, nothing to ship */
    uint64_t moved = 0;
    int rc = ob_check(pb, writes, &moved, err);
    if (rc != P2_OK)
        return rc;
    if (moved > 0) {
        if (writes) {           /* the WATCH is not wanted any more */
            const char *argv[] = {"UNWATCH"};
            const size_t lens[] = {7};
            p2_err e;
            p2_err_clear(&e);
            (void)redis_cmd(&pb->be, 1, argv, lens, NULL, NULL, "an UNWATCH", &e);
        }
        return ob_conflict(pb, moved, err);
    }
    if (!writes) {
        ob_txn_end(oc);
        return P2_OK;
    }
    uint64_t vfields = nobj + (uint64_t)meta;
    uint64_t ncmds = 2 + nobj + ndel + ob_chunks(ncell) + ob_chunks(ncdel) + ob_chunks(vfields) + ob_chunks(ndel);
    uint64_t nargs = 2 + 3 * nobj + 2 * ndel + 2 * ncell + ncdel + 2 * vfields + ndel + 2 * ncmds;
    ob_batch b;
    if (!ob_batch_init(&b, ncmds, nargs, nobj + ndel + ncell + ncdel + 2 * vfields + ndel)) {
        rc = seg_fail(seg, err, P2_ENOMEM, "out of memory for a commit of %" PRIu64 " objects", nobj);
        goto out;
    }
    ob_cmd_begin(&b);
    ob_arg(&b, "MULTI", 5);
    ob_cmd_end(&b);
    for (uint32_t i = 0; i < oc->nents; i++) {
        ob_ent *e = &oc->ents[i];
        int set = (e->flags & (OB_RES | OB_DIRTY)) == (OB_RES | OB_DIRTY);
        if (!set && !(e->flags & OB_DEL))
            continue;
        ob_cmd_begin(&b);
        ob_arg(&b, set ? "SET" : "DEL", 3);
        ob_num_arg(&b, "p2:o:", e->off);
        if (set)
            ob_arg(&b, seg->base + e->off, (size_t)e->size);
        ob_cmd_end(&b);
    }
    for (int del = 0; del < 2; del++) {
        for (uint64_t k = 0; k < oc->nclist; k++) {
            uint64_t cell = oc->clist[k];
            if (!(oc->cells[cell] & (del ? OC_DEL : OC_DIRTY)))
                continue;
            ob_field_begin(&b, del ? "HDEL" : "HSET", OB_META);
            ob_num_arg(&b, "", cell);
            if (!del)
                ob_arg(&b, seg->base + cell * OB_CELL, OB_CELL);
            ob_field_end(&b, 0);
        }
        ob_field_end(&b, 1);
    }
    /* the new versions: one more than each had (a new object's first is 1) */
    for (uint32_t i = 0; i < oc->nents; i++) {
        ob_ent *e = &oc->ents[i];
        if ((e->flags & (OB_RES | OB_DIRTY)) != (OB_RES | OB_DIRTY))
            continue;
        ob_field_begin(&b, "HSET", OB_VER);
        ob_num_arg(&b, "", e->off);
        ob_num_arg(&b, "", e->ver + 1);
        ob_field_end(&b, 0);
    }
    if (meta) {
        ob_field_begin(&b, "HSET", OB_VER);
        ob_arg(&b, "m", 1);
        ob_num_arg(&b, "", oc->mver + 1);
        ob_field_end(&b, 0);
    }
    ob_field_end(&b, 1);
    for (uint32_t i = 0; i < oc->nents; i++) {
        if (!(oc->ents[i].flags & OB_DEL))
            continue;
        ob_field_begin(&b, "HDEL", OB_VER);
        ob_num_arg(&b, "", oc->ents[i].off);
        ob_field_end(&b, 0);
    }
    ob_field_end(&b, 1);
    ob_cmd_begin(&b);
    ob_arg(&b, "EXEC", 4);
    ob_cmd_end(&b);
    {
        struct ob_exec x = {b.ncmd, 0};
        rc = redis_pipe(&pb->be, b.ncmd, b.argc, (const char *const *const *)b.argv,
                        (const size_t *const *)b.lens, ob_take_exec, &x, "a commit", err);
        if (rc != P2_OK)
            goto out;
        if (!x.exec_ok) {       /* a watched key changed between the check and the EXEC */
            p2_err e;
            p2_err_clear(&e);
            moved = 0;
            if (ob_check(pb, 0, &moved, &e) != P2_OK || moved == 0)
                oc->meta_stale = 1;     /* cannot tell what: the abort reads everything again */
            rc = ob_conflict(pb, moved ? moved : 1, err);
            goto out;
        }
    }
    /* shipped: the objects are clean at their new versions, the freed ones gone, the
     * cells stored */
    pb->st.flushes++;
    for (uint32_t i = 0; i < oc->nents; i++) {
        ob_ent *e = &oc->ents[i];
        if ((e->flags & (OB_RES | OB_DIRTY)) == (OB_RES | OB_DIRTY)) {
            pb->st.writes++;
            pb->st.bytes_written += e->size;
            ob_wb_note(pb, e->off);
            e->flags &= ~(OB_DIRTY | OB_NEW);
            e->ver++;
            pb->st.dirty--;
        } else if (e->flags & OB_DEL) {
            ob_remove(oc, i);
        }
    }
    for (uint64_t k = 0; k < oc->nclist; k++) {
        uint8_t *c = &oc->cells[oc->clist[k]];
        if (*c & OC_DIRTY) {
            pb->st.bytes_written += OB_CELL;
            *c |= OC_STORED;
        }
        if (*c & OC_DEL)
            *c &= (uint8_t)~OC_STORED;
        *c &= (uint8_t)~(OC_DIRTY | OC_DEL | OC_LISTED);
    }
    oc->nclist = 0;
    if (meta)
        oc->mver++;
    memcpy(oc->hdr_copy, seg->hdr, sizeof *seg->hdr);
    ob_txn_end(oc);
out:
    ob_batch_free(&b);
    return rc;
}

/* The meta cells from the server (its version first, then p2:meta whole: one round trip)
 * into a reservation whose cells and objects are all zero.  *ncells: 0 where the server
 * has none (no database there). */
static int ob_load_meta(p2_seg *seg, uint64_t *ncells, p2_err *err);

/* Drop every object and read the meta cells again: the database as last committed. */
static int ob_reload(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    for (uint32_t i = 0; i < oc->nents; i++)
        if (oc->ents[i].flags != 0)
            ob_remove(oc, i);
    pb->st.resident = 0;
    pb->st.dirty = 0;
    oc->npins = 0;
    oc->last = OB_NONE;
    oc->gen++;
    oc->meta_stale = 0;
    if (madvise(seg->base, (size_t)seg->mapped, MADV_DONTNEED) != 0 ||
        madvise(oc->cells, (size_t)oc->cells_bytes, MADV_DONTNEED) != 0) {
        pb->failed = 1;
        snprintf(pb->why, sizeof pb->why, "cannot drop the object cache: %s", strerror(errno));
        return seg_fail(seg, err, P2_EIO, "%s", pb->why);
    }
    oc->nclist = 0;
    uint64_t n = 0;
    int rc = ob_load_meta(seg, &n, err);
    if (rc == P2_OK && n == 0)
        rc = seg_fail(seg, err, P2_EFORMAT, "the database is gone from the server (no %s)", OB_META);
    if (rc == P2_OK && (header_crc(seg->hdr) != seg->hdr->checksum ||
                        memcmp(seg->hdr->magic, SEG_MAGIC, sizeof seg->hdr->magic) != 0))
        rc = seg_fail(seg, err, P2_EFORMAT, "not a p2gen database: the header the server holds fails "
                      "its checksum");
    if (rc == P2_OK)
        rc = ob_grow(seg, seg->hdr->file_size, err);
    if (rc != P2_OK) {          /* the segment holds nothing sound now */
        pb->failed = 1;
        snprintf(pb->why, sizeof pb->why, "the database could not be read again from the server after "
                 "an abort (%.300s)", err != NULL ? err->msg : "");
        return rc;
    }
    seg->mapped = seg->hdr->file_size;
    memcpy(oc->hdr_copy, seg->hdr, sizeof *seg->hdr);
    return P2_OK;
}

int p2_obj_abort(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || seg->pb->oc == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_obj_abort: not an object-server segment");
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    /* the header changed here (the allocator's brk, its lists' heads: see ob_note) */
    int reload = oc->meta_stale || memcmp(seg->hdr, oc->hdr_copy, sizeof *seg->hdr) != 0;
    for (uint64_t k = 0; k < oc->nclist && !reload; k++)
        reload = (oc->cells[oc->clist[k]] & (OC_DIRTY | OC_DEL)) != 0;
    ob_txn_end(oc);
    if (pb->failed)
        return pb_failed(pb, err);
    if (!reload) {              /* objects only: drop the changed ones */
        for (uint32_t i = 0; i < oc->nents; i++) {
            ob_ent *e = &oc->ents[i];
            if (!(e->flags & OB_DIRTY))
                continue;
            ob_wipe(pb, e->off, e->size);
            ob_remove(oc, i);
            pb->st.resident--;
            pb->st.dirty--;
        }
        return P2_OK;
    }
    return ob_reload(seg, err);
}

int p2_obj_settled(p2_seg *seg, int any, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || seg->pb->oc == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_obj_settled: not an object-server segment");
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    if (pb->failed)
        return pb_failed(pb, err);
    if (oc->conflict || pb->st.dirty > 0 || oc->nclist > 0)
        return seg_fail(seg, err, P2_EINVAL, "p2_obj_settled: the transaction has %s",
                        oc->conflict ? "met a conflict" : "changes");
    uint64_t moved = 0;
    int rc = ob_check(pb, 0, &moved, err);
    if (rc != P2_OK)
        return rc;
    /* the objects moved are dropped from the cache already: the next touch fetches them
     * as last committed, and p2_obj_abort() reads the meta cells again */
    if (oc->meta_stale || (any && moved > 0)) {
        pb->st.conflicts++;
        return seg_fail(seg, err, P2_ECONFLICT, "another client committed %s since this client "
                        "read them", oc->meta_stale ? "the database's roots or allocator" : "objects");
    }
    ob_txn_end(oc);
    return P2_OK;
}

int p2_obj_begin(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || seg->pb->oc == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_obj_begin: not an object-server segment");
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    if (pb->failed)
        return pb_failed(pb, err);
    if (oc->conflict || pb->st.dirty > 0 || oc->nclist > 0)
        return seg_fail(seg, err, P2_EINVAL, "begin: the current transaction has %s; commit or abort it "
                        "first", oc->conflict ? "met a conflict" : "changes");
    ob_txn_end(oc);
    /* the meta's version: where another client changed the roots or the allocator since,
     * read them again (and drop the cache) */
    const char *argv[] = {"HGET", OB_VER, "m"};
    const size_t lens[] = {4, sizeof OB_VER - 1, 1};
    struct ob_fetch f = {pb, 0, 0, 0, 0};
    int rc = redis_cmd(&pb->be, 3, argv, lens, ob_take_object, &f, "a begin", err);
    if (rc != P2_OK)
        return rc == P2_EFORMAT ? seg_fail(seg, err, rc, "not a p2gen database: its meta version is not "
                                           "a number") : rc;
    return f.ver != oc->mver ? ob_reload(seg, err) : P2_OK;
}

static void ob_free(p2_pagebuf *pb)
{
    p2_objcache *oc = pb->oc;
    if (oc == NULL)
        return;
    free(oc->ents);
    free(oc->freel);
    free(oc->table);
    free(oc->pins);
    free(oc->clist);
    free(oc->wb);
    free(oc->rs_off);
    free(oc->rs_ver);
    free(oc->hdr_copy);
    if (oc->cells != NULL)
        munmap(oc->cells, (size_t)oc->cells_bytes);
    free(oc);
    pb->oc = NULL;
}

/* Close: a commit of what is open, then the connection goes. */
static int ob_close(p2_seg *seg, p2_err *err)
{
    int rc = seg->pb->failed ? pb_failed(seg->pb, err) : ob_sync(seg, err);
    pb_free(seg);
    munmap(seg->base, (size_t)seg->reserved);
    seg_reset(seg);
    return rc;
}

static int ob_drop(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    int rc = ob_sync(seg, err);
    if (rc != P2_OK)
        return rc;
    p2_objcache *oc = pb->oc;
    for (uint32_t i = 0; i < oc->nents; i++)
        if (oc->ents[i].flags & OB_RES) {
            ob_wipe(pb, oc->ents[i].off, oc->ents[i].size);
            ob_remove(oc, i);
        }
    oc->npins = 0;
    oc->last = OB_NONE;
    oc->gen++;
    pb->st.resident = 0;
    return P2_OK;
}

/* The segment grows: the new bytes are zero, in this process. */
static int ob_grow(p2_seg *seg, uint64_t want, p2_err *err)
{
    if (want > seg->mapped &&
        mprotect(seg->base + seg->mapped, (size_t)(want - seg->mapped), PROT_READ | PROT_WRITE) != 0)
        return seg_fail(seg, err, P2_ENOMEM, "cannot map %" PRIu64 " more bytes: %s", want - seg->mapped,
                        strerror(errno));
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * 10.3 open
 * ------------------------------------------------------------------------ */

struct ob_meta_load {
    p2_seg *seg;
    p2_objcache *oc;
    uint64_t ncells;
    int bad;
};

static int ob_take_meta(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_meta_load *m = (struct ob_meta_load *)ctx;
    if (i == 0) {               /* HGET p2:ver m */
        int64_t v = ob_version(r);
        if (v < 0)
            m->bad = 1;
        else
            m->oc->mver = (uint64_t)v;
        return P2_OK;
    }
    if (r->type != REDIS_ARRAY || r->elements % 2 != 0) {
        m->bad = 1;
        return P2_OK;
    }
    uint64_t maxc = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < r->elements; k += 2) {
            p2_rreply f, v;
            redis_read_reply(r->element[k], &f);
            redis_read_reply(r->element[k + 1], &v);
            char num[24];
            if (f.type != REDIS_STRING || f.len == 0 || f.len >= sizeof num || v.type != REDIS_STRING ||
                v.len != OB_CELL) {
                m->bad = 1;
                return P2_OK;
            }
            memcpy(num, f.str, f.len);
            num[f.len] = '\0';
            char *end;
            unsigned long long c = strtoull(num, &end, 10);
            if (*end != '\0' || c >= m->oc->ncells) {
                m->bad = 1;
                return P2_OK;
            }
            if (pass == 0) {
                if (c + 1 > maxc)
                    maxc = c + 1;
                continue;
            }
            memcpy(m->seg->base + c * OB_CELL, v.str, OB_CELL);
            m->oc->cells[c] = OC_STORED;
        }
        if (pass == 0) {
            uint64_t bytes = round_up(maxc * OB_CELL, seg_granule());
            if (bytes > m->seg->reserved ||
                mprotect(m->seg->base, (size_t)bytes, PROT_READ | PROT_WRITE) != 0) {
                m->bad = 1;
                return P2_OK;
            }
            m->seg->mapped = bytes;
        }
    }
    m->ncells = r->elements / 2;
    return P2_OK;
}

static int ob_load_meta(p2_seg *seg, uint64_t *ncells, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    const char *vargv[] = {"HGET", OB_VER, "m"};
    const size_t vlens[] = {4, sizeof OB_VER - 1, 1};
    const char *argv[] = {"HGETALL", OB_META};
    const size_t lens[] = {7, sizeof OB_META - 1};
    const int argc[] = {3, 2};
    const char *const *argvs[] = {vargv, argv};
    const size_t *const lenss[] = {vlens, lens};
    struct ob_meta_load m = {seg, pb->oc, 0, 0};
    int rc = redis_pipe(&pb->be, 2, argc, argvs, lenss, ob_take_meta, &m, "a read", err);
    if (rc != P2_OK)
        return rc;
    pb->st.reads++;
    if (m.bad)
        return seg_fail(seg, err, P2_EFORMAT, "not a p2gen database: its %s hash is not a segment's "
                        "64-byte cells (or %s m not a version)", OB_META, OB_VER);
    pb->st.bytes_read += m.ncells * OB_CELL;
    *ncells = m.ncells;
    return P2_OK;
}

int p2_seg_open_objserver(p2_seg *seg, const char *uri, uint32_t objects, uint64_t fingerprint,
                          uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                          uint64_t reserve, int *created, p2_err *err)
{
    if (created != NULL)
        *created = 0;
    if (seg == NULL || uri == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_open_objserver: seg or uri is NULL");
    seg_reset(seg);
    seg->pb = NULL;
    snprintf(seg->path, sizeof seg->path, "%s", uri);
    if (strncmp(uri, "redis://", 8) != 0)
        return seg_fail(seg, err, P2_EINVAL, "an object server is a Redis server: redis://HOST[:PORT][/DB]");
    if (objects < 1)
        return seg_fail(seg, err, P2_EINVAL, "an object cache of 0 objects: at least 1 is needed");
    seg->alloc_exact = root_names != NULL && roots_exact(nroots, root_names);
    int rc = check_roots(seg, nroots, root_names, root_sizes, err);
    if (rc != P2_OK)
        return rc;
    p2_pagebuf *pb = (p2_pagebuf *)calloc(1, sizeof *pb);
    p2_objcache *oc = (p2_objcache *)calloc(1, sizeof *oc);
    if (pb == NULL || oc == NULL) {
        free(pb);
        free(oc);
        return seg_fail(seg, err, P2_ENOMEM, "out of memory for the object cache");
    }
    seg->pb = pb;
    pb->seg = seg;
    pb->oc = oc;
    pb->pg = page_size();
    pb->be.st = &pb->st;
    oc->target = objects;
    oc->gen = 1;
    oc->last = OB_NONE;
    pb->st.frames = objects;
    rc = backend_open(&pb->be, uri, err);
    if (rc != P2_OK) {
        pb->be.ops = NULL;   /* the open undid itself */
        goto fail;
    }
    oc->hdr_copy = (unsigned char *)calloc(1, sizeof(struct p2_seg_header));
    if (oc->hdr_copy == NULL) {
        rc = seg_fail(seg, err, P2_ENOMEM, "out of memory for the object cache");
        goto fail;
    }
    if (reserve == 0)
        reserve = P2_SEG_DEFAULT_RESERVE;
    seg->reserved = round_up(reserve > SEG_MAX_RESERVE ? SEG_MAX_RESERVE : reserve, seg_granule());
    oc->ncells = seg->reserved / OB_CELL;
    oc->cells_bytes = round_up(oc->ncells, page_size());
    {
        void *t = mmap(NULL, (size_t)oc->cells_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (t == MAP_FAILED) {
            oc->cells = NULL;
            rc = seg_fail(seg, err, P2_ENOMEM, "cannot map the object cache's tables: %s", strerror(errno));
            goto fail;
        }
        oc->cells = (uint8_t *)t;
    }
    if ((rc = seg_reserve(seg, err)) != P2_OK)
        goto fail;
    {
        uint64_t ncells = 0;
        if ((rc = ob_load_meta(seg, &ncells, err)) != P2_OK)
            goto fail;
        if (ncells == 0) {
            /* nothing there: a new database (seg_create reserves again) */
            munmap(seg->base, (size_t)seg->reserved);
            seg->base = NULL;
            seg->mapped = 0;
            /* not shipped yet: the caller creates its containers in it, then commits
             * (objserver's after_create), so that no client ever reads bare roots (zeros
             * where an empty container has P2_NIL) and an abort comes back to the empty
             * containers */
            oc->creating = 1;
            rc = seg_create(seg, fingerprint, nroots, root_names, root_sizes, err);
            oc->creating = 0;
            if (rc != P2_OK)
                goto fail;
            ob_meta_dirty(oc, 0, seg->hdr->brk);
            if (created != NULL)
                *created = 1;
        } else {
            struct p2_seg_header h;
            memcpy(&h, seg->base, sizeof h);
            rc = seg_validate(seg, &h, seg->reserved, fingerprint, nroots, root_names, root_sizes, err);
            if (rc != P2_OK)
                goto fail;
            if ((rc = ob_grow(seg, h.file_size, err)) != P2_OK)
                goto fail;
            seg->mapped = h.file_size;
            seg->hdr = (struct p2_seg_header *)(void *)seg->base;
            /* the server's copy stays as it is: it is always a committed state */
            memcpy(oc->hdr_copy, seg->hdr, sizeof *seg->hdr);
        }
    }
    seg->will_write = ob_note;
    seg->will_write_ctx = pb;
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
