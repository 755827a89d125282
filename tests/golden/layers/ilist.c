/* --------------------------------------------------------------------------
 * relationship holds one owners.members to many members.owner = ilist
 *   layer ilist (ilist: rel), 1:N
 * ------------------------------------------------------------------------ */
static inline void ilist_owners__holds_members_init(ilist_db *db, uint64_t x)
{
    ilist_owners_elem *e = ilist_owners__array_elem(db, x);
    ilist_owners__transient_will_write(db, &e->_holds_head, sizeof e->_holds_head);
    ilist_owners__transient_will_write(db, &e->_holds_tail, sizeof e->_holds_tail);
    ilist_owners__transient_will_write(db, &e->_holds_count, sizeof e->_holds_count);
    e->_holds_head = e->_holds_tail = P2_NIL;
    e->_holds_count = 0;
}

/* A member's own links, about to be written. */
static inline void ilist_members__holds_owner__will_write_links(ilist_db *db, ilist_members_elem *e)
{
    ilist_members__transient_will_write(db, &e->_holds_owner, sizeof e->_holds_owner);
    ilist_members__transient_will_write(db, &e->_holds_next, sizeof e->_holds_next);
    ilist_members__transient_will_write(db, &e->_holds_prev, sizeof e->_holds_prev);
}

static inline void ilist_members__holds_owner_init(ilist_db *db, uint64_t y)
{
    ilist_members_elem *e = ilist_members__array_elem(db, y);
    ilist_members__holds_owner__will_write_links(db, e);
    e->_holds_owner = e->_holds_next = e->_holds_prev = P2_NIL;
}

/* Take member y (which has an owner) off its owner's list. */
static inline void ilist_members__holds_owner__detach(ilist_db *db, uint64_t y)
{
    ilist_members_elem *e = ilist_members__array_elem(db, y);
    ilist_owners_elem *own = ilist_owners__array_elem(db, e->_holds_owner);
    if (e->_holds_prev != P2_NIL) {
        ilist_members_elem *p = ilist_members__array_elem(db, e->_holds_prev);
        ilist_members__transient_will_write(db, &p->_holds_next, sizeof p->_holds_next);
        p->_holds_next = e->_holds_next;
    } else {
        ilist_owners__transient_will_write(db, &own->_holds_head, sizeof own->_holds_head);
        own->_holds_head = e->_holds_next;
    }
    if (e->_holds_next != P2_NIL) {
        ilist_members_elem *n = ilist_members__array_elem(db, e->_holds_next);
        ilist_members__transient_will_write(db, &n->_holds_prev, sizeof n->_holds_prev);
        n->_holds_prev = e->_holds_prev;
    } else {
        ilist_owners__transient_will_write(db, &own->_holds_tail, sizeof own->_holds_tail);
        own->_holds_tail = e->_holds_prev;
    }
    ilist_owners__transient_will_write(db, &own->_holds_count, sizeof own->_holds_count);
    own->_holds_count--;
    ilist_members__holds_owner__will_write_links(db, e);
    e->_holds_owner = e->_holds_next = e->_holds_prev = P2_NIL;
}

/* owners.members: append y (moving it from its previous owner, if any). */
static inline int ilist_owners__holds_members_add(ilist_db *db, uint64_t x, uint64_t y)
{
    ilist_members_elem *e = ilist_members__array_elem(db, y);
    ilist_owners_elem *own;
    if (e->_holds_owner != P2_NIL) ilist_members__holds_owner__detach(db, y);
    own = ilist_owners__array_elem(db, x);
    ilist_members__holds_owner__will_write_links(db, e);
    e->_holds_owner = x;
    e->_holds_next = P2_NIL;
    e->_holds_prev = own->_holds_tail;
    if (own->_holds_tail != P2_NIL) {
        ilist_members_elem *t = ilist_members__array_elem(db, own->_holds_tail);
        ilist_members__transient_will_write(db, &t->_holds_next, sizeof t->_holds_next);
        t->_holds_next = y;
    } else {
        ilist_owners__transient_will_write(db, &own->_holds_head, sizeof own->_holds_head);
        own->_holds_head = y;
    }
    ilist_owners__transient_will_write(db, &own->_holds_tail, sizeof own->_holds_tail);
    ilist_owners__transient_will_write(db, &own->_holds_count, sizeof own->_holds_count);
    own->_holds_tail = y;
    own->_holds_count++;
    return P2_OK;
}

static inline int ilist_owners__holds_members_remove(ilist_db *db, uint64_t x, uint64_t y)
{
    if (ilist_members__array_elem(db, y)->_holds_owner != x) return P2_NOTFOUND;
    ilist_members__holds_owner__detach(db, y);
    return P2_OK;
}

static inline uint64_t ilist_owners__holds_members_count(ilist_db *db, uint64_t x)
{
    return ilist_owners__array_elem(db, x)->_holds_count;
}

/* Iteration state: *a is the next member; read before it is handed out, so the member
 * handed out may be removed or deleted. */
static inline void ilist_owners__holds_members_iter_open(ilist_db *db, uint64_t x, uint64_t *a, uint64_t *b)
{
    *a = ilist_owners__array_elem(db, x)->_holds_head;
    *b = 0;
}

static inline uint64_t ilist_owners__holds_members_iter_next(ilist_db *db, uint64_t *a, uint64_t *b)
{
    uint64_t y = *a;
    (void)b;
    if (y != P2_NIL) *a = ilist_members__array_elem(db, y)->_holds_next;
    return y;
}

