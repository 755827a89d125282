/* --------------------------------------------------------------------------
 * layer avl (avl: ds[ds]) of items: key=grp
 * ------------------------------------------------------------------------ */
static inline avl_items_elem *avl_items__avl_node(avl_db *db, uint64_t ref)
{
    return avl_items__array_elem(db, ref);
}

static inline int32_t avl_items__avl_height(avl_db *db, uint64_t ref)
{
    return ref == P2_NIL ? 0 : avl_items__avl_node(db, ref)->_avl_height;
}

/* The order of the tree: by key, then by reference. */
static inline int avl_items__avl_order(avl_db *db, uint64_t a, uint64_t b)
{
    int c = avl_items__cmp_grp(avl_items__avl_node(db, a)->rec.grp, avl_items__avl_node(db, b)->rec.grp);
    if (c != 0) return c;
    return (a > b) - (a < b);
}

/* Node `child` (none if P2_NIL) now hangs under `parent` (P2_NIL: it is the root). Every
   store of a subtree root into a child link or the root is followed by this; it writes only
   a link that changes, so a rebalancing that keeps a node where it was dirties nothing. */
static inline void avl_items__avl_set_parent(avl_db *db, uint64_t child, uint64_t parent)
{
    avl_items_elem *c;
    if (child == P2_NIL) return;
    c = avl_items__avl_node(db, child);
    if (c->_avl_parent == parent) return;
    avl_items__transient_will_write(db, &c->_avl_parent, sizeof c->_avl_parent);
    c->_avl_parent = parent;
}

static inline void avl_items__avl_fix_height(avl_db *db, uint64_t ref)
{
    avl_items_elem *n = avl_items__avl_node(db, ref);
    int32_t hl = avl_items__avl_height(db, n->_avl_left), hr = avl_items__avl_height(db, n->_avl_right);
    avl_items__transient_will_write(db, &n->_avl_height, sizeof n->_avl_height);
    n->_avl_height = (hl > hr ? hl : hr) + 1;
}

/* The left child of `ref` becomes the root of the subtree; returns it (the caller stores it
   and sets its parent link). */
static inline uint64_t avl_items__avl_rotate_right(avl_db *db, uint64_t ref)
{
    avl_items_elem *n = avl_items__avl_node(db, ref);
    uint64_t l = n->_avl_left;
    avl_items_elem *ln = avl_items__avl_node(db, l);
    avl_items__transient_will_write(db, &n->_avl_left, sizeof n->_avl_left);
    avl_items__transient_will_write(db, &ln->_avl_right, sizeof ln->_avl_right);
    n->_avl_left = ln->_avl_right;
    ln->_avl_right = ref;
    avl_items__avl_set_parent(db, n->_avl_left, ref);
    avl_items__avl_set_parent(db, ref, l);
    avl_items__avl_fix_height(db, ref);
    avl_items__avl_fix_height(db, l);
    return l;
}

/* The right child of `ref` becomes the root of the subtree; returns it (the caller stores it
   and sets its parent link). */
static inline uint64_t avl_items__avl_rotate_left(avl_db *db, uint64_t ref)
{
    avl_items_elem *n = avl_items__avl_node(db, ref);
    uint64_t r = n->_avl_right;
    avl_items_elem *rn = avl_items__avl_node(db, r);
    avl_items__transient_will_write(db, &n->_avl_right, sizeof n->_avl_right);
    avl_items__transient_will_write(db, &rn->_avl_left, sizeof rn->_avl_left);
    n->_avl_right = rn->_avl_left;
    rn->_avl_left = ref;
    avl_items__avl_set_parent(db, n->_avl_right, ref);
    avl_items__avl_set_parent(db, ref, r);
    avl_items__avl_fix_height(db, ref);
    avl_items__avl_fix_height(db, r);
    return r;
}

/* Restore the AVL property at `ref` (its subtrees are AVL trees whose heights differ by
   at most 2) and its height; returns the root of the subtree. */
