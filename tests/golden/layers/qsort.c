/* --------------------------------------------------------------------------
 * layer qsort (qsort: ds[mem]) of items: capacity=4, key=grp
 * ------------------------------------------------------------------------ */
#define qsort_items__qsort_MAX_SLOTS 0xFFFFFFFEu

/* The key column: entry i holds the bytes of element i's grp, entries count..cap-1
   are zero. A binary search reads these 4-byte entries instead of whole elements,
   so its probes share cache lines and its last steps fall within one line, where a probe
   into the elements costs a line (and often a page) of its own. It is kept in the file
   with the elements, written with them, so an open does not rebuild it.
   It lies in the slot block, after the cap slots: one block of cap * qsort_items__qsort_SLOT_BYTES
   bytes, which grows in place when the memory after it is free (the last block of a file
   grows with the file) and leaves no block behind; a growth moves the column up past the
   new slots. Where the column starts follows from cap, which the integrity check bounds
   by the block's size. */
typedef int32_t qsort_items__qsort_key;

/* bytes per slot: the element and its key's entry in the column */
#define qsort_items__qsort_SLOT_BYTES ((uint64_t)sizeof(qsort_items_elem) + sizeof(qsort_items__qsort_key))

static inline qsort_items_elem *qsort_items__qsort_elem(qsort_db *db, uint64_t ref)
{
    return (qsort_items_elem *)qsort_items__transient_ptr(db, qsort_items__transient_root(db)->qsort_slots) + ref;
}

/* The key column: right after the last slot (an element's alignment is at least its
   key's, so the entries are aligned) */
static inline qsort_items__qsort_key *qsort_items__qsort_keys(qsort_db *db)
{
    qsort_items_root *r = qsort_items__transient_root(db);
    return (qsort_items__qsort_key *)((qsort_items_elem *)qsort_items__transient_ptr(db, r->qsort_slots) + r->qsort_cap);
}

/* Grow the block to ncap > cap slots: one realloc (in place where the memory allows),
   then the column's entries of the elements moved up past the new slots, and the bytes
   the old column leaves behind zeroed (new slots, entries past the last element); what
   lies past the old block the realloc zero-filled. On failure nothing has changed. */
static inline int qsort_items__qsort_grow(qsort_db *db, uint32_t ncap)
{
    qsort_items_root *r = qsort_items__transient_root(db);
    uint64_t from = (uint64_t)r->qsort_cap * sizeof(qsort_items_elem);    /* the old column */
    uint64_t to = (uint64_t)ncap * sizeof(qsort_items_elem);                /* the new column */
    uint64_t kb = (uint64_t)r->qsort_count * sizeof(qsort_items__qsort_key);   /* its entries in use */
    uint64_t old_end = (uint64_t)r->qsort_cap * qsort_items__qsort_SLOT_BYTES;
    char *b;
    int rc;
    qsort_items__transient_will_write(db, &r->qsort_slots, sizeof r->qsort_slots);
    qsort_items__transient_will_write(db, &r->qsort_cap, sizeof r->qsort_cap);
    rc = qsort_items__transient_realloc(db, &r->qsort_slots, old_end, (uint64_t)ncap * qsort_items__qsort_SLOT_BYTES);
    if (rc != P2_OK) return rc;
    b = (char *)qsort_items__transient_ptr(db, r->qsort_slots);
    qsort_items__transient_will_write(db, b + from, (to + kb > old_end ? to + kb : old_end) - from);
    memmove(b + to, b + from, (size_t)kb);
    memset(b + from, 0, (size_t)((to < old_end ? to : old_end) - from));
    if (to + kb < old_end) memset(b + to + kb, 0, (size_t)(old_end - (to + kb)));
    r->qsort_cap = ncap;
    return P2_OK;
}

static inline int qsort_items__qsort_valid(qsort_db *db, uint64_t ref)
{
    return ref < qsort_items__transient_root(db)->qsort_count;
}

static inline uint64_t qsort_items__qsort_count(qsort_db *db)
{
    return qsort_items__transient_root(db)->qsort_count;
}

