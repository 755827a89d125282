/* --------------------------------------------------------------------------
 * layer array (array: ds[mem]) of items: capacity=4
 * ------------------------------------------------------------------------ */
#define array_items__array_LIVE 0xFFFFFFFEu   /* _array_next_free of an occupied slot */
#define array_items__array_NONE 0xFFFFFFFFu   /* end of the free list */
#define array_items__array_MAX_SLOTS 0xFFFFFFFEu

static inline array_items_elem *array_items__array_elem(array_db *db, uint64_t ref)
{
    return (array_items_elem *)array_items__transient_ptr(db, array_items__transient_root(db)->array_slots) + ref;
}

static inline int array_items__array_valid(array_db *db, uint64_t ref)
{
    return ref < array_items__transient_root(db)->array_hwm && array_items__array_elem(db, ref)->_array_next_free == array_items__array_LIVE;
}

static inline uint64_t array_items__array_count(array_db *db)
{
    return array_items__transient_root(db)->array_count;
}

static inline int array_items__array_create(array_db *db)
{
    array_items_root *r = array_items__transient_root(db);
    array_items__transient_will_write(db, r, sizeof *r);
    r->array_free = array_items__array_NONE;
    r->array_cap = 4u;
    return array_items__transient_alloc(db, (uint64_t)r->array_cap * sizeof(array_items_elem), &r->array_slots);
}

static inline void array_items__array_destroy(array_db *db)
{
    array_items_root *r = array_items__transient_root(db);
    array_items__transient_free(db, r->array_slots, (uint64_t)r->array_cap * sizeof(array_items_elem));
    r->array_slots = 0;
}

/* Make room for n elements in all, so that loading them does not regrow. */
static inline int array_items__array_reserve(array_db *db, uint64_t n)
{
    array_items_root *r = array_items__transient_root(db);
    uint32_t ncap = n > array_items__array_MAX_SLOTS ? array_items__array_MAX_SLOTS : (uint32_t)n;
    int rc;
    if (ncap <= r->array_cap) return P2_OK;
    array_items__transient_will_write(db, &r->array_slots, sizeof r->array_slots);
    array_items__transient_will_write(db, &r->array_cap, sizeof r->array_cap);
    rc = array_items__transient_realloc(db, &r->array_slots, (uint64_t)r->array_cap * sizeof(array_items_elem), (uint64_t)ncap * sizeof(array_items_elem));
    if (rc != P2_OK) return rc;
    r->array_cap = ncap;
    return P2_OK;
}

/* The array is full: double it. Out of line (rare, and large once the memory layer's
   realloc is in it), so that an insert inlined into a caller's loop stays small. */
static P2_SLOW_PATH int array_items__array_grow(array_db *db)
{
    array_items_root *r = array_items__transient_root(db);
    uint32_t cap = r->array_cap;
    uint32_t ncap = cap >= array_items__array_MAX_SLOTS / 2 ? array_items__array_MAX_SLOTS : cap * 2;
    int rc;
    if (cap == array_items__array_MAX_SLOTS)
        return p2_err_set(&db->err, P2_ENOMEM, "container items: array is full (%u slots)", cap);
    array_items__transient_will_write(db, &r->array_slots, sizeof r->array_slots);
    array_items__transient_will_write(db, &r->array_cap, sizeof r->array_cap);
    rc = array_items__transient_realloc(db, &r->array_slots, (uint64_t)cap * sizeof(array_items_elem), (uint64_t)ncap * sizeof(array_items_elem));
    if (rc != P2_OK) return rc;
    r->array_cap = ncap;
    return P2_OK;
}

/* _insert's rare paths, out of line and whole: reusing a freed slot, growing the block.
   The slot, or minus the error code. The result is returned, not stored through a
   pointer: a caller's local whose address went to this call would live on the stack,
   and be stored to at every insert, on the straight path too. */
static P2_SLOW_PATH int64_t array_items__array_insert_slow(array_db *db, const array_item *rec)
{
    array_items_root *r = array_items__transient_root(db);
    array_item saved = *rec;  /* rec may point into the slots, which growing moves */
    uint32_t slot;
    array_items_elem *e;
    if (r->array_free != array_items__array_NONE) {
        slot = r->array_free;
        array_items__transient_will_write(db, &r->array_free, sizeof r->array_free);
        r->array_free = array_items__array_elem(db, slot)->_array_next_free;
    } else {   /* no free slot: the block is full, or _insert would not have called */
        int rc = array_items__array_grow(db);
        if (rc != P2_OK) return -(int64_t)rc;
        r = array_items__transient_root(db);
        array_items__transient_will_write(db, &r->array_hwm, sizeof r->array_hwm);
        slot = r->array_hwm++;
    }
    e = array_items__array_elem(db, slot);
    array_items__transient_will_write(db, e, sizeof *e);
    array_items__transient_will_write(db, &r->array_count, sizeof r->array_count);
    e->rec = saved;
    e->_array_next_free = array_items__array_LIVE;
    r->array_count++;
    return (int64_t)slot;
}

/* Appending past the high-water mark is the common case (every slot is appended once,
   reused at most once per delete): in line; the rest, out of line. */
