/* --------------------------------------------------------------------------
 * layer btree (btree: ds[ds]) of items: key=grp, node=1024
 * ------------------------------------------------------------------------ */
/* A key as the nodes store it. */
typedef int32_t btree_items__btree_key;

/* A leaf: 83 entries in 1024 bytes. prev / next: the neighbour leaves in key
   order (memory references, 0: none). */
typedef struct {
    uint64_t prev, next;
    uint16_t n;                  /* entries in use */
    uint16_t level;              /* 0 */
    btree_items__btree_key key[83];
    uint64_t ref[83];  /* the storage's element references */
} btree_items__btree_leaf;

/* An inner node: 49 separators and one more child in 1024 bytes (prev and next
   unused, so that the header reads alike in both kinds). */
typedef struct {
    uint64_t prev, next;
    uint16_t n;                  /* separators in use; children: n + 1 */
    uint16_t level;              /* height above the leaves (>= 1) */
    btree_items__btree_key key[49];
    uint64_t ref[49];
    uint64_t child[50];  /* memory references of the children */
} btree_items__btree_inner;

/* Both kinds of node fit the block the memory layer gives them. */
typedef char btree_items__btree_fits[sizeof(btree_items__btree_leaf) <= 1024 && sizeof(btree_items__btree_inner) <= 1024 ? 1 : -1];

static inline btree_items__btree_leaf *btree_items__btree_lf(btree_db *db, uint64_t m)
{
    return (btree_items__btree_leaf *)btree_items__transient_ptr(db, m);
}

static inline btree_items__btree_inner *btree_items__btree_in(btree_db *db, uint64_t m)
{
    return (btree_items__btree_inner *)btree_items__transient_ptr(db, m);
}

static inline void btree_items__btree_kset(btree_items__btree_key *dst, int32_t src)
{
    *dst = src;
}

