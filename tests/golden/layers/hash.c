/* --------------------------------------------------------------------------
 * layer hash (hash: ds[ds]) of items: buckets=4, fn=default, grow=true, key=grp
 * ------------------------------------------------------------------------ */
static inline uint64_t hash_items__hash_hash(int32_t key)
{
    uint64_t h;
    h = (uint64_t)key;
    /* splitmix64 finaliser: spreads every input bit over the bucket index bits */
    h ^= h >> 30; h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 27; h *= 0x94d049bb133111ebu;
    h ^= h >> 31;
    return h;
}

static inline uint64_t *hash_items__hash_buckets(hash_db *db)
{
    return (uint64_t *)hash_items__transient_ptr(db, hash_items__transient_root(db)->hash_buckets);
}

static inline uint64_t *hash_items__hash_bucket(hash_db *db, int32_t key)
{
    return hash_items__hash_buckets(db) + (hash_items__hash_hash(key) & (hash_items__transient_root(db)->hash_nbuckets - 1));
}

static inline int hash_items__hash_alloc_buckets(hash_db *db, uint64_t n, uint64_t *ref)
{
    int rc = hash_items__transient_alloc(db, n * sizeof(uint64_t), ref);
    if (rc != P2_OK) return rc;
    hash_items__transient_will_write(db, hash_items__transient_ptr(db, *ref), n * sizeof(uint64_t));
    memset(hash_items__transient_ptr(db, *ref), 0xFF, n * sizeof(uint64_t));  /* all P2_NIL */
    return P2_OK;
}

static inline int hash_items__hash_create(hash_db *db)
{
    uint64_t n = 1;
    int rc = hash_items__array_create(db);
    if (rc != P2_OK) return rc;
    while (n < 4u) n <<= 1;
    hash_items__transient_will_write(db, &hash_items__transient_root(db)->hash_buckets, sizeof hash_items__transient_root(db)->hash_buckets);
    hash_items__transient_will_write(db, &hash_items__transient_root(db)->hash_nbuckets, sizeof hash_items__transient_root(db)->hash_nbuckets);
    hash_items__transient_root(db)->hash_nbuckets = n;
    return hash_items__hash_alloc_buckets(db, n, &hash_items__transient_root(db)->hash_buckets);
}

static inline void hash_items__hash_destroy(hash_db *db)
{
    hash_items__transient_free(db, hash_items__transient_root(db)->hash_buckets, hash_items__transient_root(db)->hash_nbuckets * sizeof(uint64_t));
    hash_items__array_destroy(db);
}

static inline void hash_items__hash_link(hash_db *db, uint64_t ref)
{
    hash_items_elem *e = hash_items__array_elem(db, ref);
    uint64_t *b = hash_items__hash_bucket(db, e->rec.grp);
    hash_items__transient_will_write(db, &e->_hash_next, sizeof e->_hash_next);
    hash_items__transient_will_write(db, b, sizeof *b);
    hash_items__transient_will_write(db, &hash_items__transient_root(db)->hash_count, sizeof hash_items__transient_root(db)->hash_count);
    e->_hash_next = *b;
    *b = ref;
    hash_items__transient_root(db)->hash_count++;
}

static inline void hash_items__hash_unlink(hash_db *db, uint64_t ref)
{
    uint64_t *link = hash_items__hash_bucket(db, hash_items__array_elem(db, ref)->rec.grp);
    while (*link != ref) link = &hash_items__array_elem(db, *link)->_hash_next;
    hash_items__transient_will_write(db, link, sizeof *link);
    hash_items__transient_will_write(db, &hash_items__transient_root(db)->hash_count, sizeof hash_items__transient_root(db)->hash_count);
    *link = hash_items__array_elem(db, ref)->_hash_next;
    hash_items__transient_root(db)->hash_count--;
}

/* Move every chain into a new bucket array of n buckets (a power of two). */
static inline int hash_items__hash_resize(hash_db *db, uint64_t nn)
{
    hash_items_root *r = hash_items__transient_root(db);
    uint64_t old = r->hash_buckets, n = r->hash_nbuckets, fresh = 0;
    int rc = hash_items__hash_alloc_buckets(db, nn, &fresh);
    if (rc != P2_OK) return rc;
    hash_items__transient_will_write(db, &r->hash_buckets, sizeof r->hash_buckets);
    hash_items__transient_will_write(db, &r->hash_nbuckets, sizeof r->hash_nbuckets);
    r->hash_buckets = fresh;
    r->hash_nbuckets = nn;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t ref = ((uint64_t *)hash_items__transient_ptr(db, old))[i];
        while (ref != P2_NIL) {
            hash_items_elem *e = hash_items__array_elem(db, ref);
            uint64_t next = e->_hash_next;
            uint64_t *b = hash_items__hash_bucket(db, e->rec.grp);   /* in the fresh block */
            hash_items__transient_will_write(db, &e->_hash_next, sizeof e->_hash_next);
            e->_hash_next = *b;
            *b = ref;
            ref = next;
        }
    }
    hash_items__transient_free(db, old, n * sizeof(uint64_t));
    return P2_OK;
}

/* Make room for n elements: at least n buckets (so chains stay short without regrowing),
   and room in the layers below. */
