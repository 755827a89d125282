/* --------------------------------------------------------------------------
 * relationship holds one owners.members to many members.owners = refarray(capacity=2)
 *   layer refarray (refarray: rel), 1:N
 * ------------------------------------------------------------------------ */
/* --- owners.members: a block of references --- */
static inline uint64_t *refarray_owners__holds_members__vec(refarray_db *db, const refarray_owners_elem *e)
{
    return (uint64_t *)refarray_owners__transient_ptr(db, e->_holds_members_vec);
}

/* Append y to x's block, growing it (doubling) when full. */
static inline int refarray_owners__holds_members__push(refarray_db *db, uint64_t x, uint64_t y)
{
    refarray_owners_elem *e = refarray_owners__array_elem(db, x);
    if (e->_holds_members_len == e->_holds_members_cap) {
        uint32_t cap = e->_holds_members_cap, ncap;
        uint64_t block = e->_holds_members_vec;
        int rc;
        if (cap >= 0x80000000u)
            return p2_err_set(&db->err, P2_ENOMEM, "owners.members: more than 2^31 references");
        ncap = cap ? cap * 2 : 2u;
        rc = block ? refarray_owners__transient_realloc(db, &block, (uint64_t)cap * 8u, (uint64_t)ncap * 8u)
                   : refarray_owners__transient_alloc(db, (uint64_t)ncap * 8u, &block);
        if (rc != P2_OK) return rc;
        e = refarray_owners__array_elem(db, x);
        refarray_owners__transient_will_write(db, &e->_holds_members_vec, sizeof e->_holds_members_vec);
        refarray_owners__transient_will_write(db, &e->_holds_members_cap, sizeof e->_holds_members_cap);
        e->_holds_members_vec = block;
        e->_holds_members_cap = ncap;
    }
    refarray_owners__transient_will_write(db, refarray_owners__holds_members__vec(db, e) + e->_holds_members_len, sizeof(uint64_t));
    refarray_owners__transient_will_write(db, &e->_holds_members_len, sizeof e->_holds_members_len);
    refarray_owners__holds_members__vec(db, e)[e->_holds_members_len++] = y;
    return P2_OK;
}

/* Remove the first occurrence of y from x's block, keeping the order of the rest. */
static inline int refarray_owners__holds_members__drop(refarray_db *db, uint64_t x, uint64_t y)
{
    refarray_owners_elem *e = refarray_owners__array_elem(db, x);
    uint64_t *v = refarray_owners__holds_members__vec(db, e);
    uint32_t i, len = e->_holds_members_len;
    for (i = 0; i < len; i++) {
        if (v[i] == y) {
            refarray_owners__transient_will_write(db, v + i, (uint64_t)(len - i) * sizeof *v);
            refarray_owners__transient_will_write(db, &e->_holds_members_len, sizeof e->_holds_members_len);
            memmove(v + i, v + i + 1, (size_t)(len - i - 1) * sizeof *v);
            e->_holds_members_len = len - 1;
            return P2_OK;
        }
    }
    return P2_NOTFOUND;
}

static inline void refarray_owners__holds_members_init(refarray_db *db, uint64_t x)
{
    refarray_owners_elem *e = refarray_owners__array_elem(db, x);
    refarray_owners__transient_will_write(db, &e->_holds_members_vec, sizeof e->_holds_members_vec);
    refarray_owners__transient_will_write(db, &e->_holds_members_len, sizeof e->_holds_members_len);
    refarray_owners__transient_will_write(db, &e->_holds_members_cap, sizeof e->_holds_members_cap);
    e->_holds_members_vec = 0;
    e->_holds_members_len = e->_holds_members_cap = 0;
}

static inline uint64_t refarray_owners__holds_members_count(refarray_db *db, uint64_t x)
{
    return refarray_owners__array_elem(db, x)->_holds_members_len;
}

/* Iteration state: *a is the owner, *b the next position. */
static inline void refarray_owners__holds_members_iter_open(refarray_db *db, uint64_t x, uint64_t *a, uint64_t *b)
{
    (void)db;
    *a = x;
    *b = 0;
}

static inline uint64_t refarray_owners__holds_members_iter_next(refarray_db *db, uint64_t *a, uint64_t *b)
{
    const refarray_owners_elem *e = refarray_owners__array_elem(db, *a);
    if (*b >= e->_holds_members_len) return P2_NIL;
    return refarray_owners__holds_members__vec(db, e)[(*b)++];
}

