/* --------------------------------------------------------------------------
 * layer dlist (dlist: ds[ds]) of items
 * ------------------------------------------------------------------------ */
static inline dlist_items_elem *dlist_items__dlist_node(dlist_db *db, uint64_t ref)
{
    return dlist_items__array_elem(db, ref);
}

/* Put `ref` between `prev` and `next`, neighbours in the list (P2_NIL: that end). */
static inline void dlist_items__dlist_splice(dlist_db *db, uint64_t ref, uint64_t prev, uint64_t next)
{
    dlist_items_root *r = dlist_items__transient_root(db);
    dlist_items_elem *e = dlist_items__dlist_node(db, ref);
    uint64_t *to_ref = prev == P2_NIL ? &r->dlist_head : &dlist_items__dlist_node(db, prev)->_dlist_next;
    uint64_t *back_to_ref = next == P2_NIL ? &r->dlist_tail : &dlist_items__dlist_node(db, next)->_dlist_prev;
    dlist_items__transient_will_write(db, &e->_dlist_prev, sizeof e->_dlist_prev);
    dlist_items__transient_will_write(db, &e->_dlist_next, sizeof e->_dlist_next);
    dlist_items__transient_will_write(db, to_ref, sizeof *to_ref);
    dlist_items__transient_will_write(db, back_to_ref, sizeof *back_to_ref);
    e->_dlist_prev = prev;
    e->_dlist_next = next;
    *to_ref = ref;
    *back_to_ref = ref;
}

static inline void dlist_items__dlist_unlink(dlist_db *db, uint64_t ref)
{
    dlist_items_root *r = dlist_items__transient_root(db);
    const dlist_items_elem *e = dlist_items__dlist_node(db, ref);
    uint64_t prev = e->_dlist_prev, next = e->_dlist_next;
    uint64_t *to_next = prev == P2_NIL ? &r->dlist_head : &dlist_items__dlist_node(db, prev)->_dlist_next;
    uint64_t *back_to_prev = next == P2_NIL ? &r->dlist_tail : &dlist_items__dlist_node(db, next)->_dlist_prev;
    dlist_items__transient_will_write(db, to_next, sizeof *to_next);
    dlist_items__transient_will_write(db, back_to_prev, sizeof *back_to_prev);
    *to_next = next;
    *back_to_prev = prev;
}

static inline int dlist_items__dlist_create(dlist_db *db)
{
    int rc = dlist_items__array_create(db);
    if (rc != P2_OK) return rc;
    dlist_items__transient_will_write(db, &dlist_items__transient_root(db)->dlist_head, sizeof dlist_items__transient_root(db)->dlist_head);
    dlist_items__transient_will_write(db, &dlist_items__transient_root(db)->dlist_tail, sizeof dlist_items__transient_root(db)->dlist_tail);
    dlist_items__transient_root(db)->dlist_head = dlist_items__transient_root(db)->dlist_tail = P2_NIL;
    return P2_OK;
}

/* The list lives in the elements: nothing of its own to free. */
static inline void dlist_items__dlist_destroy(dlist_db *db)
{
    dlist_items__array_destroy(db);
}

static inline int dlist_items__dlist_reserve(dlist_db *db, uint64_t n) { return dlist_items__array_reserve(db, n); }

static inline int dlist_items__dlist_insert(dlist_db *db, const dlist_item *rec, uint64_t *out)
{
    int rc = dlist_items__array_insert(db, rec, out);
    if (rc != P2_OK) return rc;
    dlist_items__dlist_splice(db, *out, dlist_items__transient_root(db)->dlist_tail, P2_NIL);
    return P2_OK;
}

static inline void dlist_items__dlist_remove(dlist_db *db, uint64_t ref)
{
    dlist_items__dlist_unlink(db, ref);
    dlist_items__array_remove(db, ref);
}

/* The list has no key: only a move in storage concerns it. Then the element is unlinked,
   updated below, and put back between its old neighbours under its (possibly new)
   reference, also when the update failed (element and reference unchanged). */