static inline int qsort_items__qsort_create(qsort_db *db)
{
    qsort_items_root *r = qsort_items__transient_root(db);
    int rc;
    qsort_items__transient_will_write(db, r, sizeof *r);
    rc = qsort_items__transient_alloc(db, (uint64_t)4u * qsort_items__qsort_SLOT_BYTES, &r->qsort_slots);
    if (rc != P2_OK) return rc;
    r->qsort_cap = 4u;
    return P2_OK;
}

static inline void qsort_items__qsort_destroy(qsort_db *db)
{
    qsort_items_root *r = qsort_items__transient_root(db);
    qsort_items__transient_free(db, r->qsort_slots, (uint64_t)r->qsort_cap * qsort_items__qsort_SLOT_BYTES);
    r->qsort_slots = 0;
}

/* The first position whose key is >= key (lower bound) or > key (upper bound), searched
   in the key column. Each step halves the n candidates from base on by one comparison
   whose outcome selects the next base (a conditional move, not a branch to mispredict);
   an entry is "before" when it compares below the key (lower) or not above it (upper). */
static inline uint64_t qsort_items__qsort_bound(qsort_db *db, int32_t key, int upper)
{
    const qsort_items__qsort_key *keys = qsort_items__qsort_keys(db), *base = keys;
    uint64_t n = qsort_items__transient_root(db)->qsort_count;
    if (n == 0) return 0;
    while (n > 1) {
        uint64_t half = n / 2;
#if defined(__GNUC__) || defined(__clang__)
        /* the two entries the next step may probe, fetched while this one is compared:
           the chain of dependent misses overlaps by one step */
        __builtin_prefetch(base + half / 2);
        __builtin_prefetch(base + half + half / 2);
#endif
        base = qsort_items__cmp_grp(base[half], key) < upper ? base + half : base;
        n -= half;
    }
    return (uint64_t)(base - keys) + (qsort_items__cmp_grp(base[0], key) < upper);
}

/* Make room for n elements in all, so that loading them does not regrow. */
static inline int qsort_items__qsort_reserve(qsort_db *db, uint64_t n)
{
    qsort_items_root *r = qsort_items__transient_root(db);
    uint32_t ncap = n > qsort_items__qsort_MAX_SLOTS ? qsort_items__qsort_MAX_SLOTS : (uint32_t)n;
    if (ncap <= r->qsort_cap) return P2_OK;
    return qsort_items__qsort_grow(db, ncap);
}

static inline int qsort_items__qsort_insert(qsort_db *db, const qsort_item *rec, uint64_t *out)
{
    qsort_item nrec = *rec;  /* rec may point into the block, which moves and shifts */
    qsort_items_root *r = qsort_items__transient_root(db);
    uint64_t pos;
    qsort_items_elem *a;
    qsort_items__qsort_key *keys;
    if (r->qsort_count == r->qsort_cap) {
        uint32_t cap = r->qsort_cap;
        uint32_t ncap = cap >= qsort_items__qsort_MAX_SLOTS / 2 ? qsort_items__qsort_MAX_SLOTS : cap * 2;
        int rc;
        if (cap == qsort_items__qsort_MAX_SLOTS)
            return p2_err_set(&db->err, P2_ENOMEM, "container items: sorted array is full (%u slots)", cap);
        rc = qsort_items__qsort_grow(db, ncap);
        if (rc != P2_OK) return rc;
    }
    pos = qsort_items__qsort_bound(db, nrec.grp, 1);  /* after the equal keys */
    a = qsort_items__qsort_elem(db, 0);
    keys = qsort_items__qsort_keys(db);
    qsort_items__transient_will_write(db, a + pos, (uint64_t)(r->qsort_count - pos + 1) * sizeof(qsort_items_elem));
    qsort_items__transient_will_write(db, keys + pos, (uint64_t)(r->qsort_count - pos + 1) * sizeof *keys);
    qsort_items__transient_will_write(db, &r->qsort_count, sizeof r->qsort_count);
    memmove(a + pos + 1, a + pos, (size_t)(r->qsort_count - pos) * sizeof(qsort_items_elem));
    memmove(keys + pos + 1, keys + pos, (size_t)(r->qsort_count - pos) * sizeof *keys);
    memset(a + pos, 0, sizeof(qsort_items_elem));
    a[pos].rec = nrec;
    memcpy(&keys[pos], &nrec.grp, sizeof keys[pos]);
    r->qsort_count++;
    *out = pos;
    return P2_OK;
}