static inline uint64_t avl_items__avl_rebalance(avl_db *db, uint64_t ref)
{
    avl_items_elem *n = avl_items__avl_node(db, ref);
    int32_t balance = avl_items__avl_height(db, n->_avl_left) - avl_items__avl_height(db, n->_avl_right);
    if (balance > 1) {
        avl_items_elem *l = avl_items__avl_node(db, n->_avl_left);
        if (avl_items__avl_height(db, l->_avl_left) < avl_items__avl_height(db, l->_avl_right)) {
            avl_items__transient_will_write(db, &n->_avl_left, sizeof n->_avl_left);
            n->_avl_left = avl_items__avl_rotate_left(db, n->_avl_left);   /* left-right case */
            avl_items__avl_set_parent(db, n->_avl_left, ref);
        }
        return avl_items__avl_rotate_right(db, ref);
    }
    if (balance < -1) {
        avl_items_elem *r = avl_items__avl_node(db, n->_avl_right);
        if (avl_items__avl_height(db, r->_avl_right) < avl_items__avl_height(db, r->_avl_left)) {
            avl_items__transient_will_write(db, &n->_avl_right, sizeof n->_avl_right);
            n->_avl_right = avl_items__avl_rotate_right(db, n->_avl_right);  /* right-left case */
            avl_items__avl_set_parent(db, n->_avl_right, ref);
        }
        return avl_items__avl_rotate_left(db, ref);
    }
    avl_items__avl_fix_height(db, ref);
    return ref;
}

/* One child subtree of `node` changed: `now` is its new root, `was` its height before. If
   its height is unchanged, so are the balance and height of `node` and of every node above
   (and the other child need not be read); else rebalance `node`. */
static inline uint64_t avl_items__avl_after(avl_db *db, uint64_t node, uint64_t now, int32_t was)
{
    return avl_items__avl_height(db, now) == was ? node : avl_items__avl_rebalance(db, node);
}

/* Insert the leaf `ref` into the subtree rooted at `node`; returns the new subtree root
   (the caller stores it and sets its parent link). */
static inline uint64_t avl_items__avl_insert_at(avl_db *db, uint64_t node, uint64_t ref)
{
    avl_items_elem *n;
    uint64_t *child;
    int32_t was;
    if (node == P2_NIL) return ref;
    n = avl_items__avl_node(db, node);
    child = avl_items__avl_order(db, ref, node) < 0 ? &n->_avl_left : &n->_avl_right;
    was = avl_items__avl_height(db, *child);
    avl_items__transient_will_write(db, child, sizeof *child);
    *child = avl_items__avl_insert_at(db, *child, ref);
    avl_items__avl_set_parent(db, *child, node);
    return avl_items__avl_after(db, node, *child, was);
}

/* Detach the smallest node of the subtree rooted at `node` into *min; returns the new
   subtree root. */
static inline uint64_t avl_items__avl_remove_min(avl_db *db, uint64_t node, uint64_t *min)
{
    avl_items_elem *n = avl_items__avl_node(db, node);
    int32_t was;
    if (n->_avl_left == P2_NIL) {
        *min = node;
        return n->_avl_right;
    }
    was = avl_items__avl_height(db, n->_avl_left);
    avl_items__transient_will_write(db, &n->_avl_left, sizeof n->_avl_left);
    n->_avl_left = avl_items__avl_remove_min(db, n->_avl_left, min);
    avl_items__avl_set_parent(db, n->_avl_left, node);
    return avl_items__avl_after(db, node, n->_avl_left, was);
}

/* Remove node `ref` from the subtree rooted at `node`; returns the new subtree root. A
   node with two children is replaced by its in-order successor. */