static inline int dlist_items__dlist_update(dlist_db *db, uint64_t *ref, const dlist_item *rec)
{
    uint64_t prev, next;
    int rc;
    if (!dlist_items__array_moves(db, *ref, rec))
        return dlist_items__array_update(db, ref, rec);
    prev = dlist_items__dlist_node(db, *ref)->_dlist_prev;
    next = dlist_items__dlist_node(db, *ref)->_dlist_next;
    dlist_items__dlist_unlink(db, *ref);
    rc = dlist_items__array_update(db, ref, rec);
    dlist_items__dlist_splice(db, *ref, prev, next);
    return rc;
}

/* Integrity check (<prefix>_verify), after the layers below: the list from the head
   holds live elements of the storage (array), each once, back links agree,
   the tail is the last one, and every stored element is on it. The walk is bounded by
   the element count + 1 (a cycle is reported, not followed). */
static int dlist_items__dlist_verify(dlist_db *db, p2_verify *v)
{
    dlist_items_root *r = dlist_items__transient_root(db);
    uint64_t ref = r->dlist_head, prev = P2_NIL, seen = 0, stored = dlist_items__array_count(db);
    int rc = dlist_items__array_verify(db, v);
    if (rc < 0) return rc;
    while (ref != P2_NIL) {
        const dlist_items_elem *e;
        if (!dlist_items__array_valid(db, ref)) {
            p2_verify_fail(v, "container items, layer dlist: element %" PRIu64 " (after %" PRIu64 ") is not live", ref, prev);
            return 0;
        }
        if (++seen > stored) {
            p2_verify_fail(v, "container items, layer dlist: more elements linked than the %" PRIu64 " stored (a cycle?)", stored);
            return 0;
        }
        e = dlist_items__dlist_node(db, ref);
        if (e->_dlist_prev != prev)
            p2_verify_fail(v, "container items, layer dlist: element %" PRIu64 ": back link %" PRIu64 ", expected %" PRIu64, ref, e->_dlist_prev, prev);
        prev = ref;
        ref = e->_dlist_next;
    }
    if (r->dlist_tail != prev)
        p2_verify_fail(v, "container items, layer dlist: tail %" PRIu64 " is not the last element %" PRIu64, r->dlist_tail, prev);
    if (seen != stored)
        p2_verify_fail(v, "container items, layer dlist: %" PRIu64 " elements linked, %" PRIu64 " stored", seen, stored);
    return 0;
}

#ifdef P2_DEBUG
/* Debug aid (compiled with -DP2_DEBUG): check links both ways, head and tail, and that
   the list holds every element once. P2_OK, or P2_EFORMAT with the reason in db->err. */
int dlist_items__dlist_check(dlist_db *db);
DLIST_API int dlist_items__dlist_check(dlist_db *db)
{
    uint64_t ref, prev = P2_NIL, seen = 0;
    if (!db || !db->open) return P2_ECLOSED;
    for (ref = dlist_items__transient_root(db)->dlist_head; ref != P2_NIL; prev = ref, ref = dlist_items__dlist_node(db, ref)->_dlist_next) {
        if (!dlist_items__array_valid(db, ref))
            return p2_err_set(&db->err, P2_EFORMAT, "items dlist: %" PRIu64 " is not a live element", ref);
        if (++seen > dlist_items__array_count(db))
            return p2_err_set(&db->err, P2_EFORMAT, "items dlist: more links than elements (a cycle?)");
        if (dlist_items__dlist_node(db, ref)->_dlist_prev != prev)
            return p2_err_set(&db->err, P2_EFORMAT, "items dlist: bad back link at %" PRIu64, ref);
    }
    if (dlist_items__transient_root(db)->dlist_tail != prev)
        return p2_err_set(&db->err, P2_EFORMAT, "items dlist: tail is not the last element");
    if (seen != dlist_items__array_count(db))
        return p2_err_set(&db->err, P2_EFORMAT, "items dlist: %" PRIu64 " linked for %" PRIu64 " elements", seen, (uint64_t)dlist_items__array_count(db));
    return P2_OK;
}
#endif
/* end of layer dlist of items ------------------------------------------- */
