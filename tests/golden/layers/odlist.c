/* --------------------------------------------------------------------------
 * layer odlist (odlist: ds[ds]) of items: key=name
 * ------------------------------------------------------------------------ */
static inline odlist_items_elem *odlist_items__odlist_node(odlist_db *db, uint64_t ref)
{
    return odlist_items__array_elem(db, ref);
}

/* Put `ref` between `prev` and `next`, neighbours in the list (P2_NIL: that end). */
static inline void odlist_items__odlist_splice(odlist_db *db, uint64_t ref, uint64_t prev, uint64_t next)
{
    odlist_items_root *r = odlist_items__transient_root(db);
    odlist_items_elem *e = odlist_items__odlist_node(db, ref);
    uint64_t *to_ref = prev == P2_NIL ? &r->odlist_head : &odlist_items__odlist_node(db, prev)->_odlist_next;
    uint64_t *back_to_ref = next == P2_NIL ? &r->odlist_tail : &odlist_items__odlist_node(db, next)->_odlist_prev;
    odlist_items__transient_will_write(db, &e->_odlist_prev, sizeof e->_odlist_prev);
    odlist_items__transient_will_write(db, &e->_odlist_next, sizeof e->_odlist_next);
    odlist_items__transient_will_write(db, to_ref, sizeof *to_ref);
    odlist_items__transient_will_write(db, back_to_ref, sizeof *back_to_ref);
    e->_odlist_prev = prev;
    e->_odlist_next = next;
    *to_ref = ref;
    *back_to_ref = ref;
}

static inline void odlist_items__odlist_unlink(odlist_db *db, uint64_t ref)
{
    odlist_items_root *r = odlist_items__transient_root(db);
    const odlist_items_elem *e = odlist_items__odlist_node(db, ref);
    uint64_t prev = e->_odlist_prev, next = e->_odlist_next;
    uint64_t *to_next = prev == P2_NIL ? &r->odlist_head : &odlist_items__odlist_node(db, prev)->_odlist_next;
    uint64_t *back_to_prev = next == P2_NIL ? &r->odlist_tail : &odlist_items__odlist_node(db, next)->_odlist_prev;
    odlist_items__transient_will_write(db, to_next, sizeof *to_next);
    odlist_items__transient_will_write(db, back_to_prev, sizeof *back_to_prev);
    *to_next = next;
    *back_to_prev = prev;
}

/* Would `ref` be in key order between `prev` and `next`, after equal keys? */
static inline int odlist_items__odlist_fits(odlist_db *db, uint64_t ref, uint64_t prev, uint64_t next)
{
    const odlist_items_elem *e = odlist_items__odlist_node(db, ref);
    return (prev == P2_NIL || odlist_items__cmp_name(odlist_items__odlist_node(db, prev)->rec.name, e->rec.name) <= 0)
        && (next == P2_NIL || odlist_items__cmp_name(e->rec.name, odlist_items__odlist_node(db, next)->rec.name) < 0);
}

/* Link `ref` in key order, after every element with an equal key. */
static inline void odlist_items__odlist_link(odlist_db *db, uint64_t ref)
{
    odlist_items_root *r = odlist_items__transient_root(db);
    const odlist_items_elem *e = odlist_items__odlist_node(db, ref);
    uint64_t tail = r->odlist_tail, next = r->odlist_head;
    if (tail == P2_NIL || odlist_items__cmp_name(odlist_items__odlist_node(db, tail)->rec.name, e->rec.name) <= 0) {
        odlist_items__odlist_splice(db, ref, tail, P2_NIL);  /* keys arriving in order: append */
        return;
    }
    while (odlist_items__cmp_name(odlist_items__odlist_node(db, next)->rec.name, e->rec.name) <= 0)
        next = odlist_items__odlist_node(db, next)->_odlist_next;  /* stops at the tail at the latest */
    odlist_items__odlist_splice(db, ref, odlist_items__odlist_node(db, next)->_odlist_prev, next);
}

static inline int odlist_items__odlist_create(odlist_db *db)
{
    int rc = odlist_items__array_create(db);
    if (rc != P2_OK) return rc;
    odlist_items__transient_will_write(db, &odlist_items__transient_root(db)->odlist_head, sizeof odlist_items__transient_root(db)->odlist_head);
    odlist_items__transient_will_write(db, &odlist_items__transient_root(db)->odlist_tail, sizeof odlist_items__transient_root(db)->odlist_tail);
    odlist_items__transient_root(db)->odlist_head = odlist_items__transient_root(db)->odlist_tail = P2_NIL;
    return P2_OK;
}

/* The list lives in the elements: nothing of its own to free. */
static inline void odlist_items__odlist_destroy(odlist_db *db)
{
    odlist_items__array_destroy(db);
}

static inline int odlist_items__odlist_reserve(odlist_db *db, uint64_t n) { return odlist_items__array_reserve(db, n); }

static inline int odlist_items__odlist_insert(odlist_db *db, const odlist_item *rec, uint64_t *out)
{
    int rc = odlist_items__array_insert(db, rec, out);
    if (rc != P2_OK) return rc;
    odlist_items__odlist_link(db, *out);
    return P2_OK;
}

static inline void odlist_items__odlist_remove(odlist_db *db, uint64_t ref)
{
    odlist_items__odlist_unlink(db, ref);
    odlist_items__array_remove(db, ref);
}

/* A key change (or a move in storage) unlinks the element, updates it below and links it
   again: back in its old place (under its possibly new reference) if the update failed or
   the key is unchanged or still fits there, else by a walk from the head. */
