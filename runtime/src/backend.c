/* ==========================================================================
 * 8. Server backends (design in p2_runtime.h, @ref server)
 *
 * Where a page server's segment lives.  Each engine is a small table of callbacks, as an
 * nbdkit plugin is: read and write (vectored: a list of (buffer, length, offset), up to
 * P2_SERVER_INFLIGHT of them in flight at once), flush, grow, close.  `file` reaches a
 * local file with pread/pwrite; `nbd` an NBD export through libnbd, `nfs` a file of an
 * NFSv3 export through libnfs (the paper's file server), each loaded with dlopen() at the
 * first open of one, so that the runtime compiles and links without them.
 * Every request of the nbd backend has a deadline (bk->timeout_ms): past it the
 * connection is dropped (so that no late answer can write into a buffer given back to
 * the caller) and the backend is dead: every later call fails at once, with the message
 * of the failure that killed it.  The counters of requests and bytes are kept here.
 * `redis` (an object server's, section 10) is no segment of bytes but keys: it has its
 * own calls (redis_cmd, redis_pipe), with the same deadline rule and the same death.
 * ========================================================================== */

typedef struct p2_io {
    void    *buf;
    uint64_t len;
    uint64_t off;
} p2_io;

struct p2_backend;
struct backend_ops {
    const char *kind;
    int (*readv)(struct p2_backend *b, const p2_io *io, unsigned n, p2_err *err);
    int (*writev)(struct p2_backend *b, const p2_io *io, unsigned n, p2_err *err);
    int (*flush)(struct p2_backend *b, p2_err *err);
    int (*grow)(struct p2_backend *b, uint64_t size, p2_err *err);
    void (*close)(struct p2_backend *b);
};

typedef struct p2_backend {
    const struct backend_ops *ops;
    char     uri[1024];
    uint64_t size;            /* bytes the server holds */
    int      growable;        /* grow() can extend it */
    int      timeout_ms;
    uint32_t delay_us;        /* a request's least round trip: a cost model's (see open) */
    int64_t  delay_owed_ns;   /* of it, what the requests so far have not yet taken */
    int      dead;            /* a request failed for good: every call fails with `why` */
    char     why[P2_ERR_MSG_SIZE];
    int      fd;              /* file */
    void    *nbd;             /* nbd: struct nbd_handle * */
    void    *redis;           /* redis: redisContext * */
    void    *nfs;             /* nfs: struct nfs_context * */
    void    *nfs_fh;          /* nfs: struct nfsfh *, the file */
    int      sync_writes;     /* nfs: every write FILE_SYNC (the file opened O_SYNC) */
    p2_server_stats *st;      /* the counters: requests, bytes */
} p2_backend;

static int backend_fail(p2_backend *b, p2_err *err, int code, const char *fmt, ...) P2_PRINTF_LIKE(4, 5);

/* An error whose message starts with the server's URI. */
static int backend_fail(p2_backend *b, p2_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, code, b->uri, fmt, ap);
    va_end(ap);
    return code;
}

/* Kill the backend: its message is every later call's. */
static int backend_kill(p2_backend *b, p2_err *err, const char *fmt, ...) P2_PRINTF_LIKE(3, 4);
static int backend_kill(p2_backend *b, p2_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->why, sizeof b->why, fmt, ap);
    va_end(ap);
    b->dead = 1;
    return backend_fail(b, err, P2_EIO, "%s", b->why);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ms(void)
{
    return now_ns() / 1000000u;
}

/* ------------------------------------------------------------------------
 * 8.1 file: a local file through pread / pwrite
 * ------------------------------------------------------------------------ */

static int file_rw(p2_backend *b, const p2_io *io, unsigned n, int write, p2_err *err)
{
    for (unsigned i = 0; i < n; i++) {
        for (uint64_t done = 0; done < io[i].len;) {
            char *p = (char *)io[i].buf + done;
            size_t want = (size_t)(io[i].len - done);
            off_t at = (off_t)(io[i].off + done);
            ssize_t got = write ? pwrite(b->fd, p, want, at) : pread(b->fd, p, want, at);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                return backend_fail(b, err, P2_EIO, "cannot %s %" PRIu64 " bytes at offset %" PRIu64 ": %s",
                                    write ? "write" : "read", io[i].len, io[i].off, strerror(errno));
            if (got == 0) {          /* past the end: a file reads as zeros there */
                if (write)
                    return backend_fail(b, err, P2_EIO, "short write at offset %" PRIu64, io[i].off);
                memset(p, 0, want);
                got = (ssize_t)want;
            }
            done += (uint64_t)got;
        }
        if (write) {
            b->st->writes++;
            b->st->bytes_written += io[i].len;
        } else {
            b->st->reads++;
            b->st->bytes_read += io[i].len;
        }
    }
    return P2_OK;
}

static int file_readv(p2_backend *b, const p2_io *io, unsigned n, p2_err *err)
{
    return file_rw(b, io, n, 0, err);
}

static int file_writev(p2_backend *b, const p2_io *io, unsigned n, p2_err *err)
{
    return file_rw(b, io, n, 1, err);
}

static int file_flush(p2_backend *b, p2_err *err)
{
    b->st->flushes++;
    if (fdatasync(b->fd) != 0)
        return backend_fail(b, err, P2_EIO, "cannot flush: %s", strerror(errno));
    return P2_OK;
}

static int file_grow(p2_backend *b, uint64_t size, p2_err *err)
{
    if (size <= b->size)
        return P2_OK;
    if (ftruncate(b->fd, (off_t)size) != 0)
        return backend_fail(b, err, P2_EIO, "cannot extend to %" PRIu64 " bytes: %s", size, strerror(errno));
    b->size = size;
    return P2_OK;
}

static void file_close(p2_backend *b)
{
    if (b->fd >= 0) {
        flock(b->fd, LOCK_UN);
        close(b->fd);
    }
    b->fd = -1;
}

static const struct backend_ops file_ops = {"file", file_readv, file_writev, file_flush, file_grow, file_close};

