/* ------------------------------------------------------------------------
 * 4.5 Persistent segment: open, sync, close
 * ------------------------------------------------------------------------ */

/* A journalled segment is opened, synced and closed through these (section 5: the journal
 * builds on the segment, so it comes after it; a plain segment never calls them, except
 * journal_unregister and journal_untrack, which do nothing for it). */
static int seg_open_journalled(p2_seg *seg, uint64_t file_bytes, uint64_t fingerprint, uint32_t nroots,
                               const char *const *names, const uint64_t *sizes, int *made_new,
                               p2_err *err);
static void journal_unregister(p2_seg *seg);
static void journal_untrack(p2_seg *seg);
static int journal_flush(p2_seg *seg, int force_checkpoint, p2_err *err);
static int journal_close(p2_seg *seg, p2_err *err);
static int open_undo_apply(p2_seg *seg, p2_err *err);

/* Initialise an empty file: header, zeroed root blocks, state OPEN. */
static int seg_create(p2_seg *seg, uint64_t fingerprint, uint32_t nroots, const char *const *names,
                      const uint64_t *sizes, p2_err *err)
{
    int rc = seg->fixed ? seg_reserve_new_fixed(seg, fingerprint, err) : seg_reserve(seg, err);
    if (rc == P2_OK)
        rc = seg_grow(seg, P2_SEG_HEADER_SIZE, err);
    if (rc != P2_OK)
        return rc;
    struct p2_seg_header *h = (struct p2_seg_header *)(void *)seg->base;
    memset(h, 0, sizeof *h);
    if (seg->fixed)
        h->map_base = (uint64_t)(uintptr_t)seg->base;
    /* the magic is stored last (below): a process killed while creating the file leaves
     * no magic in it, which a journalled open recognises as a creation never finished */
    h->version = P2_SEG_VERSION;
    h->header_size = P2_SEG_HEADER_SIZE;
    h->page_size = (uint32_t)page_size();
    h->state = SEG_STATE_OPEN;
    h->fingerprint = fingerprint;
    h->file_size = seg->mapped;
    h->brk = P2_SEG_HEADER_SIZE;
    h->nroots = nroots;
    seg->hdr = h;
    /* exact size classes: the class table (the last root) comes first, at the start of the
     * allocated area, so that every other block is allocated through it */
    if (seg->alloc_exact && (rc = brk_take(seg, EXACT_TABLE, &seg->class_table, err)) != P2_OK)
        return rc;
    for (uint32_t i = 0; i < nroots; i++) {
        p2_off off = seg->class_table;
        if (!seg->alloc_exact || i != nroots - 1)
            rc = seg_alloc_block(seg, sizes[i], &off, err);
        if (rc != P2_OK)
            return rc;
        memset(seg->base + off, 0, (size_t)sizes[i]);
        memcpy(h->roots[i].name, names[i], strlen(names[i]) + 1);
        h->roots[i].off = off;
        h->roots[i].size = sizes[i];
    }
    roots_seal(seg);
    struct p2_seg_header whole = *h;
    memcpy(whole.magic, SEG_MAGIC, sizeof whole.magic);
    h->checksum = header_crc(&whole);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);   /* every other byte is in the mapping first */
    memcpy(h->magic, SEG_MAGIC, sizeof h->magic);
    if (seg->pb != NULL)
        return pb_sync(seg, err);
    if (msync(seg->base, (size_t)seg->mapped, MS_SYNC) != 0) {
        int e = errno;
        return seg_fail(seg, err, P2_EIO, "cannot write the new file: %s", strerror(e));
    }
    return P2_OK;
}