static inline int hash_items__hash_reserve(hash_db *db, uint64_t n)
{
    uint64_t nn = hash_items__transient_root(db)->hash_nbuckets;
    int rc;
    while (nn < n && nn < ((uint64_t)1 << 40)) nn <<= 1;
    if (nn > hash_items__transient_root(db)->hash_nbuckets && (rc = hash_items__hash_resize(db, nn)) != P2_OK) return rc;
    return hash_items__array_reserve(db, n);
}

static inline int hash_items__hash_insert(hash_db *db, const hash_item *rec, uint64_t *out)
{
    int rc = hash_items__array_insert(db, rec, out);
    if (rc != P2_OK) return rc;
    hash_items__hash_link(db, *out);
    if (hash_items__transient_root(db)->hash_count > hash_items__transient_root(db)->hash_nbuckets && hash_items__transient_root(db)->hash_nbuckets < ((uint64_t)1 << 40))
        (void)hash_items__hash_resize(db, hash_items__transient_root(db)->hash_nbuckets * 2);  /* out of memory here only leaves chains longer */
    return P2_OK;
}

static inline void hash_items__hash_remove(hash_db *db, uint64_t ref)
{
    hash_items__hash_unlink(db, ref);
    hash_items__array_remove(db, ref);
}

/* A key change (or a move in storage) relinks the element; a failed update below leaves
   element and reference as they were, so relinking restores the chain. */
static inline int hash_items__hash_update(hash_db *db, uint64_t *ref, const hash_item *rec)
{
    int rc;
    if (hash_items__cmp_grp(hash_items__array_elem(db, *ref)->rec.grp, rec->grp) == 0 && !hash_items__array_moves(db, *ref, rec))
        return hash_items__array_update(db, ref, rec);
    hash_items__hash_unlink(db, *ref);
    rc = hash_items__array_update(db, ref, rec);
    hash_items__hash_link(db, *ref);
    return rc;
}

/* eq path: the elements of one chain whose key equals `key` */
static inline uint64_t hash_items__hash_eq_from(hash_db *db, uint64_t ref, int32_t key)
{
    while (ref != P2_NIL) {
        hash_items_elem *e = hash_items__array_elem(db, ref);
        if (hash_items__cmp_grp(e->rec.grp, key) == 0) return ref;
        ref = e->_hash_next;
    }
    return P2_NIL;
}

static inline uint64_t hash_items__hash_eq_first(hash_db *db, int32_t key)
{
    return hash_items__hash_eq_from(db, *hash_items__hash_bucket(db, key), key);
}

static inline uint64_t hash_items__hash_eq_next(hash_db *db, uint64_t ref, int32_t key)
{
    return hash_items__hash_eq_from(db, hash_items__array_elem(db, ref)->_hash_next, key);
}

/* Integrity check (<prefix>_verify), after the layers below: the bucket block lies in
   memory and its size is a power of two; every chained element is a live element of the
   storage (array) and hashes to its bucket; the chains hold every stored element
   once (as many as the storage and the layer's own count say). The walk is bounded by the
   element count + 1, so a cycle is reported, not followed. */
static int hash_items__hash_verify(hash_db *db, p2_verify *v)
{
    hash_items_root *r = hash_items__transient_root(db);
    uint64_t n, i, seen = 0, stored;
    const uint64_t *buckets;
    int rc = hash_items__array_verify(db, v);
    if (rc < 0) return rc;
    n = r->hash_nbuckets;
    stored = hash_items__array_count(db);
    if (n == 0 || (n & (n - 1)) != 0 || n > ((uint64_t)1 << 40) || !hash_items__transient_contains(db, r->hash_buckets, n * sizeof(uint64_t))) {
        p2_verify_fail(v, "container items, layer hash: bucket block %" PRIu64 " of %" PRIu64 " buckets is not a power of two inside the used memory", r->hash_buckets, n);
        return 0;
    }
    hash_items__transient_claim(db, v, r->hash_buckets, n * sizeof(uint64_t), "container items, layer hash: bucket block");
    buckets = (const uint64_t *)hash_items__transient_ptr(db, r->hash_buckets);
    for (i = 0; i < n; i++) {
        uint64_t ref = buckets[i];
        while (ref != P2_NIL) {
            const hash_items_elem *e;
            uint64_t want;
            if (!hash_items__array_valid(db, ref)) {
                p2_verify_fail(v, "container items, layer hash: bucket %" PRIu64 ": element %" PRIu64 " is not live", i, ref);
                break;
            }
            if (++seen > stored) {
                p2_verify_fail(v, "container items, layer hash: more elements chained than the %" PRIu64 " stored (a cycle?)", stored);
                return 0;
            }
            e = hash_items__array_elem(db, ref);
            want = hash_items__hash_hash(e->rec.grp) & (n - 1);
            if (want != i)
                p2_verify_fail(v, "container items, layer hash: bucket %" PRIu64 ": element %" PRIu64 " hashes to bucket %" PRIu64, i, ref, want);
            ref = e->_hash_next;
        }
    }
    if (seen != stored)
        p2_verify_fail(v, "container items, layer hash: %" PRIu64 " elements chained, %" PRIu64 " stored", seen, stored);
    if (r->hash_count != stored)
        p2_verify_fail(v, "container items, layer hash: count says %" PRIu64 ", %" PRIu64 " stored", r->hash_count, stored);
    return 0;
}
/* end of layer hash(key=grp) of items ----------------------------------- */