static inline uint64_t avl_items__avl_remove_at(avl_db *db, uint64_t node, uint64_t ref)
{
    avl_items_elem *n;
    uint64_t *child;
    int32_t was;
    if (node == P2_NIL) return P2_NIL;  /* not in the tree: cannot happen */
    n = avl_items__avl_node(db, node);
    if (node == ref) {
        uint64_t succ, right;
        avl_items_elem *s;
        if (n->_avl_left == P2_NIL) return n->_avl_right;
        if (n->_avl_right == P2_NIL) return n->_avl_left;
        right = avl_items__avl_remove_min(db, n->_avl_right, &succ);
        s = avl_items__avl_node(db, succ);
        avl_items__transient_will_write(db, &s->_avl_left, sizeof s->_avl_left);
        avl_items__transient_will_write(db, &s->_avl_right, sizeof s->_avl_right);
        s->_avl_left = n->_avl_left;
        s->_avl_right = right;
        avl_items__avl_set_parent(db, s->_avl_left, succ);
        avl_items__avl_set_parent(db, right, succ);
        return avl_items__avl_rebalance(db, succ);
    }
    child = avl_items__avl_order(db, ref, node) < 0 ? &n->_avl_left : &n->_avl_right;
    was = avl_items__avl_height(db, *child);
    avl_items__transient_will_write(db, child, sizeof *child);
    *child = avl_items__avl_remove_at(db, *child, ref);
    avl_items__avl_set_parent(db, *child, node);
    return avl_items__avl_after(db, node, *child, was);
}

static inline void avl_items__avl_link(avl_db *db, uint64_t ref)
{
    avl_items_elem *e = avl_items__avl_node(db, ref);
    avl_items__transient_will_write(db, &e->_avl_left, sizeof e->_avl_left);
    avl_items__transient_will_write(db, &e->_avl_right, sizeof e->_avl_right);
    avl_items__transient_will_write(db, &e->_avl_parent, sizeof e->_avl_parent);
    avl_items__transient_will_write(db, &e->_avl_height, sizeof e->_avl_height);
    avl_items__transient_will_write(db, &avl_items__transient_root(db)->avl_root, sizeof avl_items__transient_root(db)->avl_root);
    e->_avl_left = e->_avl_right = e->_avl_parent = P2_NIL;
    e->_avl_height = 1;
    avl_items__transient_root(db)->avl_root = avl_items__avl_insert_at(db, avl_items__transient_root(db)->avl_root, ref);
    avl_items__avl_set_parent(db, avl_items__transient_root(db)->avl_root, P2_NIL);
}

/* The element must still carry the key it was linked with. */
static inline void avl_items__avl_unlink(avl_db *db, uint64_t ref)
{
    avl_items__transient_will_write(db, &avl_items__transient_root(db)->avl_root, sizeof avl_items__transient_root(db)->avl_root);
    avl_items__transient_root(db)->avl_root = avl_items__avl_remove_at(db, avl_items__transient_root(db)->avl_root, ref);
    avl_items__avl_set_parent(db, avl_items__transient_root(db)->avl_root, P2_NIL);
}

static inline int avl_items__avl_create(avl_db *db)
{
    int rc = avl_items__array_create(db);
    if (rc != P2_OK) return rc;
    avl_items__transient_will_write(db, &avl_items__transient_root(db)->avl_root, sizeof avl_items__transient_root(db)->avl_root);
    avl_items__transient_root(db)->avl_root = P2_NIL;
    return P2_OK;
}

/* The tree lives in the elements: nothing of its own to free. */
static inline void avl_items__avl_destroy(avl_db *db)
{
    avl_items__array_destroy(db);
}

static inline int avl_items__avl_reserve(avl_db *db, uint64_t n) { return avl_items__array_reserve(db, n); }

static inline int avl_items__avl_insert(avl_db *db, const avl_item *rec, uint64_t *out)
{
    int rc = avl_items__array_insert(db, rec, out);
    if (rc != P2_OK) return rc;
    avl_items__avl_link(db, *out);
    return P2_OK;
}

static inline void avl_items__avl_remove(avl_db *db, uint64_t ref)
{
    avl_items__avl_unlink(db, ref);
    avl_items__array_remove(db, ref);
}

/* A key change (or a move in storage, which changes the reference and so the place among
   equal keys) takes the node out and puts it back; a failed update below leaves element
   and reference as they were, so putting it back restores the tree. */
static inline int avl_items__avl_update(avl_db *db, uint64_t *ref, const avl_item *rec)
{
    int rc;
    if (avl_items__cmp_grp(avl_items__avl_node(db, *ref)->rec.grp, rec->grp) == 0 && !avl_items__array_moves(db, *ref, rec))
        return avl_items__array_update(db, ref, rec);
    avl_items__avl_unlink(db, *ref);
    rc = avl_items__array_update(db, ref, rec);
    avl_items__avl_link(db, *ref);
    return rc;
}

