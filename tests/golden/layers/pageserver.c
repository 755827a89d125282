/* --------------------------------------------------------------------------
 * layer pageserver (pageserver: mem) of items: page=4096, pages=16, server=nbd:/\/127.0.0.1:10809/items, ship=pages, verify_open=true, writes=unstable
 * ------------------------------------------------------------------------ */
/* server "nbd:/\057127.0.0.1:10809/items": a client buffer of 16 pages of 4096 bytes */
static inline void *pageserver_items__pageserver_ptr(pageserver_db *db, uint64_t ref)
{
    return p2_seg_ptr(&db->seg[0], ref);
}

static inline pageserver_items_root *pageserver_items__pageserver_root(pageserver_db *db)
{
    return db->items;
}

static inline int pageserver_items__pageserver_alloc(pageserver_db *db, uint64_t size, uint64_t *ref)
{
    p2_off off = p2_seg_alloc(&db->seg[0], size, &db->err);
    if (!off) return db->err.code ? db->err.code : P2_ENOMEM;
    *ref = off;
    return P2_OK;
}

/* Resize a block, keeping its contents and zero-filling the growth. */
static inline int pageserver_items__pageserver_realloc(pageserver_db *db, uint64_t *ref, uint64_t old_size, uint64_t new_size)
{
    p2_off off = p2_seg_realloc(&db->seg[0], *ref, old_size, new_size, &db->err);
    if (!off) return db->err.code ? db->err.code : P2_ENOMEM;
    *ref = off;
    return P2_OK;
}

/* Write intent: with ship = pages no notice is needed (a write fault finds the dirty page),
   so this compiles to nothing, except in an audit build (P2_WRITE_AUDIT), which checks
   that the notices cover every change of the file; with ship = ranges the notices are
   the byte ranges written back. */
static inline void pageserver_items__pageserver_will_write(pageserver_db *db, const void *p, uint64_t n)
{
    P2_SEG_AUDIT_WRITE(&db->seg[0], p, n);
}

/* Integrity checks: does [ref, ref + len) lie inside the used part of the file? */
static inline int pageserver_items__pageserver_contains(pageserver_db *db, uint64_t ref, uint64_t len)
{
    return p2_seg_contains(&db->seg[0], ref, len);
}

/* Integrity checks: the walk found [ref, ref + len) in use (checked for overlaps with the
   allocator's free blocks and with each other by p2_seg_verify). */
static inline void pageserver_items__pageserver_claim(pageserver_db *db, p2_verify *v, uint64_t ref, uint64_t len, const char *what)
{
    p2_verify_claim(v, &db->seg[0], ref, len, what);
}
/* end of layer pageserver of items -------------------------------------- */