static inline void qsort_items__qsort_remove(qsort_db *db, uint64_t ref)
{
    qsort_items_root *r = qsort_items__transient_root(db);
    qsort_items_elem *a = qsort_items__qsort_elem(db, 0);
    qsort_items__qsort_key *keys = qsort_items__qsort_keys(db);
    uint64_t last = r->qsort_count - 1;
    qsort_items__transient_will_write(db, a + ref, (last - ref + 1) * sizeof(qsort_items_elem));
    qsort_items__transient_will_write(db, keys + ref, (last - ref + 1) * sizeof *keys);
    qsort_items__transient_will_write(db, &r->qsort_count, sizeof r->qsort_count);
    memmove(a + ref, a + ref + 1, (size_t)(last - ref) * sizeof(qsort_items_elem));
    memmove(keys + ref, keys + ref + 1, (size_t)(last - ref) * sizeof *keys);
    memset(a + last, 0, sizeof(qsort_items_elem));
    memset(keys + last, 0, sizeof *keys);
    r->qsort_count--;
}

/* Would an update to *rec move the element? Yes when its key changes (it may land on the
   same position, but the cursors above only care whether the reference changed). */
static inline int qsort_items__qsort_moves(qsort_db *db, uint64_t ref, const qsort_item *rec)
{
    return qsort_items__cmp_grp(qsort_items__qsort_elem(db, ref)->rec.grp, rec->grp) != 0;
}

/* A key change moves the element to where an insert would put it among the others
   (after their equal keys), shifting the elements in between by one; *ref becomes the
   new position. Cannot fail. */
static inline int qsort_items__qsort_update(qsort_db *db, uint64_t *ref, const qsort_item *rec)
{
    qsort_item nrec = *rec;  /* rec may point into the block */
    uint64_t from = *ref, to;
    qsort_items_elem *a = qsort_items__qsort_elem(db, 0);
    qsort_items__qsort_key *keys = qsort_items__qsort_keys(db);
    qsort_items_elem tmp;
    if (!qsort_items__qsort_moves(db, from, &nrec)) {
        qsort_items__transient_will_write(db, &a[from].rec, sizeof nrec);
        a[from].rec = nrec;
        /* an equal key may differ in its bytes (-0.0 for 0.0, another NaN, bytes after
           a string's end): the column keeps the element's bytes */
        if (memcmp(&keys[from], &nrec.grp, sizeof keys[from]) != 0) {
            qsort_items__transient_will_write(db, &keys[from], sizeof keys[from]);
            memcpy(&keys[from], &nrec.grp, sizeof keys[from]);
        }
        return P2_OK;
    }
    /* The upper bound over all elements counts the element itself when its old key is
       below the new one (it sits before the bound); without it, the bound is one less. */
    to = qsort_items__qsort_bound(db, nrec.grp, 1);
    if (from < to) to--;
    tmp = a[from];
    tmp.rec = nrec;
    qsort_items__transient_will_write(db, a + (from < to ? from : to), ((from < to ? to - from : from - to) + 1) * sizeof(qsort_items_elem));
    qsort_items__transient_will_write(db, keys + (from < to ? from : to), ((from < to ? to - from : from - to) + 1) * sizeof *keys);
    if (to > from) {
        memmove(a + from, a + from + 1, (size_t)(to - from) * sizeof(qsort_items_elem));
        memmove(keys + from, keys + from + 1, (size_t)(to - from) * sizeof *keys);
    } else if (to < from) {
        memmove(a + to + 1, a + to, (size_t)(from - to) * sizeof(qsort_items_elem));
        memmove(keys + to + 1, keys + to, (size_t)(from - to) * sizeof *keys);
    }
    a[to] = tmp;
    memcpy(&keys[to], &nrec.grp, sizeof keys[to]);
    *ref = to;
    return P2_OK;
}

/* Positions of the other elements after the element at `removed` went away. */
static inline uint64_t qsort_items__qsort_ref_after_remove(uint64_t ref, uint64_t removed)
{
    return ref - (ref > removed);
}

