/* --------------------------------------------------------------------------
 * layer objserver (objserver: mem) of items: bundle=0, objects=16, server=redis:/\/127.0.0.1:6379/0, verify_open=true
 * ------------------------------------------------------------------------ */
/* server "redis:/\057127.0.0.1:6379/0": a client cache of 16 objects */
/* The software check: the block in the cache, else fetched (one GET) and pinned until the
   next call into the API. */
static inline void *objserver_items__objserver_ptr(objserver_db *db, uint64_t ref)
{
    return p2_obj_ptr(&db->seg[0], ref);
}

static inline objserver_items_root *objserver_items__objserver_root(objserver_db *db)
{
    return db->items;
}

static inline int objserver_items__objserver_alloc(objserver_db *db, uint64_t size, uint64_t *ref)
{
    p2_off off = p2_obj_alloc(&db->seg[0], size, &db->err);
    if (!off) return db->err.code ? db->err.code : P2_ENOMEM;
    *ref = off;
    return P2_OK;
}

static inline void objserver_items__objserver_free(objserver_db *db, uint64_t ref, uint64_t size)
{
    p2_obj_free(&db->seg[0], ref, size);
}

/* Write intent: the notice makes the block dirty (shipped at the next sync), or, outside
   every block, the allocator's cells it lies in. */
static inline void objserver_items__objserver_will_write(objserver_db *db, const void *p, uint64_t n)
{
    p2_seg_will_write(&db->seg[0], p, n);
}

/* Integrity checks: the walk found [ref, ref + len) in use (checked for overlaps with the
   allocator's free blocks and with each other by p2_seg_verify). */
static inline void objserver_items__objserver_claim(objserver_db *db, p2_verify *v, uint64_t ref, uint64_t len, const char *what)
{
    p2_verify_claim(v, &db->seg[0], ref, len, what);
}
/* end of layer objserver of items --------------------------------------- */