static inline void refarray_owners__holds_members_free(refarray_db *db, uint64_t x)
{
    refarray_owners_elem *e = refarray_owners__array_elem(db, x);
    if (e->_holds_members_vec) refarray_owners__transient_free(db, e->_holds_members_vec, (uint64_t)e->_holds_members_cap * 8u);
    refarray_owners__transient_will_write(db, &e->_holds_members_vec, sizeof e->_holds_members_vec);
    refarray_owners__transient_will_write(db, &e->_holds_members_len, sizeof e->_holds_members_len);
    refarray_owners__transient_will_write(db, &e->_holds_members_cap, sizeof e->_holds_members_cap);
    e->_holds_members_vec = 0;
    e->_holds_members_len = e->_holds_members_cap = 0;
}

/* --- members.owners: a single reference --- */
/* x's owners = y (the reference alone, announced before it is written) */
static inline void refarray_members__holds_owners__put(refarray_db *db, uint64_t x, uint64_t y)
{
    uint64_t *f = &refarray_members__array_elem(db, x)->_holds_owners;
    refarray_members__transient_will_write(db, f, sizeof *f);
    *f = y;
}

static inline void refarray_members__holds_owners_init(refarray_db *db, uint64_t x)
{
    refarray_members__holds_owners__put(db, x, P2_NIL);
}

static inline uint64_t refarray_members__holds_owners_get(refarray_db *db, uint64_t x)
{
    return refarray_members__array_elem(db, x)->_holds_owners;
}

/* owners.members: add y (one more occurrence), taking it from its previous members.owners. */
static inline int refarray_owners__holds_members_add(refarray_db *db, uint64_t x, uint64_t y)
{
    int rc;
    uint64_t old = refarray_members__array_elem(db, y)->_holds_owners;
    if ((rc = refarray_owners__holds_members__push(db, x, y)) != P2_OK) return rc;
    if (old != P2_NIL) refarray_owners__holds_members__drop(db, old, y);
    refarray_members__holds_owners__put(db, y, x);
    return P2_OK;
}

/* Remove one occurrence of y from x's members and the mirror one. */
static inline int refarray_owners__holds_members_remove(refarray_db *db, uint64_t x, uint64_t y)
{
    if (refarray_owners__holds_members__drop(db, x, y) != P2_OK) return P2_NOTFOUND;
    refarray_members__holds_owners__put(db, y, P2_NIL);
    return P2_OK;
}

/* x is being deleted: every partner forgets it, once per occurrence. */
static inline void refarray_owners__holds_members_unlink(refarray_db *db, uint64_t x)
{
    refarray_owners_elem *e = refarray_owners__array_elem(db, x);
    const uint64_t *v = refarray_owners__holds_members__vec(db, e);
    uint32_t i, len = e->_holds_members_len;
    for (i = 0; i < len; i++) {
        refarray_members__holds_owners__put(db, v[i], P2_NIL);
    }
    refarray_owners__holds_members_free(db, x);
}

/* members.owners = y (P2_NIL clears), kept in step with owners.members. */
static inline int refarray_members__holds_owners_set(refarray_db *db, uint64_t x, uint64_t y)
{
    uint64_t old = refarray_members__array_elem(db, x)->_holds_owners;
    if (old == y) return P2_OK;
    if (y == P2_NIL) return refarray_owners__holds_members_remove(db, old, x);
    return refarray_owners__holds_members_add(db, y, x);
}

/* x is being deleted: its partner forgets it. */
static inline void refarray_members__holds_owners_unlink(refarray_db *db, uint64_t x)
{
    refarray_members__holds_owners_set(db, x, P2_NIL);
}

/* ---- integrity check (<prefix>_verify) of relationship holds ---- */
/* Is e's block of members readable: len <= cap, and the block lies in memory? */
static inline int refarray_owners__holds_members__vsane(refarray_db *db, const refarray_owners_elem *e)
{
    if (e->_holds_members_len > e->_holds_members_cap) return 0;
    if (e->_holds_members_cap == 0) return e->_holds_members_vec == 0;
    return refarray_owners__transient_contains(db, e->_holds_members_vec, (uint64_t)e->_holds_members_cap * 8u);
}

/* Occurrences of y in e's members (whose block is sane). */
static inline uint64_t refarray_owners__holds_members__occ(refarray_db *db, const refarray_owners_elem *e, uint64_t y)
{
    const uint64_t *vec = refarray_owners__holds_members__vec(db, e);
    uint64_t c = 0;
    uint32_t i;
    for (i = 0; i < e->_holds_members_len; i++) c += vec[i] == y;
    return c;
}

/* Every role of holds, for every live element: blocks in memory, every partner a live
   element of its container, and the partner's side mirrors each occurrence. */
