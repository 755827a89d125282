/* --------------------------------------------------------------------------
 * layer iarray (iarray: ds[mem]) of items: capacity=8, key=id, max_key=100
 * ------------------------------------------------------------------------ */
#define iarray_items__iarray_SLOTS UINT64_C(101)  /* slots needed for keys 0..100 */

static inline iarray_items_elem *iarray_items__iarray_elem(iarray_db *db, uint64_t ref)
{
    return (iarray_items_elem *)iarray_items__transient_ptr(db, iarray_items__transient_root(db)->iarray_slots) + ref;
}

static inline int iarray_items__iarray_valid(iarray_db *db, uint64_t ref)
{
    return ref < iarray_items__transient_root(db)->iarray_cap && iarray_items__iarray_elem(db, ref)->_iarray_valid;
}

static inline uint64_t iarray_items__iarray_count(iarray_db *db)
{
    return iarray_items__transient_root(db)->iarray_count;
}

/* Is `key` a storable key (0..100)? Only the tests the key's type needs. */
static inline int iarray_items__iarray_in_range(uint32_t key)
{
    if ((uint64_t)key > UINT64_C(100)) return 0;
    return 1;
}

static inline int iarray_items__iarray_range_error(iarray_db *db, uint32_t key)
{
    return p2_err_set(&db->err, P2_ERANGE, "container items: key %" PRIu64 " outside iarray range 0..100 (field id; the top is the layer's max_key)", (uint64_t)key);
}

static inline int iarray_items__iarray_dup_error(iarray_db *db, uint32_t key)
{
    return p2_err_set(&db->err, P2_EDUP, "container items: an element with id == %" PRIu64 " already exists", (uint64_t)key);
}

static inline int iarray_items__iarray_create(iarray_db *db)
{
    iarray_items_root *r = iarray_items__transient_root(db);
    iarray_items__transient_will_write(db, r, sizeof *r);
    r->iarray_cap = 8u;
    return iarray_items__transient_alloc(db, (uint64_t)r->iarray_cap * sizeof(iarray_items_elem), &r->iarray_slots);
}

static inline void iarray_items__iarray_destroy(iarray_db *db)
{
    iarray_items_root *r = iarray_items__transient_root(db);
    iarray_items__transient_free(db, r->iarray_slots, (uint64_t)r->iarray_cap * sizeof(iarray_items_elem));
    r->iarray_slots = 0;
}

/* Make slot `slot` (< iarray_items__iarray_SLOTS) exist: double the block, or more if the slot needs
   it. The new slots are zero-filled, i.e. empty. Pointers to elements go stale. Out of
   line (rare, and large once the memory layer's realloc is in it), so that an insert
   inlined into a caller's loop stays small. */
static P2_SLOW_PATH int iarray_items__iarray_grow(iarray_db *db, uint64_t slot)
{
    iarray_items_root *r = iarray_items__transient_root(db);
    uint64_t cap = r->iarray_cap, ncap = cap * 2;
    int rc;
    if (ncap < slot + 1) ncap = slot + 1;
    if (ncap > iarray_items__iarray_SLOTS) ncap = iarray_items__iarray_SLOTS;
    iarray_items__transient_will_write(db, &r->iarray_slots, sizeof r->iarray_slots);
    iarray_items__transient_will_write(db, &r->iarray_cap, sizeof r->iarray_cap);
    rc = iarray_items__transient_realloc(db, &r->iarray_slots, cap * sizeof(iarray_items_elem), ncap * sizeof(iarray_items_elem));
    if (rc != P2_OK) return rc;
    r->iarray_cap = (uint32_t)ncap;
    return P2_OK;
}

/* Make room for keys 0..n-1 (n elements with dense keys) without regrowing. */
static inline int iarray_items__iarray_reserve(iarray_db *db, uint64_t n)
{
    iarray_items_root *r = iarray_items__transient_root(db);
    uint64_t ncap = n > iarray_items__iarray_SLOTS ? iarray_items__iarray_SLOTS : n;
    int rc;
    if (ncap <= r->iarray_cap) return P2_OK;
    iarray_items__transient_will_write(db, &r->iarray_slots, sizeof r->iarray_slots);
    iarray_items__transient_will_write(db, &r->iarray_cap, sizeof r->iarray_cap);
    rc = iarray_items__transient_realloc(db, &r->iarray_slots, (uint64_t)r->iarray_cap * sizeof(iarray_items_elem), ncap * sizeof(iarray_items_elem));
    if (rc != P2_OK) return rc;
    r->iarray_cap = (uint32_t)ncap;
    return P2_OK;
}

