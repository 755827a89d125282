/* --------------------------------------------------------------------------
 * layer malloc (malloc: ds[mem]) of items
 * ------------------------------------------------------------------------ */
/* _malloc_magic of a live element: derived from the container's name, so a reference
   into another container sharing the file is not taken for one of ours */
#define malloc_items__malloc_LIVE 0x22200b23u

static inline malloc_items_elem *malloc_items__malloc_elem(malloc_db *db, uint64_t ref)
{
    return (malloc_items_elem *)malloc_items__transient_ptr(db, ref);
}

static inline int malloc_items__malloc_valid(malloc_db *db, uint64_t ref)
{
    /* aligned, and between the lowest and highest element addresses ever allocated (which
       refuses wild values; nothing tells a live block from a freed one) */
    malloc_items_root *r = malloc_items__transient_root(db);
    if (ref < r->malloc_lo || ref > r->malloc_hi || ref % P2_ALIGNOF(malloc_items_elem) != 0) return 0;
    return malloc_items__malloc_elem(db, ref)->_malloc_magic == malloc_items__malloc_LIVE;
}

static inline uint64_t malloc_items__malloc_count(malloc_db *db)
{
    return malloc_items__transient_root(db)->malloc_count;
}

static inline int malloc_items__malloc_create(malloc_db *db)
{
    malloc_items_root *r = malloc_items__transient_root(db);
    malloc_items__transient_will_write(db, r, sizeof *r);
    r->malloc_head = r->malloc_tail = P2_NIL;
    r->malloc_count = 0;
    r->malloc_lo = UINT64_MAX;  /* empty range: no element yet */
    r->malloc_hi = 0;
    return P2_OK;
}

/* Transient close: free every element. */
static inline void malloc_items__malloc_destroy(malloc_db *db)
{
    malloc_items_root *r = malloc_items__transient_root(db);
    uint64_t ref = r->malloc_head;
    while (ref != P2_NIL) {
        malloc_items_elem *e = malloc_items__malloc_elem(db, ref);
        uint64_t next = e->_malloc_next;
        e->_malloc_magic = 0;
        malloc_items__transient_free(db, ref, sizeof(malloc_items_elem));
        ref = next;
    }
    r->malloc_head = r->malloc_tail = P2_NIL;
    r->malloc_count = 0;
}

/* Allocate the element and append it to the list. */
/* One allocation per element: nothing to size in advance. */
static inline int malloc_items__malloc_reserve(malloc_db *db, uint64_t n)
{
    (void)db; (void)n;
    return P2_OK;
}

static inline int malloc_items__malloc_insert(malloc_db *db, const malloc_item *rec, uint64_t *out)
{
    malloc_items_root *r = malloc_items__transient_root(db);
    uint64_t ref = 0;
    malloc_items_elem *e;
    uint64_t *to_ref;
    int rc = malloc_items__transient_alloc(db, sizeof(malloc_items_elem), &ref);  /* zero-filled */
    if (rc != P2_OK) return rc;
    malloc_items__transient_will_write(db, &r->malloc_lo, sizeof r->malloc_lo);
    malloc_items__transient_will_write(db, &r->malloc_hi, sizeof r->malloc_hi);
    if (ref < r->malloc_lo) r->malloc_lo = ref;
    if (ref > r->malloc_hi) r->malloc_hi = ref;
    e = malloc_items__malloc_elem(db, ref);
    to_ref = r->malloc_tail != P2_NIL ? &malloc_items__malloc_elem(db, r->malloc_tail)->_malloc_next : &r->malloc_head;
    malloc_items__transient_will_write(db, e, sizeof *e);
    malloc_items__transient_will_write(db, to_ref, sizeof *to_ref);
    malloc_items__transient_will_write(db, &r->malloc_tail, sizeof r->malloc_tail);
    malloc_items__transient_will_write(db, &r->malloc_count, sizeof r->malloc_count);
    e->rec = *rec;
    e->_malloc_magic = malloc_items__malloc_LIVE;
    e->_malloc_next = P2_NIL;
    e->_malloc_prev = r->malloc_tail;
    *to_ref = ref;
    r->malloc_tail = ref;
    r->malloc_count++;
    *out = ref;
    return P2_OK;
}

/* Unlink the element, clear its magic (so the stale reference fails _valid for as long as
   the block is not reused), then free the block. */