static int refarray__rel_holds_verify(refarray_db *db, p2_verify *v)
{
    uint64_t x, steps;
    for (x = refarray_owners__array_scan_first(db), steps = 0; x != P2_NIL && refarray_owners__array_valid(db, x) && steps <= refarray_owners__array_count(db); x = refarray_owners__array_scan_next(db, x), steps++) {
        const refarray_owners_elem *e;
        if (!refarray_owners__top2ds_valid(db, x)) continue;
        e = refarray_owners__array_elem(db, x);
        if (!refarray_owners__holds_members__vsane(db, e)) {
            p2_verify_fail(v, "container owners, layer refarray (relationship holds): element %" PRIu64 ": members: block %" PRIu64 " of %u references (%u used) lies outside the used memory", x, e->_holds_members_vec, e->_holds_members_cap, e->_holds_members_len);
            continue;
        }
        if (e->_holds_members_cap)
            refarray_owners__transient_claim(db, v, e->_holds_members_vec, (uint64_t)e->_holds_members_cap * 8u, "container owners, layer refarray (relationship holds): members block");
        {
            const uint64_t *vec = refarray_owners__holds_members__vec(db, e);
            uint32_t i, j;
            for (i = 0; i < e->_holds_members_len; i++) {
                uint64_t y = vec[i];
                const refarray_members_elem *pe;
                for (j = 0; j < i && vec[j] != y; j++) {}
                if (j < i) continue;  /* checked at its first occurrence */
                if (!refarray_members__top2ds_valid(db, y)) {
                    p2_verify_fail(v, "container owners, layer refarray (relationship holds): element %" PRIu64 ": members[%u] = %" PRIu64 " is not a live element of members", x, i, y);
                    continue;
                }
                pe = refarray_members__array_elem(db, y);
                if (pe->_holds_owners != x || refarray_owners__holds_members__occ(db, e, y) != 1)
                    p2_verify_fail(v, "container owners, layer refarray (relationship holds): element %" PRIu64 ": members holds %" PRIu64 " (%" PRIu64 " times), whose owners is %" PRIu64, x, y, refarray_owners__holds_members__occ(db, e, y), pe->_holds_owners);
            }
        }
    }
    for (x = refarray_members__array_scan_first(db), steps = 0; x != P2_NIL && refarray_members__array_valid(db, x) && steps <= refarray_members__array_count(db); x = refarray_members__array_scan_next(db, x), steps++) {
        const refarray_members_elem *e;
        if (!refarray_members__top2ds_valid(db, x)) continue;
        e = refarray_members__array_elem(db, x);
        {
            uint64_t y = e->_holds_owners;
            const refarray_owners_elem *pe;
            if (y == P2_NIL) continue;
            if (!refarray_owners__top2ds_valid(db, y)) {
                p2_verify_fail(v, "container members, layer refarray (relationship holds): element %" PRIu64 ": owners %" PRIu64 " is not a live element of owners", x, y);
                continue;
            }
            pe = refarray_owners__array_elem(db, y);
            if (refarray_owners__holds_members__vsane(db, pe) && refarray_owners__holds_members__occ(db, pe, x) != 1)
                p2_verify_fail(v, "container members, layer refarray (relationship holds): element %" PRIu64 ": owners is %" PRIu64 ", whose members holds the element %" PRIu64 " times", x, y, refarray_owners__holds_members__occ(db, pe, x));
        }
    }
    return 0;
}
/* end of layer refarray of relationship holds --------------------------- */

/* --------------------------------------------------------------------------
 * relationship pair one owners.partner to one members.partner = refarray(capacity=4)
 *   layer refarray (refarray: rel), 1:1
 * ------------------------------------------------------------------------ */
/* --- owners.partner: a single reference --- */
/* x's partner = y (the reference alone, announced before it is written) */
static inline void refarray_owners__pair_partner__put(refarray_db *db, uint64_t x, uint64_t y)
{
    uint64_t *f = &refarray_owners__array_elem(db, x)->_pair_partner;
    refarray_owners__transient_will_write(db, f, sizeof *f);
    *f = y;
}

static inline void refarray_owners__pair_partner_init(refarray_db *db, uint64_t x)
{
    refarray_owners__pair_partner__put(db, x, P2_NIL);
}

static inline uint64_t refarray_owners__pair_partner_get(refarray_db *db, uint64_t x)
{
    return refarray_owners__array_elem(db, x)->_pair_partner;
}

/* --- members.partner: a single reference --- */
/* x's partner = y (the reference alone, announced before it is written) */
static inline void refarray_members__pair_partner__put(refarray_db *db, uint64_t x, uint64_t y)
{
    uint64_t *f = &refarray_members__array_elem(db, x)->_pair_partner;
    refarray_members__transient_will_write(db, f, sizeof *f);
    *f = y;
}

static inline void refarray_members__pair_partner_init(refarray_db *db, uint64_t x)
{
    refarray_members__pair_partner__put(db, x, P2_NIL);
}