/* The first of the n keys that is >= k (> k if `after`): binary search. */
static inline unsigned btree_items__btree_kbound(const btree_items__btree_key *keys, unsigned n, int32_t k, int after)
{
    unsigned lo = 0, hi = n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        int c = btree_items__cmp_grp(keys[mid], k);
        if (c < 0 || (c == 0 && after)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The first of the n (key, reference) pairs that is >= (k, r) (> (k, r) if `after`). */
static inline unsigned btree_items__btree_ebound(const btree_items__btree_key *keys, const uint64_t *refs, unsigned n, int32_t k, uint64_t r, int after)
{
    unsigned lo = 0, hi = n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        int c = btree_items__cmp_grp(keys[mid], k);
        if (c == 0) {
            uint64_t m = refs[mid];
            c = (m > r) - (m < r);
        }
        if (c < 0 || (c == 0 && after)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Add node m to the pool of free nodes (its first link chains the pool). */
static inline void btree_items__btree_pool_push(btree_db *db, uint64_t m)
{
    btree_items_root *r = btree_items__transient_root(db);
    btree_items__btree_leaf *l = btree_items__btree_lf(db, m);
    btree_items__transient_will_write(db, &l->next, sizeof l->next);
    btree_items__transient_will_write(db, &r->btree_spare, sizeof r->btree_spare);
    btree_items__transient_will_write(db, &r->btree_nspare, sizeof r->btree_nspare);
    l->next = r->btree_spare;
    r->btree_spare = m;
    r->btree_nspare++;
}

/* Make the pool hold at least `want` nodes: a change that may split a node at every level
   and add a root needs height + 1. On failure nothing else changed. */
static inline int btree_items__btree_pool_fill(btree_db *db, uint64_t want)
{
    while (btree_items__transient_root(db)->btree_nspare < want) {
        uint64_t m = 0;
        int rc = btree_items__transient_alloc(db, 1024, &m);
        if (rc != P2_OK) return rc;
        btree_items__btree_pool_push(db, m);
    }
    return P2_OK;
}

/* A node from the pool, zeroed (the pool holds enough: btree_items__btree_pool_fill). */
static inline uint64_t btree_items__btree_take(btree_db *db)
{
    btree_items_root *r = btree_items__transient_root(db);
    uint64_t m = r->btree_spare;
    btree_items__btree_leaf *l = btree_items__btree_lf(db, m);
    btree_items__transient_will_write(db, &r->btree_spare, sizeof r->btree_spare);
    btree_items__transient_will_write(db, &r->btree_nspare, sizeof r->btree_nspare);
    r->btree_spare = l->next;
    r->btree_nspare--;
    btree_items__transient_will_write(db, l, 1024);
    memset(l, 0, 1024);
    return m;
}

/* A node emptied by a merge: back to the pool while it holds fewer than height + 2 (what
   the next changes take), else to the memory. */
static inline void btree_items__btree_release(btree_db *db, uint64_t m)
{
    btree_items_root *r = btree_items__transient_root(db);
    if (r->btree_nspare < r->btree_height + 2) btree_items__btree_pool_push(db, m);
    else btree_items__transient_free(db, m, 1024);
}

/* Insert the entry (k, ref) into the subtree at node m, `lev` levels above the leaves;
   `last`: m is the last node of its level. If the node splits, returns 1 with the new
   right node in *right and the separator between the two (the right node's smallest
   entry) in *sk, *sr. A full node splits in halves, except where the entry goes at the
   end of the last node of its level (keys arriving in ascending order, as a load of a
   sorted run): that node stays full and the new right one starts with the new entry,
   so such a load fills the nodes rather than leaving them half empty. */
static int btree_items__btree_ins(btree_db *db, uint64_t m, unsigned lev, int last, int32_t k, uint64_t ref, btree_items__btree_key *sk, uint64_t *sr, uint64_t *right)
{
    unsigned i, n, h;
    if (lev == 0) {
        btree_items__btree_leaf *l = btree_items__btree_lf(db, m), *rl;
        uint64_t rm, nx;
        n = l->n;
        i = btree_items__btree_ebound(l->key, l->ref, n, k, ref, 1);
        btree_items__transient_will_write(db, l, 1024);
        if (n < 83) {
            memmove(&l->key[i + 1], &l->key[i], (n - i) * sizeof l->key[0]);
            memmove(&l->ref[i + 1], &l->ref[i], (n - i) * sizeof l->ref[0]);
            btree_items__btree_kset(&l->key[i], k);
            l->ref[i] = ref;
            l->n = (uint16_t)(n + 1);
            return 0;
        }
        /* Split the 84 entries (the new one at i): the first h stay. */
        h = last && i == n ? 83 : (83 + 1) / 2;
        rm = btree_items__btree_take(db);
        rl = btree_items__btree_lf(db, rm);
        if (i >= h) {         /* the new entry goes right */
            memcpy(&rl->key[0], &l->key[h], (i - h) * sizeof l->key[0]);
            memcpy(&rl->ref[0], &l->ref[h], (i - h) * sizeof l->ref[0]);
            btree_items__btree_kset(&rl->key[i - h], k);
            rl->ref[i - h] = ref;
            memcpy(&rl->key[i - h + 1], &l->key[i], (n - i) * sizeof l->key[0]);
            memcpy(&rl->ref[i - h + 1], &l->ref[i], (n - i) * sizeof l->ref[0]);
        } else {
            memcpy(&rl->key[0], &l->key[h - 1], (n - h + 1) * sizeof l->key[0]);
            memcpy(&rl->ref[0], &l->ref[h - 1], (n - h + 1) * sizeof l->ref[0]);
        }
        if (i < h) {
            memmove(&l->key[i + 1], &l->key[i], (h - 1 - i) * sizeof l->key[0]);
            memmove(&l->ref[i + 1], &l->ref[i], (h - 1 - i) * sizeof l->ref[0]);
            btree_items__btree_kset(&l->key[i], k);
            l->ref[i] = ref;
        }
        l->n = (uint16_t)h;
        rl->n = (uint16_t)(83 + 1 - h);
        nx = l->next;
        rl->prev = m;
        rl->next = l->next;
        l->next = rm;
        if (nx != 0) {
            btree_items__btree_leaf *nl = btree_items__btree_lf(db, nx);
            btree_items__transient_will_write(db, &nl->prev, sizeof nl->prev);
            nl->prev = rm;
        }
        memcpy(sk, &rl->key[0], sizeof *sk);
        *sr = rl->ref[0];
        *right = rm;
        return 1;
    } else {
        btree_items__btree_inner *in = btree_items__btree_in(db, m), *rn;
        btree_items__btree_key ck, up;
        uint64_t cr, cright, upr, rm;
        n = in->n;
        i = btree_items__btree_ebound(in->key, in->ref, n, k, ref, 1);
        if (!btree_items__btree_ins(db, in->child[i], lev - 1, last && i == n, k, ref, &ck, &cr, &cright)) return 0;
        /* child i split: separator (ck, cr) goes in at i, the new child at i + 1 */
        btree_items__transient_will_write(db, in, 1024);
        if (n < 49) {
            memmove(&in->key[i + 1], &in->key[i], (n - i) * sizeof in->key[0]);
            memmove(&in->ref[i + 1], &in->ref[i], (n - i) * sizeof in->ref[0]);
            memmove(&in->child[i + 2], &in->child[i + 1], (n - i) * sizeof in->child[0]);
            memcpy(&in->key[i], &ck, sizeof ck);
            in->ref[i] = cr;
            in->child[i + 1] = cright;
            in->n = (uint16_t)(n + 1);
            return 0;
        }
        /* Split the 50 separators and 51 children: the first h
           separators and h + 1 children stay, separator h goes up, the rest move right
           (at the end of the last node: one separator and two children move). */
        h = last && i == n ? 49 - 1 : (49 + 1) / 2;
        rm = btree_items__btree_take(db);
        rn = btree_items__btree_in(db, rm);
        if (i > h) {          /* separator h goes up, the new one right */
            memcpy(&up, &in->key[h], sizeof up);
            upr = in->ref[h];
            memcpy(&rn->key[0], &in->key[h + 1], (i - h - 1) * sizeof in->key[0]);
            memcpy(&rn->ref[0], &in->ref[h + 1], (i - h - 1) * sizeof in->ref[0]);
            memcpy(&rn->key[i - h - 1], &ck, sizeof ck);
            rn->ref[i - h - 1] = cr;
            memcpy(&rn->key[i - h], &in->key[i], (n - i) * sizeof in->key[0]);
            memcpy(&rn->ref[i - h], &in->ref[i], (n - i) * sizeof in->ref[0]);
            memcpy(&rn->child[0], &in->child[h + 1], (i - h) * sizeof in->child[0]);
            rn->child[i - h] = cright;
            memcpy(&rn->child[i - h + 1], &in->child[i + 1], (n - i) * sizeof in->child[0]);
        } else if (i == h) {  /* the new separator goes up; its child starts the right node */
            memcpy(&up, &ck, sizeof up);
            upr = cr;
            memcpy(&rn->key[0], &in->key[h], (n - h) * sizeof in->key[0]);
            memcpy(&rn->ref[0], &in->ref[h], (n - h) * sizeof in->ref[0]);
            rn->child[0] = cright;
            memcpy(&rn->child[1], &in->child[h + 1], (n - h) * sizeof in->child[0]);
        } else {              /* separator h - 1 goes up, the new one left */
            memcpy(&up, &in->key[h - 1], sizeof up);
            upr = in->ref[h - 1];
            memcpy(&rn->key[0], &in->key[h], (n - h) * sizeof in->key[0]);
            memcpy(&rn->ref[0], &in->ref[h], (n - h) * sizeof in->ref[0]);
            memcpy(&rn->child[0], &in->child[h], (n - h + 1) * sizeof in->child[0]);
        }
        if (i < h) {
            memmove(&in->key[i + 1], &in->key[i], (h - 1 - i) * sizeof in->key[0]);
            memmove(&in->ref[i + 1], &in->ref[i], (h - 1 - i) * sizeof in->ref[0]);
            memmove(&in->child[i + 2], &in->child[i + 1], (h - 1 - i) * sizeof in->child[0]);
            memcpy(&in->key[i], &ck, sizeof ck);
            in->ref[i] = cr;
            in->child[i + 1] = cright;
        }
        in->n = (uint16_t)h;
        rn->n = (uint16_t)(49 - h);
        rn->level = in->level;
        memcpy(sk, &up, sizeof up);
        *sr = upr;
        *right = rm;
        return 1;
    }
}

/* Link element `ref` (by the key it carries) into the tree; the pool holds height + 1
   nodes. */
static inline void btree_items__btree_link(btree_db *db, uint64_t ref)
{
    btree_items_root *r = btree_items__transient_root(db);
    const btree_items_elem *e = btree_items__array_elem(db, ref);
    btree_items__btree_key sk;
    uint64_t sr = 0, right = 0;
    btree_items__transient_will_write(db, &r->btree_count, sizeof r->btree_count);
    btree_items__transient_will_write(db, &r->btree_gen, sizeof r->btree_gen);
    r->btree_count++;
    r->btree_gen++;
    db->items__btree_changes++;
    if (r->btree_height == 0) {
        uint64_t m = btree_items__btree_take(db);
        btree_items__btree_leaf *l = btree_items__btree_lf(db, m);
        btree_items__btree_kset(&l->key[0], e->rec.grp);
        l->ref[0] = ref;
        l->n = 1;
        btree_items__transient_will_write(db, &r->btree_root, sizeof r->btree_root);
        btree_items__transient_will_write(db, &r->btree_height, sizeof r->btree_height);
        r->btree_root = m;
        r->btree_height = 1;
        return;
    }
    if (btree_items__btree_ins(db, r->btree_root, (unsigned)(r->btree_height - 1), 1, e->rec.grp, ref, &sk, &sr, &right)) {
        uint64_t m = btree_items__btree_take(db);   /* the root split: a new root above both halves */
        btree_items__btree_inner *in = btree_items__btree_in(db, m);
        memcpy(&in->key[0], &sk, sizeof sk);
        in->ref[0] = sr;
        in->child[0] = r->btree_root;
        in->child[1] = right;
        in->n = 1;
        in->level = (uint16_t)r->btree_height;
        btree_items__transient_will_write(db, &r->btree_root, sizeof r->btree_root);
        btree_items__transient_will_write(db, &r->btree_height, sizeof r->btree_height);
        r->btree_root = m;
        r->btree_height++;
    }
}

/* Child i of inner node `in` (its children `lev` levels above the leaves) holds too few
   entries: refill it from a neighbour, or merge it with one. */
static void btree_items__btree_fix(btree_db *db, btree_items__btree_inner *in, unsigned i, unsigned lev)
{
    unsigned s = i > 0 ? i - 1 : i;   /* the separator between the two nodes: a = s, b = s + 1 */
    uint64_t am = in->child[s], bm = in->child[s + 1];
    unsigned an, bn;
    btree_items__transient_will_write(db, in, 1024);
    if (lev == 0) {
        btree_items__btree_leaf *a = btree_items__btree_lf(db, am), *b = btree_items__btree_lf(db, bm);
        btree_items__transient_will_write(db, a, 1024);
        btree_items__transient_will_write(db, b, 1024);
        an = a->n;
        bn = b->n;
        if (an + bn <= 83) {
            uint64_t nx = b->next;
            memcpy(&a->key[an], &b->key[0], bn * sizeof a->key[0]);
            memcpy(&a->ref[an], &b->ref[0], bn * sizeof a->ref[0]);
            a->n = (uint16_t)(an + bn);
            a->next = b->next;
            if (nx != 0) {
                btree_items__btree_leaf *nl = btree_items__btree_lf(db, nx);
                btree_items__transient_will_write(db, &nl->prev, sizeof nl->prev);
                nl->prev = am;
            }
            goto drop_b;
        }
        if (an > bn) {        /* a's last entry moves to the front of b */
            memmove(&b->key[1], &b->key[0], bn * sizeof b->key[0]);
            memmove(&b->ref[1], &b->ref[0], bn * sizeof b->ref[0]);
            memcpy(&b->key[0], &a->key[an - 1], sizeof b->key[0]);
            b->ref[0] = a->ref[an - 1];
            a->n = (uint16_t)(an - 1);
            b->n = (uint16_t)(bn + 1);
        } else {              /* b's first entry moves to the end of a */
            memcpy(&a->key[an], &b->key[0], sizeof a->key[0]);
            a->ref[an] = b->ref[0];
            memmove(&b->key[0], &b->key[1], (bn - 1) * sizeof b->key[0]);
            memmove(&b->ref[0], &b->ref[1], (bn - 1) * sizeof b->ref[0]);
            a->n = (uint16_t)(an + 1);
            b->n = (uint16_t)(bn - 1);
        }
        memcpy(&in->key[s], &b->key[0], sizeof in->key[0]);   /* b's smallest entry */
        in->ref[s] = b->ref[0];
        return;
    } else {
        btree_items__btree_inner *a = btree_items__btree_in(db, am), *b = btree_items__btree_in(db, bm);
        btree_items__transient_will_write(db, a, 1024);
        btree_items__transient_will_write(db, b, 1024);
        an = a->n;
        bn = b->n;
        if (an + 1 + bn <= 49) {
            /* a, the separator between them, b */
            memcpy(&a->key[an], &in->key[s], sizeof a->key[0]);
            a->ref[an] = in->ref[s];
            memcpy(&a->key[an + 1], &b->key[0], bn * sizeof a->key[0]);
            memcpy(&a->ref[an + 1], &b->ref[0], bn * sizeof a->ref[0]);
            memcpy(&a->child[an + 1], &b->child[0], (bn + 1) * sizeof a->child[0]);
            a->n = (uint16_t)(an + 1 + bn);
            goto drop_b;
        }
        if (an > bn) {        /* a's last child moves to b, through the separator */
            memmove(&b->key[1], &b->key[0], bn * sizeof b->key[0]);
            memmove(&b->ref[1], &b->ref[0], bn * sizeof b->ref[0]);
            memmove(&b->child[1], &b->child[0], (bn + 1) * sizeof b->child[0]);
            memcpy(&b->key[0], &in->key[s], sizeof b->key[0]);
            b->ref[0] = in->ref[s];
            b->child[0] = a->child[an];
            memcpy(&in->key[s], &a->key[an - 1], sizeof in->key[0]);
            in->ref[s] = a->ref[an - 1];
            a->n = (uint16_t)(an - 1);
            b->n = (uint16_t)(bn + 1);
        } else {              /* b's first child moves to a, through the separator */
            memcpy(&a->key[an], &in->key[s], sizeof a->key[0]);
            a->ref[an] = in->ref[s];
            a->child[an + 1] = b->child[0];
            memcpy(&in->key[s], &b->key[0], sizeof in->key[0]);
            in->ref[s] = b->ref[0];
            memmove(&b->key[0], &b->key[1], (bn - 1) * sizeof b->key[0]);
            memmove(&b->ref[0], &b->ref[1], (bn - 1) * sizeof b->ref[0]);
            memmove(&b->child[0], &b->child[1], bn * sizeof b->child[0]);
            a->n = (uint16_t)(an + 1);
            b->n = (uint16_t)(bn - 1);
        }
        return;
    }
drop_b:
    /* b merged into a: separator s and child s + 1 leave the parent */
    memmove(&in->key[s], &in->key[s + 1], (in->n - s - 1) * sizeof in->key[0]);
    memmove(&in->ref[s], &in->ref[s + 1], (in->n - s - 1) * sizeof in->ref[0]);
    memmove(&in->child[s + 1], &in->child[s + 2], (in->n - s - 1) * sizeof in->child[0]);
    in->n--;
    btree_items__btree_release(db, bm);
}

/* Remove the entry (k, ref) from the subtree at node m, `lev` levels above the leaves;
   returns the entries (leaf) or separators (inner node) it holds after. */
static unsigned btree_items__btree_del(btree_db *db, uint64_t m, unsigned lev, int32_t k, uint64_t ref)
{
    unsigned i, n;
    if (lev == 0) {
        btree_items__btree_leaf *l = btree_items__btree_lf(db, m);
        n = l->n;
        i = btree_items__btree_ebound(l->key, l->ref, n, k, ref, 0);
        if (i >= n || l->ref[i] != ref) return n;   /* not in the tree: cannot happen */
        btree_items__transient_will_write(db, l, 1024);
        memmove(&l->key[i], &l->key[i + 1], (n - i - 1) * sizeof l->key[0]);
        memmove(&l->ref[i], &l->ref[i + 1], (n - i - 1) * sizeof l->ref[0]);
        l->n = (uint16_t)(n - 1);
        return n - 1;
    } else {
        btree_items__btree_inner *in = btree_items__btree_in(db, m);
        i = btree_items__btree_ebound(in->key, in->ref, in->n, k, ref, 1);
        if (btree_items__btree_del(db, in->child[i], lev - 1, k, ref) < (lev == 1 ? 41u : 24u))
            btree_items__btree_fix(db, in, i, lev - 1);
        return in->n;
    }
}

/* Unlink element `ref`, which must still carry the key it was linked with. */
static inline void btree_items__btree_unlink(btree_db *db, uint64_t ref)
{
    btree_items_root *r = btree_items__transient_root(db);
    uint64_t root = r->btree_root;
    unsigned left;
    btree_items__transient_will_write(db, &r->btree_count, sizeof r->btree_count);
    btree_items__transient_will_write(db, &r->btree_gen, sizeof r->btree_gen);
    r->btree_count--;
    r->btree_gen++;
    db->items__btree_changes++;
    left = btree_items__btree_del(db, root, (unsigned)(r->btree_height - 1), btree_items__array_elem(db, ref)->rec.grp, ref);
    if (left > 0) return;
    /* an empty root leaf ends the tree; a root with one child hands over to it */
    btree_items__transient_will_write(db, &r->btree_root, sizeof r->btree_root);
    btree_items__transient_will_write(db, &r->btree_height, sizeof r->btree_height);
    r->btree_root = r->btree_height == 1 ? 0 : btree_items__btree_in(db, root)->child[0];
    r->btree_height--;
    btree_items__btree_release(db, root);
}

static inline int btree_items__btree_create(btree_db *db)
{
    btree_items_root *r;
    int rc = btree_items__array_create(db);
    if (rc != P2_OK) return rc;
    r = btree_items__transient_root(db);
    btree_items__transient_will_write(db, &r->btree_root, sizeof r->btree_root);
    btree_items__transient_will_write(db, &r->btree_height, sizeof r->btree_height);
    btree_items__transient_will_write(db, &r->btree_count, sizeof r->btree_count);
    btree_items__transient_will_write(db, &r->btree_spare, sizeof r->btree_spare);
    btree_items__transient_will_write(db, &r->btree_nspare, sizeof r->btree_nspare);
    btree_items__transient_will_write(db, &r->btree_gen, sizeof r->btree_gen);
    r->btree_root = r->btree_height = r->btree_count = r->btree_gen = r->btree_spare = r->btree_nspare = 0;
    return P2_OK;
}

/* Free the subtree at node m, `lev` levels above the leaves. */
static void btree_items__btree_free_at(btree_db *db, uint64_t m, unsigned lev)
{
    if (lev > 0) {
        btree_items__btree_inner *in = btree_items__btree_in(db, m);
        for (unsigned i = 0; i <= in->n; i++) btree_items__btree_free_at(db, in->child[i], lev - 1);
    }
    btree_items__transient_free(db, m, 1024);
}

/* Transient close: every node and the pool go back to the memory. */
static inline void btree_items__btree_destroy(btree_db *db)
{
    btree_items_root *r = btree_items__transient_root(db);
    uint64_t m = r->btree_spare;
    if (r->btree_height > 0) btree_items__btree_free_at(db, r->btree_root, (unsigned)(r->btree_height - 1));
    while (m != 0) {
        uint64_t nx = btree_items__btree_lf(db, m)->next;
        btree_items__transient_free(db, m, 1024);
        m = nx;
    }
    btree_items__array_destroy(db);
}

/* Room for n elements: the nodes of the next change in the pool, the rest below. */
static inline int btree_items__btree_reserve(btree_db *db, uint64_t n)
{
    int rc = btree_items__btree_pool_fill(db, btree_items__transient_root(db)->btree_height + 1);
    if (rc != P2_OK) return rc;
    return btree_items__array_reserve(db, n);
}

static inline int btree_items__btree_insert(btree_db *db, const btree_item *rec, uint64_t *out)
{
    int rc = btree_items__btree_pool_fill(db, btree_items__transient_root(db)->btree_height + 1);
    if (rc != P2_OK) return rc;
    rc = btree_items__array_insert(db, rec, out);
    if (rc != P2_OK) return rc;
    btree_items__btree_link(db, *out);
    return P2_OK;
}

static inline void btree_items__btree_remove(btree_db *db, uint64_t ref)
{
    btree_items__btree_unlink(db, ref);
    btree_items__array_remove(db, ref);
}

/* A key change (or a move in storage, which changes the reference and so the place among
   equal keys) takes the entry out and puts it back; a failed update below leaves element
   and reference as they were, so putting it back restores the tree. The pool is filled
   first, so nothing has changed when that fails. */
static inline int btree_items__btree_update(btree_db *db, uint64_t *ref, const btree_item *rec)
{
    int rc;
    if (btree_items__cmp_grp(btree_items__array_elem(db, *ref)->rec.grp, rec->grp) == 0 && !btree_items__array_moves(db, *ref, rec))
        return btree_items__array_update(db, ref, rec);
    rc = btree_items__btree_pool_fill(db, btree_items__transient_root(db)->btree_height + 1);
    if (rc != P2_OK) return rc;
    btree_items__btree_unlink(db, *ref);
    rc = btree_items__array_update(db, ref, rec);
    btree_items__btree_link(db, *ref);
    return rc;
}

/* Remember where a walk step ended (leaf m, position i, element ref), and how many steps
   the walk has made since its start (counted up to 16, for the prefetch below). */
static inline uint64_t btree_items__btree_hint(btree_db *db, uint64_t m, unsigned i, uint64_t ref, unsigned run)
{
    db->items__btree_hint_leaf = m;
    db->items__btree_hint_pos = i;
    db->items__btree_hint_ref = ref;
    db->items__btree_hint_run = run;
    db->items__btree_hint_gen = btree_items__transient_root(db)->btree_gen;
    db->items__btree_hint_changes = db->items__btree_changes;
    return ref;
}

/* The leaf holding element `ref` in *leaf, its position there in *pos: where the last walk
   step ended if it ended on `ref` and the tree has not changed since (the common case: a
   cursor going on), else by a descent with the element's key and reference. Returns the
   walk's steps so far (the hint's count; 0 after a descent). */
static inline unsigned btree_items__btree_locate(btree_db *db, uint64_t ref, uint64_t *leaf, unsigned *pos)
{
    btree_items_root *r = btree_items__transient_root(db);
    const btree_items_elem *e;
    uint64_t m = r->btree_root;
    if (db->items__btree_hint_leaf != 0 && db->items__btree_hint_ref == ref && db->items__btree_hint_gen == r->btree_gen
        && db->items__btree_hint_changes == db->items__btree_changes) {
        *leaf = db->items__btree_hint_leaf;
        *pos = db->items__btree_hint_pos;
        return db->items__btree_hint_run;
    }
    e = btree_items__array_elem(db, ref);
    for (uint64_t lev = r->btree_height; lev > 1; lev--) {
        btree_items__btree_inner *in = btree_items__btree_in(db, m);
        m = in->child[btree_items__btree_ebound(in->key, in->ref, in->n, e->rec.grp, ref, 1)];
    }
    *leaf = m;
    *pos = btree_items__btree_ebound(btree_items__btree_lf(db, m)->key, btree_items__btree_lf(db, m)->ref, btree_items__btree_lf(db, m)->n, e->rec.grp, ref, 0);
    return 0;
}

/* Walk prefetch. A walk in key order reads every element it passes (the cursor tests its
   bound on the element's key, the caller reads its fields), and the elements lie where the
   storage put them, in insertion order: each is a cache miss and, over a big relation, a
   TLB miss, a memory latency per row when they come one after the other. The leaves know
   the references ahead, so a step asks for elements further on (across one sibling link
   at the end of a leaf) and the misses of many steps overlap. The distance ramps up, two
   entries per step to 16, so that a lookup (the first entry alone) asks for nothing
   it will not read and a short walk for little: after s steps the elements up to
   min(2 s, 16) entries past the current one have been asked for. The steps call
   __builtin_prefetch themselves on what the functions below return: GCC 12 at -O2 took a
   void helper that only reads and prefetches for one without effects (its mod-ref
   analysis) and removed the calls, prefetch and all. */

/* The element of the entry d entries after entry i of leaf l, if that entry is in this
   leaf or the next; else NULL. */
static inline const btree_items_elem *btree_items__btree_after(btree_db *db, const btree_items__btree_leaf *l, unsigned i, unsigned d)
{
    unsigned j = i + d;
    if (j >= l->n) {
        uint64_t m = l->next;
        if (m == 0) return NULL;
        j -= l->n;
        l = btree_items__btree_lf(db, m);
        if (j >= l->n) return NULL;
    }
    return btree_items__array_elem(db, l->ref[j]);
}

/* The step after `run` steps of a walk, from entry i: the first and the last distance of
   the entries whose elements it asks for (from one past what the steps before asked for
   to min(2 (run + 1), 16) past the entry it moves to). */
static inline unsigned btree_items__btree_ahead_from(unsigned run)
{
    return run < 8 ? 2 * run + 1 : 17;
}

static inline unsigned btree_items__btree_ahead_to(unsigned run)
{
    return run < 7 ? 2 * run + 3 : 17;
}

/* range path: the first entry with key >= lo (> lo if !lo_inclusive; the smallest of all
   if !has_lo): one descent, then at most the next leaf. */
static inline uint64_t btree_items__btree_range_first(btree_db *db, int has_lo, int32_t lo, int lo_inclusive)
{
    btree_items_root *r = btree_items__transient_root(db);
    uint64_t m = r->btree_root;
    if (r->btree_height == 0) return P2_NIL;
    for (uint64_t lev = r->btree_height; lev > 1; lev--) {
        btree_items__btree_inner *in = btree_items__btree_in(db, m);
        unsigned i = has_lo ? btree_items__btree_kbound(in->key, in->n, lo, !lo_inclusive) : 0;
        m = in->child[i];
    }
    while (m != 0) {
        btree_items__btree_leaf *l = btree_items__btree_lf(db, m);
        unsigned i = has_lo ? btree_items__btree_kbound(l->key, l->n, lo, !lo_inclusive) : 0;
        if (i < l->n) return btree_items__btree_hint(db, m, i, l->ref[i], 0);
        m = l->next;
    }
    return P2_NIL;
}

/* The next entry in (key, reference) order after element `ref`'s. */
static inline uint64_t btree_items__btree_range_next(btree_db *db, uint64_t ref)
{
    uint64_t m;
    unsigned i;
    btree_items__btree_leaf *l;
    unsigned run = btree_items__btree_locate(db, ref, &m, &i);
    l = btree_items__btree_lf(db, m);
#if defined(__GNUC__) || defined(__clang__)
    for (unsigned d = btree_items__btree_ahead_from(run); d <= btree_items__btree_ahead_to(run); d++) {
        const btree_items_elem *ahead = btree_items__btree_after(db, l, i, d);
        if (ahead == NULL) break;
        __builtin_prefetch(ahead);
    }
#endif
    if (run < 16) run++;
    if (i + 1 < l->n) return btree_items__btree_hint(db, m, i + 1, l->ref[i + 1], run);
    m = l->next;
    return m != 0 ? btree_items__btree_hint(db, m, 0, btree_items__btree_lf(db, m)->ref[0], run) : P2_NIL;
}

/* Integrity check: what the walk has seen so far. */
typedef struct {
    uint64_t nodes, entries, limit;  /* nodes visited, entries met, most nodes possible */
    uint64_t last_leaf;              /* the leaf met before (0: none yet) */
    int has_last;                    /* the last entry met, for the order across leaves */
    btree_items__btree_key last_key;
    uint64_t last_ref;
} btree_items__btree_vstate;

/* Compare the pair (ka, ra) with (kb, rb) in (key, reference) order. */
static inline int btree_items__btree_pair_cmp(int32_t ka, uint64_t ra, int32_t kb, uint64_t rb)
{
    int c = btree_items__cmp_grp(ka, kb);
    return c != 0 ? c : (ra > rb) - (ra < rb);
}

/* Integrity check (<prefix>_verify): the subtree at node m, which must be `lev` levels
   above the leaves and hold entries in [lo, hi) in (key, reference) order (a null key:
   unbounded); `last`: m is the last node of its level, which may be less than half full
   (ascending inserts leave it so). Every node is bounded by the memory before it is read, its level and fill
   checked before its arrays are; the walk stops after more nodes than the entries could
   fill (a shared node). Returns -1 if the structure below m cannot be walked (reported). */
static int btree_items__btree_verify_at(btree_db *db, p2_verify *v, btree_items__btree_vstate *st, uint64_t m, unsigned lev, int is_root, int last,
                             const btree_items__btree_key *lok, uint64_t lor, const btree_items__btree_key *hik, uint64_t hir)
{
    const btree_items__btree_leaf *hd;
    unsigned n, i;
    if (++st->nodes > st->limit) {
        p2_verify_fail(v, "container items, layer btree: more than %" PRIu64 " nodes for the stored elements (a node linked twice?)", st->limit);
        return -1;
    }
    if (!btree_items__transient_contains(db, m, 1024)) {
        p2_verify_fail(v, "container items, layer btree: node %" PRIu64 " lies outside the used memory", m);
        return -1;
    }
    btree_items__transient_claim(db, v, m, 1024, "container items, layer btree: node");
    hd = (const btree_items__btree_leaf *)btree_items__transient_ptr(db, m);
    n = hd->n;
    if (hd->level != lev) {
        p2_verify_fail(v, "container items, layer btree: node %" PRIu64 " says level %u, lies at level %u", m, (unsigned)hd->level, lev);
        return -1;
    }
    if (lev == 0) {
        const btree_items__btree_leaf *l = hd;
        if (n > 83 || n == 0) {
            p2_verify_fail(v, "container items, layer btree: leaf %" PRIu64 " holds %u entries (1 to 83)", m, n);
            return -1;
        }
        if (!is_root && !last && n < 41)
            p2_verify_fail(v, "container items, layer btree: leaf %" PRIu64 " holds %u entries, less than half full (41)", m, n);
        if (l->prev != st->last_leaf)
            p2_verify_fail(v, "container items, layer btree: leaf %" PRIu64 " links back to %" PRIu64 ", not to the leaf before it (%" PRIu64 ")", m, (uint64_t)l->prev, st->last_leaf);
        if (st->last_leaf != 0 && btree_items__btree_lf(db, st->last_leaf)->next != m)
            p2_verify_fail(v, "container items, layer btree: leaf %" PRIu64 " links on to %" PRIu64 ", not to the leaf after it (%" PRIu64 ")", st->last_leaf, (uint64_t)btree_items__btree_lf(db, st->last_leaf)->next, m);
        st->last_leaf = m;
        for (i = 0; i < n; i++) {
            uint64_t ref = l->ref[i];
            st->entries++;
            if (!btree_items__array_valid(db, ref)) {
                p2_verify_fail(v, "container items, layer btree: leaf %" PRIu64 " entry %u: element %" PRIu64 " is not live", m, i, ref);
                continue;
            }
            if (btree_items__cmp_grp(btree_items__array_elem(db, ref)->rec.grp, l->key[i]) != 0)
                p2_verify_fail(v, "container items, layer btree: leaf %" PRIu64 " entry %u: the key copy differs from element %" PRIu64 "'s grp", m, i, ref);
            if ((st->has_last && btree_items__btree_pair_cmp(st->last_key, st->last_ref, l->key[i], ref) >= 0)
                || (lok && btree_items__btree_pair_cmp(l->key[i], ref, *lok, lor) < 0)
                || (hik && btree_items__btree_pair_cmp(l->key[i], ref, *hik, hir) >= 0))
                p2_verify_fail(v, "container items, layer btree: leaf %" PRIu64 " entry %u (element %" PRIu64 ") out of (grp, reference) order", m, i, ref);
            memcpy(&st->last_key, &l->key[i], sizeof st->last_key);
            st->last_ref = ref;
            st->has_last = 1;
        }
        return 0;
    } else {
        const btree_items__btree_inner *in = (const btree_items__btree_inner *)hd;
        if (n > 49 || n == 0) {
            p2_verify_fail(v, "container items, layer btree: inner node %" PRIu64 " holds %u separators (1 to 49)", m, n);
            return -1;
        }
        if (!is_root && !last && n < 24)
            p2_verify_fail(v, "container items, layer btree: inner node %" PRIu64 " holds %u separators, less than half full (24)", m, n);
        for (i = 0; i < n; i++) {
            uint64_t sr = in->ref[i];
            if ((i > 0 && btree_items__btree_pair_cmp(in->key[i - 1], in->ref[i - 1], in->key[i], sr) >= 0)
                || (lok && btree_items__btree_pair_cmp(in->key[i], sr, *lok, lor) < 0)
                || (hik && btree_items__btree_pair_cmp(in->key[i], sr, *hik, hir) >= 0))
                p2_verify_fail(v, "container items, layer btree: inner node %" PRIu64 " separator %u out of (grp, reference) order", m, i);
        }
        for (i = 0; i <= n; i++) {
            if (btree_items__btree_verify_at(db, v, st, in->child[i], lev - 1, 0, last && i == n,
                                  i == 0 ? lok : &in->key[i - 1], i == 0 ? lor : in->ref[i - 1],
                                  i == n ? hik : &in->key[i], i == n ? hir : in->ref[i]) < 0)
                return -1;
        }
        return 0;
    }
}

/* Integrity check (<prefix>_verify), after the layers below: every node in memory, at its
   level (so every leaf at one depth), at least half full but the root and the last node
   of each level, in (key, reference)
   order within and across nodes; the leaves linked both ways in order; every entry a live
   element carrying the key copied into the tree; as many entries as stored elements; the
   pool of free nodes in memory and as long as it says. */
static int btree_items__btree_verify(btree_db *db, p2_verify *v)
{
    btree_items_root *r = btree_items__transient_root(db);
    btree_items__btree_vstate st;
    uint64_t stored, m, i;
    int rc = btree_items__array_verify(db, v);
    if (rc < 0) return rc;
    stored = btree_items__array_count(db);
    memset(&st, 0, sizeof st);
    /* leaves hold >= 1 entry each, inner nodes >= 2 children */
    st.limit = 2 * stored + 2;
    if (r->btree_count != stored)
        p2_verify_fail(v, "container items, layer btree: count says %" PRIu64 ", %" PRIu64 " stored", r->btree_count, stored);
    if (r->btree_height > 64 || (r->btree_height == 0) != (r->btree_root == 0)) {
        p2_verify_fail(v, "container items, layer btree: height %" PRIu64 " with root %" PRIu64 " (at most 64; 0 exactly when empty)", r->btree_height, r->btree_root);
        return 0;
    }
    if (r->btree_height > 0) {
        if (btree_items__btree_verify_at(db, v, &st, r->btree_root, (unsigned)(r->btree_height - 1), 1, 1, NULL, 0, NULL, 0) < 0)
            return 0;
        if (btree_items__btree_lf(db, st.last_leaf)->next != 0)
            p2_verify_fail(v, "container items, layer btree: the last leaf %" PRIu64 " links on to %" PRIu64, st.last_leaf, (uint64_t)btree_items__btree_lf(db, st.last_leaf)->next);
    }
    if (st.entries != stored)
        p2_verify_fail(v, "container items, layer btree: %" PRIu64 " entries in the leaves, %" PRIu64 " stored", st.entries, stored);
    if (r->btree_nspare > 64 + 2) {
        p2_verify_fail(v, "container items, layer btree: %" PRIu64 " nodes in the pool (at most 66)", r->btree_nspare);
        return 0;
    }
    for (m = r->btree_spare, i = 0; i < r->btree_nspare; i++) {
        if (!btree_items__transient_contains(db, m, 1024)) {
            p2_verify_fail(v, "container items, layer btree: pool node %" PRIu64 " (%" PRIu64 " of %" PRIu64 ") lies outside the used memory", m, i + 1, r->btree_nspare);
            return 0;
        }
        btree_items__transient_claim(db, v, m, 1024, "container items, layer btree: pool node");
        m = btree_items__btree_lf(db, m)->next;
    }
    if (m != 0)
        p2_verify_fail(v, "container items, layer btree: the pool goes on past its %" PRIu64 " nodes", r->btree_nspare);
    return 0;
}
/* end of layer btree(key=grp) of items ---------------------------------- */