/* range path: the smallest node with key >= lo (> lo if !lo_inclusive; the smallest node
   of all if !has_lo), by one descent from the root. */
static inline uint64_t avl_items__avl_range_first(avl_db *db, int has_lo, int32_t lo, int lo_inclusive)
{
    uint64_t node = avl_items__transient_root(db)->avl_root, found = P2_NIL;
    while (node != P2_NIL) {
        avl_items_elem *n = avl_items__avl_node(db, node);
        int c = has_lo ? avl_items__cmp_grp(n->rec.grp, lo) : 1;
        if (c > 0 || (c == 0 && lo_inclusive)) {
            found = node;  /* qualifies: the answer is this node or in its left subtree */
            node = n->_avl_left;
        } else {
            node = n->_avl_right;
        }
    }
    return found;
}

/* The in-order successor of node `ref`: the leftmost node of its right subtree if it has
   one, else the nearest ancestor it lies left of, found by climbing the parent links (each
   link of the tree is crossed at most twice in a whole walk). */
static inline uint64_t avl_items__avl_range_next(avl_db *db, uint64_t ref)
{
    const avl_items_elem *n = avl_items__avl_node(db, ref);
    uint64_t node = n->_avl_right, up;
    if (node != P2_NIL) {
        uint64_t left;
        while ((left = avl_items__avl_node(db, node)->_avl_left) != P2_NIL) node = left;
        return node;
    }
    node = ref;
    while ((up = n->_avl_parent) != P2_NIL) {
        n = avl_items__avl_node(db, up);
        if (n->_avl_left == node) return up;
        node = up;
    }
    return P2_NIL;
}

/* Integrity check (<prefix>_verify): the subtree at `node`, whose nodes must lie strictly
   between lo and hi in (key, reference) order (P2_NIL: unbounded), at depth `depth`.
   Every node is a live element of the storage (array) read only after that is
   checked; the walk stops after as many nodes as are stored (a cycle) and below depth 96
   (an AVL tree that deep would hold more than 2^64 nodes). Returns the subtree's height,
   or -1 if it is broken (reported). */
static int32_t avl_items__avl_verify_at(avl_db *db, p2_verify *v, uint64_t node, uint64_t parent, uint64_t lo, uint64_t hi, uint64_t *seen, int depth)
{
    const avl_items_elem *n;
    int32_t hl, hr, h;
    if (node == P2_NIL) return 0;
    if (!avl_items__array_valid(db, node)) {
        p2_verify_fail(v, "container items, layer avl: node %" PRIu64 " is not a live element", node);
        return -1;
    }
    if (++*seen > avl_items__array_count(db) || depth > 96) {
        p2_verify_fail(v, "container items, layer avl: more nodes than the %" PRIu64 " stored elements, or too deep (a cycle?)", (uint64_t)avl_items__array_count(db));
        return -2;
    }
    if ((lo != P2_NIL && avl_items__avl_order(db, lo, node) >= 0) || (hi != P2_NIL && avl_items__avl_order(db, node, hi) >= 0))
        p2_verify_fail(v, "container items, layer avl: node %" PRIu64 " out of (grp, reference) order", node);
    n = avl_items__avl_node(db, node);
    if (n->_avl_parent != parent)
        p2_verify_fail(v, "container items, layer avl: node %" PRIu64 " names %" PRIu64 " its parent, hangs under %" PRIu64, node, (uint64_t)n->_avl_parent, parent);
    hl = avl_items__avl_verify_at(db, v, n->_avl_left, node, lo, node, seen, depth + 1);
    if (hl == -2) return -2;
    hr = avl_items__avl_verify_at(db, v, n->_avl_right, node, node, hi, seen, depth + 1);
    if (hr == -2) return -2;
    if (hl < 0 || hr < 0) return -1;
    if (hl - hr > 1 || hr - hl > 1)
        p2_verify_fail(v, "container items, layer avl: node %" PRIu64 " unbalanced (heights %d and %d)", node, (int)hl, (int)hr);
    h = (hl > hr ? hl : hr) + 1;
    if (n->_avl_height != h)
        p2_verify_fail(v, "container items, layer avl: node %" PRIu64 " says height %d, is %d", node, (int)n->_avl_height, (int)h);
    return h;
}

