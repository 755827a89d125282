/* ------------------------------------------------------------------------
 * 5.6 Journalled segments: open and close
 * ------------------------------------------------------------------------ */

/* A journalled segment: recover, then attach; a file never committed is made anew
 * (plainly, then remapped private and read-only so that every change is tracked). */
static int seg_open_journalled(p2_seg *seg, uint64_t file_bytes, uint64_t fingerprint, uint32_t nroots,
                               const char *const *names, const uint64_t *sizes, int *made_new,
                               p2_err *err)
{
    int rc = journal_track(seg, err);
    if (rc == P2_OK)
        rc = journal_recover(seg, fingerprint, file_bytes, err);
    if (rc != P2_OK)
        return rc;
    struct stat st;
    if (fstat(seg->fd, &st) != 0)
        return log_fail(seg, err, P2_EIO, "cannot stat the data file after recovery");
    file_bytes = (uint64_t)st.st_size;
    if (file_bytes > 0 && file_bytes <= 2 * (uint64_t)seg_granule() && seg->log_fresh) {
        /* A process killed while creating the file (seg_create stores the magic last)
         * leaves a file no larger than its first growth without a magic, beside a journal
         * that never committed anything: nothing was ever stored in it, start again. */
        char magic[sizeof ((struct p2_seg_header *)0)->magic];
        static const char none[sizeof magic];
        if (full_pread(seg->fd, magic, sizeof magic, 0) == 0 && memcmp(magic, none, sizeof magic) == 0) {
            if (ftruncate(seg->fd, 0) != 0)
                return log_fail(seg, err, P2_EIO, "cannot reinitialise a file whose creation was cut short");
            file_bytes = 0;
        }
    }
    *made_new = file_bytes == 0;
    if (*made_new)
        seg->open_keep = 0;       /* a file made anew: nothing of it to put back */
    if (file_bytes > 0) {
        seg->journal = 1;
        rc = seg_attach(seg, file_bytes, fingerprint, nroots, names, sizes, err);
        if (rc != P2_OK)
            return rc;
        if (seg->hdr->journal)
            return journal_register(seg, err);
        /* created by a process that died before its first commit: start again */
        munmap(seg->base, (size_t)seg->reserved);
        seg->base = NULL;
        seg->hdr = NULL;
        seg->mapped = 0;
        seg->open_keep = 0;
        if (ftruncate(seg->fd, 0) != 0)
            return log_fail(seg, err, P2_EIO, "cannot reinitialise a never-committed file");
        *made_new = 1;
    }
    seg->journal = 0;
    rc = seg_create(seg, fingerprint, nroots, names, sizes, err);
    if (rc != P2_OK)
        return rc;
    seg->journal = 1;
    void *p = mmap(seg->base, (size_t)seg->mapped, journal_prot(seg), MAP_PRIVATE | MAP_FIXED, seg->fd, 0);
    if (p == MAP_FAILED)
        return log_fail(seg, err, P2_ENOMEM, "cannot map the new file privately");
    return journal_register(seg, err);
}

int p2_seg_open_journal(p2_seg *seg, const char *path, uint64_t fingerprint,
                        uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                        uint64_t reserve, const p2_journal_opts *opts, int *created, p2_err *err)
{
    p2_journal_opts o = opts != NULL ? *opts : journal_defaults;
    if (o.group == 0)
        o.group = 1;
    return seg_open_any(seg, path, fingerprint, nroots, root_names, root_sizes, reserve,
                        &o, 0, 0, created, err);
}

int p2_seg_open_journal_recover(p2_seg *seg, const char *path, uint64_t fingerprint,
                                uint32_t nroots, const char *const *root_names,
                                const uint64_t *root_sizes, uint64_t reserve,
                                const p2_journal_opts *opts, int *created, p2_err *err)
{
    p2_journal_opts o = opts != NULL ? *opts : journal_defaults;
    if (o.group == 0)
        o.group = 1;
    return seg_open_any(seg, path, fingerprint, nroots, root_names, root_sizes, reserve,
                        &o, 1, 0, created, err);
}

/* Close a journalled segment: what is not committed is dropped, the rest written
 * into the data file and synced, the journal emptied and removed, the file marked
 * CLEAN.  A failure leaves the journal in place: the next open replays it. */
static int journal_close(p2_seg *seg, p2_err *err)
{
    int rc = p2_seg_abort(seg, err);
    if (rc == P2_OK)
        rc = journal_flush(seg, 1, err);
    if (rc == P2_OK) {
        struct p2_seg_header h = *seg->hdr;
        h.state = SEG_STATE_CLEAN;
        h.data_seq = seg->seq;
        h.roots_crc = roots_crc_mapped(seg);   /* sealed at rest; between commits the */
        h.roots_sealed = 1;                   /* journal's page checksums cover them */
        h.checksum = header_crc(&h);
        if (full_pwrite(seg->fd, &h, sizeof h, 0) != 0 || fdatasync(seg->fd) != 0)
            rc = log_fail(seg, err, P2_EIO, "cannot mark the data file closed");
    }
    if (rc == P2_OK) {
        char lpath[4096 + 16];
        snprintf(lpath, sizeof lpath, "%s%s", seg->path, LOG_SUFFIX(seg));
        unlink(lpath);
    }
    journal_unregister(seg);
    journal_untrack(seg);
    log_unmap(seg);
    close(seg->log_fd);
    munmap(seg->base, (size_t)seg->reserved);
    flock(seg->fd, LOCK_UN);
    if (close(seg->fd) != 0 && rc == P2_OK)
        rc = log_fail(seg, err, P2_EIO, "cannot close the data file");
    seg_reset(seg);
    return rc;
}

int p2_seg_close_refused(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->base == NULL)
        return P2_OK;
    if (!seg->journal || !seg->open_keep || seg->seq != seg->open_seq)
        return p2_seg_close(seg, err);
    /* nothing committed since the open: drop what is pending (it is only in memory) and
     * put back what the open's replay wrote; the log still holds what it replayed */
    journal_unregister(seg);
    log_unmap(seg);
    munmap(seg->base, (size_t)seg->reserved);
    int rc = open_undo_apply(seg, err);
    journal_untrack(seg);
    close(seg->log_fd);
    flock(seg->fd, LOCK_UN);
    close(seg->fd);
    seg_reset(seg);
    return rc;
}