static inline uint64_t refarray_members__pair_partner_get(refarray_db *db, uint64_t x)
{
    return refarray_members__array_elem(db, x)->_pair_partner;
}

/* owners.partner = y (P2_NIL clears), kept in step with members.partner. */
static inline int refarray_owners__pair_partner_set(refarray_db *db, uint64_t x, uint64_t y)
{
    uint64_t old = refarray_owners__array_elem(db, x)->_pair_partner;
    if (old == y) return P2_OK;
    if (old != P2_NIL) refarray_members__pair_partner__put(db, old, P2_NIL);
    if (y != P2_NIL) {
        uint64_t prev = refarray_members__array_elem(db, y)->_pair_partner;
        if (prev != P2_NIL) refarray_owners__pair_partner__put(db, prev, P2_NIL);
        refarray_members__pair_partner__put(db, y, x);
    }
    refarray_owners__pair_partner__put(db, x, y);
    return P2_OK;
}

/* x is being deleted: its partner forgets it. */
static inline void refarray_owners__pair_partner_unlink(refarray_db *db, uint64_t x)
{
    refarray_owners__pair_partner_set(db, x, P2_NIL);
}

/* members.partner = y (P2_NIL clears), kept in step with owners.partner. */
static inline int refarray_members__pair_partner_set(refarray_db *db, uint64_t x, uint64_t y)
{
    uint64_t old = refarray_members__array_elem(db, x)->_pair_partner;
    if (old == y) return P2_OK;
    if (old != P2_NIL) refarray_owners__pair_partner__put(db, old, P2_NIL);
    if (y != P2_NIL) {
        uint64_t prev = refarray_owners__array_elem(db, y)->_pair_partner;
        if (prev != P2_NIL) refarray_members__pair_partner__put(db, prev, P2_NIL);
        refarray_owners__pair_partner__put(db, y, x);
    }
    refarray_members__pair_partner__put(db, x, y);
    return P2_OK;
}

/* x is being deleted: its partner forgets it. */
static inline void refarray_members__pair_partner_unlink(refarray_db *db, uint64_t x)
{
    refarray_members__pair_partner_set(db, x, P2_NIL);
}

/* ---- integrity check (<prefix>_verify) of relationship pair ---- */
/* Every role of pair, for every live element: blocks in memory, every partner a live
   element of its container, and the partner's side mirrors each occurrence. */
static int refarray__rel_pair_verify(refarray_db *db, p2_verify *v)
{
    uint64_t x, steps;
    for (x = refarray_owners__array_scan_first(db), steps = 0; x != P2_NIL && refarray_owners__array_valid(db, x) && steps <= refarray_owners__array_count(db); x = refarray_owners__array_scan_next(db, x), steps++) {
        const refarray_owners_elem *e;
        if (!refarray_owners__top2ds_valid(db, x)) continue;
        e = refarray_owners__array_elem(db, x);
        {
            uint64_t y = e->_pair_partner;
            const refarray_members_elem *pe;
            if (y == P2_NIL) continue;
            if (!refarray_members__top2ds_valid(db, y)) {
                p2_verify_fail(v, "container owners, layer refarray (relationship pair): element %" PRIu64 ": partner %" PRIu64 " is not a live element of members", x, y);
                continue;
            }
            pe = refarray_members__array_elem(db, y);
            if (pe->_pair_partner != x)
                p2_verify_fail(v, "container owners, layer refarray (relationship pair): element %" PRIu64 ": partner is %" PRIu64 ", whose partner is %" PRIu64, x, y, pe->_pair_partner);
        }
    }
    for (x = refarray_members__array_scan_first(db), steps = 0; x != P2_NIL && refarray_members__array_valid(db, x) && steps <= refarray_members__array_count(db); x = refarray_members__array_scan_next(db, x), steps++) {
        const refarray_members_elem *e;
        if (!refarray_members__top2ds_valid(db, x)) continue;
        e = refarray_members__array_elem(db, x);
        {
            uint64_t y = e->_pair_partner;
            const refarray_owners_elem *pe;
            if (y == P2_NIL) continue;
            if (!refarray_owners__top2ds_valid(db, y)) {
                p2_verify_fail(v, "container members, layer refarray (relationship pair): element %" PRIu64 ": partner %" PRIu64 " is not a live element of owners", x, y);
                continue;
            }
            pe = refarray_owners__array_elem(db, y);
            if (pe->_pair_partner != x)
                p2_verify_fail(v, "container members, layer refarray (relationship pair): element %" PRIu64 ": partner is %" PRIu64 ", whose partner is %" PRIu64, x, y, pe->_pair_partner);
        }
    }
    return 0;
}
/* end of layer refarray of relationship pair ---------------------------- */
