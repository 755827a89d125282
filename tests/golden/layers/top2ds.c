/* --------------------------------------------------------------------------
 * layer top2ds (top2ds: top[ds]) of items
 * ------------------------------------------------------------------------ */
static inline int top2ds_items__top2ds_create(top2ds_db *db) { return top2ds_items__hash_create(db); }
static inline void top2ds_items__top2ds_destroy(top2ds_db *db) { top2ds_items__hash_destroy(db); }
static inline top2ds_items_elem *top2ds_items__top2ds_elem(top2ds_db *db, uint64_t ref) { return top2ds_items__array_elem(db, ref); }
static inline int top2ds_items__top2ds_valid(top2ds_db *db, uint64_t ref) { return top2ds_items__array_valid(db, ref); }
static inline uint64_t top2ds_items__top2ds_count(top2ds_db *db) { return top2ds_items__array_count(db); }
static inline int top2ds_items__top2ds_reserve(top2ds_db *db, uint64_t n) { return top2ds_items__hash_reserve(db, n); }
static inline int top2ds_items__top2ds_insert(top2ds_db *db, const top2ds_item *rec, uint64_t *out) { return top2ds_items__hash_insert(db, rec, out); }
static inline void top2ds_items__top2ds_remove(top2ds_db *db, uint64_t ref) { top2ds_items__hash_remove(db, ref); }
static inline int top2ds_items__top2ds_update(top2ds_db *db, uint64_t *ref, const top2ds_item *rec) { return top2ds_items__hash_update(db, ref, rec); }
/* Integrity check (<prefix>_verify): the ds layers, storage first. */
static int top2ds_items__top2ds_verify(top2ds_db *db, p2_verify *v) { return top2ds_items__hash_verify(db, v); }

/* cursor every: path: array(capacity=16) scan (array: scan every slot); residual: (none) */
static inline uint64_t top2ds_items__top2ds_every_advance(top2ds_every_cursor *k, uint64_t ref)
{
    (void)k;
    return top2ds_items__array_scan_next(k->_db, ref);
}

static inline int top2ds_items__top2ds_every_next(top2ds_every_cursor *k)
{
    uint64_t ref;
    if (k->_state == P2_CURSOR_BEFORE) ref = top2ds_items__array_scan_first(k->_db);
    else if (k->_state == P2_CURSOR_END) return P2_END;
    else if (k->_has_pending) ref = k->_pending;
    else ref = top2ds_items__top2ds_every_advance(k, k->_cur);
    k->_has_pending = 0;
    for (; ref != P2_NIL; ref = top2ds_items__top2ds_every_advance(k, ref)) {
        if (k->_seen.n && p2_refset_has(&k->_seen, ref)) {
            /* moved here by an update through this cursor: visited already */
            p2_refset_del(&k->_seen, ref);
            continue;
        }
        k->_cur = ref;
        k->_state = P2_CURSOR_ON;
        return P2_OK;
    }
    k->_state = P2_CURSOR_END;
    p2_refset_free(&k->_seen);
    return P2_END;
}

/* Remember where the walk goes on before removing the element under the cursor. */
static inline int top2ds_items__top2ds_every_delete(top2ds_every_cursor *k)
{
    uint64_t cur = k->_cur;
    uint64_t next = k->_has_pending ? k->_pending : top2ds_items__top2ds_every_advance(k, cur);
    p2_refset_del(&k->_seen, cur);
    top2ds_items__top2ds_remove(k->_db, cur);
    if (next != P2_NIL) next = top2ds_items__array_ref_after_remove(next, cur);
    k->_pending = next;
    k->_has_pending = 1;
    k->_state = P2_CURSOR_OFF;
    return P2_OK;
}

/* An update that puts the element elsewhere in this walk (when array storage moves it)
   remembers it in k->_seen: the walk skips it when it meets it again, so every element
   is visited once (the Halloween problem). */
static inline int top2ds_items__top2ds_every_update(top2ds_every_cursor *k, const top2ds_item *rec)
{
    uint64_t old = k->_cur, ref = old;
    uint64_t next = k->_has_pending ? k->_pending : top2ds_items__top2ds_every_advance(k, old);
    int relinks = top2ds_items__array_moves(k->_db, old, rec);
    int rc;
    if (relinks && p2_refset_reserve(&k->_seen, 0) != P2_OK)
        return p2_err_set(&k->_db->err, P2_ENOMEM, "cursor every: out of memory for the elements it moved");
    rc = top2ds_items__top2ds_update(k->_db, &ref, rec);
    if (rc != P2_OK) {
        /* nothing changed, but an index may have relinked the element: go on from the
           successor saved before the attempt */
        k->_pending = next;
        k->_has_pending = 1;
        return rc;
    }
    if (next != P2_NIL && ref != old) next = top2ds_items__array_ref_after_move(next, old, ref);
    if (ref != old) {
        p2_refset_del(&k->_seen, old);
    }
    if (relinks) p2_refset_add(&k->_seen, ref);
    k->_cur = ref;
    k->_pending = next;
    k->_has_pending = 1;
    return P2_OK;
}