/* Validate an existing file of file_bytes bytes, map it and mark it OPEN. */
static int seg_attach(p2_seg *seg, uint64_t file_bytes, uint64_t fingerprint, uint32_t nroots,
                      const char *const *names, const uint64_t *sizes, p2_err *err)
{
    if (file_bytes < P2_SEG_HEADER_SIZE)
        return seg_fail(seg, err, P2_EFORMAT,
                        "truncated: file is %" PRIu64 " bytes, smaller than the %d-byte header",
                        file_bytes, P2_SEG_HEADER_SIZE);
    struct p2_seg_header h;
    ssize_t n = pread(seg->fd, &h, sizeof h, 0);
    if (n != (ssize_t)sizeof h) {
        int e = errno;
        return seg_fail(seg, err, P2_EIO, "cannot read the header: %s",
                        n < 0 ? strerror(e) : "short read");
    }
    int rc = seg_validate(seg, &h, file_bytes, fingerprint, nroots, names, sizes, err);
    if (rc != P2_OK)
        return rc;
    if (h.file_size > seg->reserved)
        return seg_fail(seg, err, P2_ENOMEM,
                        "file is %" PRIu64 " bytes, more than the address-space reservation of %" PRIu64
                        " bytes (" SEG_RESERVE_HINT ")",
                        h.file_size, seg->reserved);
    rc = seg->fixed ? seg_reserve_recorded(seg, h.map_base, h.file_size, fingerprint, err)
                    : seg_reserve(seg, err);
    if (rc != P2_OK)
        return rc;
    /* A relocated file is mapped privately: its relocated references are this process's. */
    void *p = mmap(seg->base, (size_t)h.file_size, journal_prot(seg),
                   (seg->journal || seg->relocated ? MAP_PRIVATE : MAP_SHARED) | MAP_FIXED, seg->fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        return seg_fail(seg, err, P2_ENOMEM, "cannot map the file: %s", strerror(e));
    }
    seg->mapped = h.file_size;
    seg->hdr = (struct p2_seg_header *)(void *)seg->base;
    if (seg->journal)
        return P2_OK;   /* nothing is written outside a transaction */
    if (seg->relocated) {
        /* Mark the file OPEN on disk (written through the file: the mapping is private),
         * keeping the header as the file has it for a close that wrote nothing. */
        seg->reloc_disk_hdr = (struct p2_seg_header *)malloc(sizeof h);
        if (seg->reloc_disk_hdr == NULL)
            return seg_fail(seg, err, P2_ENOMEM, "out of memory relocating the file");
        memcpy(seg->reloc_disk_hdr, &h, sizeof h);
        seg->reloc_disk_hdr->state = SEG_STATE_OPEN;
        seg->reloc_disk_hdr->checksum = header_crc(seg->reloc_disk_hdr);
        if (pwrite(seg->fd, seg->reloc_disk_hdr, sizeof h, 0) != (ssize_t)sizeof h || fdatasync(seg->fd) != 0) {
            int e = errno;
            if (pwrite(seg->fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
                /* best effort: leave the file as it was */
            }
            return seg_fail(seg, err, P2_EIO, "cannot write the header: %s", strerror(e));
        }
        memcpy(seg->hdr, seg->reloc_disk_hdr, sizeof h);
        seg->will_write = reloc_note_write;   /* the first write makes the close write back */
        seg->will_write_ctx = NULL;
        return P2_OK;
    }

    /* Mark the file OPEN on disk before anyone modifies it. */
    seg->hdr->state = SEG_STATE_OPEN;
    seg->hdr->checksum = header_crc(seg->hdr);
    if (msync(seg->base, P2_SEG_HEADER_SIZE, MS_SYNC) != 0) {
        int e = errno;
        memcpy(seg->hdr, &h, sizeof h);    /* leave the file as it was */
        return seg_fail(seg, err, P2_EIO, "cannot write the header: %s", strerror(e));
    }
    return P2_OK;
}

static int seg_open_any(p2_seg *seg, const char *path, uint64_t fingerprint,
                        uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                        uint64_t reserve, const p2_journal_opts *jopts, int recovering, int fixed,
                        int *created, p2_err *err);


int p2_seg_open(p2_seg *seg, const char *path, uint64_t fingerprint,
                uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                uint64_t reserve, int *created, p2_err *err)
{
    return seg_open_any(seg, path, fingerprint, nroots, root_names, root_sizes, reserve,
                        NULL, 0, 0, created, err);
}

static int seg_open_any(p2_seg *seg, const char *path, uint64_t fingerprint,
                        uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                        uint64_t reserve, const p2_journal_opts *jopts, int recovering, int fixed,
                        int *created, p2_err *err)
{
    if (created != NULL)
        *created = 0;
    if (seg == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_open: seg is NULL");
    seg_reset(seg);
    seg->recovering = recovering;   /* p2_seg_open_recover, p2_seg_open_journal_recover */
    /* the allocator's size classes: exact if the caller's roots end with their class table */
    seg->alloc_exact = root_names != NULL && roots_exact(nroots, root_names);
    seg->fixed = fixed != 0;        /* p2_seg_open_fixed */
    seg->reloc_allowed = fixed == 2;   /* ... with P2_SEG_FIXED_RELOCATE */
    seg->path[0] = '\0';
    if (path == NULL || path[0] == '\0')
        return p2_err_set(err, P2_EINVAL, "p2_seg_open: no path given");
    size_t plen = strlen(path);
    if (plen >= sizeof seg->path)
        return p2_err_set(err, P2_EINVAL, "p2_seg_open: path is %zu bytes long, at most %zu allowed",
                          plen, sizeof seg->path - 1);
    memcpy(seg->path, path, plen + 1);
    int rc = check_roots(seg, nroots, root_names, root_sizes, err);
    if (rc != P2_OK)
        return rc;
    if (reserve == 0)
        reserve = P2_SEG_DEFAULT_RESERVE;
    if (reserve > SEG_MAX_RESERVE)
        return seg_fail(seg, err, P2_EINVAL, "reserve of %" PRIu64 " bytes is more than the maximum %" PRIu64,
                        reserve, SEG_MAX_RESERVE);
    uint64_t reserved = round_up(reserve, seg_granule());

    /* Open or create.  `made` records that this call created the file, so
     * that a failure can remove it again. */
    int fd, made = 0;
    for (;;) {
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0)
            break;
        if (errno != ENOENT) {
            int e = errno;
            return seg_fail(seg, err, P2_EIO, "cannot open: %s", strerror(e));
        }
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            made = 1;
            break;
        }
        if (errno != EEXIST) {
            int e = errno;
            return seg_fail(seg, err, P2_EIO, "cannot create: %s", strerror(e));
        }
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);   /* if we made it, whoever holds the lock is initialising it: keep it */
        if (e == EWOULDBLOCK)
            return seg_fail(seg, err, P2_EBUSY, "in use by another process");
        return seg_fail(seg, err, P2_EIO, "cannot lock: %s", strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        rc = seg_fail(seg, err, P2_EIO, "cannot stat: %s", strerror(e));
        st.st_size = -1;
    } else {
        seg->fd = fd;
        seg->reserved = reserved;
        if (jopts != NULL) {
            int made_new = 0;
            seg->jopts = *jopts;
            seg->pgsize = page_size();
            rc = seg_open_journalled(seg, (uint64_t)st.st_size, fingerprint, nroots, root_names,
                                     root_sizes, &made_new, err);
            if (made_new)
                st.st_size = 0;   /* reported as created */
        } else if (st.st_size == 0 && made) {
            rc = seg_create(seg, fingerprint, nroots, root_names, root_sizes, err);
        } else if (st.st_size == 0) {
            /* An existing empty file is not a database: opening it must not make one (it may
             * be a file of something else, truncated, or another program's). */
            rc = seg_fail(seg, err, P2_EFORMAT, "not a p2gen database: empty (0 bytes); "
                          "remove it to create a new database there");
        } else {
            rc = seg_attach(seg, (uint64_t)st.st_size, fingerprint, nroots, root_names, root_sizes, err);
        }
    }
    if (rc != P2_OK) {
        journal_unregister(seg);
        if (seg->base != NULL)
            munmap(seg->base, (size_t)seg->reserved);
        if (seg->open_keep) {
            /* refused after the replay (the replayed header, say): put back what it wrote */
            p2_err e;
            p2_err_clear(&e);
            (void)open_undo_apply(seg, &e);
        }
        journal_untrack(seg);
        if (seg->log_fd >= 0)
            close(seg->log_fd);
        free(seg->reloc_disk_hdr);
        if (made) {
            unlink(path);
        } else if (st.st_size == 0) {
            if (ftruncate(fd, 0) != 0) {
                /* best effort: the file was empty before */
            }
        }
        flock(fd, LOCK_UN);
        close(fd);
        seg_reset(seg);
        return rc;
    }
    if (seg->alloc_exact)
        seg->class_table = seg->hdr->roots[nroots - 1].off;
    if (created != NULL)
        *created = st.st_size == 0;
    seg->open_seq = seg->seq;       /* p2_seg_close_refused: nothing committed since */
#ifdef P2_WRITE_AUDIT
    if (!seg->journal && !recovering && !seg->relocated)
        write_audit_attach(seg);
#endif
    return P2_OK;
}