static inline int odlist_items__odlist_update(odlist_db *db, uint64_t *ref, const odlist_item *rec)
{
    const odlist_items_elem *e = odlist_items__odlist_node(db, *ref);
    uint64_t prev = e->_odlist_prev, next = e->_odlist_next;
    int same = odlist_items__cmp_name(e->rec.name, rec->name) == 0, rc;
    if (same && !odlist_items__array_moves(db, *ref, rec))
        return odlist_items__array_update(db, ref, rec);
    odlist_items__odlist_unlink(db, *ref);
    rc = odlist_items__array_update(db, ref, rec);
    if (rc != P2_OK || same || odlist_items__odlist_fits(db, *ref, prev, next))
        odlist_items__odlist_splice(db, *ref, prev, next);
    else
        odlist_items__odlist_link(db, *ref);
    return rc;
}

/* range path: the first element with key >= lo (> lo if !lo_inclusive; the head if
   !has_lo), walking from the head. */
static inline uint64_t odlist_items__odlist_range_first(odlist_db *db, int has_lo, const char *lo, int lo_inclusive)
{
    uint64_t ref = odlist_items__transient_root(db)->odlist_head;
    if (!has_lo) return ref;
    while (ref != P2_NIL) {
        const odlist_items_elem *e = odlist_items__odlist_node(db, ref);
        int c = odlist_items__cmp_name(e->rec.name, lo);
        if (c > 0 || (c == 0 && lo_inclusive)) break;
        ref = e->_odlist_next;
    }
    return ref;
}

static inline uint64_t odlist_items__odlist_range_next(odlist_db *db, uint64_t ref)
{
    return odlist_items__odlist_node(db, ref)->_odlist_next;
}

/* Integrity check (<prefix>_verify), after the layers below: the list from the head
   holds live elements of the storage (array), each once, back links agree,
   the tail is the last one, in key order, and every stored element is on it. The walk is bounded by
   the element count + 1 (a cycle is reported, not followed). */
static int odlist_items__odlist_verify(odlist_db *db, p2_verify *v)
{
    odlist_items_root *r = odlist_items__transient_root(db);
    uint64_t ref = r->odlist_head, prev = P2_NIL, seen = 0, stored = odlist_items__array_count(db);
    int rc = odlist_items__array_verify(db, v);
    if (rc < 0) return rc;
    while (ref != P2_NIL) {
        const odlist_items_elem *e;
        if (!odlist_items__array_valid(db, ref)) {
            p2_verify_fail(v, "container items, layer odlist: element %" PRIu64 " (after %" PRIu64 ") is not live", ref, prev);
            return 0;
        }
        if (++seen > stored) {
            p2_verify_fail(v, "container items, layer odlist: more elements linked than the %" PRIu64 " stored (a cycle?)", stored);
            return 0;
        }
        e = odlist_items__odlist_node(db, ref);
        if (e->_odlist_prev != prev)
            p2_verify_fail(v, "container items, layer odlist: element %" PRIu64 ": back link %" PRIu64 ", expected %" PRIu64, ref, e->_odlist_prev, prev);
        if (prev != P2_NIL && odlist_items__cmp_name(odlist_items__odlist_node(db, prev)->rec.name, e->rec.name) > 0)
            p2_verify_fail(v, "container items, layer odlist: element %" PRIu64 " out of name order", ref);
        prev = ref;
        ref = e->_odlist_next;
    }
    if (r->odlist_tail != prev)
        p2_verify_fail(v, "container items, layer odlist: tail %" PRIu64 " is not the last element %" PRIu64, r->odlist_tail, prev);
    if (seen != stored)
        p2_verify_fail(v, "container items, layer odlist: %" PRIu64 " elements linked, %" PRIu64 " stored", seen, stored);
    return 0;
}

#ifdef P2_DEBUG
/* Debug aid (compiled with -DP2_DEBUG): check links both ways, head and tail, key order,
   and that the list holds every element once. P2_OK, or P2_EFORMAT with the reason in
   db->err. */
int odlist_items__odlist_check(odlist_db *db);
ODLIST_API int odlist_items__odlist_check(odlist_db *db)
{
    uint64_t ref, prev = P2_NIL, seen = 0;
    if (!db || !db->open) return P2_ECLOSED;
    for (ref = odlist_items__transient_root(db)->odlist_head; ref != P2_NIL; prev = ref, ref = odlist_items__odlist_node(db, ref)->_odlist_next) {
        if (!odlist_items__array_valid(db, ref))
            return p2_err_set(&db->err, P2_EFORMAT, "items odlist: %" PRIu64 " is not a live element", ref);
        if (++seen > odlist_items__array_count(db))
            return p2_err_set(&db->err, P2_EFORMAT, "items odlist: more links than elements (a cycle?)");
        if (odlist_items__odlist_node(db, ref)->_odlist_prev != prev)
            return p2_err_set(&db->err, P2_EFORMAT, "items odlist: bad back link at %" PRIu64, ref);
        if (prev != P2_NIL && odlist_items__cmp_name(odlist_items__odlist_node(db, prev)->rec.name, odlist_items__odlist_node(db, ref)->rec.name) > 0)
            return p2_err_set(&db->err, P2_EFORMAT, "items odlist: %" PRIu64 " out of key order", ref);
    }
    if (odlist_items__transient_root(db)->odlist_tail != prev)
        return p2_err_set(&db->err, P2_EFORMAT, "items odlist: tail is not the last element");
    if (seen != odlist_items__array_count(db))
        return p2_err_set(&db->err, P2_EFORMAT, "items odlist: %" PRIu64 " linked for %" PRIu64 " elements", seen, (uint64_t)odlist_items__array_count(db));
    return P2_OK;
}
#endif
/* end of layer odlist(key=name) of items -------------------------------- */