/* Positions of the other elements after the element at `from` moved to position `to`:
   as if it were removed, then inserted at `to` (which shifts what is at `to` and after). */
static inline uint64_t qsort_items__qsort_ref_after_move(uint64_t ref, uint64_t from, uint64_t to)
{
    ref -= (ref > from);
    return ref + (ref >= to);
}

/* range path: binary search for the lower bound, then position by position */
static inline uint64_t qsort_items__qsort_range_first(qsort_db *db, int has_lo, int32_t lo, int lo_inclusive)
{
    uint64_t pos = has_lo ? qsort_items__qsort_bound(db, lo, !lo_inclusive) : 0;
    return pos < qsort_items__transient_root(db)->qsort_count ? pos : P2_NIL;
}

static inline uint64_t qsort_items__qsort_range_next(qsort_db *db, uint64_t ref)
{
    return ref + 1 < qsort_items__transient_root(db)->qsort_count ? ref + 1 : P2_NIL;
}

/* Integrity check (<prefix>_verify): the block (cap slots, then cap key entries) lies in
   memory, count <= cap, the elements are in grp order, the slots past the last element
   are all zero (removing clears the vacated slot), and the key column agrees with the
   elements and is zero past them. Returns -1 if the block cannot be read safely. */
static int qsort_items__qsort_verify(qsort_db *db, p2_verify *v)
{
    qsort_items_root *r = qsort_items__transient_root(db);
    uint64_t i;
    const qsort_items_elem *a;
    const qsort_items__qsort_key *keys;
    if (r->qsort_cap == 0 || !qsort_items__transient_contains(db, r->qsort_slots, (uint64_t)r->qsort_cap * qsort_items__qsort_SLOT_BYTES)) {
        p2_verify_fail(v, "container items, layer qsort: slot block %" PRIu64 " of %u slots and their key column lies outside the used memory", r->qsort_slots, r->qsort_cap);
        return -1;
    }
    qsort_items__transient_claim(db, v, r->qsort_slots, (uint64_t)r->qsort_cap * qsort_items__qsort_SLOT_BYTES, "container items, layer qsort: slot block");
    if (r->qsort_count > r->qsort_cap) {
        p2_verify_fail(v, "container items, layer qsort: count %u above capacity %u", r->qsort_count, r->qsort_cap);
        return -1;
    }
    a = qsort_items__qsort_elem(db, 0);
    for (i = 0; i + 1 < r->qsort_count; i++)
        if (qsort_items__cmp_grp(a[i].rec.grp, a[i + 1].rec.grp) > 0)
            p2_verify_fail(v, "container items, layer qsort: positions %" PRIu64 " and %" PRIu64 " out of grp order", i, i + 1);
    for (i = r->qsort_count; i < r->qsort_cap; i++) {
        const unsigned char *b = (const unsigned char *)&a[i];
        size_t j;
        for (j = 0; j < sizeof a[i] && b[j] == 0; j++) {}
        if (j < sizeof a[i])
            p2_verify_fail(v, "container items, layer qsort: slot %" PRIu64 " past the last element is not zero (byte %u)", i, (unsigned)j);
    }
    /* the key column: the bytes of every element's grp, in position order, zero past
       the last element */
    keys = qsort_items__qsort_keys(db);
    for (i = 0; i < r->qsort_count; i++)
        if (memcmp(&keys[i], &a[i].rec.grp, sizeof keys[i]) != 0)
            p2_verify_fail(v, "container items, layer qsort: key column entry %" PRIu64 " differs from the element's grp", i);
    for (i = r->qsort_count; i < r->qsort_cap; i++) {
        const unsigned char *b = (const unsigned char *)&keys[i];
        size_t j;
        for (j = 0; j < sizeof keys[i] && b[j] == 0; j++) {}
        if (j < sizeof keys[i])
            p2_verify_fail(v, "container items, layer qsort: key column entry %" PRIu64 " past the last element is not zero (byte %u)", i, (unsigned)j);
    }
    return 0;
}
/* end of layer qsort(key=grp) of items ---------------------------------- */