static int file_open(p2_backend *b, const char *path, p2_err *err)
{
    b->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (b->fd < 0)
        return backend_fail(b, err, P2_EIO, "cannot open %s: %s", path, strerror(errno));
    if (flock(b->fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(b->fd);
        b->fd = -1;
        return backend_fail(b, err, e == EWOULDBLOCK ? P2_EBUSY : P2_EIO, "%s",
                            e == EWOULDBLOCK ? "in use by another process" : strerror(e));
    }
    struct stat st;
    if (fstat(b->fd, &st) != 0) {
        int e = errno;
        file_close(b);
        return backend_fail(b, err, P2_EIO, "cannot stat: %s", strerror(e));
    }
    b->ops = &file_ops;
    b->size = (uint64_t)st.st_size;
    b->growable = 1;
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * 8.2 nbd: libnbd, loaded at the first open
 * ------------------------------------------------------------------------ */

/* A library's functions by name, each into its field (a function pointer); NULL, or the
 * first name the library lacks. */
typedef struct {
    const char *name;
    void *field;
} dl_sym;

static const char *dl_bind(void *so, const dl_sym *sym, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(so, sym[i].name);
        if (f == NULL)
            return sym[i].name;
        memcpy(sym[i].field, &f, sizeof f);
    }
    return NULL;
}


/* The few libnbd functions used, by their ABI (libnbd.h, stable since 1.0). */
typedef struct {
    int (*callback)(void *user_data, int *error);
    void *user_data;
    void (*free)(void *user_data);
} nbd_cb;

static struct nbd_lib {
    int tried, ok;
    char why[256];
    void *(*create)(void);
    void (*close)(void *h);
    const char *(*get_error)(void);
    int (*aio_connect_uri)(void *h, const char *uri);
    int (*aio_is_ready)(void *h);
    int (*aio_is_dead)(void *h);
    int (*poll)(void *h, int timeout);
    int64_t (*get_size)(void *h);
    int (*is_read_only)(void *h);
    int (*can_flush)(void *h);
    int64_t (*aio_pread)(void *h, void *buf, size_t count, uint64_t offset, nbd_cb cb, uint32_t flags);
    int64_t (*aio_pwrite)(void *h, const void *buf, size_t count, uint64_t offset, nbd_cb cb, uint32_t flags);
    int64_t (*aio_flush)(void *h, nbd_cb cb, uint32_t flags);
    int (*aio_command_completed)(void *h, uint64_t cookie);
} nbdl;

static int nbd_load(void)
{
    if (nbdl.tried)
        return nbdl.ok;
    nbdl.tried = 1;
    void *so = dlopen("libnbd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (so == NULL) {
        snprintf(nbdl.why, sizeof nbdl.why, "libnbd is not installed (%s): install the Debian "
                 "package libnbd0 (libnbd-dev to build against it), e.g. apt-get install libnbd-dev", dlerror());
        return 0;
    }
    const dl_sym syms[] = {
        {"nbd_create", &nbdl.create},
        {"nbd_close", &nbdl.close},
        {"nbd_get_error", &nbdl.get_error},
        {"nbd_aio_connect_uri", &nbdl.aio_connect_uri},
        {"nbd_aio_is_ready", &nbdl.aio_is_ready},
        {"nbd_aio_is_dead", &nbdl.aio_is_dead},
        {"nbd_poll", &nbdl.poll},
        {"nbd_get_size", &nbdl.get_size},
        {"nbd_is_read_only", &nbdl.is_read_only},
        {"nbd_can_flush", &nbdl.can_flush},
        {"nbd_aio_pread", &nbdl.aio_pread},
        {"nbd_aio_pwrite", &nbdl.aio_pwrite},
        {"nbd_aio_flush", &nbdl.aio_flush},
        {"nbd_aio_command_completed", &nbdl.aio_command_completed},
    };
    const char *lacks = dl_bind(so, syms, sizeof syms / sizeof syms[0]);
    if (lacks != NULL) {
        snprintf(nbdl.why, sizeof nbdl.why, "libnbd.so.0 lacks %s: install libnbd >= 1.2 (Debian package libnbd0)", lacks);
        return 0;
    }
    nbdl.ok = 1;
    return 1;
}

static const char *nbd_why(void)
{
    const char *e = nbdl.get_error();
    return e != NULL && *e ? e : "connection lost";
}

/* Drop the connection (a request past its deadline, a broken connection): libnbd writes
 * into no buffer after this. */
static void nbd_drop(p2_backend *b)
{
    if (b->nbd != NULL)
        nbdl.close(b->nbd);
    b->nbd = NULL;
}

/* Wait, until the deadline, for libnbd to make progress; P2_OK, or the backend killed. */
static int nbd_wait(p2_backend *b, uint64_t deadline, const char *what, p2_err *err)
{
    uint64_t t = now_ms();
    if (t >= deadline) {
        nbd_drop(b);
        return backend_kill(b, err, "the server did not answer %s within %d ms (P2_SERVER_TIMEOUT_MS); "
                            "the connection was dropped", what, b->timeout_ms);
    }
    int r = nbdl.poll(b->nbd, (int)(deadline - t));
    if (r < 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", nbd_why());
        nbd_drop(b);
        return backend_kill(b, err, "the connection failed during %s: %s", what, why);
    }
    return P2_OK;
}

/* Run up to n requests (kind 'r', 'w' or 'f'), P2_SERVER_INFLIGHT at a time, each to
 * completion or to the deadline. */
/* A cost model's round trips: n requests sent at t0 (now_ns) take at least `delay_us`
 * each, one after the other (as 1990's RPCs were).  Called once they are answered: what
 * they took less than that is owed, and once a millisecond is owed it is slept, what the
 * sleep overslept (a loaded machine wakes a sleeper 100-200 µs late) counted as paid ahead.
 * So the requests' total time is the model's whatever today's round trip and the
 * scheduler did, to within a millisecond or two (owed, or paid ahead, at most one); a
 * sleep per request instead made an object's 164 µs 290-460, and a spin on the clock made
 * the client wait for its CPU again. */
static void backend_delay(p2_backend *b, uint64_t t0, unsigned n)
{
    if (b->delay_us == 0 || n == 0)
        return;
    uint64_t now = now_ns(), want = (uint64_t)b->delay_us * n * 1000u;
    if (now - t0 < want)
        b->delay_owed_ns += (int64_t)(want - (now - t0));
    if (b->delay_owed_ns < 1000000)
        return;
    uint64_t end = now + (uint64_t)b->delay_owed_ns;
    struct timespec ts = {(time_t)(end / 1000000000u), (long)(end % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
    b->delay_owed_ns -= (int64_t)(now_ns() - now);
    if (b->delay_owed_ns < -1000000)     /* paid ahead: a millisecond at most */
        b->delay_owed_ns = -1000000;
}

/* How a backend runs requests (backend_run): send the request of kind `kind` ('r' read,
 * 'w' write, 'f' flush, 'c' close; io NULL for the last two) in slot s of ctx; see
 * whether slot s's request is answered (1: done, -1: failed, why in why[0..n), 0: not
 * yet; o: its io, NULL for 'f' and 'c'); wait until the deadline for progress (P2_OK, or
 * the backend killed); drop the connection; the library's last error; and what the
 * engine calls a flush. */
struct req_hooks {
    int (*send)(p2_backend *b, char kind, const p2_io *io, unsigned s, void *ctx);
    int (*answered)(p2_backend *b, char kind, const p2_io *o, unsigned s, void *ctx, char *why, size_t n);
    int (*wait)(p2_backend *b, uint64_t deadline, const char *what, p2_err *err);
    void (*drop)(p2_backend *b);
    const char *(*why)(p2_backend *b);
    const char *flush;
};

/* Run up to n requests (kind 'r' or 'w'; one for 'f' and 'c'), P2_SERVER_INFLIGHT at a
 * time, each to completion or to the deadline, counting what succeeded.  A request's slot
 * stays put until it is answered (a library may hold its address).  A request the server
 * fails fails the call (the connection still good); one that cannot be sent, or a
 * connection that fails or passes the deadline, kills the backend. */
static int backend_run(p2_backend *b, const struct req_hooks *h, void *ctx, const p2_io *io, unsigned n,
                       char kind, p2_err *err)
{
    const char *what = kind == 'r' ? "a read" : kind == 'w' ? "a write" : kind == 'f' ? h->flush : "the close";
    if (b->dead)
        return backend_fail(b, err, P2_EIO, "%s", b->why);
    unsigned total = kind == 'f' || kind == 'c' ? 1 : n;
    uint64_t t0 = now_ns(), deadline = t0 / 1000000u + (uint64_t)b->timeout_ms;
    unsigned io_of[P2_SERVER_INFLIGHT];
    int busy[P2_SERVER_INFLIGHT] = {0};
    unsigned next = 0, done = 0;
    int failed = 0;
    char why[256] = "";
    while (done < total) {
        for (unsigned s = 0; s < P2_SERVER_INFLIGHT && next < total; s++) {
            if (busy[s])
                continue;
            if (h->send(b, kind, io != NULL ? &io[next] : NULL, s, ctx) != 0) {
                snprintf(why, sizeof why, "%s", h->why(b));
                h->drop(b);
                return backend_kill(b, err, "cannot send %s: %s", what, why);
            }
            busy[s] = 1;
            io_of[s] = next++;
            if (next - done > b->st->inflight)
                b->st->inflight = next - done;
        }
        for (unsigned s = 0; s < P2_SERVER_INFLIGHT; s++) {   /* retire what was answered */
            const p2_io *o = busy[s] && io != NULL ? &io[io_of[s]] : NULL;
            char w[200];
            int r = busy[s] ? h->answered(b, kind, o, s, ctx, w, sizeof w) : 0;
            if (r == 0)
                continue;
            busy[s] = 0;
            done++;
            if (r < 0) {
                if (!failed)
                    snprintf(why, sizeof why, "%s (offset %" PRIu64 ")", w, o ? o->off : (uint64_t)0);
                failed = 1;
            } else if (kind == 'r') {
                b->st->reads++;
                b->st->bytes_read += o->len;
            } else if (kind == 'w') {
                b->st->writes++;
                b->st->bytes_written += o->len;
            } else if (kind == 'f') {
                b->st->flushes++;
            }
        }
        if (done < total) {
            int rc = h->wait(b, deadline, what, err);
            if (rc != P2_OK)
                return rc;
        }
    }
    backend_delay(b, t0, total);
    if (failed)   /* the server answered with an error: the connection is still good */
        return backend_fail(b, err, P2_EIO, "the server failed %s: %s", what, why);
    return P2_OK;
}

/* nbd's requests: libnbd's cookies, one a slot. */
static int nbd_send(p2_backend *b, char kind, const p2_io *io, unsigned s, void *ctx)
{
    const nbd_cb none = {NULL, NULL, NULL};
    int64_t c = kind == 'r' ? nbdl.aio_pread(b->nbd, io->buf, (size_t)io->len, io->off, none, 0)
              : kind == 'w' ? nbdl.aio_pwrite(b->nbd, io->buf, (size_t)io->len, io->off, none, 0)
                            : nbdl.aio_flush(b->nbd, none, 0);
    ((int64_t *)ctx)[s] = c;
    return c < 0 ? -1 : 0;
}

static int nbd_answered(p2_backend *b, char kind, const p2_io *o, unsigned s, void *ctx, char *why, size_t n)
{
    (void)kind;
    (void)o;
    int r = nbdl.aio_command_completed(b->nbd, (uint64_t)((int64_t *)ctx)[s]);
    if (r < 0)
        snprintf(why, n, "%s", nbd_why());
    return r < 0 ? -1 : r > 0;
}

static const char *nbd_why_b(p2_backend *b)
{
    (void)b;
    return nbd_why();
}

static const struct req_hooks nbd_hooks = {nbd_send, nbd_answered, nbd_wait, nbd_drop, nbd_why_b, "a flush"};

static int nbd_run(p2_backend *b, const p2_io *io, unsigned n, char kind, p2_err *err)
{
    int64_t cookie[P2_SERVER_INFLIGHT];
    return backend_run(b, &nbd_hooks, cookie, io, n, kind, err);
}

static int nbd_readv(p2_backend *b, const p2_io *io, unsigned n, p2_err *err)
{
    return nbd_run(b, io, n, 'r', err);
}

static int nbd_writev(p2_backend *b, const p2_io *io, unsigned n, p2_err *err)
{
    return nbd_run(b, io, n, 'w', err);
}

static int nbd_flush(p2_backend *b, p2_err *err)
{
    if (!b->dead && b->nbd != NULL && nbdl.can_flush(b->nbd) != 1)
        return P2_OK;    /* the server writes through: nothing to flush */
    return nbd_run(b, NULL, 1, 'f', err);
}

static int nbd_grow(p2_backend *b, uint64_t size, p2_err *err)
{
    if (size <= b->size)
        return P2_OK;
    return backend_fail(b, err, P2_ENOMEM, "the database needs %" PRIu64 " bytes, more than the %" PRIu64
                        " the export holds (an NBD export does not grow: serve a larger one)",
                        size, b->size);
}

static void nbd_close_backend(p2_backend *b)
{
    nbd_drop(b);
}

static const struct backend_ops nbd_ops = {"nbd", nbd_readv, nbd_writev, nbd_flush, nbd_grow, nbd_close_backend};

static int nbd_open(p2_backend *b, p2_err *err)
{
    if (!nbd_load())
        return backend_fail(b, err, P2_EIO, "%s", nbdl.why);
    b->ops = &nbd_ops;
    b->nbd = nbdl.create();
    if (b->nbd == NULL)
        return backend_fail(b, err, P2_ENOMEM, "cannot create a libnbd handle: %s", nbd_why());
    uint64_t deadline = now_ms() + (uint64_t)b->timeout_ms;
    if (nbdl.aio_connect_uri(b->nbd, b->uri) != 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", nbd_why());
        nbd_drop(b);
        return backend_fail(b, err, P2_EIO, "cannot connect to the server: %s", why);
    }
    while (nbdl.aio_is_ready(b->nbd) != 1) {
        if (nbdl.aio_is_dead(b->nbd) == 1) {
            char why[256];
            snprintf(why, sizeof why, "%s", nbd_why());
            nbd_drop(b);
            return backend_fail(b, err, P2_EIO, "cannot connect to the server: %s", why);
        }
        int rc = nbd_wait(b, deadline, "the connection", err);
        if (rc != P2_OK)
            return rc;
    }
    int64_t size = nbdl.get_size(b->nbd);
    if (size < 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", nbd_why());
        nbd_drop(b);
        return backend_fail(b, err, P2_EIO, "cannot learn the export's size: %s", why);
    }
    if (nbdl.is_read_only(b->nbd) == 1) {
        nbd_drop(b);
        return backend_fail(b, err, P2_EIO, "the export is read-only");
    }
    b->size = (uint64_t)size;
    return P2_OK;
}


/* ------------------------------------------------------------------------
 * 8.3 nfs: libnfs (NFSv3), loaded at the first open -- the paper's file server
 *
 * nfs://HOST/EXPORT/FILE: one file of an NFSv3 export (NFS-Ganesha; libnfs finds the
 * mount and NFS ports through the host's rpcbind, so the URI names no port).  Reads and
 * writes go through libnfs's async calls, P2_SERVER_INFLIGHT in flight, driven by this
 * runtime's poll loop with the same deadline and death as nbd's: past the deadline the
 * context is destroyed (libnfs then cancels every call; a cancelled read copies
 * nothing).  Writes are NFS UNSTABLE and flush sends a COMMIT, unless the open asked for
 * synchronous writes (p2_server_sync_writes, pageserver(writes = sync)): the file is
 * then opened O_SYNC, every WRITE is FILE_SYNC (durable before the server answers, the
 * paper's NFS) and flush sends nothing.  A missing FILE is created (empty: open builds
 * the database there); the file grows with SETATTR (ftruncate).  The open's steps (the
 * mount: rpcbind, MNT, the NFS connection; the file's lookup, maybe its creation; its
 * attributes) are async calls driven by the same poll loop, the whole open within one
 * deadline (P2_SERVER_TIMEOUT_MS) and the close's COMMIT within another; only the host
 * name's resolution (getaddrinfo, inside the mount) and a growth (SETATTR, a sync call
 * bounded by libnfs's own timeout, whole seconds) are not under this runtime's clock.
 * The file's handle is libnfs's to free at a close; where the context is dropped instead
 * (a failed open, a dead backend) it is freed here, after the context.
 * ------------------------------------------------------------------------ */

/* The libnfs 4.0 ABI (libnfs.h; soname libnfs.so.13). */
typedef void (*nfs_cb_fn)(int status, void *nfs, void *data, void *private_data);
typedef struct {
    char *server;
    char *path;
    char *file;
} nfs_url_abi;
typedef struct {
    uint64_t dev, ino, mode, nlink, uid, gid, rdev, size, blksize, blocks;
    uint64_t atime, mtime, ctime, atime_nsec, mtime_nsec, ctime_nsec, used;
} nfs_stat64_abi;

static struct nfs_lib {
    int tried, ok;
    char why[256];
    void *(*init_context)(void);
    void (*destroy_context)(void *nfs);
    char *(*get_error)(void *nfs);
    nfs_url_abi *(*parse_url_full)(void *nfs, const char *url);
    void (*destroy_url)(nfs_url_abi *u);
    void (*set_timeout)(void *nfs, int ms);
    void (*set_autoreconnect)(void *nfs, int retries);
    int (*mount_async)(void *nfs, const char *server, const char *export_name, nfs_cb_fn cb, void *priv);
    int (*open_async)(void *nfs, const char *path, int flags, nfs_cb_fn cb, void *priv);
    int (*creat_async)(void *nfs, const char *path, int mode, nfs_cb_fn cb, void *priv);
    int (*close_async)(void *nfs, void *fh, nfs_cb_fn cb, void *priv);
    int (*fstat64_async)(void *nfs, void *fh, nfs_cb_fn cb, void *priv);
    void (*free_fh)(void *fh);   /* nfs_free_nfsfh: exported, not in libnfs.h (libnfs-private.h) */
    int (*truncate)(void *nfs, void *fh, uint64_t length);   /* not "ftruncate": fault.c defines that as a macro */
    int (*get_fd)(void *nfs);
    int (*which_events)(void *nfs);
    int (*service)(void *nfs, int revents);
    int (*pread_async)(void *nfs, void *fh, uint64_t off, uint64_t count, nfs_cb_fn cb, void *priv);
    int (*pwrite_async)(void *nfs, void *fh, uint64_t off, uint64_t count, const void *buf, nfs_cb_fn cb,
                        void *priv);
    int (*fsync_async)(void *nfs, void *fh, nfs_cb_fn cb, void *priv);
} nfsl;

static int nfs_load(void)
{
    if (nfsl.tried)
        return nfsl.ok;
    nfsl.tried = 1;
    void *so = dlopen("libnfs.so.13", RTLD_NOW | RTLD_LOCAL);
    if (so == NULL) {
        snprintf(nfsl.why, sizeof nfsl.why, "libnfs is not installed (%s): install the Debian "
                 "package libnfs13 (libnfs-dev to build against it), e.g. apt-get install libnfs-dev", dlerror());
        return 0;
    }
    const dl_sym syms[] = {
        {"nfs_init_context", &nfsl.init_context},
        {"nfs_destroy_context", &nfsl.destroy_context},
        {"nfs_get_error", &nfsl.get_error},
        {"nfs_parse_url_full", &nfsl.parse_url_full},
        {"nfs_destroy_url", &nfsl.destroy_url},
        {"nfs_set_timeout", &nfsl.set_timeout},
        {"nfs_set_autoreconnect", &nfsl.set_autoreconnect},
        {"nfs_mount_async", &nfsl.mount_async},
        {"nfs_open_async", &nfsl.open_async},
        {"nfs_creat_async", &nfsl.creat_async},
        {"nfs_close_async", &nfsl.close_async},
        {"nfs_fstat64_async", &nfsl.fstat64_async},
        {"nfs_free_nfsfh", &nfsl.free_fh},
        {"nfs_ftruncate", &nfsl.truncate},
        {"nfs_get_fd", &nfsl.get_fd},
        {"nfs_which_events", &nfsl.which_events},
        {"nfs_service", &nfsl.service},
        {"nfs_pread_async", &nfsl.pread_async},
        {"nfs_pwrite_async", &nfsl.pwrite_async},
        {"nfs_fsync_async", &nfsl.fsync_async},
    };
    const char *lacks = dl_bind(so, syms, sizeof syms / sizeof syms[0]);
    if (lacks != NULL) {
        snprintf(nfsl.why, sizeof nfsl.why, "libnfs.so.13 lacks %s: install libnfs 4.0 (Debian package libnfs13)", lacks);
        return 0;
    }
    nfsl.ok = 1;
    return 1;
}

/* nfs://HOST/EXPORT/FILE: a host, no port (rpcbind finds them), an export and a file. */
static int nfs_uri_parse(const char *uri, char *why, size_t n)
{
    const char *h = uri + 6, *end = h + strcspn(h, "/?");
    if (end == h) {
        snprintf(why, n, "no host: nfs://HOST/EXPORT/FILE");
        return 0;
    }
    if (memchr(h, ':', (size_t)(end - h)) != NULL) {
        snprintf(why, n, "a port: libnfs finds the NFS and mount ports through the host's rpcbind "
                 "(port 111): nfs://HOST/EXPORT/FILE");
        return 0;
    }
    const char *last = strrchr(end, '/');
    if (*end != '/' || last == end || last[1] == '\0' || strchr(end, '?') != NULL) {
        snprintf(why, n, "no export and file: nfs://HOST/EXPORT/FILE");
        return 0;
    }
    return 1;
}

static __thread int nfs_sync_next;   /* p2_server_sync_writes: the next open's writes are FILE_SYNC */
void p2_server_sync_writes(int on) { nfs_sync_next = on != 0; }

static const char *nfs_why(p2_backend *b)
{
    const char *e = b->nfs != NULL ? nfsl.get_error(b->nfs) : NULL;
    return e != NULL && *e ? e : "connection lost";
}

/* Drop the context: libnfs cancels every call in flight (their callbacks run now, with an
 * error, and copy nothing), so no late answer reaches a buffer.  Then the file's handle,
 * which no call refers to any more (libnfs frees a handle at its close only). */
static void nfs_drop(p2_backend *b)
{
    if (b->nfs != NULL)
        nfsl.destroy_context(b->nfs);
    if (b->nfs_fh != NULL)
        nfsl.free_fh(b->nfs_fh);
    b->nfs = NULL;
    b->nfs_fh = NULL;
}

/* One request's completion: its status and, for a read, where the bytes go; for a step of
 * the open (nfs_step_done), the handle it gives, or the attributes copied into buf. */
typedef struct {
    int done, status;
    void *buf;
    uint64_t len;
    void *fh;
    char why[160];
} nfs_call;

/* Wait, until the deadline, for libnfs to make progress (its socket polled, its calls
 * serviced: their callbacks run here); P2_OK, or the backend killed. */
static int nfs_pump(p2_backend *b, uint64_t deadline, const char *what, p2_err *err)
{
    char why[256];
    uint64_t t = now_ms();
    if (t >= deadline) {
        nfs_drop(b);
        return backend_kill(b, err, "the server did not answer %s within %d ms (P2_SERVER_TIMEOUT_MS); "
                            "the connection was dropped", what, b->timeout_ms);
    }
    struct pollfd pfd = {nfsl.get_fd(b->nfs), (short)nfsl.which_events(b->nfs), 0};
    int left = (int)(deadline - t);
    int pr = poll(&pfd, 1, left < 100 ? left : 100);   /* and libnfs scans its own timeouts */
    if (pr < 0 && errno != EINTR) {
        snprintf(why, sizeof why, "poll: %s", strerror(errno));
        nfs_drop(b);
        return backend_kill(b, err, "the connection failed during %s: %s", what, why);
    }
    if (nfsl.service(b->nfs, pr > 0 ? pfd.revents : 0) < 0) {
        snprintf(why, sizeof why, "%s", nfs_why(b));
        nfs_drop(b);
        return backend_kill(b, err, "the connection failed during %s: %s", what, why);
    }
    return P2_OK;
}

static void nfs_done(int status, void *nfs, void *data, void *priv)
{
    (void)nfs;
    nfs_call *c = (nfs_call *)priv;
    c->done = 1;
    c->status = status;
    if (status < 0) {
        snprintf(c->why, sizeof c->why, "%s", data != NULL ? (const char *)data : strerror(-status));
        return;
    }
    if (c->buf != NULL) {   /* a read: short past the end, zeros there (no data at all for 0 bytes) */
        uint64_t got = data == NULL ? 0 : (uint64_t)status < c->len ? (uint64_t)status : c->len;
        if (got > 0)
            memcpy(c->buf, data, (size_t)got);
        memset((char *)c->buf + got, 0, (size_t)(c->len - got));
    }
}

/* nfs's requests: libnfs's async calls, one a slot, answered through nfs_done. */
static int nfs_send(p2_backend *b, char kind, const p2_io *io, unsigned s, void *ctx)
{
    nfs_call *c = (nfs_call *)ctx + s;
    memset(c, 0, sizeof *c);
    if (kind == 'r') {
        c->buf = io->buf;
        c->len = io->len;
        return nfsl.pread_async(b->nfs, b->nfs_fh, io->off, io->len, nfs_done, c);
    }
    if (kind == 'w')
        return nfsl.pwrite_async(b->nfs, b->nfs_fh, io->off, io->len, io->buf, nfs_done, c);
    if (kind == 'f')
        return nfsl.fsync_async(b->nfs, b->nfs_fh, nfs_done, c);
    int r = nfsl.close_async(b->nfs, b->nfs_fh, nfs_done, c);
    if (r == 0)
        b->nfs_fh = NULL;   /* libnfs's now: freed at the callback, even a cancel's */
    return r;
}

static int nfs_answered(p2_backend *b, char kind, const p2_io *o, unsigned s, void *ctx, char *why, size_t n)
{
    (void)b;
    const nfs_call *c = (const nfs_call *)ctx + s;
    if (!c->done)
        return 0;
    if (c->status < 0 || (kind == 'w' && (uint64_t)c->status < o->len)) {
        snprintf(why, n, "%s", c->status < 0 ? c->why : "a short write");
        return -1;
    }
    return 1;
}

static const struct req_hooks nfs_hooks = {nfs_send, nfs_answered, nfs_pump, nfs_drop, nfs_why, "a commit"};

static int nfs_run(p2_backend *b, const p2_io *io, unsigned n, char kind, p2_err *err)
{
    nfs_call call[P2_SERVER_INFLIGHT];
    return backend_run(b, &nfs_hooks, call, io, n, kind, err);
}

static int nfs_readv(p2_backend *b, const p2_io *io, unsigned n, p2_err *err)
{
    return nfs_run(b, io, n, 'r', err);
}

static int nfs_writev(p2_backend *b, const p2_io *io, unsigned n, p2_err *err)
{
    return nfs_run(b, io, n, 'w', err);
}

static int nfs_flush(p2_backend *b, p2_err *err)
{
    if (b->sync_writes && !b->dead)
        return P2_OK;    /* every write was FILE_SYNC: nothing to commit */
    return nfs_run(b, NULL, 1, 'f', err);
}

/* A sync libnfs call's failure (it waits at most the context's timeout) kills the backend. */
static int nfs_sync_failed(p2_backend *b, p2_err *err, const char *what)
{
    char why[256];
    snprintf(why, sizeof why, "%s", nfs_why(b));
    nfs_drop(b);
    return backend_kill(b, err, "cannot %s: %s", what, why);
}

static int nfs_grow(p2_backend *b, uint64_t size, p2_err *err)
{
    if (size <= b->size)
        return P2_OK;
    if (b->dead)
        return backend_fail(b, err, P2_EIO, "%s", b->why);
    if (nfsl.truncate(b->nfs, b->nfs_fh, size) != 0)
        return nfs_sync_failed(b, err, "extend the file");
    b->size = size;
    return P2_OK;
}

/* The file closed (libnfs sends a COMMIT for a file written since its open), within the
 * deadline; a dead backend's context and handle went at its death (nfs_drop). */
static void nfs_close_backend(p2_backend *b)
{
    if (b->nfs != NULL && b->nfs_fh != NULL && !b->dead) {
        p2_err e;
        p2_err_clear(&e);
        (void)nfs_run(b, NULL, 1, 'c', &e);
    }
    nfs_drop(b);
}

static const struct backend_ops nfs_ops = {"nfs", nfs_readv, nfs_writev, nfs_flush, nfs_grow, nfs_close_backend};

/* A step of the open done: its status, and what it gives (a file's handle, or the file's
 * attributes, copied into buf). */
static void nfs_step_done(int status, void *nfs, void *data, void *priv)
{
    nfs_call *c = (nfs_call *)priv;
    (void)nfs;
    c->done = 1;
    c->status = status;
    if (status < 0)
        snprintf(c->why, sizeof c->why, "%s", data != NULL ? (const char *)data : strerror(-status));
    else if (c->buf != NULL && data != NULL)
        memcpy(c->buf, data, (size_t)c->len);
    else
        c->fh = data;
}

/* Wait for a step of the open (sent: the async call's return; act: what it does, what:
 * what is waited for) until the open's deadline: P2_OK once its callback ran (c->status
 * says how it went), or the open undone. */
static int nfs_step(p2_backend *b, int sent, nfs_call *c, uint64_t deadline, const char *act,
                    const char *what, p2_err *err)
{
    if (sent != 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", nfs_why(b));
        nfs_drop(b);
        return backend_fail(b, err, P2_EIO, "cannot %s: %s", act, why);
    }
    while (!c->done) {
        int rc = nfs_pump(b, deadline, what, err);
        if (rc != P2_OK)
            return rc;
    }
    return P2_OK;
}

/* A step of the open that the server answered with an error: the open undone. */
static int nfs_step_failed(p2_backend *b, const nfs_call *c, const char *what, p2_err *err)
{
    nfs_drop(b);
    return backend_fail(b, err, P2_EIO, "cannot %s: %s", what, c->why);
}

static int nfs_open_backend(p2_backend *b, p2_err *err)
{
    if (!nfs_load())
        return backend_fail(b, err, P2_EIO, "%s", nfsl.why);
    b->ops = &nfs_ops;
    b->sync_writes = nfs_sync_next;
    uint64_t deadline = now_ms() + (uint64_t)b->timeout_ms;   /* the whole open's */
    b->nfs = nfsl.init_context();
    if (b->nfs == NULL)
        return backend_fail(b, err, P2_ENOMEM, "cannot create a libnfs context");
    /* libnfs's own timeout (whole seconds), a backstop behind the deadline; no
       reconnection behind the caller's back (the deadline rule) */
    int64_t whole_s = ((int64_t)b->timeout_ms + 999) / 1000 * 1000;
    nfsl.set_timeout(b->nfs, whole_s > INT_MAX ? INT_MAX : (int)whole_s);
    nfsl.set_autoreconnect(b->nfs, 0);
    nfs_url_abi *u = nfsl.parse_url_full(b->nfs, b->uri);
    if (u == NULL) {
        char why[256];
        snprintf(why, sizeof why, "%s", nfs_why(b));
        nfs_drop(b);
        return backend_fail(b, err, P2_EINVAL, "%s", why);
    }
    int flags = O_RDWR | (b->sync_writes ? O_SYNC : 0);
    nfs_call c = {0};
    int rc = nfs_step(b, nfsl.mount_async(b->nfs, u->server, u->path, nfs_step_done, &c), &c, deadline,
                      "mount the export", "the mount of the export", err);
    if (rc == P2_OK && c.status < 0)
        rc = nfs_step_failed(b, &c, "mount the export", err);
    if (rc == P2_OK) {
        memset(&c, 0, sizeof c);
        rc = nfs_step(b, nfsl.open_async(b->nfs, u->file, flags, nfs_step_done, &c), &c, deadline,
                      "open the file", "the file's open", err);
        b->nfs_fh = rc == P2_OK && c.status == 0 ? c.fh : NULL;
    }
    if (rc == P2_OK && c.status == -ENOENT) {   /* a missing file is created, empty, and opened */
        memset(&c, 0, sizeof c);
        rc = nfs_step(b, nfsl.creat_async(b->nfs, u->file, 0644, nfs_step_done, &c), &c, deadline,
                      "create the file", "the file's creation", err);
        void *fh = c.fh;
        if (rc == P2_OK && c.status == 0) {   /* not written: its close frees it, no request */
            memset(&c, 0, sizeof c);
            rc = nfs_step(b, nfsl.close_async(b->nfs, fh, nfs_step_done, &c), &c, deadline,
                          "create the file", "the new file's close", err);
        }
        if (rc == P2_OK && c.status == 0) {
            memset(&c, 0, sizeof c);
            rc = nfs_step(b, nfsl.open_async(b->nfs, u->file, flags, nfs_step_done, &c), &c, deadline,
                          "open the file", "the file's open", err);
            b->nfs_fh = rc == P2_OK && c.status == 0 ? c.fh : NULL;
        }
        if (rc == P2_OK && c.status < 0)
            rc = nfs_step_failed(b, &c, "create the file", err);
    } else if (rc == P2_OK && c.status < 0) {   /* any other error is the open's */
        rc = nfs_step_failed(b, &c, "open the file", err);
    }
    nfsl.destroy_url(u);
    if (rc != P2_OK)
        return rc;
    /* several small requests in flight: each goes out at once, not held back by Nagle
       until the one before it is acknowledged */
    int one = 1;
    (void)setsockopt(nfsl.get_fd(b->nfs), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nfs_stat64_abi st;
    memset(&c, 0, sizeof c);
    c.buf = &st;
    c.len = sizeof st;
    if (FI_INJECTED(NFS_FSTAT)) {
        nfs_drop(b);
        return backend_fail(b, err, P2_EIO, "cannot learn the file's size: %s", strerror(errno));
    }
    rc = nfs_step(b, nfsl.fstat64_async(b->nfs, b->nfs_fh, nfs_step_done, &c), &c, deadline,
                  "learn the file's size", "the file's attributes", err);
    if (rc == P2_OK && c.status < 0)
        rc = nfs_step_failed(b, &c, "learn the file's size", err);
    if (rc != P2_OK)
        return rc;
    b->size = st.size;
    b->growable = 1;
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * 8.4 redis: hiredis, loaded at the first open
 *
 * An object server's backend (section 10): keys, not offsets.  Every command (or one
 * pipeline of them) waits at most bk->timeout_ms for each answer (the socket's
 * SO_RCVTIMEO / SO_SNDTIMEO through redisSetTimeout, and the connect's own timeout);
 * past it the connection is dropped and the backend is dead, as nbd's.
 * ------------------------------------------------------------------------ */

/* The replies' and the context's first fields, by the ABI of each hiredis generation:
 * 0.14 (Debian bookworm's libhiredis0.14) and 1.x (which added `dval` and `vtype` to a
 * reply, and put a table of functions before the context's error). */
typedef struct {
    int type;
    long long integer;
    size_t len;
    char *str;
    size_t elements;
    void **element;
} redis_reply0;
typedef struct {
    int type;
    long long integer;
    double dval;
    size_t len;
    char *str;
    char vtype[4];
    size_t elements;
    void **element;
} redis_reply1;
typedef struct { int err; char errstr[128]; } redis_ctx0;
typedef struct { const void *funcs; int err; char errstr[128]; } redis_ctx1;

#define REDIS_STRING  1
#define REDIS_ARRAY   2
#define REDIS_INTEGER 3
#define REDIS_NIL     4
#define REDIS_STATUS  5
#define REDIS_ERROR   6

/* A reply, read through the ABI of the loaded library. */
typedef struct {
    int type;
    long long integer;
    const char *str;
    size_t len;
    size_t elements;
    void **element;
} p2_rreply;

static struct redis_lib {
    int tried, ok, v1;
    char why[256];
    void *(*connect)(const char *ip, int port, struct timeval tv);
    int (*set_timeout)(void *c, struct timeval tv);
    int (*append_argv)(void *c, int argc, const char **argv, const size_t *argvlen);
    int (*get_reply)(void *c, void **reply);
    void (*free_reply)(void *reply);
    void (*free_ctx)(void *c);
} redisl;

static int redis_load(void)
{
    if (redisl.tried)
        return redisl.ok;
    redisl.tried = 1;
    static const char *const names[] = {"libhiredis.so.0.14", "libhiredis.so.1.1.0", "libhiredis.so.1.0.0",
                                        "libhiredis.so"};
    void *so = NULL;
    for (size_t i = 0; so == NULL && i < sizeof names / sizeof names[0]; i++)
        so = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (so == NULL) {
        snprintf(redisl.why, sizeof redisl.why, "hiredis is not installed (%s): install the Debian "
                 "package libhiredis0.14 (libhiredis-dev to build against it), e.g. apt-get install "
                 "libhiredis-dev", dlerror());
        return 0;
    }
    const dl_sym syms[] = {
        {"redisConnectWithTimeout", &redisl.connect},
        {"redisSetTimeout", &redisl.set_timeout},
        {"redisAppendCommandArgv", &redisl.append_argv},
        {"redisGetReply", &redisl.get_reply},
        {"freeReplyObject", &redisl.free_reply},
        {"redisFree", &redisl.free_ctx},
    };
    const char *lacks = dl_bind(so, syms, sizeof syms / sizeof syms[0]);
    if (lacks != NULL) {
        snprintf(redisl.why, sizeof redisl.why, "the hiredis library lacks %s: install hiredis >= 0.13 "
                 "(Debian package libhiredis0.14)", lacks);
        return 0;
    }
    redisl.v1 = dlsym(so, "redisConnectWithOptions") != NULL;   /* 1.0 and later */
    redisl.ok = 1;
    return 1;
}

static void redis_read_reply(const void *r, p2_rreply *out)
{
    if (redisl.v1) {
        const redis_reply1 *x = (const redis_reply1 *)r;
        out->type = x->type; out->integer = x->integer; out->str = x->str; out->len = x->len;
        out->elements = x->elements; out->element = x->element;
    } else {
        const redis_reply0 *x = (const redis_reply0 *)r;
        out->type = x->type; out->integer = x->integer; out->str = x->str; out->len = x->len;
        out->elements = x->elements; out->element = x->element;
    }
}

static int redis_ctx_err(const void *c) { return redisl.v1 ? ((const redis_ctx1 *)c)->err : ((const redis_ctx0 *)c)->err; }
static const char *redis_ctx_errstr(const void *c)
{
    return redisl.v1 ? ((const redis_ctx1 *)c)->errstr : ((const redis_ctx0 *)c)->errstr;
}

/* redis://HOST[:PORT][/DB]: the host (at most hn - 1 bytes), port (6379) and database (0). */
static int redis_uri_parse(const char *uri, char *host, size_t hn, int *port, int *db, char *why, size_t n)
{
    const char *h = uri + 8, *end = h + strcspn(h, "/");
    const char *colon = memchr(h, ':', (size_t)(end - h));
    const char *hend = colon ? colon : end;
    if (hend == h) {
        snprintf(why, n, "no host: redis://HOST[:PORT][/DB]");
        return 0;
    }
    unsigned long p = 6379, d = 0;
    if (colon != NULL) {
        char *q;
        p = strtoul(colon + 1, &q, 10);
        if (q == colon + 1 || q != end || p == 0 || p > 65535) {
            snprintf(why, n, "the port is not a number from 1 to 65535");
            return 0;
        }
    }
    if (*end == '/' && end[1] != '\0') {
        char *q;
        d = strtoul(end + 1, &q, 10);
        if (q == end + 1 || *q != '\0' || d > 1000000) {
            snprintf(why, n, "the database is not a number: redis://HOST[:PORT][/DB]");
            return 0;
        }
    }
    if (host != NULL) {
        if ((size_t)(hend - h) >= hn) {
            snprintf(why, n, "the host name is too long");
            return 0;
        }
        memcpy(host, h, (size_t)(hend - h));
        host[hend - h] = '\0';
    }
    if (port != NULL)
        *port = (int)p;
    if (db != NULL)
        *db = (int)d;
    return 1;
}

static void redis_drop(p2_backend *b)
{
    if (b->redis != NULL)
        redisl.free_ctx(b->redis);
    b->redis = NULL;
}

/* Kill the backend after a failed exchange: past the deadline, or the connection lost. */
static int redis_lost(p2_backend *b, const char *what, p2_err *err)
{
    char why[160];
    int timeout = b->redis != NULL && (errno == EAGAIN || errno == EWOULDBLOCK ||
                                       strstr(redis_ctx_errstr(b->redis), "temporarily") != NULL);
    snprintf(why, sizeof why, "%s", b->redis != NULL && redis_ctx_errstr(b->redis)[0] ?
             redis_ctx_errstr(b->redis) : "connection lost");
    redis_drop(b);
    if (timeout)
        return backend_kill(b, err, "the server did not answer %s within %d ms (P2_SERVER_TIMEOUT_MS); "
                            "the connection was dropped", what, b->timeout_ms);
    return backend_kill(b, err, "the connection failed during %s: %s", what, why);
}

/* Send n commands (cmd[i]: argc[i] arguments) in one pipeline and take their replies:
 * each handed to `take` (which must not keep it), in order.  An error reply is the call's
 * failure (P2_EIO naming it) but the connection stays good. */
typedef int (*redis_take_fn)(void *ctx, unsigned i, const p2_rreply *r);

static int redis_pipe(p2_backend *b, unsigned n, const int *argc, const char *const *const *argv,
                      const size_t *const *lens, redis_take_fn take, void *ctx, const char *what, p2_err *err)
{
    if (b->dead)
        return backend_fail(b, err, P2_EIO, "%s", b->why);
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++)
        if (redisl.append_argv(b->redis, argc[i], (const char **)argv[i], lens[i]) != 0)
            return redis_lost(b, what, err);
    int rc = P2_OK;
    for (unsigned i = 0; i < n; i++) {
        void *r = NULL;
        errno = 0;
        if (redisl.get_reply(b->redis, &r) != 0 || r == NULL)
            return redis_lost(b, what, err);
        p2_rreply rr;
        redis_read_reply(r, &rr);
        if (rr.type == REDIS_ERROR && rc == P2_OK)
            rc = backend_fail(b, err, P2_EIO, "the server failed %s: %.*s", what, (int)(rr.len > 200 ? 200 : rr.len),
                              rr.str ? rr.str : "");
        else if (take != NULL && rc == P2_OK)
            rc = take(ctx, i, &rr);
        redisl.free_reply(r);
    }
    backend_delay(b, t0, n);
    return rc;
}

/* One command. */
static int redis_cmd(p2_backend *b, int argc, const char *const *argv, const size_t *lens,
                     redis_take_fn take, void *ctx, const char *what, p2_err *err)
{
    return redis_pipe(b, 1, &argc, &argv, &lens, take, ctx, what, err);
}

static int redis_no_bytes(p2_backend *b, const p2_io *io, unsigned n, p2_err *err)
{
    (void)io;
    (void)n;
    return backend_fail(b, err, P2_EINVAL, "a Redis server holds objects, not a segment of bytes: "
                        "use it with objserver, not pageserver");
}

static int redis_flush(p2_backend *b, p2_err *err)
{
    (void)b;
    (void)err;
    return P2_OK;     /* EXEC answers once the server has applied the transaction */
}

static int redis_grow(p2_backend *b, uint64_t size, p2_err *err)
{
    (void)err;
    if (size > b->size)
        b->size = size;
    return P2_OK;
}

static const struct backend_ops redis_ops = {"redis", redis_no_bytes, redis_no_bytes, redis_flush, redis_grow,
                                             redis_drop};

static int redis_take_ok(void *ctx, unsigned i, const p2_rreply *r)
{
    (void)ctx;
    (void)i;
    (void)r;
    return P2_OK;
}

static int redis_open(p2_backend *b, p2_err *err)
{
    if (!redis_load())
        return backend_fail(b, err, P2_EIO, "%s", redisl.why);
    char host[256], why[128];
    int port, db;
    if (!redis_uri_parse(b->uri, host, sizeof host, &port, &db, why, sizeof why))
        return backend_fail(b, err, P2_EINVAL, "%s", why);
    struct timeval tv = {b->timeout_ms / 1000, (b->timeout_ms % 1000) * 1000};
    b->ops = &redis_ops;
    b->redis = redisl.connect(host, port, tv);
    if (b->redis == NULL)
        return backend_fail(b, err, P2_ENOMEM, "cannot create a hiredis context");
    if (redis_ctx_err(b->redis)) {
        snprintf(why, sizeof why, "%s", redis_ctx_errstr(b->redis));
        redis_drop(b);
        return backend_fail(b, err, P2_EIO, "cannot connect to the server: %s", why);
    }
    if (redisl.set_timeout(b->redis, tv) != 0) {
        redis_drop(b);
        return backend_fail(b, err, P2_EIO, "cannot set the server's timeout");
    }
    char dbs[16];
    snprintf(dbs, sizeof dbs, "%d", db);
    const char *argv[] = {"SELECT", dbs};
    const size_t lens[] = {6, strlen(dbs)};
    int rc = redis_cmd(b, 2, argv, lens, redis_take_ok, NULL, "the connection", err);
    if (rc != P2_OK) {
        redis_drop(b);
        return rc;
    }
    b->growable = 1;
    b->size = UINT64_MAX;
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * 8.5 opening a backend by its URI
 * ------------------------------------------------------------------------ */

/* Is `uri` of a form the runtime serves?  The checker applies the same rules
 * (layers/pageserver.py, layers/objserver.py), so a spec's URI is refused at build time. */
static int backend_uri_ok(const char *uri, char *why, size_t n)
{
    if (strncmp(uri, "file://", 7) == 0) {
        if (uri[7] != '/') {
            snprintf(why, n, "a file URI names an absolute path: file:///PATH");
            return 0;
        }
        return 1;
    }
    if (strncmp(uri, "redis://", 8) == 0)
        return redis_uri_parse(uri, NULL, 0, NULL, NULL, why, n);
    if (strncmp(uri, "nfs://", 6) == 0)
        return nfs_uri_parse(uri, why, n);
    if (strncmp(uri, "nbd://", 6) != 0) {
        snprintf(why, n, "not a server URI: nbd://HOST[:PORT][/EXPORT], nfs://HOST/EXPORT/FILE or file:///PATH");
        return 0;
    }
    const char *h = uri + 6, *end = h + strcspn(h, "/");
    const char *colon = memchr(h, ':', (size_t)(end - h));
    if ((colon ? colon : end) == h) {
        snprintf(why, n, "no host: nbd://HOST[:PORT][/EXPORT]");
        return 0;
    }
    if (colon != NULL) {
        char *q;
        unsigned long port = strtoul(colon + 1, &q, 10);
        if (q == colon + 1 || q != end || port == 0 || port > 65535) {
            snprintf(why, n, "the port is not a number from 1 to 65535");
            return 0;
        }
    }
    return 1;
}

/* Open the backend of `uri`; b->st must point at the counters. */
static int backend_open(p2_backend *b, const char *uri, p2_err *err)
{
    b->fd = -1;
    b->nbd = NULL;
    b->redis = NULL;
    b->nfs = NULL;
    b->nfs_fh = NULL;
    b->sync_writes = 0;
    b->dead = 0;
    size_t len = strlen(uri);
    if (len >= sizeof b->uri)
        return p2_err_set(err, P2_EINVAL, "server URI is %zu bytes long, at most %zu allowed",
                          len, sizeof b->uri - 1);
    memcpy(b->uri, uri, len + 1);
    char why[128];
    if (!backend_uri_ok(uri, why, sizeof why))
        return backend_fail(b, err, P2_EINVAL, "%s", why);
    b->timeout_ms = P2_SERVER_TIMEOUT_MS;
    const char *t = getenv("P2_SERVER_TIMEOUT_MS");
    if (t != NULL && *t) {
        long v = strtol(t, NULL, 10);
        if (v > 0 && v < INT_MAX)
            b->timeout_ms = (int)v;
    }
    /* a cost model (p2gen bench acob --cost 1990): a delay per request, by engine */
    b->delay_us = 0;
    b->delay_owed_ns = 0;
    const char *d = strncmp(uri, "redis://", 8) == 0 ? getenv("P2_SERVER_DELAY_REDIS_US")
                  : strncmp(uri, "nbd://", 6) == 0 ? getenv("P2_SERVER_DELAY_NBD_US")
                  : strncmp(uri, "nfs://", 6) == 0 ? getenv("P2_SERVER_DELAY_NFS_US") : NULL;
    if (d != NULL && *d) {
        long v = strtol(d, NULL, 10);
        if (v > 0 && v <= 10000000)
            b->delay_us = (uint32_t)v;
    }
    if (strncmp(uri, "redis://", 8) == 0)
        return redis_open(b, err);
    if (strncmp(uri, "nfs://", 6) == 0)
        return nfs_open_backend(b, err);
    return strncmp(uri, "file://", 7) == 0 ? file_open(b, uri + 7, err) : nbd_open(b, err);
}