/* Integrity check (<prefix>_verify), after the layers below: the tree is ordered,
   balanced, its heights and parent links right, and it holds every stored element once. */
static int avl_items__avl_verify(avl_db *db, p2_verify *v)
{
    uint64_t seen = 0;
    int32_t h;
    int rc = avl_items__array_verify(db, v);
    if (rc < 0) return rc;
    h = avl_items__avl_verify_at(db, v, avl_items__transient_root(db)->avl_root, P2_NIL, P2_NIL, P2_NIL, &seen, 0);
    if (h >= 0 && seen != avl_items__array_count(db))
        p2_verify_fail(v, "container items, layer avl: %" PRIu64 " nodes in the tree, %" PRIu64 " stored", seen, (uint64_t)avl_items__array_count(db));
    return 0;
}

#ifdef P2_DEBUG
/* Debug aid (compiled with -DP2_DEBUG): check the subtree rooted at `node`, whose nodes
   must lie strictly between `lo` and `hi` in tree order (P2_NIL: unbounded). Returns its
   height, or -1 with db->err set. */
static inline int32_t avl_items__avl_check_at(avl_db *db, uint64_t node, uint64_t parent, uint64_t lo, uint64_t hi, uint64_t *seen)
{
    avl_items_elem *n;
    int32_t hl, hr;
    if (node == P2_NIL) return 0;
    if (!avl_items__array_valid(db, node))
        return p2_err_set(&db->err, P2_EFORMAT, "items avl: node %" PRIu64 " is not a live element", node), -1;
    if (++*seen > avl_items__array_count(db))
        return p2_err_set(&db->err, P2_EFORMAT, "items avl: more nodes than elements (a cycle?)"), -1;
    if ((lo != P2_NIL && avl_items__avl_order(db, lo, node) >= 0) || (hi != P2_NIL && avl_items__avl_order(db, node, hi) >= 0))
        return p2_err_set(&db->err, P2_EFORMAT, "items avl: node %" PRIu64 " out of (key, reference) order", node), -1;
    n = avl_items__avl_node(db, node);
    if (n->_avl_parent != parent)
        return p2_err_set(&db->err, P2_EFORMAT, "items avl: node %" PRIu64 " has the wrong parent link", node), -1;
    if ((hl = avl_items__avl_check_at(db, n->_avl_left, node, lo, node, seen)) < 0) return -1;
    if ((hr = avl_items__avl_check_at(db, n->_avl_right, node, node, hi, seen)) < 0) return -1;
    if (hl - hr > 1 || hr - hl > 1)
        return p2_err_set(&db->err, P2_EFORMAT, "items avl: node %" PRIu64 " unbalanced (%d vs %d)", node, (int)hl, (int)hr), -1;
    if (n->_avl_height != (hl > hr ? hl : hr) + 1)
        return p2_err_set(&db->err, P2_EFORMAT, "items avl: node %" PRIu64 " height %d, should be %d", node, (int)n->_avl_height, (int)(hl > hr ? hl : hr) + 1), -1;
    return n->_avl_height;
}

/* Check the whole tree: order, heights, balance, and that it holds every element once.
   P2_OK, or P2_EFORMAT with the reason in db->err. */
int avl_items__avl_check(avl_db *db);
AVL_API int avl_items__avl_check(avl_db *db)
{
    uint64_t seen = 0;
    if (!db || !db->open) return P2_ECLOSED;
    if (avl_items__avl_check_at(db, avl_items__transient_root(db)->avl_root, P2_NIL, P2_NIL, P2_NIL, &seen) < 0) return P2_EFORMAT;
    if (seen != avl_items__array_count(db))
        return p2_err_set(&db->err, P2_EFORMAT, "items avl: %" PRIu64 " nodes for %" PRIu64 " elements", seen, (uint64_t)avl_items__array_count(db));
    return P2_OK;
}
#endif
/* end of layer avl(key=grp) of items ------------------------------------ */
