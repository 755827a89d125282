/* --------------------------------------------------------------------------
 * layer qualify (qualify: top[top]) of items
 * ------------------------------------------------------------------------ */
static inline int qualify_items__qualify_create(qualify_db *db) { return qualify_items__top2ds_create(db); }
static inline void qualify_items__qualify_destroy(qualify_db *db) { qualify_items__top2ds_destroy(db); }
static inline qualify_items_elem *qualify_items__qualify_elem(qualify_db *db, uint64_t ref) { return qualify_items__top2ds_elem(db, ref); }
static inline int qualify_items__qualify_valid(qualify_db *db, uint64_t ref) { return qualify_items__top2ds_valid(db, ref); }
static inline uint64_t qualify_items__qualify_count(qualify_db *db) { return qualify_items__top2ds_count(db); }
static inline int qualify_items__qualify_reserve(qualify_db *db, uint64_t n) { return qualify_items__top2ds_reserve(db, n); }
static inline int qualify_items__qualify_insert(qualify_db *db, const qualify_item *rec, uint64_t *out) { return qualify_items__top2ds_insert(db, rec, out); }
static inline void qualify_items__qualify_remove(qualify_db *db, uint64_t ref) { qualify_items__top2ds_remove(db, ref); }
static inline int qualify_items__qualify_update(qualify_db *db, uint64_t *ref, const qualify_item *rec) { return qualify_items__top2ds_update(db, ref, rec); }
static int qualify_items__qualify_verify(qualify_db *db, p2_verify *v) { return qualify_items__top2ds_verify(db, v); }

/* cursor items_of: keeps elements satisfying name != "x" */
static inline int qualify_items__qualify_items_of_next(qualify_items_of_cursor *k)
{
    int rc;
    while ((rc = qualify_items__top2ds_items_of_next(k)) == P2_OK) {
        const qualify_items_elem *e = qualify_items__top2ds_elem(k->_db, k->_cur);
        if ((p2_fixstr_cmp(e->rec.name, 8, ((const char[8]){"x"}), 8) != 0)) return P2_OK;
    }
    return rc;
}

static inline int qualify_items__qualify_items_of_delete(qualify_items_of_cursor *k) { return qualify_items__top2ds_items_of_delete(k); }
static inline int qualify_items__qualify_items_of_update(qualify_items_of_cursor *k, const qualify_item *rec) { return qualify_items__top2ds_items_of_update(k, rec); }

/* cursor find_grp */
static inline int qualify_items__qualify_find_grp_next(qualify_items__find_grp_cursor *k)
{
    return qualify_items__top2ds_find_grp_next(k);
}


/* cursor all */
static inline int qualify_items__qualify_all_next(qualify_items_all_cursor *k)
{
    return qualify_items__top2ds_all_next(k);
}

static inline int qualify_items__qualify_all_delete(qualify_items_all_cursor *k) { return qualify_items__top2ds_all_delete(k); }
static inline int qualify_items__qualify_all_update(qualify_items_all_cursor *k, const qualify_item *rec) { return qualify_items__top2ds_all_update(k, rec); }
/* end of layer qualify of items ----------------------------------------- */
