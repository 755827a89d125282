/* ==========================================================================
 * 1. Fault injection (test builds only: compiled with -DP2_FAULT_INJECT)
 *
 * The environment variable P2_FAULT names system calls of this file that fail, so that
 * tests can make a disk fill up or an fdatasync fail at an exact moment:
 *     P2_FAULT="CALL:FROM[-[TO]][:ENOSPC|EIO],..."
 * fails the FROM-th call of CALL (counted from 1) through the TO-th (no TO: only the
 * FROM-th; "FROM-": that one and every later one) with that errno (default ENOSPC for
 * writes and allocation, EIO for syncs and reads, ENOMEM for mappings). CALL is one of
 * pwrite, pwritev, fdatasync, fallocate (posix_fallocate), ftruncate, msync, pread,
 * mprotect, and two that are no libc call of that name, failed where the runtime asks
 * FI_INJECTED(name): uffdio_copy (a page server's UFFDIO_COPY) and nfs_fstat (the file's
 * attributes at an NFS open). Counting restarts whenever the variable's value changes, so
 * a program can set it just before the operation under test. Release builds contain none
 * of this.
 * ========================================================================== */

#ifdef P2_FAULT_INJECT
enum { FI_PWRITE, FI_PWRITEV, FI_FDATASYNC, FI_FALLOCATE, FI_FTRUNCATE, FI_MSYNC, FI_PREAD,
       FI_MPROTECT, FI_UFFDIO_COPY, FI_NFS_FSTAT, FI_N };
static const char *const fi_names[FI_N] = {"pwrite", "pwritev", "fdatasync", "fallocate",
                                           "ftruncate", "msync", "pread", "mprotect",
                                           "uffdio_copy", "nfs_fstat"};
/* the errno a call fails with unless P2_FAULT names one */
static const int fi_errno[FI_N] = {ENOSPC, ENOSPC, EIO, ENOSPC, ENOSPC, EIO, EIO, ENOMEM,
                                   ENOMEM, EIO};
static char fi_seen[512];
static unsigned long fi_count[FI_N];

/* 0, or the errno the next call of `call` must fail with. */
static int fi_fault(int call)
{
    const char *spec = getenv("P2_FAULT");
    if (spec == NULL)
        spec = "";
    if (strncmp(spec, fi_seen, sizeof fi_seen) != 0) {
        snprintf(fi_seen, sizeof fi_seen, "%s", spec);
        memset(fi_count, 0, sizeof fi_count);
    }
    unsigned long n = ++fi_count[call];
    size_t len = strlen(fi_names[call]);
    for (const char *p = spec; *p != '\0';) {
        const char *end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        if (strncmp(p, fi_names[call], len) == 0 && p[len] == ':') {
            char *q;
            unsigned long from = strtoul(p + len + 1, &q, 10), to = from;
            if (*q == '-') {
                q++;
                to = (*q >= '0' && *q <= '9') ? strtoul(q, &q, 10) : ULONG_MAX;
            }
            int e = fi_errno[call];
            if (*q == ':' && strncmp(q + 1, "EIO", 3) == 0)
                e = EIO;
            else if (*q == ':' && strncmp(q + 1, "ENOSPC", 6) == 0)
                e = ENOSPC;
            if (n >= from && n <= to)
                return e;
        }
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

static ssize_t fi_pwrite(int fd, const void *b, size_t n, off_t o)
{
    int e = fi_fault(FI_PWRITE);
    if (e != 0) { errno = e; return -1; }
    return pwrite(fd, b, n, o);
}
static ssize_t fi_pwritev(int fd, const struct iovec *v, int c, off_t o)
{
    int e = fi_fault(FI_PWRITEV);
    if (e != 0) { errno = e; return -1; }
    return pwritev(fd, v, c, o);
}
static int fi_fdatasync(int fd)
{
    int e = fi_fault(FI_FDATASYNC);
    if (e != 0) { errno = e; return -1; }
    return fdatasync(fd);
}
static int fi_posix_fallocate(int fd, off_t o, off_t n)
{
    int e = fi_fault(FI_FALLOCATE);
    return e != 0 ? e : posix_fallocate(fd, o, n);
}
static int fi_ftruncate(int fd, off_t n)
{
    int e = fi_fault(FI_FTRUNCATE);
    if (e != 0) { errno = e; return -1; }
    return ftruncate(fd, n);
}
static int fi_msync(void *a, size_t n, int f)
{
    int e = fi_fault(FI_MSYNC);
    if (e != 0) { errno = e; return -1; }
    return msync(a, n, f);
}
static ssize_t fi_pread(int fd, void *b, size_t n, off_t o)
{
    int e = fi_fault(FI_PREAD);
    if (e != 0) { errno = e; return -1; }
    return pread(fd, b, n, o);
}
static int fi_mprotect(void *a, size_t n, int prot)
{
    int e = fi_fault(FI_MPROTECT);
    if (e != 0) { errno = e; return -1; }
    return mprotect(a, n, prot);
}
/* 1 (errno set) where P2_FAULT fails this call of `call`: FI_INJECTED(UFFDIO_COPY) */
static int fi_injected(int call)
{
    int e = fi_fault(call);
    if (e != 0)
        errno = e;
    return e != 0;
}
#define FI_INJECTED(call) fi_injected(FI_##call)
#define pread(fd, b, n, o) fi_pread(fd, b, n, o)
#define mprotect(a, n, prot) fi_mprotect(a, n, prot)
#define pwrite(fd, b, n, o) fi_pwrite(fd, b, n, o)
#define pwritev(fd, v, c, o) fi_pwritev(fd, v, c, o)
#define fdatasync(fd) fi_fdatasync(fd)
#define posix_fallocate(fd, o, n) fi_posix_fallocate(fd, o, n)
#define ftruncate(fd, n) fi_ftruncate(fd, n)
#define msync(a, n, f) fi_msync(a, n, f)
#else
#define FI_INJECTED(call) 0
#endif /* P2_FAULT_INJECT */
