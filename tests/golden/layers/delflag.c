/* --------------------------------------------------------------------------
 * layer delflag (delflag: top[top]) of items
 * ------------------------------------------------------------------------ */
static inline int delflag_items__delflag_create(delflag_db *db) { return delflag_items__top2ds_qualify_create(db); }
static inline void delflag_items__delflag_destroy(delflag_db *db) { delflag_items__top2ds_qualify_destroy(db); }
static inline delflag_items_elem *delflag_items__delflag_elem(delflag_db *db, uint64_t ref) { return delflag_items__top2ds_qualify_elem(db, ref); }

static inline int delflag_items__delflag_valid(delflag_db *db, uint64_t ref)
{
    return delflag_items__top2ds_qualify_valid(db, ref) && !delflag_items__top2ds_qualify_elem(db, ref)->_delflag_deleted;
}

static inline uint64_t delflag_items__delflag_count(delflag_db *db)
{
    return delflag_items__top2ds_qualify_count(db) - delflag_items__transient_root(db)->delflag_ndeleted;
}

/* A marked element still holds its key in unique storage (array): make room. */
static inline void delflag_items__delflag_clear_dup(delflag_db *db, const delflag_item *rec, uint64_t keep)
{
    uint64_t dup = delflag_items__array_find_dup(db, rec);
    if (dup != P2_NIL && dup != keep && delflag_items__top2ds_qualify_elem(db, dup)->_delflag_deleted) {
        delflag_items__top2ds_qualify_remove(db, dup);
        delflag_items__transient_will_write(db, &delflag_items__transient_root(db)->delflag_ndeleted, sizeof delflag_items__transient_root(db)->delflag_ndeleted);
        delflag_items__transient_root(db)->delflag_ndeleted--;
    }
}

static inline int delflag_items__delflag_reserve(delflag_db *db, uint64_t n) { return delflag_items__top2ds_qualify_reserve(db, n); }

static inline int delflag_items__delflag_insert(delflag_db *db, const delflag_item *rec, uint64_t *out)
{
    int rc;
    delflag_items__delflag_clear_dup(db, rec, P2_NIL);
    rc = delflag_items__top2ds_qualify_insert(db, rec, out);
    if (rc != P2_OK) return rc;
    delflag_items__transient_will_write(db, &delflag_items__top2ds_qualify_elem(db, *out)->_delflag_deleted, sizeof(uint8_t));
    delflag_items__top2ds_qualify_elem(db, *out)->_delflag_deleted = 0;
    return P2_OK;
}

static inline void delflag_items__delflag_remove(delflag_db *db, uint64_t ref)
{
    delflag_items__transient_will_write(db, &delflag_items__top2ds_qualify_elem(db, ref)->_delflag_deleted, sizeof(uint8_t));
    delflag_items__transient_will_write(db, &delflag_items__transient_root(db)->delflag_ndeleted, sizeof delflag_items__transient_root(db)->delflag_ndeleted);
    delflag_items__top2ds_qualify_elem(db, ref)->_delflag_deleted = 1;
    delflag_items__transient_root(db)->delflag_ndeleted++;
}

static inline int delflag_items__delflag_update(delflag_db *db, uint64_t *ref, const delflag_item *rec)
{
    delflag_items__delflag_clear_dup(db, rec, *ref);
    return delflag_items__top2ds_qualify_update(db, ref, rec);
}
/* Integrity check (<prefix>_verify), after the layers below: every deleted flag is 0 or
   1, and as many elements are marked as the root says. */
static int delflag_items__delflag_verify(delflag_db *db, p2_verify *v)
{
    uint64_t ref, steps = 0, marked = 0, stored;
    int rc = delflag_items__top2ds_qualify_verify(db, v);
    if (rc < 0) return rc;
    stored = delflag_items__array_count(db);
    for (ref = delflag_items__array_scan_first(db); ref != P2_NIL && delflag_items__array_valid(db, ref) && steps <= stored; ref = delflag_items__array_scan_next(db, ref), steps++) {
        unsigned flag = delflag_items__array_elem(db, ref)->_delflag_deleted;
        if (flag > 1)
            p2_verify_fail(v, "container items, layer delflag: element %" PRIu64 ": deleted flag is %u", ref, flag);
        if (flag) marked++;
    }
    if (marked != delflag_items__transient_root(db)->delflag_ndeleted)
        p2_verify_fail(v, "container items, layer delflag: %" PRIu64 " elements marked deleted, the root says %" PRIu64, marked, delflag_items__transient_root(db)->delflag_ndeleted);
    return 0;
}

/* cursor items_of: skips elements marked deleted */
static inline int delflag_items__delflag_items_of_next(delflag_items_of_cursor *k)
{
    int rc;
    while ((rc = delflag_items__top2ds_qualify_items_of_next(k)) == P2_OK)
        if (!delflag_items__top2ds_qualify_elem(k->_db, k->_cur)->_delflag_deleted) return P2_OK;
    return rc;
}

static inline int delflag_items__delflag_items_of_delete(delflag_items_of_cursor *k)
{
    delflag_items__delflag_remove(k->_db, k->_cur);
    k->_state = P2_CURSOR_OFF;  /* the walk continues from it */
    return P2_OK;
}

static inline int delflag_items__delflag_items_of_update(delflag_items_of_cursor *k, const delflag_item *rec)
{
    delflag_items__delflag_clear_dup(k->_db, rec, k->_cur);
    return delflag_items__top2ds_qualify_items_of_update(k, rec);
}

/* cursor all: skips elements marked deleted */
static inline int delflag_items__delflag_all_next(delflag_items_all_cursor *k)
{
    int rc;
    while ((rc = delflag_items__top2ds_qualify_all_next(k)) == P2_OK)
        if (!delflag_items__top2ds_qualify_elem(k->_db, k->_cur)->_delflag_deleted) return P2_OK;
    return rc;
}

static inline int delflag_items__delflag_all_delete(delflag_items_all_cursor *k)
{
    delflag_items__delflag_remove(k->_db, k->_cur);
    k->_state = P2_CURSOR_OFF;  /* the walk continues from it */
    return P2_OK;
}

static inline int delflag_items__delflag_all_update(delflag_items_all_cursor *k, const delflag_item *rec)
{
    delflag_items__delflag_clear_dup(k->_db, rec, k->_cur);
    return delflag_items__top2ds_qualify_all_update(k, rec);
}

/* Remove marked elements for good, walking every element through the layer below. */
static inline int delflag_items__delflag_purge(delflag_db *db, uint64_t *n)
{
    delflag_items_all_cursor k;
    uint64_t removed = 0;
    int rc;
    memset(&k, 0, sizeof k);
    k._db = db;
    while ((rc = delflag_items__top2ds_qualify_all_next(&k)) == P2_OK) {
        if (!delflag_items__top2ds_qualify_elem(db, k._cur)->_delflag_deleted) continue;
        delflag_items__top2ds_qualify_all_delete(&k);
        removed++;
    }
    delflag_items__transient_will_write(db, &delflag_items__transient_root(db)->delflag_ndeleted, sizeof delflag_items__transient_root(db)->delflag_ndeleted);
    delflag_items__transient_root(db)->delflag_ndeleted -= removed;
    if (n) *n = removed;
    return rc == P2_END ? P2_OK : rc;
}
/* end of layer delflag of items ----------------------------------------- */