/* A relocated open that wrote: the whole image, as relocated, goes to the file, which
 * records its new base from now on (state as given: OPEN for a sync, then CLEAN at close). */
static int reloc_write_back(p2_seg *seg, p2_err *err)
{
    struct p2_seg_header *h = seg->hdr;
    h->map_base = (uint64_t)(uintptr_t)seg->base;
    h->state = SEG_STATE_OPEN;
    roots_seal(seg);
    h->checksum = header_crc(h);
    for (uint64_t done = 0; done < seg->mapped;) {
        ssize_t n = pwrite(seg->fd, seg->base + done, (size_t)(seg->mapped - done), (off_t)done);
        if (n <= 0) {
            int e = errno;
            return seg_fail(seg, err, P2_EIO, "cannot write the relocated file back: %s",
                            n < 0 ? strerror(e) : "short write");
        }
        done += (uint64_t)n;
    }
    if (fdatasync(seg->fd) != 0) {
        int e = errno;
        return seg_fail(seg, err, P2_EIO, "cannot flush to disk: %s", strerror(e));
    }
    return P2_OK;
}

/* Close a relocated segment's file: write the image back if the open wrote (then CLEAN),
 * else only mark the header the file has CLEAN again. */
static int reloc_close(p2_seg *seg, p2_err *err)
{
    struct p2_seg_header *h = seg->reloc_disk_hdr;
    int rc = P2_OK;
    if (seg->reloc_written) {
        rc = reloc_write_back(seg, err);
        h = seg->hdr;
    }
    if (rc == P2_OK) {
        h->state = SEG_STATE_CLEAN;
        h->checksum = header_crc(h);
        if (pwrite(seg->fd, h, P2_SEG_HEADER_SIZE, 0) != (ssize_t)P2_SEG_HEADER_SIZE || fdatasync(seg->fd) != 0) {
            int e = errno;
            rc = seg_fail(seg, err, P2_EIO, "cannot write the header: %s", strerror(e));
        }
    }
    free(seg->reloc_disk_hdr);
    seg->reloc_disk_hdr = NULL;
    return rc;
}