static inline int iarray_items__iarray_insert(iarray_db *db, const iarray_item *rec, uint64_t *out)
{
    uint64_t slot;
    iarray_items_elem *e;
    int rc;
    if (!iarray_items__iarray_in_range(rec->id)) return iarray_items__iarray_range_error(db, rec->id);
    slot = (uint64_t)rec->id;
    if (slot >= iarray_items__transient_root(db)->iarray_cap && (rc = iarray_items__iarray_grow(db, slot)) != P2_OK) return rc;
    e = iarray_items__iarray_elem(db, slot);
    if (e->_iarray_valid) return iarray_items__iarray_dup_error(db, rec->id);
    iarray_items__transient_will_write(db, e, sizeof *e);
    iarray_items__transient_will_write(db, &iarray_items__transient_root(db)->iarray_count, sizeof iarray_items__transient_root(db)->iarray_count);
    memset(e, 0, sizeof *e);
    e->rec = *rec;
    e->_iarray_valid = 1;
    iarray_items__transient_root(db)->iarray_count++;
    *out = slot;
    return P2_OK;
}

static inline void iarray_items__iarray_remove(iarray_db *db, uint64_t ref)
{
    iarray_items__transient_will_write(db, iarray_items__iarray_elem(db, ref), sizeof(iarray_items_elem));
    iarray_items__transient_will_write(db, &iarray_items__transient_root(db)->iarray_count, sizeof iarray_items__transient_root(db)->iarray_count);
    memset(iarray_items__iarray_elem(db, ref), 0, sizeof(iarray_items_elem));  /* _iarray_valid = 0 */
    iarray_items__transient_root(db)->iarray_count--;
}

/* Would an update to *rec move the element? Yes when its key changes. */
static inline int iarray_items__iarray_moves(iarray_db *db, uint64_t ref, const iarray_item *rec)
{
    (void)db;
    return (uint64_t)rec->id != ref;
}

/* A key change moves the whole element (the fields of the layers above included) to the
   slot of the new key, and *ref becomes that key. P2_ERANGE / P2_EDUP / P2_ENOMEM leave
   everything as it was (growing the block only adds empty slots). */
static inline int iarray_items__iarray_update(iarray_db *db, uint64_t *ref, const iarray_item *rec)
{
    iarray_item nrec = *rec;  /* rec may point into the slots, which may move */
    uint64_t from = *ref, to;
    iarray_items_elem *src, *dst;
    int rc;
    if (!iarray_items__iarray_moves(db, from, &nrec)) {
        iarray_items__transient_will_write(db, &iarray_items__iarray_elem(db, from)->rec, sizeof nrec);
        iarray_items__iarray_elem(db, from)->rec = nrec;
        return P2_OK;
    }
    if (!iarray_items__iarray_in_range(nrec.id)) return iarray_items__iarray_range_error(db, nrec.id);
    to = (uint64_t)nrec.id;
    if (to >= iarray_items__transient_root(db)->iarray_cap) {
        if ((rc = iarray_items__iarray_grow(db, to)) != P2_OK) return rc;
    } else if (iarray_items__iarray_elem(db, to)->_iarray_valid) {
        return iarray_items__iarray_dup_error(db, nrec.id);
    }
    src = iarray_items__iarray_elem(db, from);
    dst = iarray_items__iarray_elem(db, to);
    iarray_items__transient_will_write(db, dst, sizeof *dst);
    iarray_items__transient_will_write(db, src, sizeof *src);
    *dst = *src;
    dst->rec = nrec;
    memset(src, 0, sizeof *src);
    *ref = to;
    return P2_OK;
}

/* References are keys: removing or moving one element leaves the others where they are. */
static inline uint64_t iarray_items__iarray_ref_after_remove(uint64_t ref, uint64_t removed)
{
    (void)removed;
    return ref;
}

static inline uint64_t iarray_items__iarray_ref_after_move(uint64_t ref, uint64_t from, uint64_t to)
{
    (void)from; (void)to;
    return ref;
}