static inline void malloc_items__malloc_remove(malloc_db *db, uint64_t ref)
{
    malloc_items_root *r = malloc_items__transient_root(db);
    malloc_items_elem *e = malloc_items__malloc_elem(db, ref);
    uint64_t *to_next = e->_malloc_prev != P2_NIL ? &malloc_items__malloc_elem(db, e->_malloc_prev)->_malloc_next : &r->malloc_head;
    uint64_t *back_to_prev = e->_malloc_next != P2_NIL ? &malloc_items__malloc_elem(db, e->_malloc_next)->_malloc_prev : &r->malloc_tail;
    malloc_items__transient_will_write(db, to_next, sizeof *to_next);
    malloc_items__transient_will_write(db, back_to_prev, sizeof *back_to_prev);
    malloc_items__transient_will_write(db, &e->_malloc_magic, sizeof e->_malloc_magic);
    malloc_items__transient_will_write(db, &r->malloc_count, sizeof r->malloc_count);
    *to_next = e->_malloc_next;
    *back_to_prev = e->_malloc_prev;
    e->_malloc_magic = 0;
    r->malloc_count--;
    malloc_items__transient_free(db, ref, sizeof(malloc_items_elem));
}

/* Elements never move: updates happen in place. */
static inline int malloc_items__malloc_update(malloc_db *db, uint64_t *ref, const malloc_item *rec)
{
    malloc_items_elem *e = malloc_items__malloc_elem(db, *ref);
    malloc_items__transient_will_write(db, &e->rec, sizeof e->rec);
    e->rec = *rec;
    return P2_OK;
}

static inline int malloc_items__malloc_moves(malloc_db *db, uint64_t ref, const malloc_item *rec)
{
    (void)db; (void)ref; (void)rec;
    return 0;
}

static inline uint64_t malloc_items__malloc_ref_after_remove(uint64_t ref, uint64_t removed)
{
    (void)removed;
    return ref;
}

static inline uint64_t malloc_items__malloc_ref_after_move(uint64_t ref, uint64_t from, uint64_t to)
{
    (void)from; (void)to;
    return ref;
}

/* scan path: the list, oldest first */
static inline uint64_t malloc_items__malloc_scan_first(malloc_db *db)
{
    return malloc_items__transient_root(db)->malloc_head;
}

static inline uint64_t malloc_items__malloc_scan_next(malloc_db *db, uint64_t ref)
{
    return malloc_items__malloc_elem(db, ref)->_malloc_next;
}

/* Integrity check (<prefix>_verify): the element list from the head holds `count` live
   elements (each a block of this container), back
   links agree, and the tail is the last one. The walk is bounded by count + 1 (a cycle
   is reported, not followed). A broken list leaves every element readable through _valid,
   so the layers above are still checked: returns 0, or -1 if the count (which bounds
   their walks) is more elements than the file can hold. */
static int malloc_items__malloc_verify(malloc_db *db, p2_verify *v)
{
    malloc_items_root *r = malloc_items__transient_root(db);
    uint64_t ref = r->malloc_head, prev = P2_NIL, seen = 0;
    int bad = 0;
    while (ref != P2_NIL) {
        const malloc_items_elem *e;
        if (!malloc_items__malloc_valid(db, ref)) {
            p2_verify_fail(v, "container items, layer malloc: element list: %" PRIu64 " (after %" PRIu64 ") is not a live element", ref, prev);
            bad = 1;
            break;
        }
        if (++seen > r->malloc_count) {
            p2_verify_fail(v, "container items, layer malloc: element list longer than count %" PRIu64 " (a cycle?)", r->malloc_count);
            bad = 1;
            break;
        }
        e = malloc_items__malloc_elem(db, ref);
        malloc_items__transient_claim(db, v, ref, sizeof(malloc_items_elem), "container items, layer malloc: element");
        if (e->_malloc_prev != prev)
            p2_verify_fail(v, "container items, layer malloc: element %" PRIu64 ": back link %" PRIu64 ", expected %" PRIu64, ref, e->_malloc_prev, prev);
        prev = ref;
        ref = e->_malloc_next;
    }
    if (!bad && r->malloc_tail != prev)
        p2_verify_fail(v, "container items, layer malloc: tail %" PRIu64 " is not the last element %" PRIu64, r->malloc_tail, prev);
    if (!bad && seen != r->malloc_count)
        p2_verify_fail(v, "container items, layer malloc: %" PRIu64 " elements on the list, count says %" PRIu64, seen, r->malloc_count);
    return 0;
}
/* end of layer malloc of items ------------------------------------------ */
