/* ------------------------------------------------------------------------
 * 4.6 Persistent segment: recovery of plain segments (p2_seg_open_recover,
 * p2_seg_close_unclean): `p2gen recover`
 * ------------------------------------------------------------------------ */

/* Is free list c (0..nclasses-1 small, nclasses large) sound: every block in the
 * allocated area, the walk ends within the number of blocks that fit (no cycle), the
 * large list address-ordered? */
static int recover_list_ok(const p2_seg *seg, unsigned c)
{
    uint64_t brk = seg->hdr->brk, steps = 0;
    if (c < nclasses(seg)) {
        uint64_t bs = class_size(seg, c);
        for (p2_off off = *small_head(seg, c); off != 0; off = small_at(seg, off)->next)
            if (!block_ok(seg, off, bs) || ++steps > brk / bs)
                return 0;
        return 1;
    }
    for (p2_off off = seg->hdr->free_large; off != 0; off = large_at(seg, off)->next)
        if (!large_node_ok(seg, off) || ++steps > brk / LARGE_UNIT)
            return 0;
    return 1;
}

static int seg_open_recovering(p2_seg *seg, const char *path, uint64_t fingerprint,
                               uint32_t nroots, const char *const *root_names,
                               const uint64_t *root_sizes, uint64_t reserve, int fixed,
                               int *created, p2_err *err)
{
    if (seg == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_open_recover: seg is NULL");
    /* the state as found (informational: opening marks it OPEN in any case) */
    uint32_t state = SEG_STATE_CLEAN;
    int fd = path != NULL ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        if (pread(fd, &state, sizeof state, offsetof(struct p2_seg_header, state)) != (ssize_t)sizeof state)
            state = SEG_STATE_CLEAN;
        close(fd);
    }
    int rc = seg_open_any(seg, path, fingerprint, nroots, root_names, root_sizes, reserve,
                          NULL, 1, fixed, created, err);
    if (rc != P2_OK)
        return rc;
    seg->rec_unclean = state != SEG_STATE_CLEAN;
    for (unsigned c = 0; c <= nclasses(seg); c++) {
        if (!recover_list_ok(seg, c)) {
            if (c < nclasses(seg))
                *small_head(seg, c) = 0;
            else
                seg->hdr->free_large = 0;
            seg->rec_lists_dropped++;
        }
    }
    return P2_OK;
}

int p2_seg_open_recover(p2_seg *seg, const char *path, uint64_t fingerprint,
                        uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                        uint64_t reserve, int *created, p2_err *err)
{
    return seg_open_recovering(seg, path, fingerprint, nroots, root_names, root_sizes, reserve, 0,
                               created, err);
}

int p2_seg_open_fixed(p2_seg *seg, const char *path, uint64_t fingerprint,
                      uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                      uint64_t reserve, unsigned flags, int *created, p2_err *err)
{
    if (flags & P2_SEG_FIXED_RECOVER)
        return seg_open_recovering(seg, path, fingerprint, nroots, root_names, root_sizes, reserve,
                                   1, created, err);
    return seg_open_any(seg, path, fingerprint, nroots, root_names, root_sizes, reserve,
                        NULL, 0, flags & P2_SEG_FIXED_RELOCATE ? 2 : 1, created, err);
}

int p2_seg_close_unclean(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->base == NULL)
        return P2_OK;
    if (seg->journal)
        return p2_seg_close(seg, err);
    int rc = P2_OK;
    seg->hdr->state = SEG_STATE_OPEN;
    seg->hdr->checksum = header_crc(seg->hdr);
    if (msync(seg->base, (size_t)seg->mapped, MS_SYNC) != 0) {
        int e = errno;
        rc = seg_fail(seg, err, P2_EIO, "cannot flush to disk: %s", strerror(e));
    }
    munmap(seg->base, (size_t)seg->reserved);
    flock(seg->fd, LOCK_UN);
    close(seg->fd);
    seg_reset(seg);
    return rc;
}