/* The first occupied slot at or after `slot`. */
static inline uint64_t iarray_items__iarray_scan_from(iarray_db *db, uint64_t slot)
{
    uint64_t cap = iarray_items__transient_root(db)->iarray_cap;
    for (; slot < cap; slot++)
        if (iarray_items__iarray_elem(db, slot)->_iarray_valid) return slot;
    return P2_NIL;
}

/* range path: occupied slots from the lower bound on, i.e. in key order. (An equality
   served as the range key..key costs one slot when the key is present, but a walk to the
   next occupied slot when it is absent; _eq_first below answers it in O(1).) */
static inline uint64_t iarray_items__iarray_range_first(iarray_db *db, int has_lo, uint32_t lo, int lo_inclusive)
{
    uint64_t slot = 0;
    if (has_lo) {
        slot = (uint64_t)lo;
        if (!lo_inclusive) {
            if (slot >= iarray_items__transient_root(db)->iarray_cap) return P2_NIL;  /* also keeps slot + 1 from wrapping */
            slot++;
        }
    }
    return iarray_items__iarray_scan_from(db, slot);
}

static inline uint64_t iarray_items__iarray_range_next(iarray_db *db, uint64_t ref)
{
    return iarray_items__iarray_scan_from(db, ref + 1);
}

/* eq path: the slot of the key itself (keys are unique, so at most one element) */
static inline uint64_t iarray_items__iarray_eq_first(iarray_db *db, uint32_t key)
{
    /* no _in_range test: a key past max_key, or a negative one (a huge slot once cast),
       is at or past the capacity, which never exceeds max_key + 1, and _valid says no */
    uint64_t slot = (uint64_t)key;
    return iarray_items__iarray_valid(db, slot) ? slot : P2_NIL;
}

/* Integrity check (<prefix>_verify): the slot block lies in memory, every valid flag is 0
   or 1, every element sits in the slot of its key, empty slots are all zero (removing
   clears the whole slot), and `count` valid slots. Returns -1 if the slots cannot be read
   safely (nothing above may look at elements). */
static int iarray_items__iarray_verify(iarray_db *db, p2_verify *v)
{
    iarray_items_root *r = iarray_items__transient_root(db);
    uint64_t live = 0, slot;
    if (r->iarray_cap == 0 || (uint64_t)r->iarray_cap > iarray_items__iarray_SLOTS
        || !iarray_items__transient_contains(db, r->iarray_slots, (uint64_t)r->iarray_cap * sizeof(iarray_items_elem))) {
        p2_verify_fail(v, "container items, layer iarray: slot block %" PRIu64 " of %u slots lies outside the used memory", r->iarray_slots, r->iarray_cap);
        return -1;
    }
    iarray_items__transient_claim(db, v, r->iarray_slots, (uint64_t)r->iarray_cap * sizeof(iarray_items_elem), "container items, layer iarray: slot block");
    for (slot = 0; slot < r->iarray_cap; slot++) {
        const iarray_items_elem *e = iarray_items__iarray_elem(db, slot);
        if (e->_iarray_valid == 0) {
            const unsigned char *b = (const unsigned char *)e;
            size_t i;
            for (i = 0; i < sizeof *e && b[i] == 0; i++) {}
            if (i < sizeof *e)
                p2_verify_fail(v, "container items, layer iarray: slot %" PRIu64 ": empty, but byte %u is not zero", slot, (unsigned)i);
            continue;
        }
        live++;
        if (e->_iarray_valid != 1)
            p2_verify_fail(v, "container items, layer iarray: slot %" PRIu64 ": valid flag is %u", slot, (unsigned)e->_iarray_valid);
        if (!iarray_items__iarray_in_range(e->rec.id) || (uint64_t)e->rec.id != slot)
            p2_verify_fail(v, "container items, layer iarray: slot %" PRIu64 " holds an element whose id is not %" PRIu64, slot, slot);
    }
    if (live != r->iarray_count) {
        /* the layers above bound their walks by the count: not with a wrong one */
        p2_verify_fail(v, "container items, layer iarray: %" PRIu64 " valid slots, count says %u", live, r->iarray_count);
        return -1;
    }
    return 0;
}
/* end of layer iarray(key=id) of items ---------------------------------- */