/* x is being deleted: its members lose their owner. */
static inline void ilist_owners__holds_members_unlink(ilist_db *db, uint64_t x)
{
    ilist_owners_elem *own = ilist_owners__array_elem(db, x);
    uint64_t y = own->_holds_head;
    while (y != P2_NIL) {
        ilist_members_elem *e = ilist_members__array_elem(db, y);
        uint64_t next = e->_holds_next;
        ilist_members__holds_owner__will_write_links(db, e);
        e->_holds_owner = e->_holds_next = e->_holds_prev = P2_NIL;
        y = next;
    }
    ilist_owners__transient_will_write(db, &own->_holds_head, sizeof own->_holds_head);
    ilist_owners__transient_will_write(db, &own->_holds_tail, sizeof own->_holds_tail);
    ilist_owners__transient_will_write(db, &own->_holds_count, sizeof own->_holds_count);
    own->_holds_head = own->_holds_tail = P2_NIL;
    own->_holds_count = 0;
}

/* members.owner: the owner, or P2_NIL. */
static inline uint64_t ilist_members__holds_owner_get(ilist_db *db, uint64_t y)
{
    return ilist_members__array_elem(db, y)->_holds_owner;
}

/* Make x the owner of y (appending y to x's list); P2_NIL takes y off its owner's list. */
static inline int ilist_members__holds_owner_set(ilist_db *db, uint64_t y, uint64_t x)
{
    uint64_t cur = ilist_members__array_elem(db, y)->_holds_owner;
    if (cur == x) return P2_OK;
    if (x == P2_NIL) {
        ilist_members__holds_owner__detach(db, y);
        return P2_OK;
    }
    return ilist_owners__holds_members_add(db, x, y);
}

static inline void ilist_members__holds_owner_unlink(ilist_db *db, uint64_t y)
{
    if (ilist_members__array_elem(db, y)->_holds_owner != P2_NIL) ilist_members__holds_owner__detach(db, y);
}

/* Integrity check (<prefix>_verify) of relationship holds: every live owner's list
   holds live members of members that name it as their owner, back links
   agree, the tail is the last member and the count is right (the walk is bounded by the
   count and the number of members: a cycle is reported, not followed); every member
   names a live owner or none (then it has no neighbours), and as many members have an
   owner as the owners count. */
static int ilist__rel_holds_verify(ilist_db *db, p2_verify *v)
{
    uint64_t x, y, steps, total = 0, members = 0;
    for (x = ilist_owners__array_scan_first(db), steps = 0; x != P2_NIL && ilist_owners__array_valid(db, x) && steps <= ilist_owners__array_count(db); x = ilist_owners__array_scan_next(db, x), steps++) {
        const ilist_owners_elem *own;
        uint64_t prev = P2_NIL, n = 0;
        if (!ilist_owners__top2ds_valid(db, x)) continue;
        own = ilist_owners__array_elem(db, x);
        for (y = own->_holds_head; y != P2_NIL; ) {
            const ilist_members_elem *e;
            if (!ilist_members__top2ds_valid(db, y)) {
                p2_verify_fail(v, "container owners, layer ilist (relationship holds): element %" PRIu64 ": members: member %" PRIu64 " is not a live element of members", x, y);
                break;
            }
            if (++n > own->_holds_count || n > ilist_members__array_count(db)) {
                p2_verify_fail(v, "container owners, layer ilist (relationship holds): element %" PRIu64 ": members: more members than its count %" PRIu64 " (a cycle?)", x, own->_holds_count);
                break;
            }
            e = ilist_members__array_elem(db, y);
            if (e->_holds_owner != x)
                p2_verify_fail(v, "container owners, layer ilist (relationship holds): element %" PRIu64 ": members: member %" PRIu64 " names owner %" PRIu64, x, y, e->_holds_owner);
            if (e->_holds_prev != prev)
                p2_verify_fail(v, "container owners, layer ilist (relationship holds): element %" PRIu64 ": members: member %" PRIu64 ": back link %" PRIu64 ", expected %" PRIu64, x, y, e->_holds_prev, prev);
            prev = y;
            y = e->_holds_next;
        }
        if (y == P2_NIL && own->_holds_tail != prev)
            p2_verify_fail(v, "container owners, layer ilist (relationship holds): element %" PRIu64 ": members: tail %" PRIu64 " is not the last member %" PRIu64, x, own->_holds_tail, prev);
        if (y == P2_NIL && n != own->_holds_count)
            p2_verify_fail(v, "container owners, layer ilist (relationship holds): element %" PRIu64 ": members: %" PRIu64 " members listed, count says %" PRIu64, x, n, own->_holds_count);
        total += own->_holds_count;
    }
    for (y = ilist_members__array_scan_first(db), steps = 0; y != P2_NIL && ilist_members__array_valid(db, y) && steps <= ilist_members__array_count(db); y = ilist_members__array_scan_next(db, y), steps++) {
        const ilist_members_elem *e;
        if (!ilist_members__top2ds_valid(db, y)) continue;
        e = ilist_members__array_elem(db, y);
        if (e->_holds_owner == P2_NIL) {
            if (e->_holds_next != P2_NIL || e->_holds_prev != P2_NIL)
                p2_verify_fail(v, "container members, layer ilist (relationship holds): element %" PRIu64 ": no owner, but list links", y);
        } else if (!ilist_owners__top2ds_valid(db, e->_holds_owner)) {
            p2_verify_fail(v, "container members, layer ilist (relationship holds): element %" PRIu64 ": owner %" PRIu64 " is not a live element of owners", y, e->_holds_owner);
        } else {
            members++;
        }
    }
    if (members != total)
        p2_verify_fail(v, "container members, layer ilist (relationship holds): %" PRIu64 " elements have a owner, the owners count %" PRIu64, members, total);
    return 0;
}
/* end of layer ilist of relationship holds ------------------------------ */