int p2_seg_sync(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->base == NULL)
        return p2_err_set(err, P2_ECLOSED, "p2_seg_sync: segment is not open");
    if (pl_txn(seg))      /* as a journalled file: commits alone write */
        return pl_commit(seg, err);
    if (seg->journal) {   /* a journalled file is only ever written by commits */
        int rc = p2_seg_commit(seg, err);
        if (rc == P2_OK && seg->unsynced > 0)
            rc = journal_flush(seg, 0, err);   /* and an incomplete group is synced too */
        return rc;
    }
    if (seg->relocated)   /* the file changes only if this open wrote */
        return seg->reloc_written ? reloc_write_back(seg, err) : P2_OK;
    if (seg->pb != NULL && pb_check(seg, err) != P2_OK)
        return P2_EIO;    /* a failed page server: not even its header is touched (a fault) */
    p2_seg_will_write(seg, seg->hdr, sizeof *seg->hdr);   /* roots' seal, checksum */
    roots_seal(seg);
    seg->hdr->checksum = header_crc(seg->hdr);
    if (seg->pb != NULL)
        return pb_sync(seg, err);
    if (msync(seg->base, (size_t)seg->mapped, MS_SYNC) != 0) {
        int e = errno;
        return seg_fail(seg, err, P2_EIO, "cannot flush to disk: %s", strerror(e));
    }
    return P2_OK;
}

int p2_seg_close(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->base == NULL)
        return P2_OK;
    int rc = P2_OK;
    struct p2_seg_header *h = seg->hdr;
    if (seg->journal)
        return journal_close(seg, err);
    if (seg->pb != NULL)
        return pb_close(seg, err);
#ifdef P2_WRITE_AUDIT
    write_audit_detach(seg);
#endif
    if (seg->relocated) {
        rc = reloc_close(seg, err);
        goto unmap;
    }
    p2_seg_will_write(seg, h, sizeof *h);
    /* Data first, then the CLEAN mark: a crash in between leaves OPEN. */
    roots_seal(seg);
    h->checksum = header_crc(h);
    if (msync(seg->base, (size_t)seg->mapped, MS_SYNC) != 0) {
        int e = errno;
        rc = seg_fail(seg, err, P2_EIO,
                      "cannot flush to disk: %s; the file stays marked as not closed cleanly",
                      strerror(e));
    } else {
        h->state = SEG_STATE_CLEAN;
        h->checksum = header_crc(h);
        if (msync(seg->base, P2_SEG_HEADER_SIZE, MS_SYNC) != 0) {
            int e = errno;
            rc = seg_fail(seg, err, P2_EIO, "cannot write the header: %s", strerror(e));
        }
    }
unmap:
    munmap(seg->base, (size_t)seg->reserved);
    flock(seg->fd, LOCK_UN);
    if (close(seg->fd) != 0 && rc == P2_OK) {
        int e = errno;
        rc = seg_fail(seg, err, P2_EIO, "cannot close: %s", strerror(e));
    }
    seg_reset(seg);
    return rc;
}
