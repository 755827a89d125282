/* --------------------------------------------------------------------------
 * layer journal (journal: mem[mem]) of items: checkpoint=4194304, group=2, sync=true
 * ------------------------------------------------------------------------ */
/* transactions of file "items.db": sync, group 2, checkpoint every 4194304 journal bytes */
static inline void *journal_items__journal_ptr(journal_db *db, uint64_t ref)
{
    return journal_items__persistent_ptr(db, ref);
}

static inline int journal_items__journal_alloc(journal_db *db, uint64_t size, uint64_t *ref)
{
    return journal_items__persistent_alloc(db, size, ref);
}

static inline void journal_items__journal_free(journal_db *db, uint64_t ref, uint64_t size)
{
    journal_items__persistent_free(db, ref, size);
}

static inline int journal_items__journal_realloc(journal_db *db, uint64_t *ref, uint64_t old_size, uint64_t new_size)
{
    return journal_items__persistent_realloc(db, ref, old_size, new_size);
}
/* end of layer journal of items ----------------------------------------- */
