/* --------------------------------------------------------------------------
 * layer transient (transient: mem) of items
 * ------------------------------------------------------------------------ */
static inline void *transient_items__transient_ptr(transient_db *db, uint64_t ref)
{
    (void)db;
    return (void *)(uintptr_t)ref;
}

static inline transient_items_root *transient_items__transient_root(transient_db *db)
{
    return &db->items__heap_root;   /* in the handle, not behind a pointer */
}

/* Blocks of P2_HEAP_HUGE_MIN bytes and up are mappings of their own (p2_heap_big_alloc:
   zeroed, faulted in as they are touched, grown by moving pages); blocks over
   transient_items__transient_LINE_MIN bytes start on a 64-byte line, as a file's large blocks do (array
   and iarray with slots = line count on it for their slots to lie on lines), and grow by
   a copy; the others are malloc's. A block's size says which, so every call below is given it. */
#define transient_items__transient_LINE_MIN 2048u

static inline void *transient_items__transient_block(transient_db *db, uint64_t size)
{
    void *p;
    (void)db;
    if (size >= P2_HEAP_HUGE_MIN) return p2_heap_big_alloc(size);
    if (size <= transient_items__transient_LINE_MIN) return calloc(1, (size_t)size);
    p = aligned_alloc(64, (size_t)((size + 63u) / 64u * 64u));   /* C11: a multiple of 64 */
    if (p) memset(p, 0, (size_t)size);
    return p;
}

static inline int transient_items__transient_alloc(transient_db *db, uint64_t size, uint64_t *ref)
{
    void *p = transient_items__transient_block(db, size);
    if (!p) return p2_err_set(&db->err, P2_ENOMEM, "container items: out of memory allocating %" PRIu64 " bytes", size);
    *ref = (uint64_t)(uintptr_t)p;
    return P2_OK;
}

static inline void transient_items__transient_free(transient_db *db, uint64_t ref, uint64_t size)
{
    (void)db;
    if (size >= P2_HEAP_HUGE_MIN) p2_heap_big_free((void *)(uintptr_t)ref, size);
    else free((void *)(uintptr_t)ref);
}

/* Resize a block, keeping its contents and zero-filling the growth. */
static inline int transient_items__transient_realloc(transient_db *db, uint64_t *ref, uint64_t old_size, uint64_t new_size)
{
    void *old = (void *)(uintptr_t)*ref, *p;
    if (old_size >= P2_HEAP_HUGE_MIN && new_size >= P2_HEAP_HUGE_MIN) {
        p = p2_heap_big_realloc(old, old_size, new_size);
    } else if (old_size <= transient_items__transient_LINE_MIN && new_size <= transient_items__transient_LINE_MIN) {
        p = realloc(old, (size_t)new_size);
        if (p && new_size > old_size) memset((char *)p + old_size, 0, (size_t)(new_size - old_size));
    } else {
        /* a line-aligned block, or across a kind's bounds: a new block, the contents
           copied (realloc would not keep the alignment) */
        uint64_t keep = old_size < new_size ? old_size : new_size;
        p = transient_items__transient_block(db, new_size);
        if (p) {
            if (keep) memcpy(p, old, (size_t)keep);
            transient_items__transient_free(db, *ref, old_size);
        }
    }
    if (!p) return p2_err_set(&db->err, P2_ENOMEM, "container items: out of memory growing to %" PRIu64 " bytes", new_size);
    *ref = (uint64_t)(uintptr_t)p;
    return P2_OK;
}

/* Write intent: heap memory needs no notice of a write. */
static inline void transient_items__transient_will_write(transient_db *db, const void *p, uint64_t n)
{
    (void)db; (void)p; (void)n;
}

/* Integrity checks: nothing bounds a heap block; only a null reference is refused. */
static inline int transient_items__transient_contains(transient_db *db, uint64_t ref, uint64_t len)
{
    (void)db; (void)len;
    return ref != 0;
}

/* Integrity checks: heap blocks are the C library's business; nothing to claim. */
static inline void transient_items__transient_claim(transient_db *db, p2_verify *v, uint64_t ref, uint64_t len, const char *what)
{
    (void)db; (void)v; (void)ref; (void)len; (void)what;
}
/* end of layer transient of items --------------------------------------- */