/* find find_grp: the first element on the path that passes the check, or P2_NIL.
   Stateless: the walk reads only k->_db and the key (k->_p_...), so a find need not
   initialise, step or free a whole cursor. */
static inline uint64_t top2ds_items__top2ds_find_grp_find(top2ds_items__find_grp_cursor *k)
{
    return top2ds_items__hash_eq_first(k->_db, k->_p_grp);  /* the path's first candidate is the element */
}

/* cursor all: path: array(capacity=16) scan (array: scan every slot); residual: (none) */
static inline uint64_t top2ds_items__top2ds_all_advance(top2ds_items_all_cursor *k, uint64_t ref)
{
    (void)k;
    return top2ds_items__array_scan_next(k->_db, ref);
}

static inline int top2ds_items__top2ds_all_next(top2ds_items_all_cursor *k)
{
    uint64_t ref;
    if (k->_state == P2_CURSOR_BEFORE) ref = top2ds_items__array_scan_first(k->_db);
    else if (k->_state == P2_CURSOR_END) return P2_END;
    else if (k->_has_pending) ref = k->_pending;
    else ref = top2ds_items__top2ds_all_advance(k, k->_cur);
    k->_has_pending = 0;
    for (; ref != P2_NIL; ref = top2ds_items__top2ds_all_advance(k, ref)) {
        if (k->_seen.n && p2_refset_has(&k->_seen, ref)) {
            /* moved here by an update through this cursor: visited already */
            p2_refset_del(&k->_seen, ref);
            continue;
        }
        k->_cur = ref;
        k->_state = P2_CURSOR_ON;
        return P2_OK;
    }
    k->_state = P2_CURSOR_END;
    p2_refset_free(&k->_seen);
    return P2_END;
}

/* Remember where the walk goes on before removing the element under the cursor. */
static inline int top2ds_items__top2ds_all_delete(top2ds_items_all_cursor *k)
{
    uint64_t cur = k->_cur;
    uint64_t next = k->_has_pending ? k->_pending : top2ds_items__top2ds_all_advance(k, cur);
    p2_refset_del(&k->_seen, cur);
    top2ds_items__top2ds_remove(k->_db, cur);
    if (next != P2_NIL) next = top2ds_items__array_ref_after_remove(next, cur);
    k->_pending = next;
    k->_has_pending = 1;
    k->_state = P2_CURSOR_OFF;
    return P2_OK;
}

/* An update that puts the element elsewhere in this walk (when array storage moves it)
   remembers it in k->_seen: the walk skips it when it meets it again, so every element
   is visited once (the Halloween problem). */
static inline int top2ds_items__top2ds_all_update(top2ds_items_all_cursor *k, const top2ds_item *rec)
{
    uint64_t old = k->_cur, ref = old;
    uint64_t next = k->_has_pending ? k->_pending : top2ds_items__top2ds_all_advance(k, old);
    int relinks = top2ds_items__array_moves(k->_db, old, rec);
    int rc;
    if (relinks && p2_refset_reserve(&k->_seen, 0) != P2_OK)
        return p2_err_set(&k->_db->err, P2_ENOMEM, "cursor all: out of memory for the elements it moved");
    rc = top2ds_items__top2ds_update(k->_db, &ref, rec);
    if (rc != P2_OK) {
        /* nothing changed, but an index may have relinked the element: go on from the
           successor saved before the attempt */
        k->_pending = next;
        k->_has_pending = 1;
        return rc;
    }
    if (next != P2_NIL && ref != old) next = top2ds_items__array_ref_after_move(next, old, ref);
    if (ref != old) {
        p2_refset_del(&k->_seen, old);
    }
    if (relinks) p2_refset_add(&k->_seen, ref);
    k->_cur = ref;
    k->_pending = next;
    k->_has_pending = 1;
    return P2_OK;
}
/* end of layer top2ds of items ------------------------------------------ */
