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

static inline int transient_items__transient_alloc(transient_db *db, uint64_t size, uint64_t *ref)
{
    void *p = size <= SIZE_MAX ? calloc(1, (size_t)size) : NULL;
    if (!p) return p2_err_set(&db->err, P2_ENOMEM, "container items: out of memory allocating %" PRIu64 " bytes", size);
    if (size >= P2_HEAP_HUGE_MIN) p2_heap_advise(p, size);  /* before its first touch */
    *ref = (uint64_t)(uintptr_t)p;
    return P2_OK;
}

static inline void transient_items__transient_free(transient_db *db, uint64_t ref, uint64_t size)
{
    (void)db; (void)size;
    free((void *)(uintptr_t)ref);
}

/* Resize a block, keeping its contents and zero-filling the growth. */
static inline int transient_items__transient_realloc(transient_db *db, uint64_t *ref, uint64_t old_size, uint64_t new_size)
{
    char *p;
    if (new_size >= P2_HEAP_HUGE_MIN && old_size <= new_size / 4 && new_size <= SIZE_MAX) {
        /* A jump to a large block (a reserve for a bulk load): a fresh zeroed block and a
           copy of the small old one, so that the growth is not written twice (calloc's
           fresh pages are zero already). Growth by doubling keeps realloc, which can move
           pages without copying and never holds both blocks. */
        p = (char *)calloc(1, (size_t)new_size);
        if (p) {
            p2_heap_advise(p, new_size);
            if (old_size) memcpy(p, (void *)(uintptr_t)*ref, (size_t)old_size);
            free((void *)(uintptr_t)*ref);
        }
    } else {
        p = new_size <= SIZE_MAX ? (char *)realloc((void *)(uintptr_t)*ref, (size_t)new_size) : NULL;
        if (p && new_size > old_size) {
            if (new_size >= P2_HEAP_HUGE_MIN) p2_heap_advise(p, new_size);  /* before the growth is touched */
            memset(p + old_size, 0, (size_t)(new_size - old_size));
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