static inline int array_items__array_insert(array_db *db, const array_item *rec, uint64_t *out)
{
    array_items_root *r = array_items__transient_root(db);
    uint32_t slot;
    array_items_elem *e;
    if (P2_UNLIKELY(r->array_free != array_items__array_NONE || r->array_hwm == r->array_cap)) {
        int64_t got = array_items__array_insert_slow(db, rec);
        if (got < 0) return (int)-got;
        *out = (uint64_t)got;
        return P2_OK;
    }
    array_items__transient_will_write(db, &r->array_hwm, sizeof r->array_hwm);
    slot = r->array_hwm++;
    e = array_items__array_elem(db, slot);
    array_items__transient_will_write(db, e, sizeof *e);
    array_items__transient_will_write(db, &r->array_count, sizeof r->array_count);
    e->rec = *rec;
    e->_array_next_free = array_items__array_LIVE;
    r->array_count++;
    *out = slot;
    return P2_OK;
}

static inline void array_items__array_remove(array_db *db, uint64_t ref)
{
    array_items_root *r = array_items__transient_root(db);
    array_items_elem *e = array_items__array_elem(db, ref);
    array_items__transient_will_write(db, &e->_array_next_free, sizeof e->_array_next_free);
    array_items__transient_will_write(db, &r->array_free, sizeof r->array_free);
    array_items__transient_will_write(db, &r->array_count, sizeof r->array_count);
    e->_array_next_free = r->array_free;
    r->array_free = (uint32_t)ref;
    r->array_count--;
}

static inline int array_items__array_update(array_db *db, uint64_t *ref, const array_item *rec)
{
    array_items_elem *e = array_items__array_elem(db, *ref);
    array_items__transient_will_write(db, &e->rec, sizeof e->rec);
    e->rec = *rec;
    return P2_OK;
}

/* Slots never move: an update keeps the reference, removals shift nothing. */
static inline int array_items__array_moves(array_db *db, uint64_t ref, const array_item *rec)
{
    (void)db; (void)ref; (void)rec;
    return 0;
}

static inline uint64_t array_items__array_ref_after_remove(uint64_t ref, uint64_t removed)
{
    (void)removed;
    return ref;
}

static inline uint64_t array_items__array_ref_after_move(uint64_t ref, uint64_t from, uint64_t to)
{
    (void)from; (void)to;
    return ref;
}

/* scan path: every live slot in slot order */
static inline uint64_t array_items__array_scan_from(array_db *db, uint64_t ref)
{
    uint32_t hwm = array_items__transient_root(db)->array_hwm;
    for (; ref < hwm; ref++)
        if (array_items__array_elem(db, ref)->_array_next_free == array_items__array_LIVE) return ref;
    return P2_NIL;
}

static inline uint64_t array_items__array_scan_first(array_db *db)
{
    return array_items__array_scan_from(db, 0);
}

static inline uint64_t array_items__array_scan_next(array_db *db, uint64_t ref)
{
    return array_items__array_scan_from(db, ref + 1);
}

/* Integrity check (<prefix>_verify): the slot block lies in memory, hwm <= cap, the live
   slots number `count`, and the free list holds every other slot below hwm exactly once.
   Returns -1 if the slots cannot be read safely (nothing above may look at elements). */
static int array_items__array_verify(array_db *db, p2_verify *v)
{
    array_items_root *r = array_items__transient_root(db);
    uint64_t live = 0, nfree = 0, i;
    uint32_t slot;
    int bad = 0;
    if (r->array_cap == 0 || !array_items__transient_contains(db, r->array_slots, (uint64_t)r->array_cap * sizeof(array_items_elem))) {
        p2_verify_fail(v, "container items, layer array: slot block %" PRIu64 " of %u slots lies outside the used memory", r->array_slots, r->array_cap);
        return -1;
    }
    array_items__transient_claim(db, v, r->array_slots, (uint64_t)r->array_cap * sizeof(array_items_elem), "container items, layer array: slot block");
    if (r->array_hwm > r->array_cap) {
        p2_verify_fail(v, "container items, layer array: high-water mark %u above capacity %u", r->array_hwm, r->array_cap);
        return -1;
    }
    for (i = 0; i < r->array_hwm; i++)
        if (array_items__array_elem(db, i)->_array_next_free == array_items__array_LIVE) live++;
    if (live != r->array_count)
        p2_verify_fail(v, "container items, layer array: %" PRIu64 " live slots, count says %u", live, r->array_count);
    for (slot = r->array_free; slot != array_items__array_NONE; slot = array_items__array_elem(db, slot)->_array_next_free) {
        if (slot >= r->array_hwm) {
            p2_verify_fail(v, "container items, layer array: free list: slot %u beyond the high-water mark %u", slot, r->array_hwm);
            bad = 1;
            break;
        }
        if (array_items__array_elem(db, slot)->_array_next_free == array_items__array_LIVE) {
            p2_verify_fail(v, "container items, layer array: free list: slot %u holds a live element", slot);
            bad = 1;
            break;
        }
        if (++nfree > r->array_hwm) {
            p2_verify_fail(v, "container items, layer array: free list longer than the slots (a cycle?)");
            bad = 1;
            break;
        }
    }
    if (!bad && nfree + live != r->array_hwm)
        p2_verify_fail(v, "container items, layer array: %" PRIu64 " free and %" PRIu64 " live slots of %u used", nfree, live, r->array_hwm);
    /* The layers above bound their walks by the count: a wrong one (up to 2^32) would let
       a crafted cycle run that long, so they do not look at elements then. */
    return live != r->array_count ? -1 : 0;
}
/* end of layer array of items ------------------------------------------- */
