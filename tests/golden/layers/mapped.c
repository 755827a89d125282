/* --------------------------------------------------------------------------
 * layer mapped (mapped: mem) of items: file=items.db, verify_open=true
 * ------------------------------------------------------------------------ */
static inline void *mapped_items__mapped_ptr(mapped_db *db, uint64_t ref)
{
    (void)db;
    return (void *)(uintptr_t)ref;
}

/* The offset of a reference from the segment base (wraps to a huge value, which no
   bound accepts, for one below the base, and for the null reference). */
static inline uint64_t mapped_items__mapped_off(mapped_db *db, uint64_t ref)
{
    return ref - (uint64_t)(uintptr_t)db->seg[0].base;
}

static inline mapped_items_root *mapped_items__mapped_root(mapped_db *db)
{
    return db->items;
}

static inline int mapped_items__mapped_alloc(mapped_db *db, uint64_t size, uint64_t *ref)
{
    p2_off off = p2_seg_alloc(&db->seg[0], size, &db->err);
    if (!off) return db->err.code ? db->err.code : P2_ENOMEM;
    *ref = (uint64_t)(uintptr_t)p2_seg_ptr(&db->seg[0], off);
    return P2_OK;
}

/* Resize a block, keeping its contents and zero-filling the growth. */
static inline int mapped_items__mapped_realloc(mapped_db *db, uint64_t *ref, uint64_t old_size, uint64_t new_size)
{
    p2_off off = p2_seg_realloc(&db->seg[0], *ref ? mapped_items__mapped_off(db, *ref) : 0, old_size, new_size, &db->err);
    if (!off) return db->err.code ? db->err.code : P2_ENOMEM;
    *ref = (uint64_t)(uintptr_t)p2_seg_ptr(&db->seg[0], off);
    return P2_OK;
}

/* Write intent: a plain file needs no notice of a write, so this compiles to nothing,
   except in an audit build (P2_WRITE_AUDIT), which checks that the notices cover every
   change of the file. */
static inline void mapped_items__mapped_will_write(mapped_db *db, const void *p, uint64_t n)
{
    P2_SEG_AUDIT_WRITE(&db->seg[0], p, n);
}

/* Integrity checks: does [ref, ref + len) lie inside the used part of the file? An
   address outside the segment is refused here, before anything follows it. */
static inline int mapped_items__mapped_contains(mapped_db *db, uint64_t ref, uint64_t len)
{
    return p2_seg_contains(&db->seg[0], mapped_items__mapped_off(db, ref), len);
}

/* Integrity checks: the walk found [ref, ref + len) in use (checked for overlaps with the
   allocator's free blocks and with each other by p2_seg_verify). */
static inline void mapped_items__mapped_claim(mapped_db *db, p2_verify *v, uint64_t ref, uint64_t len, const char *what)
{
    p2_verify_claim(v, &db->seg[0], mapped_items__mapped_off(db, ref), len, what);
}
/* end of layer mapped of items ------------------------------------------ */
