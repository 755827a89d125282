/* p2_runtime.c - the p2gen runtime, which every generated data manager links (p2gen copies
 * this one file into each output directory).  p2_runtime.h is its manual: the design, the
 * file formats and the contract of every function.
 *
 * Developed as files by subsystem under runtime/src/ and shipped as this one file, their
 * concatenation in the order below, each fenced "Begin file" / "End of" (as SQLite's
 * amalgamation): edit the files in runtime/src/, then `bash scripts/amalgamate.sh`
 * (a test fails while this file and runtime/src/ disagree).  The sections, in order:
 *
 *   src/head.c             this comment, the system headers
 *   1. Fault injection     src/fault.c: test builds only, make chosen system calls fail
 *   2. Errors              src/errors.c: p2_strerror, p2_err_set, p2_err_clear
 *   3. CRC-32              src/crc.c: p2_crc32, slicing-by-8
 *   3a. CRC-32C            p2_crc32c: the CPU's instruction, or slicing-by-8 tables
 *   4. Persistent segment  src/segment.c: one file mapped with mmap, blocks at offsets
 *      4.1 on-disk layout  struct p2_seg_header (the table in p2_runtime.h)
 *      4.2 helpers         errors naming the file, header and roots checksums, growth
 *      4.3 allocator       p2_seg_alloc, p2_seg_free, p2_seg_realloc
 *      4.4 validation      the checks an existing file passes at open
 *      4.4a write audit    src/write_audit.c: test builds only, every change announced
 *      4.5 open, sync, close   src/segment_open.c
 *      4.6 recovery        src/segment_recover.c: of plain segments, p2_seg_open_recover
 *                          (`p2gen recover`)
 *   5. Journalled segments src/journal.c: atomic, durable transactions over a segment
 *                          (the `journal` and `wal` memory layers): a log beside the file
 *      5.1 journal format and process-wide state
 *      5.2 write tracking  a SIGSEGV handler finds the first write to each page
 *      5.3 journal file    whole reads and writes, record checksums, the journal header
 *      5.4 replay at open  committed transactions of the log into the data file, each
 *                          record checked against the size its transaction committed
 *      5.5 commit, checkpoint, abort
 *      5.5a record log     src/record_log.c: the write hook, commit and abort of
 *                          record-logged (`wal`) segments
 *      5.5b record log     which transactions over several files every file holds
 *      5.6 open and close  src/journal_open.c: of a journalled segment
 *   6. Integrity checks    src/verify.c: p2_verify_*, p2_seg_verify, p2_seg_contains,
 *                          what the generated <prefix>_verify functions build on
 *   7. Reference sets      src/refset.c: p2_refset_*, the elements a cursor already moved
 *   8. Server backends     src/backend.c: where a page server's segment lives, a table of
 *                          callbacks per engine, every request with a deadline
 *      8.1 file            a local file through pread / pwrite
 *      8.2 nbd             libnbd, loaded with dlopen at the first open
 *      8.3 nfs             libnfs (NFSv3), loaded with dlopen at the first open (a file server)
 *      8.4 redis           hiredis, loaded with dlopen at the first open (an object server's)
 *      8.5 opening         a backend by its URI
 *   9. Page servers        src/pageserver.c: the client buffer (frames, clock, dirty set,
 *                          write-back); pages fault in through userfaultfd (a handler
 *                          thread), else through SIGSEGV; the clock and first writes trap
 *                          by mprotect and SIGSEGV either way
 *      9.1 userfaultfd     faults through a userfaultfd and its handler thread
 *      9.2 hooks           what section 4 calls for a segment on a server
 *      9.3 open, counters  p2_seg_open_server, p2_seg_server_stats, _drop
 *      9.4 ship = ranges   the hybrid: pages read, announced byte ranges written back
 *      9.5 transactions    src/pagelog.c: a journal or wal over a page server, its log on
 *                          a second export; the writer's lease, readers
 *  10. Object servers      src/objserver.c: the client object cache over Redis (a block per
 *                          key, software check, pins until the next call, MULTI ... EXEC)
 *      10.1 memory calls   p2_obj_enter, p2_obj_ptr, p2_obj_alloc, _free, _realloc
 *      10.2 transactions   the read set checked, commit (one MULTI ... EXEC of objects,
 *                          deletions and cells), abort; sync and close commit
 *      10.3 open           p2_seg_open_objserver
 */

#define _GNU_SOURCE
#define _DEFAULT_SOURCE

#include "p2_runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <stdatomic.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#endif

/************** Begin file fault.c *****************************************************/
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
/************** End of fault.c *********************************************************/

/************** Begin file errors.c ****************************************************/
/* ==========================================================================
 * 2. Errors
 * ========================================================================== */

const char *p2_strerror(int code)
{
    switch (code) {
#define P2_STRERROR_CASE_(name, value, message) case name: return #name ": " message;
    P2_ERROR_LIST(P2_STRERROR_CASE_)
#undef P2_STRERROR_CASE_
    default: return "unknown error";
    }
}

static int err_vset(p2_err *e, int code, const char *prefix, const char *fmt, va_list ap)
{
    if (e == NULL)
        return code;
    e->code = code;
    size_t n = 0;
    if (prefix != NULL) {
        int k = snprintf(e->msg, sizeof e->msg, "%s: ", prefix);
        n = k < 0 ? 0 : (size_t)k;
        if (n >= sizeof e->msg)
            return code; /* prefix alone filled the buffer (truncated, NUL-terminated) */
    }
    if (fmt != NULL)
        vsnprintf(e->msg + n, sizeof e->msg - n, fmt, ap);
    else
        snprintf(e->msg + n, sizeof e->msg - n, "%s", p2_strerror(code));
    return code;
}

int (p2_err_set)(p2_err *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(e, code, NULL, fmt, ap);
    va_end(ap);
    return code;
}

void p2_err_clear(p2_err *e)
{
    if (e != NULL) {
        e->code = P2_OK;
        e->msg[0] = '\0';
    }
}
/************** End of errors.c ********************************************************/

/************** Begin file crc.c *******************************************************/
/* ==========================================================================
 * 3. CRC-32 (reflected polynomial 0xEDB88320, as zlib)
 * ========================================================================== */

static const uint32_t crc_table[256] = {
    0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u, 0x706af48fu,
    0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u,
    0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u, 0x1db71064u, 0x6ab020f2u,
    0xf3b97148u, 0x84be41deu, 0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u,
    0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u,
    0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
    0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu, 0x35b5a8fau, 0x42b2986cu,
    0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u,
    0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u,
    0xcfba9599u, 0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
    0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u, 0x01db7106u,
    0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
    0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du,
    0x91646c97u, 0xe6635c01u, 0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu,
    0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
    0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u,
    0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u, 0x4adfa541u, 0x3dd895d7u,
    0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
    0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau,
    0xbe0b1010u, 0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
    0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u, 0x2eb40d81u,
    0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au,
    0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u, 0xe3630b12u, 0x94643b84u,
    0x0d6d6a3eu, 0x7a6a5aa8u, 0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
    0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu,
    0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu,
    0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u, 0xd6d6a3e8u, 0xa1d1937eu,
    0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu,
    0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u,
    0x316e8eefu, 0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
    0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu, 0xb2bd0b28u,
    0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du,
    0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au, 0x9c0906a9u, 0xeb0e363fu,
    0x72076785u, 0x05005713u, 0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u,
    0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u,
    0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
    0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu, 0x8f659effu, 0xf862ae69u,
    0x616bffd3u, 0x166ccf45u, 0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u,
    0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu,
    0x40df0b66u, 0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
    0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u, 0xcdd70693u,
    0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
    0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du,
};

/* Slicing-by-8 (Intel, Kounavis and Berry): crc_slice[k][b] is the CRC of byte b followed
 * by k zero bytes, so eight input bytes take eight table look-ups and no serial byte loop.
 * Same results as the byte-wise table above; about 5x faster, which matters to the journal
 * (it checksums every page it writes). Built on first use. */
static uint32_t crc_slice[8][256];
static int crc_slice_ready;

#if defined(__GNUC__) || defined(__clang__)
/* at load time, so that segments used from different threads never race to build it */
static void crc_slice_init(void) __attribute__((constructor));
#endif
static void crc_slice_init(void)
{
    for (int b = 0; b < 256; b++) {
        uint32_t c = crc_table[b];
        crc_slice[0][b] = c;
        for (int k = 1; k < 8; k++) {
            c = crc_table[c & 0xffu] ^ (c >> 8);
            crc_slice[k][b] = c;
        }
    }
    crc_slice_ready = 1;
}

/* Slicing-by-8 over the tables t (t[k][b]: the CRC of byte b followed by k zero bytes)
 * of a reflected CRC, on the register value crc (no pre- or post-inversion): CRC-32 and
 * CRC-32C's software path share it. */
static uint32_t crc_slice8(const uint32_t t[8][256], uint32_t crc, const unsigned char *p,
                           size_t len)
{
    for (; ((uintptr_t)p & 7u) != 0 && len > 0; len--)
        crc = t[0][(crc ^ *p++) & 0xffu] ^ (crc >> 8);
    for (; len >= 8; len -= 8, p += 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = t[7][lo & 0xffu] ^ t[6][(lo >> 8) & 0xffu] ^ t[5][(lo >> 16) & 0xffu] ^
              t[4][lo >> 24] ^ t[3][hi & 0xffu] ^ t[2][(hi >> 8) & 0xffu] ^
              t[1][(hi >> 16) & 0xffu] ^ t[0][hi >> 24];
    }
    while (len--)
        crc = t[0][(crc ^ *p++) & 0xffu] ^ (crc >> 8);
    return crc;
}

uint32_t p2_crc32(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    if (len < 16) {          /* a few bytes: the tables' set-up and alignment cost more */
        crc = ~crc;
        while (len--)
            crc = crc_table[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
        return ~crc;
    }
    if (!crc_slice_ready)
        crc_slice_init();
    return ~crc_slice8((const uint32_t (*)[256])crc_slice, ~crc, p, len);
}

/* ==========================================================================
 * 3a. CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the record log's checksums
 * ========================================================================== */

/* The record log checksums every record of every commit, a few hundred bytes each time,
 * where the table-driven CRC-32 above was a sixth of a commit's CPU: CRC-32C has an
 * instruction on x86-64 (SSE4.2) and on ARMv8 (the CRC extension). Chosen once per
 * process by what the CPU has; slicing-by-8 tables give the same values without it, and
 * P2_CRC32C_SOFTWARE=1 in the environment forces them (tests compare both). */
static uint32_t crc32c_slice[8][256];
static int crc32c_mode = -1;            /* -1 not chosen yet; 0 tables; 1 instructions */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_HW_NAME "sse4.2"
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
    uint64_t c = crc;
    for (; len > 0 && ((uintptr_t)p & 7u) != 0; len--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
    }
    for (; len > 0; len--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return (uint32_t)c;
}
static int crc32c_hw_present(void)
{
    __builtin_cpu_init();       /* may run before the constructor that would call it */
    return __builtin_cpu_supports("sse4.2");
}
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
/* built for a CPU with the CRC extension (e.g. -march=armv8.1-a): no detection needed */
#include <arm_acle.h>
#define CRC32C_HW_NAME "armv8-crc"
static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
    for (; len > 0 && ((uintptr_t)p & 7u) != 0; len--)
        crc = __crc32cb(crc, *p++);
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        crc = __crc32cd(crc, w);
    }
    for (; len > 0; len--)
        crc = __crc32cb(crc, *p++);
    return crc;
}
static int crc32c_hw_present(void) { return 1; }
#endif

static void crc32c_choose(void)
{
    for (int b = 0; b < 256; b++) {
        uint32_t c = (uint32_t)b;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
        crc32c_slice[0][b] = c;
    }
    for (int b = 0; b < 256; b++) {
        uint32_t c = crc32c_slice[0][b];
        for (int k = 1; k < 8; k++) {
            c = crc32c_slice[0][c & 0xffu] ^ (c >> 8);
            crc32c_slice[k][b] = c;
        }
    }
    const char *soft = getenv("P2_CRC32C_SOFTWARE");
    int hw = 0;
#ifdef CRC32C_HW_NAME
    hw = !(soft != NULL && soft[0] != '\0' && strcmp(soft, "0") != 0) && crc32c_hw_present();
#else
    (void)soft;
#endif
    crc32c_mode = hw;
}

#if defined(__GNUC__) || defined(__clang__)
static void crc32c_init(void) __attribute__((constructor));
static void crc32c_init(void) { crc32c_choose(); }
#endif

static uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t len)
{
    return crc_slice8((const uint32_t (*)[256])crc32c_slice, crc, p, len);
}

uint32_t p2_crc32c(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    if (crc32c_mode < 0)
        crc32c_choose();
#ifdef CRC32C_HW_NAME
    if (crc32c_mode == 1)
        return ~crc32c_hw(~crc, p, len);
#endif
    return ~crc32c_sw(~crc, p, len);
}

const char *p2_crc32c_impl(void)
{
    if (crc32c_mode < 0)
        crc32c_choose();
#ifdef CRC32C_HW_NAME
    if (crc32c_mode == 1)
        return CRC32C_HW_NAME;
#endif
    return "software";
}
/************** End of crc.c ***********************************************************/

/************** Begin file segment.c ***************************************************/
/* ==========================================================================
 * 4. Persistent segment (design in p2_runtime.h, @ref segment)
 * ========================================================================== */

/* ------------------------------------------------------------------------
 * 4.1 Persistent segment: on-disk layout
 * ------------------------------------------------------------------------ */

#define SEG_MAGIC       "P2GENDB"   /* 7 characters + NUL = 8 bytes */
#define SEG_STATE_CLEAN 0u
#define SEG_STATE_OPEN  1u
#define SEG_ALIGN       16u         /* alignment of every block */
#define SMALL_MIN       16u         /* smallest size class */
#define SMALL_MAX       2048u       /* largest size class */
#define NCLASSES        8           /* 16, 32, 64, ..., 2048 */
#define NEXACT          (SMALL_MAX / SEG_ALIGN)   /* exact size classes: 16, 32, 48, ..., 2048 */
#define EXACT_TABLE     (NEXACT * sizeof(p2_off)) /* their free-list heads (the class table) */
#define LARGE_UNIT      4096u       /* large blocks are multiples of this */
#define SEG_LINE        64u         /* a large block taken at brk starts on a line */
#define SEG_MAX_RESERVE (UINT64_C(1) << 60)  /* keeps offset arithmetic overflow-free */

struct p2_seg_root_entry {
    char     name[P2_ROOT_NAME_SIZE];  /* NUL-terminated */
    p2_off   off;                      /* root block */
    uint64_t size;                     /* its size, as passed to p2_seg_open() */
};

struct p2_seg_header {
    char     magic[8];                 /* SEG_MAGIC */
    uint32_t version;                  /* P2_SEG_VERSION */
    uint32_t header_size;              /* P2_SEG_HEADER_SIZE */
    uint32_t page_size;                /* of the creating machine; informational */
    uint32_t state;                    /* SEG_STATE_CLEAN or SEG_STATE_OPEN */
    uint64_t fingerprint;              /* of the spec / equation */
    uint64_t file_size;                /* the file is at least this long */
    uint64_t brk;                      /* end of the allocated area */
    p2_off   free_small[NCLASSES];     /* LIFO lists of free 16..2048-byte blocks */
    p2_off   free_large;               /* address-ordered list of free large blocks */
    uint32_t nroots;                   /* entries used in roots[] */
    uint32_t checksum;                 /* CRC-32 of the header with this field 0 */
    uint32_t journal;                  /* 1: a journalled file, committed at least once */
    uint32_t roots_sealed;             /* 1: roots_crc is set */
    uint32_t roots_crc;                /* CRC-32 of every root block, in order, as of the last
                                          sync or close (a journalled file: close) */
    uint32_t zero0;                    /* zero (alignment) */
    uint64_t data_seq;                 /* journalled files: the last transaction whose pages
                                          are in this file (written at every journal flush) */
    char     desc[P2_SEG_DESC_SIZE];   /* what made the file: spec and equations, NUL-padded,
                                          possibly cut short; all zero in older files */
    uint64_t map_base;                 /* 0: references are offsets; else a fixed-address
                                          file (p2_seg_open_fixed): the address it maps at */
    struct p2_seg_root_entry roots[P2_MAX_ROOTS];
};

_Static_assert(sizeof(p2_off) == 8, "offsets are 64-bit");
_Static_assert(sizeof(struct p2_seg_root_entry) == 64, "root entry is 64 bytes");
_Static_assert(offsetof(struct p2_seg_header, magic) == 0, "header layout");
_Static_assert(offsetof(struct p2_seg_header, version) == 8, "header layout");
_Static_assert(offsetof(struct p2_seg_header, header_size) == 12, "header layout");
_Static_assert(offsetof(struct p2_seg_header, page_size) == 16, "header layout");
_Static_assert(offsetof(struct p2_seg_header, state) == 20, "header layout");
_Static_assert(offsetof(struct p2_seg_header, fingerprint) == 24, "header layout");
_Static_assert(offsetof(struct p2_seg_header, file_size) == 32, "header layout");
_Static_assert(offsetof(struct p2_seg_header, brk) == 40, "header layout");
_Static_assert(offsetof(struct p2_seg_header, free_small) == 48, "header layout");
_Static_assert(offsetof(struct p2_seg_header, free_large) == 112, "header layout");
_Static_assert(offsetof(struct p2_seg_header, nroots) == 120, "header layout");
_Static_assert(offsetof(struct p2_seg_header, checksum) == 124, "header layout");
_Static_assert(offsetof(struct p2_seg_header, journal) == 128, "header layout");
_Static_assert(offsetof(struct p2_seg_header, roots_crc) == 136, "header layout");
_Static_assert(offsetof(struct p2_seg_header, data_seq) == 144, "header layout");
_Static_assert(offsetof(struct p2_seg_header, desc) == 152, "header layout");
_Static_assert(offsetof(struct p2_seg_header, map_base) == 248, "header layout");
_Static_assert(offsetof(struct p2_seg_header, roots) == 256, "header layout");
_Static_assert(sizeof(struct p2_seg_header) == P2_SEG_HEADER_SIZE, "header is one 4096-byte page");
_Static_assert(sizeof(SEG_MAGIC) == 8, "magic is 8 bytes");
_Static_assert((SMALL_MIN << (NCLASSES - 1)) == SMALL_MAX, "size classes");
_Static_assert(P2_SEG_HEADER_SIZE % SEG_ALIGN == 0, "first block is aligned");
_Static_assert(EXACT_TABLE == P2_SEG_EXACT_TABLE_SIZE, "class table size");
_Static_assert(sizeof(P2_SEG_EXACT_ROOT) <= P2_ROOT_NAME_SIZE, "class table root name fits");

/* Bookkeeping stored inside free blocks (in-use blocks have none). */
struct small_free { p2_off next; };
struct large_free { p2_off next; uint64_t size; };

/* ------------------------------------------------------------------------
 * 4.2 Persistent segment: helpers
 * ------------------------------------------------------------------------ */

static int seg_fail(const p2_seg *seg, p2_err *err, int code, const char *fmt, ...) P2_PRINTF_LIKE(4, 5);

/* A page-server segment (seg->pb, section 9) reaches its server through these where a
 * local file is read, extended or msync'ed. */
static int pb_read(p2_seg *seg, void *buf, uint64_t n, uint64_t off, p2_err *err);
static int pb_grow(p2_seg *seg, uint64_t want, p2_err *err);
static int pb_sync(p2_seg *seg, p2_err *err);
static int pb_close(p2_seg *seg, p2_err *err);
static int pb_check(const p2_seg *seg, p2_err *err);
/* ... and one under a journal or wal commits through its log export (section 9.5). */
static int pl_txn(const p2_seg *seg);
static uint64_t pl_pending(const p2_seg *seg);
static int pl_reader(const p2_seg *seg);
static int pl_commit(p2_seg *seg, p2_err *err);
static int pl_abort(p2_seg *seg, p2_err *err);

/* Store an error whose message starts with the segment's path. */
static int seg_fail(const p2_seg *seg, p2_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, code, seg->path, fmt, ap);
    va_end(ap);
    return code;
}

static void seg_reset(p2_seg *seg)
{
    seg->fd = -1;
    seg->base = NULL;
    seg->mapped = 0;
    seg->reserved = 0;
    seg->hdr = NULL;
    seg->journal = 0;
    seg->log_fd = -1;
    seg->pgsize = 0;
    seg->log_end = 0;
    seg->log_alloc = 0;
    seg->log_fresh = 0;
    seg->seq = 0;
    seg->unsynced = 0;
    seg->dirty_bits = seg->unflushed_bits = seg->kept_bits = NULL;
    seg->dirty = seg->unflushed = seg->kept = NULL;
    seg->ndirty = seg->nunflushed = seg->nkept = 0;
    seg->img_off = NULL;
    seg->track_bytes = 0;
    seg->ckpt_failed = 0;
    seg->recovering = 0;
    seg->fixed = 0;
    seg->reloc_allowed = 0;
    seg->relocated = 0;
    seg->reloc_from = 0;
    seg->reloc_pct = 0;
    seg->reloc_written = 0;
    seg->reloc_disk_hdr = NULL;
    seg->rec_unclean = 0;
    seg->rec_lists_dropped = 0;
    seg->rec_journal = 0;
    seg->alloc_exact = 0;
    seg->class_table = 0;
    seg->rec_tx_dropped = 0;
    seg->will_write = NULL;
    seg->will_write_ctx = NULL;
    seg->undo = seg->redo = NULL;
    seg->undo_len = seg->undo_cap = seg->redo_cap = 0;
    seg->undo_at = NULL;
    seg->nundo = seg->undo_at_cap = 0;
    seg->cov = NULL;
    seg->cov_cap = 0;
    seg->cov_slot = NULL;
    seg->undo_lost = 0;
    seg->peers = NULL;
    seg->peer_idx = NULL;
    seg->npeers = 0;
    seg->log_map = NULL;
    seg->log_mapped = 0;
    seg->log_hot = 0;
    seg->open_keep = seg->open_log_made = 0;
    seg->open_data_bytes = seg->open_log_bytes = seg->open_seq = 0;
    seg->open_undo = NULL;
    seg->open_undo_len = seg->open_undo_cap = 0;
    seg->pb = NULL;
}

/* How a journalled segment's private mapping is protected: read-only under the page journal
 * (the first write to each page faults: that is how it learns the page changed), writable
 * under the record log (every write is announced through the write hook instead). */
static int journal_prot(const p2_seg *seg)
{
    return seg->journal && !seg->jopts.record ? PROT_READ : PROT_READ | PROT_WRITE;
}

/* The side file of a journalled segment: `<path>-journal` (pages) or `<path>-wal` (records). */
#define LOG_SUFFIX(seg) ((seg)->jopts.record ? "-wal" : "-journal")

static uint64_t page_size(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    return pg > 0 ? (uint64_t)pg : 4096u;
}

/* Files grow in whole granules: 64 KiB, or the page size if that is larger. */
static uint64_t seg_granule(void)
{
    uint64_t pg = page_size();
    return pg > P2_SEG_GRANULE ? pg : P2_SEG_GRANULE;
}

/* x rounded up to a multiple of the power of two a (x must not overflow). */
static uint64_t round_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) & ~(a - 1);
}

/* CRC-32 of a header, its checksum field taken as 0. */
static uint32_t header_crc(const struct p2_seg_header *h)
{
    static const unsigned char zero[sizeof h->checksum];
    const unsigned char *p = (const unsigned char *)h;
    const size_t at = offsetof(struct p2_seg_header, checksum);
    uint32_t crc = p2_crc32(0, p, at);
    crc = p2_crc32(crc, zero, sizeof zero);
    return p2_crc32(crc, p + at + sizeof zero, P2_SEG_HEADER_SIZE - at - sizeof zero);
}

/* CRC-32 of every root block of a mapped segment, in root order. */
static uint32_t roots_crc_mapped(const p2_seg *seg)
{
    uint32_t crc = 0;
    for (uint32_t i = 0; i < seg->hdr->nroots; i++)
        crc = p2_crc32(crc, seg->base + seg->hdr->roots[i].off, (size_t)seg->hdr->roots[i].size);
    return crc;
}

/* Seal the roots: record their checksum in the header (which the caller checksums). */
static void roots_seal(p2_seg *seg)
{
    uint32_t crc = roots_crc_mapped(seg);
    if (!seg->hdr->roots_sealed || seg->hdr->roots_crc != crc) {   /* no needless page write */
        seg->hdr->roots_crc = crc;
        seg->hdr->roots_sealed = 1;
    }
}

/* Size of the block actually used for a request of size bytes under the segment's size
 * classes: up to 2048 bytes a power of two from 16 (pow2) or a multiple of 16 (exact),
 * else a multiple of 4096; 0 if too large. */
static uint64_t block_size_for(int exact, uint64_t size)
{
    if (size <= SMALL_MAX) {
        if (exact)
            return size == 0 ? SMALL_MIN : round_up(size, SEG_ALIGN);
        uint64_t b = SMALL_MIN;
        while (b < size)
            b <<= 1;
        return b;
    }
    if (size > SEG_MAX_RESERVE)
        return 0;
    return round_up(size, LARGE_UNIT);
}

static uint64_t block_size(const p2_seg *seg, uint64_t size)
{
    return block_size_for(seg->alloc_exact, size);
}

/* Number of small size classes of the segment: 8 (pow2) or 128 (exact). */
static unsigned nclasses(const p2_seg *seg)
{
    return seg->alloc_exact ? NEXACT : NCLASSES;
}

/* Block size of small class c (pow2: 16 << c; exact: 16 * (c + 1)). */
static uint64_t class_size(const p2_seg *seg, unsigned c)
{
    return seg->alloc_exact ? (uint64_t)SEG_ALIGN * (c + 1) : (uint64_t)SMALL_MIN << c;
}

/* Free-list index of a small block size (pow2: 16 -> 0, ..., 2048 -> 7; exact: 16 -> 0,
 * 32 -> 1, ..., 2048 -> 127). */
static unsigned small_class(const p2_seg *seg, uint64_t bs)
{
    if (seg->alloc_exact)
        return (unsigned)(bs / SEG_ALIGN - 1);
    unsigned c = 0;
    while (((uint64_t)SMALL_MIN << c) < bs)
        c++;
    return c;
}

/* The head of small free list c: in the header (pow2), or in the class table, a block of
 * the file named by the root table (exact: 128 heads do not fit in the header). */
static p2_off *small_head(const p2_seg *seg, unsigned c)
{
    if (seg->alloc_exact)
        return (p2_off *)(void *)(seg->base + seg->class_table) + c;
    return &seg->hdr->free_small[c];
}

/* Does a root list end with the class table of exact size classes? */
static int roots_exact(uint32_t nroots, const char *const *names)
{
    return nroots > 0 && names[nroots - 1] != NULL && strcmp(names[nroots - 1], P2_SEG_EXACT_ROOT) == 0;
}

/* ... and the root table of a header? */
static int header_exact(const struct p2_seg_header *h)
{
    if (h->nroots == 0 || h->nroots > P2_MAX_ROOTS)
        return 0;
    const struct p2_seg_root_entry *r = &h->roots[h->nroots - 1];
    return memcmp(r->name, P2_SEG_EXACT_ROOT, sizeof P2_SEG_EXACT_ROOT) == 0;
}

/* Does [off, off + bs) lie inside the allocated area [header, brk)? */
static int block_ok(const p2_seg *seg, p2_off off, uint64_t bs)
{
    uint64_t brk = seg->hdr->brk;
    return off >= P2_SEG_HEADER_SIZE && off % SEG_ALIGN == 0 && off <= brk && bs <= brk - off;
}

static struct small_free *small_at(const p2_seg *seg, p2_off off)
{
    return (struct small_free *)(void *)(seg->base + off);
}

static struct large_free *large_at(const p2_seg *seg, p2_off off)
{
    return (struct large_free *)(void *)(seg->base + off);
}

/* Is off a plausible node of the large free list?  Checking that the list is
 * address-ordered also guarantees that every walk terminates. */
static int large_node_ok(const p2_seg *seg, p2_off off)
{
    if (!block_ok(seg, off, LARGE_UNIT))
        return 0;
    const struct large_free *b = large_at(seg, off);
    if (b->size < LARGE_UNIT || b->size % LARGE_UNIT != 0 || b->size > seg->hdr->brk - off)
        return 0;
    return b->next == 0 || b->next >= off + b->size;
}

static int corrupt_list(const p2_seg *seg, p2_err *err, uint64_t bs, p2_off off)
{
    if (bs <= SMALL_MAX)
        return seg_fail(seg, err, P2_EFORMAT,
                        "corrupt free list for %" PRIu64 "-byte blocks: bad block at offset %" PRIu64,
                        bs, off);
    return seg_fail(seg, err, P2_EFORMAT,
                    "corrupt free list for large blocks: bad block at offset %" PRIu64, off);
}

/* What a user can do about a reservation too small (or too large to get): the generated
 * code passes the spec's persistent(reserve = ...) of the file (messages start with the
 * file's path). */
#define SEG_RESERVE_HINT "set by persistent(reserve = ...) for this file in the spec"

/* Reserve the address range [base, base + seg->reserved). */
static int seg_reserve(p2_seg *seg, p2_err *err)
{
    void *p = mmap(NULL, (size_t)seg->reserved, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        return seg_fail(seg, err, P2_ENOMEM, "cannot reserve %" PRIu64 " bytes of address space (%s): "
                        "%s", seg->reserved, SEG_RESERVE_HINT, strerror(e));
    }
    seg->base = (char *)p;
    return P2_OK;
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000   /* Linux >= 4.17; older C libraries lack the name */
#endif

/* Fixed-address segments: reserve exactly [at, at + seg->reserved), never replacing a
 * mapping already there (MAP_FIXED_NOREPLACE). Returns P2_OK, or -1 if the range is
 * taken (errno EEXIST), with nothing reserved; other failures are errors. A kernel older
 * than 4.17 takes the flag for a hint and may map elsewhere: that is refused too. */
static int seg_reserve_at(p2_seg *seg, uint64_t at, p2_err *err)
{
    void *p = mmap((void *)(uintptr_t)at, (size_t)seg->reserved, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        if (e == EEXIST)
            return -1;
        return seg_fail(seg, err, P2_ENOMEM, "cannot reserve %" PRIu64 " bytes of address space at 0x%"
                        PRIx64 " (%s): %s", seg->reserved, at, SEG_RESERVE_HINT, strerror(e));
    }
    if ((uint64_t)(uintptr_t)p != at) {
        munmap(p, (size_t)seg->reserved);
        return seg_fail(seg, err, P2_ENOMEM, "the kernel does not support MAP_FIXED_NOREPLACE (Linux 4.17 "
                        "or later is needed to map a file at a fixed address without replacing what "
                        "is there): cannot open a mapped file");
    }
    seg->base = (char *)p;
    return P2_OK;
}

/* A new fixed-address segment: the first free slot of the quiet range, slots being the
 * reservation rounded up to 1 GiB, starting from one that differs per file and per
 * creation (path, fingerprint, clock, process), so that files created apart rarely
 * claim the same range and can be opened together. */
static int seg_reserve_new_fixed(p2_seg *seg, uint64_t fingerprint, p2_err *err)
{
    const uint64_t gib = UINT64_C(1) << 30;
    uint64_t slot = round_up(seg->reserved, gib);
    uint64_t nslots = (P2_SEG_FIXED_HI - P2_SEG_FIXED_LO) / slot;
    if (nslots == 0)
        return seg_fail(seg, err, P2_ENOMEM, "a reservation of %" PRIu64 " bytes does not fit the %" PRIu64
                        " bytes of address space mapped files share (%s)", seg->reserved,
                        P2_SEG_FIXED_HI - P2_SEG_FIXED_LO, SEG_RESERVE_HINT);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const char *c = seg->path; *c; c++)
        h = (h ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
    h ^= fingerprint;
    h = (h ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32)) * UINT64_C(0x9e3779b97f4a7c15);
    h = (h ^ (uint64_t)getpid()) * UINT64_C(0x9e3779b97f4a7c15);
    uint64_t start = (h >> 17) % nslots, tries = nslots < 256 ? nslots : 256;
    for (uint64_t i = 0; i < tries; i++) {
        int rc = seg_reserve_at(seg, P2_SEG_FIXED_LO + ((start + i) % nslots) * slot, err);
        if (rc >= 0)
            return rc;
    }
    return seg_fail(seg, err, P2_ENOMEM, "no free range of %" PRIu64 " bytes left for a mapped file in "
                    "[0x%" PRIx64 ", 0x%" PRIx64 ") (%" PRIu64 " tried)", slot, P2_SEG_FIXED_LO,
                    P2_SEG_FIXED_HI, tries);
}

/* Forced relocation for measurements (see @ref fixed): P2_MAPPED_RELOCATE=P, 1..100;
 * 0 when unset or not a number in that range. */
static unsigned forced_relocation(void)
{
    const char *s = getenv("P2_MAPPED_RELOCATE");
    char *end;
    if (s == NULL || *s == '\0')
        return 0;
    unsigned long v = strtoul(s, &end, 10);
    return *end == '\0' && v >= 1 && v <= 100 ? (unsigned)v : 0;
}

/* An existing fixed-address segment: its recorded base, checked before anything is
 * mapped (a base this runtime never chooses is a corrupt or crafted header), then
 * reserved; if the range is taken, the open is refused, or with relocation allowed the
 * file goes to a free slot of the quiet range (seg->relocated: the caller relocates). */
static int seg_reserve_recorded(p2_seg *seg, uint64_t at, uint64_t file_size, uint64_t fingerprint,
                                p2_err *err)
{
    if (at % P2_SEG_GRANULE != 0 || at < P2_SEG_FIXED_LO || at >= P2_SEG_FIXED_HI
        || file_size > P2_SEG_FIXED_HI - at)
        return seg_fail(seg, err, P2_EFORMAT, "recorded base address 0x%" PRIx64 " is not valid (mapped "
                        "files lie at multiples of %u in [0x%" PRIx64 ", 0x%" PRIx64 ")): file is corrupt",
                        at, (unsigned)P2_SEG_GRANULE, P2_SEG_FIXED_LO, P2_SEG_FIXED_HI);
    uint64_t want = seg->reserved;
    if (seg->reserved > P2_SEG_FIXED_HI - at)
        seg->reserved = P2_SEG_FIXED_HI - at;   /* the quiet range ends there; the file fits */
    unsigned forced = seg->reloc_allowed ? forced_relocation() : 0;
    int rc = seg_reserve_at(seg, at, err);
    if (rc > 0)
        return rc;
    if (rc == 0 && forced > 0 && forced < 100) {
        /* a share of the file relocated in place (delta 0): mapped privately at its base */
        seg->relocated = 1;
        seg->reloc_from = at;
        seg->reloc_pct = forced;
        return P2_OK;
    }
    if (rc == 0 && forced == 0)
        return P2_OK;
    if (!seg->reloc_allowed)
        return seg_fail(seg, err, P2_ENOMEM, "the address range [0x%" PRIx64 ", 0x%" PRIx64 ") the file "
                        "is mapped at is taken by another mapping in this process (another mapped "
                        "file, or a library): its references are addresses there, so it cannot be "
                        "opened elsewhere (mapped(relocate = true) would relocate it in memory)",
                        at, at + seg->reserved);
    /* Taken (or forced whole: the recorded range, reserved just now, stays taken while the
     * new slot is chosen, so that it cannot be chosen again). */
    char *held = rc == 0 ? seg->base : NULL;
    uint64_t held_len = seg->reserved;
    seg->base = NULL;
    seg->reserved = want;
    rc = seg_reserve_new_fixed(seg, fingerprint, err);
    if (held != NULL)
        munmap(held, (size_t)held_len);
    if (rc != P2_OK)
        return rc;
    if (seg->reserved < file_size) {
        munmap(seg->base, (size_t)seg->reserved);
        seg->base = NULL;
        return seg_fail(seg, err, P2_ENOMEM, "file is %" PRIu64 " bytes, more than the address-space "
                        "reservation of %" PRIu64 " bytes (" SEG_RESERVE_HINT ")", file_size, seg->reserved);
    }
    seg->relocated = 1;
    seg->reloc_from = at;
    seg->reloc_pct = 100;
    return P2_OK;
}

/* A relocated segment's write hook: the first write marks the open as written (its close
 * writes the image back); then the hook is not needed any more. */
static void reloc_note_write(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    (void)ctx;
    (void)off;
    (void)n;
    seg->reloc_written = 1;
    seg->will_write = NULL;
    seg->will_write_ctx = NULL;
}

void p2_seg_reloc_begin(p2_seg *seg, p2_reloc *rl)
{
    rl->lo = seg->reloc_from + P2_SEG_HEADER_SIZE;
    rl->span = seg->hdr->brk - P2_SEG_HEADER_SIZE;
    rl->delta = (uint64_t)(uintptr_t)seg->base - seg->reloc_from;
    rl->base = seg->base;
    rl->pct = seg->reloc_pct;
    rl->moved = 0;
}

void p2_seg_reloc_end(p2_seg *seg, const p2_reloc *rl)
{
    (void)rl;
    seg->hdr->map_base = (uint64_t)(uintptr_t)seg->base;   /* this copy only */
}

/* Extend the file from seg->mapped to want bytes with its disk blocks reserved
 * (posix_fallocate), not sparsely: in a sparse file the first write to a new page of the
 * shared mapping is what allocates its block, and on a full file system that write is a
 * SIGBUS that kills the process (and leaves a plain file marked OPEN). Reserved here, a
 * full disk is an error of the call that grows. Where the file system cannot reserve
 * (EOPNOTSUPP, EINVAL) the file is extended sparsely, as before. */
static int seg_extend_file(p2_seg *seg, uint64_t want, p2_err *err)
{
    int e = posix_fallocate(seg->fd, (off_t)seg->mapped, (off_t)(want - seg->mapped));
    if (e == EOPNOTSUPP || e == EINVAL || e == ENOSYS)
        e = ftruncate(seg->fd, (off_t)want) == 0 ? 0 : errno;
    if (e == 0)
        return P2_OK;
    if (e == ENOSPC || e == EDQUOT)
        return seg_fail(seg, err, P2_EIO,
                        "disk full: cannot reserve %" PRIu64 " more bytes to grow the file to %" PRIu64
                        " bytes (%s); nothing was changed: free some space and retry",
                        want - seg->mapped, want, strerror(e));
    return seg_fail(seg, err, P2_EIO, "cannot extend the file to %" PRIu64 " bytes: %s",
                    want, strerror(e));
}

/* A growing file is extended past what it needs by 1/2^SEG_GROW_SHIFT of its mapped size. */
#define SEG_GROW_SHIFT 5

/* Make sure at least need bytes of the file are mapped: extend the file and map the new
 * tail right after the mapped part. The file grows geometrically, by a small factor: to
 * need plus 1/32 of its mapped size (a granule at least). Nothing is copied (the base
 * never moves), so a growth costs two system calls besides the new tail's blocks; a step
 * in proportion to the size keeps the growths few (logarithmic: about 370 from one
 * granule to 64 GiB; the kernel merges the tails into one mapping) and their calls
 * amortised O(1) per byte, while the file's allocated size stays within about 3 % of what
 * is in use, where doubling left up to half of a large file unused. */
static int seg_grow(p2_seg *seg, uint64_t need, p2_err *err)
{
    if (need <= seg->mapped)
        return P2_OK;
    if (need > seg->reserved && seg->pb != NULL)
        return seg_fail(seg, err, P2_ENOMEM,
                        "the database needs %" PRIu64 " bytes, more than the %" PRIu64 " this open may "
                        "use (the export's size, or pageserver(reserve = ...))", need, seg->reserved);
    if (need > seg->reserved)
        return seg_fail(seg, err, P2_ENOMEM,
                        "segment needs %" PRIu64 " bytes, more than its address-space reservation "
                        "of %" PRIu64 " bytes (" SEG_RESERVE_HINT ")",
                        need, seg->reserved);
    uint64_t g = seg_granule();
    uint64_t step = seg->mapped >> SEG_GROW_SHIFT;
    if (step < g)
        step = g;
    uint64_t want = need + step;        /* no overflow: need <= reserved <= 2^60 */
    if (want > seg->reserved)
        want = seg->reserved;           /* a multiple of g, and >= need */
    want = round_up(want, g);

    if (seg->pb != NULL) {              /* a page server: new pages are zero, faulted in */
        int prc = pb_grow(seg, want, err);
        if (prc != P2_OK)
            return prc;
        seg->mapped = want;
        if (seg->hdr != NULL)
            seg->hdr->file_size = want;
        return P2_OK;
    }
    int rc = seg_extend_file(seg, want, err);
    if (rc != P2_OK && want > round_up(need, g)) {
        want = round_up(need, g);       /* no room for the step: what this call needs may fit */
        rc = seg_extend_file(seg, want, err);
    }
    if (rc != P2_OK)
        return rc;
    /* A journalled segment maps private and read-only: writes fault and are tracked. */
    void *p = mmap(seg->base + seg->mapped, (size_t)(want - seg->mapped),
                   journal_prot(seg),
                   (seg->journal || seg->relocated ? MAP_PRIVATE : MAP_SHARED) | MAP_FIXED, seg->fd,
                   (off_t)seg->mapped);
    if (p == MAP_FAILED) {
        int e = errno;
        /* Undo: shrink the file back and make sure the tail is reserved again. */
        if (ftruncate(seg->fd, (off_t)seg->mapped) != 0) {
            /* nothing more to do; the header still records the old size */
        }
        (void)mmap(seg->base + seg->mapped, (size_t)(seg->reserved - seg->mapped), PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        return seg_fail(seg, err, P2_ENOMEM, "cannot map %" PRIu64 " more bytes of the file: %s",
                        want - seg->mapped, strerror(e));
    }
    seg->mapped = want;
    if (seg->hdr != NULL) {
        p2_seg_will_write(seg, &seg->hdr->file_size, sizeof seg->hdr->file_size);
        seg->hdr->file_size = want;
    }
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * 4.3 Persistent segment: allocator
 * ------------------------------------------------------------------------ */

/* Take bs bytes at brk, extending the file as needed. */
static int brk_take(p2_seg *seg, uint64_t bs, p2_off *out, p2_err *err)
{
    p2_off off = seg->hdr->brk;
    int rc = seg_grow(seg, off + bs, err);   /* no overflow: off, bs <= reserved <= 2^60 */
    if (rc != P2_OK)
        return rc;
    p2_seg_will_write(seg, &seg->hdr->brk, sizeof seg->hdr->brk);
    seg->hdr->brk = off + bs;
    *out = off;
    return P2_OK;
}

/* First fit on the large free list; splits off the tail of a bigger block.
 * *out = 0 if no free block is big enough. */
static int large_take(p2_seg *seg, uint64_t bs, p2_off *out, p2_err *err)
{
    p2_off *link = &seg->hdr->free_large;
    *out = 0;
    while (*link != 0) {
        p2_off off = *link;
        if (!large_node_ok(seg, off))
            return corrupt_list(seg, err, LARGE_UNIT, off);
        struct large_free *b = large_at(seg, off);
        if (b->size >= bs) {
            if (b->size == bs) {
                p2_seg_will_write(seg, link, sizeof *link);
                *link = b->next;
            } else {
                p2_seg_will_write(seg, &b->size, sizeof b->size);
                b->size -= bs;        /* keep the head on the list, hand out the tail */
                off += b->size;
            }
            *out = off;
            return P2_OK;
        }
        link = &b->next;
    }
    return P2_OK;
}

/* Take the first extra bytes of the free large block starting exactly at
 * `at`, if there is one that big.  Returns 1 if taken. */
static int large_take_at(p2_seg *seg, p2_off at, uint64_t extra)
{
    p2_off *link = &seg->hdr->free_large;
    while (*link != 0 && *link < at) {
        if (!large_node_ok(seg, *link))
            return 0;
        link = &large_at(seg, *link)->next;
    }
    if (*link != at || !large_node_ok(seg, at))
        return 0;
    struct large_free *b = large_at(seg, at);
    if (b->size < extra)
        return 0;
    p2_seg_will_write(seg, link, sizeof *link);
    if (b->size == extra) {
        *link = b->next;
    } else {
        struct large_free rest = { b->next, b->size - extra };
        p2_seg_will_write(seg, large_at(seg, at + extra), sizeof rest);
        *large_at(seg, at + extra) = rest;
        *link = at + extra;
    }
    return 1;
}

/* Insert [off, off + bs) into the address-ordered large free list, merging
 * it with free neighbours.  A corrupt list or a block overlapping a free one
 * (double free) is left alone: the block is leaked rather than the damage
 * spread. */
static void large_release(p2_seg *seg, p2_off off, uint64_t bs)
{
    p2_off *link = &seg->hdr->free_large;
    p2_off prev = 0;
    while (*link != 0 && *link < off) {
        if (!large_node_ok(seg, *link))
            return;
        prev = *link;
        link = &large_at(seg, prev)->next;
    }
    p2_off next = *link;
    if (next != 0 && (!large_node_ok(seg, next) || next < off + bs))
        return;
    if (prev != 0 && prev + large_at(seg, prev)->size > off)
        return;

    struct large_free *b = large_at(seg, off);
    p2_seg_will_write(seg, b, sizeof *b);
    b->size = bs;
    b->next = next;
    if (next != 0 && off + bs == next) {
        b->size += large_at(seg, next)->size;
        b->next = large_at(seg, next)->next;
    }
    if (prev != 0 && prev + large_at(seg, prev)->size == off) {
        p2_seg_will_write(seg, large_at(seg, prev), sizeof *b);
        large_at(seg, prev)->size += b->size;
        large_at(seg, prev)->next = b->next;
    } else {
        p2_seg_will_write(seg, link, sizeof *link);
        *link = off;
    }
}

static void small_push(p2_seg *seg, unsigned cls, p2_off off)
{
    p2_off *head = small_head(seg, cls);
    p2_seg_will_write(seg, small_at(seg, off), sizeof(struct small_free));
    p2_seg_will_write(seg, head, sizeof(p2_off));
    small_at(seg, off)->next = *head;
    *head = off;
}

/* Pop a block of size class cls; refill the class from a free large block
 * if possible, else take it at brk. */
static int small_take(p2_seg *seg, uint64_t bs, p2_off *out, p2_err *err)
{
    unsigned cls = small_class(seg, bs);
    p2_off *head = small_head(seg, cls);
    p2_off off = *head;
    if (off != 0) {
        if (!block_ok(seg, off, bs))
            return corrupt_list(seg, err, bs, off);
        p2_off next = small_at(seg, off)->next;
        if (next != 0 && !block_ok(seg, next, bs))
            return corrupt_list(seg, err, bs, next);
        p2_seg_will_write(seg, head, sizeof(p2_off));
        *head = next;
        *out = off;
        return P2_OK;
    }
    p2_off chunk;
    int rc = large_take(seg, LARGE_UNIT, &chunk, err);
    if (rc != P2_OK)
        return rc;
    if (chunk != 0) {
        /* Cut the 4 KiB piece into blocks of this class; push from the top
         * so that the list hands them out in address order.  An exact class need not
         * divide 4096: the rest at the top (a multiple of 16) goes to its own class. */
        uint64_t fit = LARGE_UNIT / bs * bs;
        if (fit < LARGE_UNIT)
            small_push(seg, small_class(seg, LARGE_UNIT - fit), chunk + fit);
        for (uint64_t o = fit - bs; o >= bs; o -= bs)
            small_push(seg, cls, chunk + o);
        *out = chunk;
        return P2_OK;
    }
    return brk_take(seg, bs, out, err);
}

/* Take a large block at brk, starting on a 64-byte line whatever small blocks came
 * before it. A large block handed out again from the free list keeps its start, so large
 * blocks start on lines (those of files made before this rule need not); iarray(slots =
 * line) relies on it for speed, never for correctness. The 16 to 48 bytes skipped go to
 * the 16-byte class's free list. */
static int brk_take_line(p2_seg *seg, uint64_t bs, p2_off *out, p2_err *err)
{
    p2_off gap = seg->hdr->brk, at = round_up(gap, SEG_LINE);
    int rc = brk_take(seg, at - gap + bs, out, err);
    if (rc != P2_OK)
        return rc;
    for (; gap < at; gap += SEG_ALIGN)
        small_push(seg, small_class(seg, SEG_ALIGN), gap);
    *out = at;
    return P2_OK;
}

/* Allocate a block for size bytes (contents undefined). */
static int seg_alloc_block(p2_seg *seg, uint64_t size, p2_off *out, p2_err *err)
{
    uint64_t bs = block_size(seg, size);
    if (bs == 0 || bs > seg->reserved)
        return seg_fail(seg, err, P2_ENOMEM,
                        "cannot allocate %" PRIu64 " bytes: more than the segment's address-space "
                        "reservation of %" PRIu64 " bytes (" SEG_RESERVE_HINT ")",
                        size, seg->reserved);
    if (bs <= SMALL_MAX)
        return small_take(seg, bs, out, err);
    int rc = large_take(seg, bs, out, err);
    if (rc != P2_OK || *out != 0)
        return rc;
    return brk_take_line(seg, bs, out, err);
}

p2_off p2_seg_alloc(p2_seg *seg, uint64_t size, p2_err *err)
{
    if (seg == NULL || seg->base == NULL) {
        p2_err_set(err, P2_ECLOSED, "p2_seg_alloc: segment is not open");
        return 0;
    }
    p2_off off = 0;
    if (seg_alloc_block(seg, size, &off, err) != P2_OK)
        return 0;
    p2_seg_will_write(seg, seg->base + off, size);
    memset(seg->base + off, 0, (size_t)size);
    return off;
}

void p2_seg_free(p2_seg *seg, p2_off off, uint64_t size)
{
    if (seg == NULL || seg->base == NULL || off == 0)
        return;
    uint64_t bs = block_size(seg, size);
    if (bs == 0 || !block_ok(seg, off, bs))
        return;
    if (bs <= SMALL_MAX)
        small_push(seg, small_class(seg, bs), off);
    else
        large_release(seg, off, bs);
}

p2_off p2_seg_realloc(p2_seg *seg, p2_off off, uint64_t old_size, uint64_t new_size, p2_err *err)
{
    if (seg == NULL || seg->base == NULL) {
        p2_err_set(err, P2_ECLOSED, "p2_seg_realloc: segment is not open");
        return 0;
    }
    if (off == 0)
        return p2_seg_alloc(seg, new_size, err);
    uint64_t ob = block_size(seg, old_size), nb = block_size(seg, new_size);
    if (ob == 0 || !block_ok(seg, off, ob)) {
        seg_fail(seg, err, P2_EINVAL,
                 "p2_seg_realloc: block at offset %" PRIu64 " of %" PRIu64
                 " bytes lies outside the allocated area",
                 off, old_size);
        return 0;
    }
    if (nb == 0 || nb > seg->reserved) {
        seg_fail(seg, err, P2_ENOMEM,
                 "cannot allocate %" PRIu64 " bytes: more than the segment's address-space "
                 "reservation of %" PRIu64 " bytes (" SEG_RESERVE_HINT ")",
                 new_size, seg->reserved);
        return 0;
    }
    char *p = seg->base + off;   /* stays valid: the base never moves */
    if (nb == ob) {
        if (new_size > old_size) {
            p2_seg_will_write(seg, p + old_size, new_size - old_size);
            memset(p + old_size, 0, (size_t)(new_size - old_size));
        }
        return off;
    }
    if (ob > SMALL_MAX && nb > SMALL_MAX) {
        if (nb < ob) {                      /* shrink in place, free the tail */
            large_release(seg, off + nb, ob - nb);
            return off;
        }
        uint64_t extra = nb - ob;
        p2_off end = off + ob;
        int grown = 0;
        if (end == seg->hdr->brk) {         /* last block: extend the allocated area */
            if (seg_grow(seg, end + extra, err) != P2_OK)
                return 0;
            p2_seg_will_write(seg, &seg->hdr->brk, sizeof seg->hdr->brk);
            seg->hdr->brk = end + extra;
            grown = 1;
        } else {                            /* followed by a big enough free block */
            grown = large_take_at(seg, end, extra);
        }
        if (grown) {
            p2_seg_will_write(seg, p + old_size, new_size - old_size);
            memset(p + old_size, 0, (size_t)(new_size - old_size));
            return off;
        }
    }
    p2_off moved = p2_seg_alloc(seg, new_size, err);
    if (moved == 0)
        return 0;
    /* the copy lands in the block p2_seg_alloc just announced (and zero-filled) */
    memcpy(seg->base + moved, p, (size_t)(old_size < new_size ? old_size : new_size));
    p2_seg_free(seg, off, old_size);
    return moved;
}

uint64_t p2_seg_used(const p2_seg *seg)
{
    return seg != NULL && seg->base != NULL ? seg->hdr->brk : 0;
}

p2_off p2_seg_root(const p2_seg *seg, uint32_t i)
{
    if (seg == NULL || seg->base == NULL || i >= seg->hdr->nroots)
        return 0;
    return seg->hdr->roots[i].off;
}

/* ------------------------------------------------------------------------
 * 4.4 Persistent segment: validation of an existing file, in the documented order
 * ------------------------------------------------------------------------ */

static int check_roots(const p2_seg *seg, uint32_t nroots, const char *const *names,
                       const uint64_t *sizes, p2_err *err)
{
    if (nroots > P2_MAX_ROOTS)
        return seg_fail(seg, err, P2_EINVAL, "%" PRIu32 " roots requested, at most %d supported",
                        nroots, P2_MAX_ROOTS);
    if (nroots > 0 && (names == NULL || sizes == NULL))
        return seg_fail(seg, err, P2_EINVAL, "root_names or root_sizes is NULL");
    for (uint32_t i = 0; i < nroots; i++) {
        if (names[i] == NULL || names[i][0] == '\0')
            return seg_fail(seg, err, P2_EINVAL, "root %" PRIu32 " has no name", i);
        size_t len = strlen(names[i]);
        if (len >= P2_ROOT_NAME_SIZE)
            return seg_fail(seg, err, P2_EINVAL,
                            "root name \"%s\" is %zu bytes long, at most %d allowed",
                            names[i], len, P2_ROOT_NAME_SIZE - 1);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return seg_fail(seg, err, P2_EINVAL, "root name \"%s\" is given twice", names[i]);
        if (strcmp(names[i], P2_SEG_EXACT_ROOT) == 0 && (i != nroots - 1 || sizes[i] != EXACT_TABLE))
            return seg_fail(seg, err, P2_EINVAL, "root \"%s\" (exact size classes) must be the last "
                            "root, of %u bytes", P2_SEG_EXACT_ROOT, (unsigned)EXACT_TABLE);
    }
    return P2_OK;
}

/* Length of a stored root name, at most P2_ROOT_NAME_SIZE - 1 for printing. */
static int stored_name_len(const struct p2_seg_root_entry *r)
{
    size_t n = strnlen(r->name, P2_ROOT_NAME_SIZE);
    return (int)(n < P2_ROOT_NAME_SIZE ? n : P2_ROOT_NAME_SIZE - 1);
}

/* The description stored in a header (from the file: at most P2_SEG_DESC_SIZE bytes, maybe
 * without a NUL), as printable ASCII in out (NUL-terminated, same size): bytes outside
 * 0x20..0x7e become '?', so a crafted file cannot put control sequences into messages. */
static void desc_printable(const char *desc, char *out)
{
    size_t n = strnlen(desc, P2_SEG_DESC_SIZE - 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)desc[i];
        out[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    out[n] = '\0';
}

void p2_seg_set_desc(p2_seg *seg, const char *desc)
{
    char buf[P2_SEG_DESC_SIZE];
    if (seg == NULL || seg->base == NULL || desc == NULL)
        return;
    memset(buf, 0, sizeof buf);
    size_t n = strlen(desc);
    if (n < sizeof buf) {
        memcpy(buf, desc, n);
    } else {                              /* cut short, and say so */
        memcpy(buf, desc, sizeof buf - 4);
        memcpy(buf + sizeof buf - 4, "...", 3);
    }
    if (memcmp(seg->hdr->desc, buf, sizeof buf) != 0) {   /* no needless page write */
        p2_seg_will_write(seg, seg->hdr->desc, sizeof buf);
        memcpy(seg->hdr->desc, buf, sizeof buf);
    }
}

static int not_closed(const p2_seg *seg, p2_err *err)
{
    return seg_fail(seg, err, P2_EFORMAT,
                    "was not closed cleanly (a process crashed or is still using it); "
                    "refusing to open a possibly half-written file (if no process uses it, "
                    "`p2gen recover` rebuilds it)");
}

/* Validate the header h of an existing file of file_bytes bytes, in the
 * documented order. */
static int seg_validate(const p2_seg *seg, const struct p2_seg_header *h, uint64_t file_bytes,
                        uint64_t fingerprint, uint32_t nroots, const char *const *names,
                        const uint64_t *sizes, p2_err *err)
{
    static const char no_magic[sizeof h->magic];
    if (memcmp(h->magic, no_magic, sizeof h->magic) == 0)
        /* creation stores the magic last: a header without one is what a file whose
         * creation was cut short has (a journalled one with nothing committed starts
         * again, see seg_open_journalled) */
        return seg_fail(seg, err, P2_EFORMAT, "not a p2gen database (bad magic): its header has "
                        "no magic, as a file whose creation was cut short (truncated) has");
    if (memcmp(h->magic, SEG_MAGIC, sizeof h->magic) != 0)
        return seg_fail(seg, err, P2_EFORMAT, "not a p2gen database (bad magic)");
    if (h->version != P2_SEG_VERSION)
        return seg_fail(seg, err, P2_EFORMAT, "format version %" PRIu32 ", this build reads version %d",
                        h->version, P2_SEG_VERSION);
    /* The checksum is brought up to date only by sync and close, so the
     * header of a file left OPEN by a crashed process usually fails it: that
     * file is reported as not closed cleanly, not as corrupt. */
    uint32_t crc = header_crc(h);
    if (crc != h->checksum && h->state == SEG_STATE_OPEN && !seg->journal && !seg->recovering)
        return not_closed(seg, err);
    if (crc != h->checksum && !(seg->recovering && !seg->journal && h->state == SEG_STATE_OPEN))
        return seg_fail(seg, err, P2_EFORMAT,
                        "header checksum mismatch (stored 0x%08" PRIx32 ", computed 0x%08" PRIx32
                        "): file is corrupt",
                        h->checksum, crc);
    /* References in a fixed-address file are addresses, elsewhere offsets: neither open
     * may follow the other's (the base itself is checked before it is mapped). */
    if (h->map_base != 0 && !seg->fixed)
        return seg_fail(seg, err, P2_EMISMATCH, "a file of the mapped memory layer (its references are "
                        "addresses at 0x%" PRIx64 "): this open expects offsets", h->map_base);
    if (h->map_base == 0 && seg->fixed)
        return seg_fail(seg, err, P2_EMISMATCH, "its references are offsets (persistent memory), not "
                        "addresses: not a file of the mapped memory layer");
    /* The size classes are the file's from its creation (the last root is the class table
     * of exact ones): blocks of the other policy's sizes would not fit its free lists. */
    if (header_exact(h) != seg->alloc_exact)
        return seg_fail(seg, err, P2_EMISMATCH,
                        "refused: the file's allocator uses %s size classes (alloc = %s), this "
                        "program's %s (alloc = %s); a file keeps the allocator policy it was "
                        "created with",
                        header_exact(h) ? "exact 16-byte" : "power-of-two",
                        header_exact(h) ? "exact" : "pow2",
                        seg->alloc_exact ? "exact 16-byte" : "power-of-two",
                        seg->alloc_exact ? "exact" : "pow2");
    if (h->fingerprint != fingerprint) {
        char made[P2_SEG_DESC_SIZE];
        desc_printable(h->desc, made);
        return seg_fail(seg, err, P2_EMISMATCH,
                        "created by a different spec or equation (the file was made by %s%s%s; "
                        "fingerprint 0x%016" PRIx64 ", expected 0x%016" PRIx64 ")",
                        made[0] ? "\"" : "", made[0] ? made : "a program that did not record its spec",
                        made[0] ? "\"" : "", h->fingerprint, fingerprint);
    }

    if (h->nroots > P2_MAX_ROOTS)
        return seg_fail(seg, err, P2_EFORMAT, "corrupt header: %" PRIu32 " roots, at most %d fit",
                        h->nroots, P2_MAX_ROOTS);
    uint32_t common = h->nroots < nroots ? h->nroots : nroots;
    for (uint32_t i = 0; i < common; i++) {
        const struct p2_seg_root_entry *r = &h->roots[i];
        int len = stored_name_len(r);
        if ((size_t)len != strlen(names[i]) || memcmp(r->name, names[i], (size_t)len) != 0)
            return seg_fail(seg, err, P2_EMISMATCH,
                            "root %" PRIu32 " is \"%.*s\" in the file, the spec expects \"%s\"",
                            i, len, r->name, names[i]);
        if (r->size != sizes[i])
            return seg_fail(seg, err, P2_EMISMATCH,
                            "root \"%s\" is %" PRIu64 " bytes in the file, the spec expects %" PRIu64,
                            names[i], r->size, sizes[i]);
    }
    if (h->nroots > nroots) {
        const struct p2_seg_root_entry *r = &h->roots[nroots];
        return seg_fail(seg, err, P2_EMISMATCH,
                        "the file has %" PRIu32 " roots, the spec %" PRIu32
                        ": root \"%.*s\" is not in the spec",
                        h->nroots, nroots, stored_name_len(r), r->name);
    }
    if (h->nroots < nroots)
        return seg_fail(seg, err, P2_EMISMATCH,
                        "the file has %" PRIu32 " roots, the spec %" PRIu32
                        ": root \"%s\" is missing from the file",
                        h->nroots, nroots, names[h->nroots]);

    if (file_bytes < h->file_size)
        return seg_fail(seg, err, P2_EFORMAT,
                        "truncated: header says %" PRIu64 " bytes, file has %" PRIu64,
                        h->file_size, file_bytes);

    if (h->header_size != P2_SEG_HEADER_SIZE)
        return seg_fail(seg, err, P2_EFORMAT, "corrupt header: header size %" PRIu32 ", expected %d",
                        h->header_size, P2_SEG_HEADER_SIZE);
    uint64_t pg = page_size();
    if (h->file_size < P2_SEG_HEADER_SIZE || h->file_size % pg != 0 || h->file_size > SEG_MAX_RESERVE)
        return seg_fail(seg, err, P2_EFORMAT,
                        "corrupt header: file size %" PRIu64 " is not a multiple of the page size %" PRIu64,
                        h->file_size, pg);
    uint64_t brk = h->brk;
    if (brk < P2_SEG_HEADER_SIZE || brk > h->file_size || brk % SEG_ALIGN != 0)
        return seg_fail(seg, err, P2_EFORMAT,
                        "corrupt header: brk %" PRIu64 " is outside the file (%d..%" PRIu64 ")",
                        brk, P2_SEG_HEADER_SIZE, h->file_size);
    for (uint32_t i = 0; i < h->nroots; i++) {
        const struct p2_seg_root_entry *r = &h->roots[i];
        uint64_t bs = block_size(seg, r->size);
        if (bs == 0 || r->off < P2_SEG_HEADER_SIZE || r->off % SEG_ALIGN != 0 || r->off > brk ||
            bs > brk - r->off)
            return seg_fail(seg, err, P2_EFORMAT,
                            "corrupt header: root \"%.*s\" (offset %" PRIu64 ", %" PRIu64
                            " bytes) lies outside the allocated area (%d..%" PRIu64 ")",
                            stored_name_len(r), r->name, r->off, r->size, P2_SEG_HEADER_SIZE, brk);
    }
    if (h->roots_sealed && h->state == SEG_STATE_CLEAN) {
        uint32_t rcrc = 0;
        char buf[4096];
        for (uint32_t i = 0; i < h->nroots; i++) {
            for (uint64_t done = 0; done < h->roots[i].size;) {
                uint64_t n = h->roots[i].size - done < sizeof buf ? h->roots[i].size - done : sizeof buf;
                if (seg->pb != NULL ? pb_read((p2_seg *)seg, buf, n, h->roots[i].off + done, NULL) != P2_OK
                                    : pread(seg->fd, buf, (size_t)n, (off_t)(h->roots[i].off + done)) != (ssize_t)n)
                    return seg_fail(seg, err, P2_EIO, "cannot read root \"%.*s\"",
                                    stored_name_len(&h->roots[i]), h->roots[i].name);
                rcrc = p2_crc32(rcrc, buf, (size_t)n);
                done += n;
            }
        }
        if (rcrc != h->roots_crc)
            return seg_fail(seg, err, P2_EFORMAT,
                            "container roots checksum mismatch (stored 0x%08" PRIx32 ", computed 0x%08"
                            PRIx32 "): a container's root block is corrupt", h->roots_crc, rcrc);
    }
    for (unsigned c = 0; c <= NCLASSES; c++) {
        p2_off f = c < NCLASSES ? h->free_small[c] : h->free_large;
        /* exact size classes keep their lists in the class table: these heads stay 0 */
        if (seg->alloc_exact && c < NCLASSES && f != 0)
            return seg_fail(seg, err, P2_EFORMAT,
                            "corrupt header: a power-of-two free list (%" PRIu64 "-byte blocks) in a "
                            "file of exact size classes", (uint64_t)SMALL_MIN << c);
        uint64_t bs = c < NCLASSES ? (uint64_t)SMALL_MIN << c : LARGE_UNIT;
        if (f != 0 && (f < P2_SEG_HEADER_SIZE || f % SEG_ALIGN != 0 || f > brk || bs > brk - f))
            return seg_fail(seg, err, P2_EFORMAT,
                            "corrupt header: free list for %s%" PRIu64 "-byte blocks starts at offset %" PRIu64
                            ", outside the allocated area (%d..%" PRIu64 ")",
                            c < NCLASSES ? "" : ">= ", bs, f, P2_SEG_HEADER_SIZE, brk);
    }

    /* A journalled file is as of its last commit once the journal is replayed. */
    if (h->state == SEG_STATE_OPEN && !seg->journal && !seg->recovering)
        return not_closed(seg, err);
    if (h->state != SEG_STATE_CLEAN && h->state != SEG_STATE_OPEN)
        return seg_fail(seg, err, P2_EFORMAT, "corrupt header: state flag %" PRIu32, h->state);
    return P2_OK;
}
/************** End of segment.c *******************************************************/

/************** Begin file write_audit.c ***********************************************/
/* ------------------------------------------------------------------------
 * 4.4a Write audit (test builds, -DP2_WRITE_AUDIT): every change of a watched file
 * must have been announced through the write hook since the last check.
 * ------------------------------------------------------------------------ */
#ifdef P2_WRITE_AUDIT
#define WRITE_AUDIT_MAX 16     /* files watched at once */
#define WRITE_AUDIT_REPORT 8   /* problems printed per check */

struct write_audit {
    p2_seg *seg;
    unsigned char *shadow;     /* the mapping as of the last check */
    uint64_t len;              /* its length */
    unsigned char *declared;   /* per byte: announced since the last check */
    uint64_t dlen;
    uint64_t outside;          /* announcements outside the mapping since the last check */
    uint64_t outside_off, outside_n;   /* the first of them */
};

static struct write_audit write_audits[WRITE_AUDIT_MAX];

static void write_audit_fatal(const char *what)
{
    fprintf(stderr, "write audit: out of memory (%s)\n", what);
    abort();
}

static void write_audit_hook(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    struct write_audit *a = (struct write_audit *)ctx;
    if (off > seg->mapped || n > seg->mapped - off) {
        if (a->outside++ == 0) {
            a->outside_off = off;
            a->outside_n = n;
        }
        return;
    }
    if (off + n > a->dlen) {
        unsigned char *d = (unsigned char *)realloc(a->declared, (size_t)seg->mapped);
        if (d == NULL)
            write_audit_fatal("announced ranges");
        memset(d + a->dlen, 0, (size_t)(seg->mapped - a->dlen));
        a->declared = d;
        a->dlen = seg->mapped;
    }
    memset(a->declared + off, 1, (size_t)n);
}

/* Copy the mapping and forget the announcements. */
static void write_audit_snap(struct write_audit *a)
{
    p2_seg *seg = a->seg;
    if (a->len != seg->mapped) {
        unsigned char *sh = (unsigned char *)realloc(a->shadow, (size_t)seg->mapped);
        if (sh == NULL)
            write_audit_fatal("copy of the file");
        a->shadow = sh;
        a->len = seg->mapped;
    }
    memcpy(a->shadow, seg->base, (size_t)seg->mapped);
    if (a->dlen != seg->mapped) {
        free(a->declared);
        a->declared = (unsigned char *)malloc((size_t)seg->mapped);
        if (a->declared == NULL)
            write_audit_fatal("announced ranges");
        a->dlen = seg->mapped;
    }
    memset(a->declared, 0, (size_t)a->dlen);
    a->outside = 0;
}

static void write_audit_attach(p2_seg *seg)
{
    for (int i = 0; i < WRITE_AUDIT_MAX; i++) {
        struct write_audit *a = &write_audits[i];
        if (a->seg != NULL)
            continue;
        memset(a, 0, sizeof *a);
        a->seg = seg;
        seg->will_write = write_audit_hook;
        seg->will_write_ctx = a;
        write_audit_snap(a);
        return;
    }
    fprintf(stderr, "write audit: more than %d files open at once\n", WRITE_AUDIT_MAX);
    abort();
}

static void write_audit_detach(p2_seg *seg)
{
    for (int i = 0; i < WRITE_AUDIT_MAX; i++) {
        struct write_audit *a = &write_audits[i];
        if (a->seg != seg)
            continue;
        free(a->shadow);
        free(a->declared);
        memset(a, 0, sizeof *a);
        seg->will_write = NULL;
        seg->will_write_ctx = NULL;
    }
}

/* Which part of the file holds offset off: the header (its field) or a block. */
static const char *write_audit_where(const p2_seg *seg, uint64_t off)
{
    if (off >= P2_SEG_HEADER_SIZE)
        return "a block";
    if (off >= offsetof(struct p2_seg_header, roots))
        return "the header's root table";
    if (off >= offsetof(struct p2_seg_header, free_small)
        && off < offsetof(struct p2_seg_header, nroots))
        return "the header's free lists (allocator)";
    if (off >= offsetof(struct p2_seg_header, file_size)
        && off < offsetof(struct p2_seg_header, free_small))
        return "the header's size or brk (allocator)";
    (void)seg;
    return "the header";
}

int p2_write_audit_check(const char *what)
{
    int problems = 0;
    for (int i = 0; i < WRITE_AUDIT_MAX; i++) {
        struct write_audit *a = &write_audits[i];
        p2_seg *seg = a->seg;
        if (seg == NULL)
            continue;
        if (a->outside) {
            if (problems++ < WRITE_AUDIT_REPORT)
                fprintf(stderr, "write audit: %s: %s announced %" PRIu64 " range(s) outside the "
                        "mapping of %" PRIu64 " bytes, first [%" PRIu64 ", +%" PRIu64 ")\n",
                        seg->path, what, a->outside, seg->mapped, a->outside_off, a->outside_n);
        }
        const unsigned char *now = (const unsigned char *)seg->base;
        uint64_t end = seg->mapped;
        for (uint64_t off = 0; off < end; off++) {
            unsigned char was = off < a->len ? a->shadow[off] : 0;   /* growth reads as zero */
            if (now[off] == was || (off < a->dlen && a->declared[off]))
                continue;
            /* one report per run of unannounced changed bytes */
            uint64_t run = off;
            while (off + 1 < end && !(off + 1 < a->dlen && a->declared[off + 1])
                   && now[off + 1] != (off + 1 < a->len ? a->shadow[off + 1] : 0))
                off++;
            if (problems++ < WRITE_AUDIT_REPORT)
                fprintf(stderr, "write audit: %s: `%s` changed bytes [%" PRIu64 ", %" PRIu64 ") in "
                        "%s without announcing them (first byte was 0x%02x, now 0x%02x)\n",
                        seg->path, what, run, off + 1, write_audit_where(seg, run),
                        was, now[run]);
        }
        write_audit_snap(a);
    }
    return problems;
}
#endif
/************** End of write_audit.c ***************************************************/

/************** Begin file segment_open.c **********************************************/
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
/************** End of segment_open.c **************************************************/

/************** Begin file segment_recover.c *******************************************/
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
/************** End of segment_recover.c ***********************************************/

/************** Begin file journal.c ***************************************************/
/* ==========================================================================
 * 5. Journalled segments (design in p2_runtime.h, @ref journal)
 * ========================================================================== */

/* ------------------------------------------------------------------------
 * 5.1 Journalled segments: journal format, process-wide state
 * ------------------------------------------------------------------------ */

#define LOG_MAGIC    "P2GENJL"     /* 7 characters + NUL = 8 bytes */
#define LOG_VERSION  1u          /* the page journal's; a record log's before CRC-32C */
#define LOG_VERSION_RECORD 2u      /* the record log's: its records are checksummed with
                                      CRC-32C (3a); version 1 logs (CRC-32) are still read */
#define LOG_HDR_SIZE 64u
#define REC_PAGE     0x50414745u   /* "PAGE": one page image */
#define REC_COMMIT   0x434f4d54u   /* "COMT": the end of a transaction */
#define REC_RANGE    0x52414e47u   /* "RANG": bytes written at an offset (record log) */
#define REC_XACT     0x58414354u   /* "XACT": the files a transaction spans (record log) */
#define RANGE_OFF_BITS 46          /* a range record's offset: below MAX_RESERVE's 2^46 */
#define RANGE_MAX    (UINT32_C(1) << (64 - RANGE_OFF_BITS))   /* its length: 1 .. 256 KiB */
#define MAX_JSEGS    64            /* journalled segments open at once in a process */
#define IOV_BATCH    512

struct log_header {
    char     magic[8];
    uint32_t version;
    uint32_t page_size;
    uint64_t fingerprint;          /* the data file's: a journal is never replayed elsewhere */
    uint64_t base_seq;             /* the transaction the data file held when this journal
                                      was (re)started: its records continue from base_seq + 1;
                                      older records left behind by a crash are skipped */
    uint8_t  zero[28];
    uint32_t crc;                  /* CRC-32 of the header with this field 0 */
};
struct log_page {                  /* followed by the page's bytes */
    uint32_t magic;                /* REC_PAGE */
    uint32_t crc;                  /* CRC-32 of seq, pgno and the page bytes */
    uint64_t seq;                  /* the transaction */
    uint64_t pgno;                 /* page number in the data file */
};
struct log_commit {
    uint32_t magic;                /* REC_COMMIT */
    uint32_t crc;                  /* CRC-32 of this record with this field 0 */
    uint64_t seq;
    uint64_t npages;               /* page records of this transaction, just before */
    uint32_t pages_crc;            /* CRC-32 of their crc fields, in order */
    uint32_t zero;
};
/* A record log's unit: what a transaction wrote at one place. 16 bytes of header for a
 * TPC-B balance's 8 (a page record is 24 for 4096): offset and length share a word. */
struct log_range {                 /* followed by the bytes, zero-padded to a multiple of 8 */
    uint32_t magic;                /* REC_RANGE */
    uint32_t crc;                  /* CRC-32 of the transaction's seq, `where` and the bytes */
    uint64_t where;                /* offset | (length - 1) << RANGE_OFF_BITS */
};
/* A transaction over several files (p2_seg_commit_all) opens its records in each of them
 * with this: every file taking part and the transaction number it has there, so that
 * replay can tell whether each of them holds it (p2_wal_resolve). */
struct log_xact {                  /* followed by nparts struct log_xpart */
    uint32_t magic;                /* REC_XACT */
    uint32_t crc;                  /* CRC-32 of the transaction's seq, this record (crc 0)
                                      and its parts */
    uint64_t gtid;                 /* drawn for the transaction: the same in every file */
    uint32_t self;                 /* this file's number among the spec's logged files */
    uint32_t nparts;               /* 2 .. MAX_JSEGS */
};
struct log_xpart {
    uint32_t file;                 /* a file's number among the spec's logged files */
    uint32_t zero;
    uint64_t seq;                  /* the transaction's number in that file */
};
_Static_assert(sizeof(struct log_range) == 16, "range record header is 16 bytes");
_Static_assert(sizeof(struct log_xact) == 24 && sizeof(struct log_xpart) == 16,
               "transaction record layout");
_Static_assert(sizeof(struct log_header) == LOG_HDR_SIZE, "journal header is 64 bytes");
_Static_assert(sizeof(struct log_page) == 24, "page record header is 24 bytes");
_Static_assert(sizeof(struct log_commit) == 32, "commit record is 32 bytes");

static const p2_journal_opts journal_defaults = {1, 1, UINT64_C(4) << 20, 0, 0, 0};

static p2_seg *volatile jsegs[MAX_JSEGS];
static struct sigaction jprev;          /* the SIGSEGV action before ours */
static int jinstalled;
static volatile sig_atomic_t jchaining; /* inside the chained call of journal_fault */

static int bit_get(const uint8_t *bits, uint64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }
static void bit_set(uint8_t *bits, uint64_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static void bit_clear(uint8_t *bits, uint64_t i) { bits[i >> 3] &= (uint8_t)~(1u << (i & 7)); }

/* ------------------------------------------------------------------------
 * 5.2 Journalled segments: write tracking (the SIGSEGV handler)
 * ------------------------------------------------------------------------ */

/* The first write to a read-only page of a journalled segment lands here: note
 * the page as dirty and let the write through (into a private copy).  Any other
 * fault goes to the previous handler, or takes the default action. */
static void journal_fault(int sig, siginfo_t *si, void *uc)
{
    char *a = (char *)si->si_addr;
    for (int i = 0; i < MAX_JSEGS; i++) {
        p2_seg *s = jsegs[i];
        if (s == NULL || a < s->base || a >= s->base + s->mapped)
            continue;
        uint64_t pg = (uint64_t)(a - s->base) / s->pgsize;
        if (bit_get(s->dirty_bits, pg))
            break;                       /* already writable: a real fault */
        bit_set(s->dirty_bits, pg);
        s->dirty[s->ndirty++] = (uint32_t)pg;
        if (mprotect(s->base + pg * s->pgsize, (size_t)s->pgsize, PROT_READ | PROT_WRITE) == 0)
            return;
        break;
    }
    /* Back here from the handler we chain to: it faulted, or (as Python's faulthandler
     * does after printing its report) it put us back and raised the signal again.
     * Chaining again would recurse without end: take the default action instead. */
    if (jchaining) {
        signal(sig, SIG_DFL);
        return;
    }
    jchaining = 1;
    if (jprev.sa_flags & SA_SIGINFO) {
        if (jprev.sa_sigaction != NULL) {
            jprev.sa_sigaction(sig, si, uc);
            jchaining = 0;
            return;
        }
    } else if (jprev.sa_handler != SIG_DFL && jprev.sa_handler != SIG_IGN) {
        jprev.sa_handler(sig);
        jchaining = 0;
        return;
    }
    jchaining = 0;
    signal(sig, SIG_DFL);                /* the faulting access now takes the default action */
}

static int journal_install(p2_err *err, const char *why)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = journal_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old) != 0) {
        int e = errno;
        return p2_err_set(err, P2_EIO, "%s: cannot install the journal's SIGSEGV handler: %s",
                          why, strerror(e));
    }
    jprev = old;
    jinstalled = 1;
    return P2_OK;
}

int p2_journal_guard(p2_err *err)
{
    struct sigaction cur;
    if (!jinstalled)
        return P2_OK;
    if (sigaction(SIGSEGV, NULL, &cur) != 0) {
        int e = errno;
        return p2_err_set(err, P2_EIO, "cannot read the SIGSEGV action (the journal needs its "
                          "handler): %s", strerror(e));
    }
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == journal_fault)
        return P2_OK;
    /* Another handler replaced ours (Python's faulthandler.enable() or signal.signal, a
     * crash reporter): the next write to a journalled page would go to it and crash or
     * spin.  Put ours back on top; it passes that handler every fault that is not a
     * journal page's first write, as it passed the one before. */
    return journal_install(err, "the journal's SIGSEGV handler was replaced by another");
}

static void wal_note(void *ctx, p2_seg *seg, uint64_t off, uint64_t n);

static int journal_register(p2_seg *seg, p2_err *err)
{
    if (seg->jopts.record) {      /* told of every write by the hook: no faults to catch */
        seg->will_write = wal_note;
        seg->will_write_ctx = NULL;
        return P2_OK;
    }
    if (!jinstalled || p2_journal_guard(NULL) != P2_OK) {
        int rc = journal_install(NULL, "open");
        if (rc != P2_OK) {
            int e = errno;
            return seg_fail(seg, err, rc, "cannot install the journal's SIGSEGV handler: %s",
                            strerror(e));
        }
    }
    for (int i = 0; i < MAX_JSEGS; i++) {
        if (jsegs[i] == NULL) {
            jsegs[i] = seg;
            return P2_OK;
        }
    }
    return seg_fail(seg, err, P2_ENOMEM, "more than %d journalled files open in this process",
                    MAX_JSEGS);
}

static void journal_unregister(p2_seg *seg)
{
    for (int i = 0; i < MAX_JSEGS; i++)
        if (jsegs[i] == seg)
            jsegs[i] = NULL;
}

/* Per-page bookkeeping for the whole reservation, in one lazily backed mapping. */
static int journal_track(p2_seg *seg, p2_err *err)
{
    uint64_t n = seg->reserved / seg->pgsize;
    uint64_t bits = round_up((n + 7) / 8, 8);
    uint64_t bytes = 3 * bits + 4 * round_up(n * 4, 8) + n * 8;
    void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        return seg_fail(seg, err, P2_ENOMEM, "cannot reserve the journal's page tables: %s",
                        strerror(e));
    }
    char *c = (char *)p;
    seg->track_bytes = bytes;
    seg->dirty_bits = (uint8_t *)c;
    seg->unflushed_bits = (uint8_t *)(c + bits);
    seg->dirty = (uint32_t *)(void *)(c + 2 * bits);
    seg->unflushed = (uint32_t *)(void *)(c + 2 * bits + round_up(n * 4, 8));
    seg->img_off = (uint64_t *)(void *)(c + 2 * bits + 2 * round_up(n * 4, 8));
    seg->cov_slot = (uint32_t *)(void *)(c + 2 * bits + 2 * round_up(n * 4, 8) + n * 8);
    seg->kept_bits = (uint8_t *)(c + 2 * bits + 3 * round_up(n * 4, 8) + n * 8);
    seg->kept = (uint32_t *)(void *)(c + 3 * bits + 3 * round_up(n * 4, 8) + n * 8);
    seg->nkept = 0;
    return P2_OK;
}

static void journal_untrack(p2_seg *seg)
{
    free(seg->open_undo);
    seg->open_undo = NULL;
    seg->open_undo_len = seg->open_undo_cap = 0;
    seg->open_keep = 0;
    free(seg->undo);
    free(seg->undo_at);
    free(seg->redo);
    free(seg->cov);
    seg->undo = seg->redo = NULL;
    seg->undo_at = NULL;
    seg->cov = NULL;
    seg->undo_len = seg->undo_cap = seg->redo_cap = seg->nundo = seg->undo_at_cap = 0;
    seg->cov_cap = 0;
    if (seg->dirty_bits != NULL)
        munmap(seg->dirty_bits, (size_t)seg->track_bytes);
    seg->dirty_bits = seg->unflushed_bits = seg->kept_bits = NULL;
    seg->dirty = seg->unflushed = seg->kept = NULL;
    seg->nkept = 0;
    seg->img_off = NULL;
    seg->cov_slot = NULL;
}

/* ------------------------------------------------------------------------
 * 5.3 Journalled segments: journal file I/O, records, header
 * ------------------------------------------------------------------------ */

/* All of len bytes at off, or -1: pread / pwrite retried across short transfers and
 * EINTR (write: 1 to write buf, 0 to read into it). */
static int full_io(int fd, void *buf, size_t len, uint64_t off, int write)
{
    char *b = (char *)buf;
    while (len > 0) {
        ssize_t n = write ? pwrite(fd, b, len, (off_t)off) : pread(fd, b, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        b += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

static int full_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
    return full_io(fd, (void *)(uintptr_t)buf, len, off, 1);
}

static int full_pread(int fd, void *buf, size_t len, uint64_t off)
{
    return full_io(fd, buf, len, off, 0);
}

static uint32_t log_header_crc(const struct log_header *h)
{
    struct log_header c = *h;
    c.crc = 0;
    return p2_crc32(0, &c, sizeof c);
}

static uint32_t page_crc(uint64_t seq, uint64_t pgno, const void *data, uint64_t len)
{
    uint64_t k[2] = {seq, pgno};
    return p2_crc32(p2_crc32(0, k, sizeof k), data, (size_t)len);
}

/* The records' checksum in a log of version `version`: CRC-32C in a record log of
 * LOG_VERSION_RECORD, CRC-32 in the page journal and in record logs of earlier builds.
 * (The log header's own checksum is CRC-32 in every version: it is checked before the
 * version is believed.) */
static int log_c32c(uint32_t version)
{
    return version == LOG_VERSION_RECORD;
}

/* The version this segment writes. */
static uint32_t log_version(const p2_seg *seg)
{
    return seg->jopts.record ? LOG_VERSION_RECORD : LOG_VERSION;
}

/* Can this segment read a log of `version`: a page journal its own; a record log its own
 * and the CRC-32 one of earlier builds (replayed, then restarted in the new version). */
static int log_version_read(const p2_seg *seg, uint32_t version)
{
    return seg->jopts.record ? version == LOG_VERSION || version == LOG_VERSION_RECORD
                             : version == LOG_VERSION;
}

static uint32_t log_crc(int c32c, uint32_t crc, const void *data, size_t len)
{
    return c32c ? p2_crc32c(crc, data, len) : p2_crc32(crc, data, len);
}

static uint32_t range_crc(int c32c, uint64_t seq, uint64_t where, const void *data, uint64_t len)
{
    uint64_t k[2] = {seq, where};
    return log_crc(c32c, log_crc(c32c, 0, k, sizeof k), data, (size_t)len);
}

static uint32_t xact_crc(int c32c, uint64_t seq, const struct log_xact *x,
                         const struct log_xpart *parts)
{
    struct log_xact h = *x;
    h.crc = 0;
    uint32_t c = log_crc(c32c, 0, &seq, sizeof seq);
    c = log_crc(c32c, c, &h, sizeof h);
    return log_crc(c32c, c, parts, (size_t)h.nparts * sizeof *parts);
}

static uint32_t commit_crc(int c32c, const struct log_commit *c)
{
    struct log_commit x = *c;
    x.crc = 0;
    return log_crc(c32c, 0, &x, sizeof x);
}

static int log_fail(const p2_seg *seg, p2_err *err, int code, const char *what)
{
    int e = errno;
    return seg_fail(seg, err, code, "journal: %s: %s", what, strerror(e));
}

/* Empty the journal: a header continuing from seg->seq, synced.  The file keeps its size
 * and is overwritten in place (a sync then writes data, not file size and block maps): the
 * old records after the header have transactions <= base_seq, where recovery stops. */
static int journal_reset(p2_seg *seg, uint64_t fingerprint, p2_err *err)
{
    struct log_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, LOG_MAGIC, sizeof h.magic);
    h.version = log_version(seg);
    h.page_size = (uint32_t)seg->pgsize;
    h.fingerprint = fingerprint;
    h.base_seq = seg->seq;
    h.crc = log_header_crc(&h);
    if (full_pwrite(seg->log_fd, &h, sizeof h, 0) != 0 ||
        (seg->jopts.sync && fdatasync(seg->log_fd) != 0))
        return log_fail(seg, err, P2_EIO, "cannot write its header");
    struct stat st;
    seg->log_alloc = fstat(seg->log_fd, &st) == 0 ? (uint64_t)st.st_size : LOG_HDR_SIZE;
    seg->log_end = LOG_HDR_SIZE;
    return P2_OK;
}

/* Room in the journal file up to `need` bytes, allocated ahead in growing chunks, so that
 * most commits overwrite allocated blocks instead of extending the file, and so that a
 * full disk is found here, before anything of the transaction is written, not halfway
 * through its records. */
static int journal_room(p2_seg *seg, uint64_t need, p2_err *err)
{
    if (need <= seg->log_alloc)
        return P2_OK;
    /* a 1 MiB chunk at least; the journal rarely outgrows checkpoint + one transaction */
    uint64_t want = need + (UINT64_C(1) << 20);
    int e = posix_fallocate(seg->log_fd, (off_t)seg->log_alloc, (off_t)(want - seg->log_alloc));
    if (e == ENOSPC || e == EDQUOT) {    /* no room for the chunk: what this commit needs? */
        want = need;
        e = posix_fallocate(seg->log_fd, (off_t)seg->log_alloc, (off_t)(want - seg->log_alloc));
    }
    if (e == 0) {
        seg->log_alloc = want;
        return P2_OK;
    }
    if (e == EOPNOTSUPP || e == EINVAL || e == ENOSYS)
        return P2_OK;     /* the file system cannot reserve: the appends extend the file */
    return seg_fail(seg, err, P2_EIO,
                    "journal: cannot reserve %" PRIu64 " bytes for the transaction in %s%s "
                    "(%s); the transaction was not committed and is still open: free some space "
                    "and commit again, or abort it", need - seg->log_alloc, seg->path, LOG_SUFFIX(seg), strerror(e));
}

/* Record in the data file's header that it holds every transaction up to seg->seq (the
 * in-memory header is the committed one: no transaction is open when this runs). */
static int data_seq_write(p2_seg *seg, p2_err *err)
{
    struct p2_seg_header h = *seg->hdr;
    h.data_seq = seg->seq;
    h.checksum = header_crc(&h);
    if (full_pwrite(seg->fd, &h, sizeof h, 0) != 0)
        return log_fail(seg, err, P2_EIO, "cannot write the data file's header");
    return P2_OK;
}

/* Does a data file's header, as found at open, check out?  As it is; or, for a record log,
 * with data_seq read as the log's base_seq.  The record log logs the header's changed
 * fields and its checksum as they were in memory, where data_seq is always the log's
 * base_seq (a checkpoint writes the new data_seq and drops the cached header page before
 * the log restarts from it); data_seq itself is not logged.  So replaying a log over a
 * header whose data_seq was already advanced (by the replay's own last step, or by a
 * checkpoint that wrote the header and then died before restarting the log) leaves the
 * header's checksum computed for base_seq.  Such a header still says truly that the file
 * holds every transaction up to its data_seq: replay only writes newer values. */
static int data_header_ok(const struct p2_seg_header *h, const struct log_header *lh)
{
    if (memcmp(h->magic, SEG_MAGIC, sizeof h->magic) != 0)
        return 0;
    if (h->checksum == header_crc(h))
        return 1;
    if (lh == NULL || h->data_seq == lh->base_seq)
        return 0;
    struct p2_seg_header at_base = *h;
    at_base.data_seq = lh->base_seq;
    return h->checksum == header_crc(&at_base);
}

/* ------------------------------------------------------------------------
 * 5.4 Journalled segments: replay at open
 * ------------------------------------------------------------------------ */

/* The highest transaction number of a valid commit record in [from, size) that is above
 * `last` (0: none). Tells a torn tail (the last transaction was being written) from damage
 * in the middle of the journal, with committed transactions after it. */
static uint64_t commit_follows(int fd, int c32c, uint64_t from, uint64_t size, uint64_t last)
{
    enum { CHUNK = 1 << 20 };
    char *buf = (char *)malloc(CHUNK + sizeof(struct log_commit));
    uint64_t found = 0;
    if (buf == NULL)
        return UINT64_MAX;    /* cannot tell: assume the worst (refuse) */
    from = round_up(from, 8);
    for (uint64_t off = from; off + sizeof(struct log_commit) <= size; off += CHUNK) {
        uint64_t n = size - off < CHUNK + sizeof(struct log_commit) ? size - off
                                                                    : CHUNK + sizeof(struct log_commit);
        if (full_pread(fd, buf, (size_t)n, off) != 0)
            break;
        for (uint64_t i = 0; i + sizeof(struct log_commit) <= n && i < CHUNK; i += 8) {
            struct log_commit c;
            memcpy(&c, buf + i, sizeof c);
            if (c.magic == REC_COMMIT && c.seq > last && c.seq > found &&
                c.crc == commit_crc(c32c, &c))
                found = c.seq;
        }
    }
    free(buf);
    return found;
}

/* The complete transactions over several files a scan found (p2_wal_resolve): in
 * transaction order, each with its parts (struct log_xpart) in `parts`. */
struct wal_txn { uint64_t seq, gtid, first; uint32_t nparts, self; };
struct wal_txns {
    struct wal_txn *tx;
    uint64_t ntx, txcap;
    struct log_xpart *parts;
    uint64_t nparts, partcap;
};

/* The open transaction's records during a scan: (page number or `where`, offset of the
 * bytes in the journal) pairs, in a growing array. */
static int pend_push(p2_seg *seg, uint64_t **pend, uint64_t *npend, uint64_t *cap,
                     uint64_t key, uint64_t data_off, p2_err *err)
{
    if (*npend == *cap) {
        uint64_t ncap = *cap ? *cap * 2 : 64;
        uint64_t *np = (uint64_t *)realloc(*pend, (size_t)ncap * 2 * sizeof **pend);
        if (np == NULL)
            return seg_fail(seg, err, P2_ENOMEM, "journal: out of memory");
        *pend = np;
        *cap = ncap;
    }
    (*pend)[2 * *npend] = key;
    (*pend)[2 * *npend + 1] = data_off;
    (*npend)++;
    return P2_OK;
}

/* The data file is missing or empty but the journal holds committed changes: replaying
 * them alone would make a file of holes. */
static int journal_without_data(p2_seg *seg, p2_err *err)
{
    return seg_fail(seg, err, P2_EFORMAT, "journal: holds committed pages but the data "
                    "file is empty (was it deleted or truncated?); refusing to open");
}

/* A record that lies outside the data file as its own transaction committed it (a
 * crafted or corrupt log whose checksums hold): where, and what it would write. */
struct scan_beyond { uint64_t rec, seq, at, end, size; };

/* Keep the data file's bytes [at, at + len) that exist before the open (below
 * open_data_bytes), before the replay overwrites them: an entry of the bytes, then their
 * offset and length, so that open_undo_apply walks them back from the end. */
static int grow_buf(void *pp, uint64_t *cap, uint64_t need);
static int open_undo_keep(p2_seg *seg, uint64_t at, uint64_t len, p2_err *err)
{
    if (!seg->open_keep)
        return P2_OK;
    uint64_t n = at >= seg->open_data_bytes ? 0
               : (len < seg->open_data_bytes - at ? len : seg->open_data_bytes - at);
    uint64_t need = seg->open_undo_len + n + 16;
    if (grow_buf(&seg->open_undo, &seg->open_undo_cap, need) != 0)
        return seg_fail(seg, err, P2_ENOMEM, "journal: out of memory keeping what the replay "
                        "overwrites");
    uint8_t *e = seg->open_undo + seg->open_undo_len;
    if (n > 0 && full_pread(seg->fd, e, (size_t)n, at) != 0)
        return log_fail(seg, err, P2_EIO, "cannot read the data file before replaying into it");
    memcpy(e + n, &at, 8);
    memcpy(e + n + 8, &n, 8);
    seg->open_undo_len = need;
    return P2_OK;
}

/* Put back what the open wrote, for an open refused after its replay: the data file's
 * bytes, newest first, and its size; the log's first bytes and size, or no log if the
 * open made it. Synced. Every file is then byte for byte as before the open, and holds
 * the same committed transactions (the log still has those the replay had written). */
static int open_undo_apply(p2_seg *seg, p2_err *err)
{
    if (!seg->open_keep)
        return P2_OK;
    int bad = 0;
    for (uint64_t end = seg->open_undo_len; end >= 16;) {
        uint64_t at, n;
        memcpy(&at, seg->open_undo + end - 16, 8);
        memcpy(&n, seg->open_undo + end - 8, 8);
        end -= 16 + n;
        if (n > 0 && full_pwrite(seg->fd, seg->open_undo + end, (size_t)n, at) != 0)
            bad = 1;
    }
    struct stat st;
    if (fstat(seg->fd, &st) != 0)
        bad = 1;
    else if (seg->open_undo_len > 0 || (uint64_t)st.st_size != seg->open_data_bytes) {
        if (((uint64_t)st.st_size != seg->open_data_bytes &&
             ftruncate(seg->fd, (off_t)seg->open_data_bytes) != 0) || fdatasync(seg->fd) != 0)
            bad = 1;
    }
    char lpath[4096 + 16];
    snprintf(lpath, sizeof lpath, "%s%s", seg->path, LOG_SUFFIX(seg));
    if (seg->open_log_made) {
        if (unlink(lpath) != 0)
            bad = 1;
    } else if (seg->log_fd >= 0) {
        /* written only if the open restarted it (a refusal before that wrote nothing) */
        uint8_t now[sizeof seg->open_log_hdr];
        uint64_t n = seg->open_log_bytes < sizeof now ? seg->open_log_bytes : sizeof now;
        int same = fstat(seg->log_fd, &st) == 0 && (uint64_t)st.st_size == seg->open_log_bytes &&
                   (n == 0 || (full_pread(seg->log_fd, now, (size_t)n, 0) == 0 &&
                               memcmp(now, seg->open_log_hdr, (size_t)n) == 0));
        if (!same &&
            ((n > 0 && full_pwrite(seg->log_fd, seg->open_log_hdr, (size_t)n, 0) != 0) ||
             ftruncate(seg->log_fd, (off_t)seg->open_log_bytes) != 0 ||
             fdatasync(seg->log_fd) != 0))
            bad = 1;
    }
    seg->open_keep = 0;
    if (bad)
        return log_fail(seg, err, P2_EIO, "the open was refused after its replay and what the "
                        "replay wrote could not all be put back (the files hold the same "
                        "committed transactions; the next open replays the log again)");
    return P2_OK;
}

/* One pass over the journal from its header: the complete, checksummed transactions that
 * continue from base_seq, in order. Pass 0 only reads (to decide); pass 1 writes their
 * pages into the data file, up to transaction `upto`. *last: the last complete one;
 * *bad: where a damaged record stopped the walk (0: it ended at a torn tail or the end). */
static int journal_scan(p2_seg *seg, const struct log_header *lh, uint64_t size, uint64_t data_bytes,
                        int apply, uint64_t upto, uint64_t *last_out, uint64_t *bad_out,
                        uint64_t *applied_out, struct wal_txns *txns, struct scan_beyond *beyond,
                        p2_err *err)
{
    /* a page journal's records are pages; a record log's, ranges of up to RANGE_MAX bytes */
    uint64_t unit = seg->jopts.record ? RANGE_MAX : seg->pgsize;
    char *page = (char *)malloc((size_t)unit);
    /* the data file's header as the log leaves it after each transaction: the file's size
     * each commit committed (its file_size), which every record of it must lie inside */
    uint8_t *himg = (uint8_t *)calloc(1, P2_SEG_HEADER_SIZE);
    for (uint64_t got = 0; himg != NULL && seg->fd >= 0 && data_bytes > 0 && got < P2_SEG_HEADER_SIZE;) {
        ssize_t n = pread(seg->fd, himg + got, (size_t)(P2_SEG_HEADER_SIZE - got), (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(himg);
            free(page);
            return log_fail(seg, err, P2_EIO, "cannot read the data file's header");
        }
        if (n == 0)
            break;                  /* a shorter file: the rest of the header reads as 0 */
        got += (uint64_t)n;
    }
    if (beyond != NULL)
        memset(beyond, 0, sizeof *beyond);
    uint64_t *pend = NULL, npend = 0, cap = 0;   /* (pgno or `where`, data offset) of the open
                                                    transaction */
    uint64_t off = LOG_HDR_SIZE, applied = 0, last = lh->base_seq, bad = 0;
    uint32_t pages_crc = 0;
    int c32c = log_c32c(lh->version);
    int rc = P2_OK;
    int have_x = 0;                  /* the open transaction spans files (REC_XACT) */
    struct log_xact xh;
    struct log_xpart xp[MAX_JSEGS];
    memset(&xh, 0, sizeof xh);
    if (page == NULL || himg == NULL) {
        free(page);
        free(himg);
        return seg_fail(seg, err, P2_ENOMEM, "journal: out of memory");
    }
    while (rc == P2_OK && off + sizeof(struct log_page) <= size && !(apply && last >= upto)) {
        struct log_page r;
        if (full_pread(seg->log_fd, &r, sizeof r, off) != 0) {
            rc = log_fail(seg, err, P2_EIO, "cannot read it");
            break;
        }
        if ((r.magic == REC_PAGE || r.magic == REC_COMMIT) && r.seq <= lh->base_seq)
            break;        /* an older generation's record: the journal is reused in place */
        if (r.magic == REC_XACT && seg->jopts.record) {
            struct log_xact x;
            memcpy(&x, &r, sizeof x);
            if (x.nparts < 2 || x.nparts > MAX_JSEGS || have_x || npend != 0) {
                bad = off;     /* only first in a transaction, and only once */
                break;
            }
            uint64_t plen = (uint64_t)x.nparts * sizeof(struct log_xpart);
            if (off + sizeof x + plen > size)
                break;                                   /* torn tail */
            if (full_pread(seg->log_fd, xp, (size_t)plen, off + sizeof x) != 0) {
                rc = log_fail(seg, err, P2_EIO, "cannot read it");
                break;
            }
            if (x.crc != xact_crc(c32c, last + 1, &x, xp)) {
                bad = off;
                break;
            }
            have_x = 1;
            xh = x;
            pages_crc = log_crc(c32c, pages_crc, &x.crc, sizeof x.crc);
            off += sizeof x + plen;
        } else if (r.magic == REC_RANGE && seg->jopts.record) {
            struct log_range g;
            memcpy(&g, &r, sizeof g);
            uint64_t len = (g.where >> RANGE_OFF_BITS) + 1;
            uint64_t at = g.where & ((UINT64_C(1) << RANGE_OFF_BITS) - 1);
            if (off + sizeof g + round_up(len, 8) > size)
                break;                                   /* torn tail */
            if (full_pread(seg->log_fd, page, (size_t)len, off + sizeof g) != 0) {
                rc = log_fail(seg, err, P2_EIO, "cannot read it");
                break;
            }
            if (g.crc != range_crc(c32c, last + 1, g.where, page, len)) {
                bad = off;      /* damaged, or left behind by an earlier generation of the log */
                break;
            }
            if (at > seg->reserved || len > seg->reserved - at) {
                bad = off;
                break;
            }
            if (data_bytes == 0) {
                rc = journal_without_data(seg, err);
                break;
            }
            if ((rc = pend_push(seg, &pend, &npend, &cap, g.where, off + sizeof g, err)) != P2_OK)
                break;
            pages_crc = log_crc(c32c, pages_crc, &g.crc, sizeof g.crc);
            off += sizeof g + round_up(len, 8);
        } else if (r.magic == REC_PAGE && !seg->jopts.record) {
            if (off + sizeof r + seg->pgsize > size)
                break;                                   /* torn tail */
            if (full_pread(seg->log_fd, page, (size_t)seg->pgsize, off + sizeof r) != 0) {
                rc = log_fail(seg, err, P2_EIO, "cannot read it");
                break;
            }
            if (r.crc != page_crc(r.seq, r.pgno, page, seg->pgsize) ||
                r.pgno >= seg->reserved / seg->pgsize) {
                bad = off;
                break;
            }
            if (data_bytes == 0) {
                rc = journal_without_data(seg, err);
                break;
            }
            if ((rc = pend_push(seg, &pend, &npend, &cap, r.pgno, off + sizeof r, err)) != P2_OK)
                break;
            pages_crc = log_crc(c32c, pages_crc, &r.crc, sizeof r.crc);
            off += sizeof r + seg->pgsize;
        } else if (r.magic == REC_COMMIT) {
            struct log_commit c;
            if (off + sizeof c > size)
                break;                                   /* torn tail */
            if (full_pread(seg->log_fd, &c, sizeof c, off) != 0) {
                rc = log_fail(seg, err, P2_EIO, "cannot read it");
                break;
            }
            if (c.crc != commit_crc(c32c, &c) || c.npages != npend + (uint64_t)have_x ||
                c.pages_crc != pages_crc || c.seq != last + 1) {
                bad = off;
                break;
            }
            /* What the transaction committed as the data file's size: its header as the
             * log leaves it (the records' bytes that fall in the header, in order, over
             * the header before).  Every record of it must lie inside that size, and the
             * size inside the reservation: checked before any of it is written. */
            uint64_t fsize = 0, beyond_at = 0;
            for (uint64_t i = 0; i < npend && rc == P2_OK; i++) {
                uint64_t len = seg->pgsize, at = pend[2 * i] * seg->pgsize;
                if (seg->jopts.record) {
                    len = (pend[2 * i] >> RANGE_OFF_BITS) + 1;
                    at = pend[2 * i] & ((UINT64_C(1) << RANGE_OFF_BITS) - 1);
                } else if (pend[2 * i] >= seg->reserved / seg->pgsize) {
                    continue;               /* refused below (no overflow in at) */
                }
                if (at < P2_SEG_HEADER_SIZE &&
                    full_pread(seg->log_fd, himg + at,
                               (size_t)(len < P2_SEG_HEADER_SIZE - at ? len : P2_SEG_HEADER_SIZE - at),
                               pend[2 * i + 1]) != 0)
                    rc = log_fail(seg, err, P2_EIO, "cannot read it");
            }
            if (rc != P2_OK)
                break;
            memcpy(&fsize, himg + offsetof(struct p2_seg_header, file_size), sizeof fsize);
            for (uint64_t i = 0; i < npend; i++) {
                uint64_t len = seg->pgsize, at;
                if (seg->jopts.record) {
                    len = (pend[2 * i] >> RANGE_OFF_BITS) + 1;
                    at = pend[2 * i] & ((UINT64_C(1) << RANGE_OFF_BITS) - 1);
                } else {
                    at = pend[2 * i] < seg->reserved / seg->pgsize ? pend[2 * i] * seg->pgsize
                                                                  : seg->reserved;
                }
                if (fsize > seg->reserved || at > fsize || len > fsize - at) {
                    beyond_at = pend[2 * i + 1] - (seg->jopts.record ? sizeof(struct log_range)
                                                                     : sizeof(struct log_page));
                    if (beyond != NULL) {
                        beyond->rec = beyond_at;
                        beyond->seq = c.seq;
                        beyond->at = at;
                        beyond->end = at + len;
                        beyond->size = fsize;
                    }
                    break;
                }
            }
            if (beyond_at != 0) {
                bad = beyond_at;
                break;
            }
            if (have_x && txns != NULL) {
                if (grow_buf(&txns->tx, &txns->txcap, (txns->ntx + 1) * sizeof *txns->tx) != 0 ||
                    grow_buf(&txns->parts, &txns->partcap,
                             (txns->nparts + xh.nparts) * sizeof *txns->parts) != 0) {
                    rc = seg_fail(seg, err, P2_ENOMEM, "journal: out of memory");
                    break;
                }
                struct wal_txn *t = &txns->tx[txns->ntx++];
                t->seq = c.seq;
                t->gtid = xh.gtid;
                t->first = txns->nparts;
                t->nparts = xh.nparts;
                t->self = xh.self;
                memcpy(txns->parts + txns->nparts, xp, xh.nparts * sizeof *xp);
                txns->nparts += xh.nparts;
            }
            have_x = 0;
            for (uint64_t i = 0; apply && i < npend && rc == P2_OK; i++) {
                uint64_t len = seg->pgsize, at = pend[2 * i] * seg->pgsize;
                if (seg->jopts.record) {
                    len = (pend[2 * i] >> RANGE_OFF_BITS) + 1;
                    at = pend[2 * i] & ((UINT64_C(1) << RANGE_OFF_BITS) - 1);
                }
                if ((rc = open_undo_keep(seg, at, len, err)) != P2_OK)
                    break;
                if (full_pread(seg->log_fd, page, (size_t)len, pend[2 * i + 1]) != 0 ||
                    full_pwrite(seg->fd, page, (size_t)len, at) != 0)
                    rc = log_fail(seg, err, P2_EIO, "cannot replay it into the data file");
            }
            applied++;
            last = c.seq;
            npend = 0;
            pages_crc = 0;
            off += sizeof c;
        } else {
            bad = off;
            break;
        }
    }
    free(page);
    free(pend);
    free(himg);
    *last_out = last;
    *bad_out = bad;
    *applied_out = applied;
    return rc;
}

/* Open the journal and replay every complete transaction into the data file
 * (data_bytes long before recovery).  The journal is read once to decide -- checksums,
 * order, and every record inside the data file's size its own transaction committed
 * (journal_scan) -- and written into the data file only when it will be opened: a refusal
 * leaves both files as they were.  What the replay overwrites is kept (open_undo_keep),
 * so that a refusal after it (the replayed header, the caller's integrity check:
 * p2_seg_close_refused) puts every byte back (open_undo_apply).  The data file's header says up to which transaction its pages were written
 * (data_seq); the journal must reach at least that far, else committed transactions
 * were lost from it and replaying the rest over newer pages would make a mixture:
 * refused.  Damage in the journal's last transaction (its commit record intact, a page
 * record torn) drops that transaction, like a torn tail: its records went out in one
 * write, and its commit was acknowledged only after that write was synced (sync on, one
 * commit per group), so a torn page proves the commit never returned; with group commit
 * or nosync the promise already leaves the last group to an OS crash.  Damage with later
 * transactions after it is refused.  In recovery mode (seg->recovering, `p2gen recover`)
 * the dead ends are taken instead: the transactions before the damage are replayed and
 * the later ones dropped; a journal that is missing or ends too early is not replayed
 * and the data file is taken as it is (seg->rec_journal says which, rec_tx_dropped how
 * many transactions were lost). */
static int journal_recover(p2_seg *seg, uint64_t fingerprint, uint64_t data_bytes, p2_err *err)
{
    uint64_t dseq = 0;          /* 0: unknown (no file yet, or its header is damaged) */
    int dopen = 0;              /* the data file was committed to and not closed cleanly */
    int dnever = 0;             /* it was made and never checkpointed: it needs its journal */
    int dread = 0;              /* dh holds the data file's header as found */
    struct p2_seg_header dh;
    if (data_bytes >= P2_SEG_HEADER_SIZE && full_pread(seg->fd, &dh, sizeof dh, 0) == 0) {
        dread = 1;
        if (data_header_ok(&dh, NULL)) {
            dseq = dh.data_seq;
            dopen = dh.state == SEG_STATE_OPEN && dh.journal;
            dnever = dh.state == SEG_STATE_OPEN && !dh.journal;
        }
    }
    char lpath[4096 + 16];
    snprintf(lpath, sizeof lpath, "%s%s", seg->path, LOG_SUFFIX(seg));
    seg->log_fd = open(lpath, O_RDWR | O_CLOEXEC);
    if (seg->log_fd < 0 && errno == ENOENT) {
        seg->log_fd = open(lpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        seg->open_log_made = seg->log_fd >= 0;
    }
    if (seg->log_fd < 0)
        return log_fail(seg, err, P2_EIO, "cannot open it");
    struct stat st;
    if (fstat(seg->log_fd, &st) != 0)
        return log_fail(seg, err, P2_EIO, "cannot stat it");
    uint64_t size = (uint64_t)st.st_size;
    /* what the open may write, kept so that a refusal after it puts every byte back */
    seg->open_data_bytes = data_bytes;
    seg->open_log_bytes = size;
    memset(seg->open_log_hdr, 0, sizeof seg->open_log_hdr);
    if (size > 0 && full_pread(seg->log_fd, seg->open_log_hdr,
                               (size_t)(size < sizeof seg->open_log_hdr ? size : sizeof seg->open_log_hdr), 0) != 0)
        return log_fail(seg, err, P2_EIO, "cannot read its header");
    seg->open_keep = 1;
    if (size < LOG_HDR_SIZE) {    /* new, or torn while being created: nothing to replay */
        /* A data file is made only after its journal has a header (synced): a data file
         * without one lost its journal, and with it every transaction not checkpointed. */
        if ((dopen || dnever) && !seg->recovering)
            return seg_fail(seg, err, P2_EFORMAT, "journal: %s%s is missing or empty but the "
                            "data file was not closed cleanly and depends on it (%s); refusing to "
                            "open without the journal that makes it consistent (`p2gen recover` "
                            "offers the data file as it is)", seg->path, LOG_SUFFIX(seg),
                            dopen ? "its last transactions are only in the journal"
                                  : "it was never checkpointed: every committed transaction is "
                                    "only in the journal");
        if (dopen || dnever)
            seg->rec_journal = 1;
        seg->seq = dseq;
        return journal_reset(seg, fingerprint, err);
    }
    struct log_header lh;
    if (full_pread(seg->log_fd, &lh, sizeof lh, 0) != 0)
        return log_fail(seg, err, P2_EIO, "cannot read its header");
    if (memcmp(lh.magic, LOG_MAGIC, sizeof lh.magic) != 0)
        return seg_fail(seg, err, P2_EFORMAT, "journal: %s%s is not a p2gen journal (bad magic)",
                        seg->path, LOG_SUFFIX(seg));
    if (lh.crc != log_header_crc(&lh))
        return seg_fail(seg, err, P2_EFORMAT, "journal: header checksum mismatch: the journal is "
                        "corrupt; refusing to open (committed transactions may be in it)");
    if (!log_version_read(seg, lh.version) || lh.page_size != seg->pgsize)
        return seg_fail(seg, err, P2_EFORMAT, "journal: %s%s is version %" PRIu32 " with %"
                        PRIu32 "-byte pages; this build reads %s with %" PRIu64 "-byte pages "
                        "(a log of a newer build, or of the other kind of journal)",
                        seg->path, LOG_SUFFIX(seg), lh.version, lh.page_size,
                        seg->jopts.record ? "record logs of versions 1 and 2" :
                                            "page journals of version 1", seg->pgsize);
    if (lh.fingerprint != fingerprint)
        return seg_fail(seg, err, P2_EMISMATCH, "journal: written by a different spec or equation "
                        "(fingerprint 0x%016" PRIx64 ", expected 0x%016" PRIx64 ")",
                        lh.fingerprint, fingerprint);
    if (seg->jopts.record && dseq == 0 && dread && data_header_ok(&dh, &lh))
        dseq = dh.data_seq;       /* a header replayed over an advanced data_seq (see there) */

    uint64_t last = 0, bad = 0, applied = 0;
    struct scan_beyond beyond;
    int rc = journal_scan(seg, &lh, size, data_bytes, 0, 0, &last, &bad, &applied, NULL, &beyond, err);
    if (rc != P2_OK)
        return rc;
    seg->log_fresh = lh.base_seq == 0 && last == 0 && bad == 0;   /* nothing ever committed */
    if (beyond.rec != 0 && !seg->recovering)
        return seg_fail(seg, err, P2_EFORMAT,
                        "journal: the record at offset %" PRIu64 " (transaction %" PRIu64 ") writes "
                        "bytes %" PRIu64 "..%" PRIu64 " of the data file, beyond the %" PRIu64
                        " bytes its transaction commits as the file's size (reservation %" PRIu64
                        "): a crafted or corrupt journal; refusing to open, nothing was written "
                        "(%" PRIu64 " transactions before it are intact; `p2gen recover` keeps "
                        "those and drops the rest)", beyond.rec, beyond.seq, beyond.at, beyond.end,
                        beyond.size, seg->reserved, applied);
    uint64_t later = bad != 0 ? commit_follows(seg->log_fd, log_c32c(lh.version), bad + 8, size, last + 1) : 0;
    if (beyond.rec != 0 && later == 0)
        later = last + 1;         /* recovery: the transaction is dropped, not taken as torn */
    if (later != 0 && !seg->recovering)
        return seg_fail(seg, err, P2_EFORMAT,
                        "journal: damaged at offset %" PRIu64 " with committed transactions after it; "
                        "refusing to open rather than lose them (%" PRIu64 " transactions before it "
                        "are intact; `p2gen recover` keeps those and drops the rest)", bad, applied);
    if (dseq > last && !seg->recovering)
        return seg_fail(seg, err, P2_EFORMAT,
                        "journal: ends at transaction %" PRIu64 " but the data file already holds "
                        "transactions up to %" PRIu64 ": committed transactions are missing from the "
                        "journal (truncated or damaged?); refusing to open a mixture of both "
                        "(`p2gen recover` offers the data file as it is)", last, dseq);
    if (dseq > last) {            /* recovery: replaying older pages over newer ones would mix */
        seg->rec_journal = 3;
        seg->rec_tx_dropped = dseq - last;
        seg->seq = dseq;
        return journal_reset(seg, fingerprint, err);
    }
    if (later != 0) {
        seg->rec_journal = 2;
        seg->rec_tx_dropped = later == UINT64_MAX ? 1 : later - last;
    }
    if (seg->jopts.limited && seg->jopts.upto < last) {
        /* a transaction over several files that one of them lacks (p2_wal_resolve), and
         * every later one: the crash came between the files' writes of its commit */
        uint64_t held = dseq > lh.base_seq ? dseq : lh.base_seq;
        if (seg->jopts.upto < held && !seg->recovering)
            return seg_fail(seg, err, P2_EFORMAT,
                            "record log: the data file already holds transaction %" PRIu64
                            ", which spans several files, and another of them lacks it; "
                            "refusing to open a mixture of the files", seg->jopts.upto + 1);
        if (seg->jopts.upto >= held)
            last = seg->jopts.upto;
    }
    if (last > lh.base_seq) {
        rc = journal_scan(seg, &lh, size, data_bytes, 1, last, &last, &bad, &applied, NULL, NULL, err);
        if (rc != P2_OK)
            return rc;
    }
    seg->seq = last;
    if (last > lh.base_seq) {
        /* the replayed header: now holds everything up to last */
        if (full_pread(seg->fd, &dh, sizeof dh, 0) != 0)
            return log_fail(seg, err, P2_EIO, "cannot read the replayed header");
        if (data_header_ok(&dh, seg->jopts.record ? &lh : NULL)) {
            dh.data_seq = last;
            dh.checksum = header_crc(&dh);
            if ((rc = open_undo_keep(seg, 0, sizeof dh, err)) != P2_OK)
                return rc;
            if (full_pwrite(seg->fd, &dh, sizeof dh, 0) != 0)
                return log_fail(seg, err, P2_EIO, "cannot write the replayed header");
        }
        if (fdatasync(seg->fd) != 0)
            return log_fail(seg, err, P2_EIO, "cannot sync the replayed data file");
    }
    return journal_reset(seg, fingerprint, err);
}

/* ------------------------------------------------------------------------
 * 5.5 Journalled segments: commit, checkpoint, abort
 * ------------------------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Write-protect the dirty pages again (contiguous runs in one call) and forget them. */
static void journal_protect(p2_seg *seg)
{
    uint64_t n = seg->ndirty;
    /* in page order, so that neighbours share one mprotect; the record log protects
     * nothing and only clears their bits */
    if (!seg->jopts.record)
        qsort(seg->dirty, (size_t)n, sizeof *seg->dirty, cmp_u32);
    for (uint64_t i = 0; i < n && !seg->jopts.record;) {
        uint64_t j = i + 1;
        while (j < n && seg->dirty[j] == seg->dirty[j - 1] + 1)
            j++;
        (void)mprotect(seg->base + (uint64_t)seg->dirty[i] * seg->pgsize,
                       (size_t)((j - i) * seg->pgsize), PROT_READ);
        i = j;
    }
    for (uint64_t i = 0; i < n; i++)
        bit_clear(seg->dirty_bits, seg->dirty[i]);
    seg->ndirty = 0;
}

/* Checkpoint: write every committed page that is not in the data file yet, sync the data
 * file, drop the private copies of those pages (the page cache serves them again, so a
 * long session does not keep its whole working set as anonymous memory), and empty the
 * journal.  Runs when the journal passes its checkpoint size, at the end of a group, and
 * at close; only then is the data file written, and always after the journal records of
 * what it receives were synced. */
static int peers_sync(p2_seg *seg, p2_err *err);

/* Record log, at a checkpoint (the data file now holds every committed page): which
 * private copies to keep. Dropping one makes the next write to its page fault and copy
 * it again, and under a working set larger than an interval's writes (TPC-B's accounts)
 * that fault is most of what a commit costs. So the pages written in this interval keep
 * their copies for one more; the ones kept from the interval before and not written
 * again are dropped (the page cache serves them). Private memory stays within the pages
 * written in two intervals; a page the page journal tracks is always dropped (its write
 * faults are how it learns of writes), and so is the header's, whose data_seq the
 * checkpoint has just advanced in the file (the logged header checksums assume the
 * in-memory data_seq is the log's base: data_header_ok). Leaves in unflushed only the
 * pages to drop. */
static void wal_keep_pages(p2_seg *seg)
{
    for (uint64_t i = 0; i < seg->nkept; i++) {
        uint64_t pg = seg->kept[i];
        bit_clear(seg->kept_bits, pg);
        if (!bit_get(seg->unflushed_bits, pg))
            (void)madvise(seg->base + pg * seg->pgsize, (size_t)seg->pgsize, MADV_DONTNEED);
    }
    seg->nkept = 0;
    uint64_t drop = 0;
    for (uint64_t i = 0; i < seg->nunflushed; i++) {
        uint32_t pg = seg->unflushed[i];
        if (pg == 0) {
            seg->unflushed[drop++] = pg;
            continue;
        }
        bit_clear(seg->unflushed_bits, pg);
        bit_set(seg->kept_bits, pg);
        seg->kept[seg->nkept++] = pg;
    }
    seg->nunflushed = drop;
}

static int journal_checkpoint(p2_seg *seg, p2_err *err)
{
    int prc = peers_sync(seg, err);
    if (prc != P2_OK)
        return prc;
    if (seg->open_keep) {
        /* the files move on from what the open found: nothing of it is put back any more */
        free(seg->open_undo);
        seg->open_undo = NULL;
        seg->open_undo_len = seg->open_undo_cap = 0;
        seg->open_keep = 0;
    }
    if (seg->nunflushed > 0) {
        /* The header claims the new data_seq before the pages go out: the journal holds
         * them, so a crash in between only makes recovery stricter.  Page 0 itself is
         * written as that header, never with the stale in-memory value. */
        int rc = data_seq_write(seg, err);
        if (rc != P2_OK)
            return rc;
        for (uint64_t i = 0; i < seg->nunflushed; i++) {
            uint64_t pg = seg->unflushed[i];
            if (pg == 0) {
                if (seg->pgsize > P2_SEG_HEADER_SIZE &&
                    full_pwrite(seg->fd, seg->base + P2_SEG_HEADER_SIZE,
                                (size_t)(seg->pgsize - P2_SEG_HEADER_SIZE), P2_SEG_HEADER_SIZE) != 0)
                    return log_fail(seg, err, P2_EIO, "cannot write committed pages into the data file");
                continue;                /* the header itself went out just above */
            }
            if (full_pwrite(seg->fd, seg->base + pg * seg->pgsize, (size_t)seg->pgsize,
                            pg * seg->pgsize) != 0)
                return log_fail(seg, err, P2_EIO, "cannot write committed pages into the data file");
        }
    }
    if (seg->jopts.sync && fdatasync(seg->fd) != 0)
        return log_fail(seg, err, P2_EIO, "cannot sync the data file at a checkpoint");
    if (seg->jopts.record)
        wal_keep_pages(seg);
    for (uint64_t i = 0; i < seg->nunflushed; i++) {
        uint64_t pg = seg->unflushed[i];
        (void)madvise(seg->base + pg * seg->pgsize, (size_t)seg->pgsize, MADV_DONTNEED);
        bit_clear(seg->unflushed_bits, pg);
    }
    seg->nunflushed = 0;
    return journal_reset(seg, seg->hdr->fingerprint, err);
}

/* A checkpoint failed (err holds why): say that nothing committed is lost, and remember
 * to retry it. The journal still holds every transaction the data file may lack (it is
 * emptied only after a checkpoint succeeded), and the next open replays it. */
static int checkpoint_failed(p2_seg *seg, int rc, p2_err *err)
{
    seg->ckpt_failed = 1;
    if (err != NULL) {
        size_t n = strnlen(err->msg, sizeof err->msg);
        snprintf(err->msg + n, sizeof err->msg - n,
                 " (checkpoint failed: the committed transactions are safe in %s%s; the "
                 "checkpoint is retried at the next commit, sync or close, and the next open "
                 "replays the journal)", seg->path, LOG_SUFFIX(seg));
    }
    return rc;
}

/* End a group of commits: make the journal durable (sync on), and checkpoint when it has
 * grown past its checkpoint size (or when asked, at close, or when one failed before). */
static int journal_flush(p2_seg *seg, int force_checkpoint, p2_err *err)
{
    if (seg->unsynced > 0 && seg->jopts.sync && fdatasync(seg->log_fd) != 0)
        return log_fail(seg, err, P2_EIO, "cannot sync it");
    seg->unsynced = 0;
    if (force_checkpoint || seg->ckpt_failed || seg->log_end >= seg->jopts.checkpoint) {
        int rc = journal_checkpoint(seg, err);
        if (rc != P2_OK)
            return checkpoint_failed(seg, rc, err);
        seg->ckpt_failed = 0;
    }
    return P2_OK;
}

/* The commit record at `at` could not be made durable: overwrite it, so that neither a
 * later open nor a later commit takes the transaction for committed (the next commit
 * writes over it anyway), and try to make that durable. */
static void commit_record_void(p2_seg *seg, uint64_t at)
{
    static const struct log_commit zero;
    if (full_pwrite(seg->log_fd, &zero, sizeof zero, at) == 0)
        (void)fdatasync(seg->log_fd);
}
/************** End of journal.c *******************************************************/

/************** Begin file record_log.c ************************************************/
/* ------------------------------------------------------------------------
 * 5.5a Record log: the write hook, commit and abort of record-logged segments
 * ------------------------------------------------------------------------ */

/* Room for `need` more bytes in a growable buffer (never shrinks while open). */
static int grow_buf(void *pp, uint64_t *cap, uint64_t need)
{
    if (need <= *cap)
        return 0;
    uint64_t want = *cap ? *cap : 4096;
    while (want < need)
        want *= 2;
    void *np = want <= SIZE_MAX ? realloc(*(void **)pp, (size_t)want) : NULL;
    if (np == NULL)
        return -1;
    *(void **)pp = np;
    *cap = want;
    return 0;
}

/* The first index in [i, end) of a bitmap whose bit is `val`, or end. */
static uint64_t bits_find(const uint64_t *w, uint64_t i, uint64_t end, int val)
{
    while (i < end) {
        uint64_t word = w[i >> 6] ^ (val ? 0 : ~UINT64_C(0));   /* the sought bits as 1s */
        word &= ~UINT64_C(0) << (i & 63);
        if (word != 0) {
            uint64_t at = (i & ~UINT64_C(63)) + (uint64_t)__builtin_ctzll(word);
            return at < end ? at : end;
        }
        i = (i | 63) + 1;
    }
    return end;
}

/* Set bits [i, end) of a bitmap. */
static void bits_fill(uint64_t *w, uint64_t i, uint64_t end)
{
    while (i < end) {
        uint64_t top = (i | 63) + 1 < end ? (i | 63) + 1 : end;   /* within this word */
        uint64_t nb = top - i;
        uint64_t mask = nb == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << nb) - 1) << (i & 63);
        w[i >> 6] |= mask;
        i = top;
    }
}

/* Keep the bytes [off, off + n) hold now as an undo entry: appended to the last entry
 * when it ends at off (adjacent writes, such as a record filled field by field, make one
 * entry), else a new one. 0, or -1 out of memory. */
static int undo_keep(p2_seg *seg, uint64_t off, uint64_t n)
{
    if (seg->nundo > 0) {
        uint8_t *e = seg->undo + seg->undo_at[seg->nundo - 1];
        uint64_t eoff, elen;
        memcpy(&eoff, e, 8);
        memcpy(&elen, e + 8, 8);
        if (eoff + elen == off) {
            uint64_t at = seg->undo_at[seg->nundo - 1];
            uint64_t need = at + 16 + round_up(elen + n, 8);
            if (grow_buf(&seg->undo, &seg->undo_cap, need) != 0)
                return -1;
            e = seg->undo + at;
            memcpy(e + 16 + elen, seg->base + off, (size_t)n);
            elen += n;
            memcpy(e + 8, &elen, 8);
            seg->undo_len = need;
            return 0;
        }
    }
    uint64_t need = seg->undo_len + 16 + round_up(n, 8);
    if (grow_buf(&seg->undo, &seg->undo_cap, need) != 0 ||
        grow_buf(&seg->undo_at, &seg->undo_at_cap, (seg->nundo + 1) * sizeof(uint64_t)) != 0)
        return -1;
    uint8_t *e = seg->undo + seg->undo_len;
    memcpy(e, &off, 8);
    memcpy(e + 8, &n, 8);
    memcpy(e + 16, seg->base + off, (size_t)n);
    seg->undo_at[seg->nundo++] = seg->undo_len;
    seg->undo_len = need;
    return 0;
}

/* The write hook of a record-logged segment: [off, off + n) is about to be written. Keep
 * the old bytes of what this transaction has not announced before (an abort copies them
 * back; a byte announced again already has its bytes from before the transaction kept,
 * so a field set ten thousand times keeps eight bytes, not eighty thousand) and note its
 * pages as changed (they go into the data file at the next checkpoint after the commit).
 * Which bytes are kept: a bitmap per changed page, a bit per byte (cov). A range outside
 * the mapping cannot be kept: like a failed allocation, it loses the transaction
 * (undo_lost). */
static void wal_note(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    (void)ctx;
    if (n == 0 || seg->undo_lost)
        return;
    if (off > seg->mapped || n > seg->mapped - off) {
        seg->undo_lost = 1;
        return;
    }
    uint64_t ps = seg->pgsize, words = ps / 64, end = off + n;
    for (uint64_t pg = off / ps; pg <= (end - 1) / ps; pg++) {
        if (!bit_get(seg->dirty_bits, pg)) {
            if (grow_buf(&seg->cov, &seg->cov_cap, (seg->ndirty + 1) * words * 8) != 0) {
                seg->undo_lost = 1;
                return;
            }
            memset(seg->cov + seg->ndirty * words, 0, (size_t)(words * 8));
            seg->cov_slot[pg] = (uint32_t)seg->ndirty;
            bit_set(seg->dirty_bits, pg);
            seg->dirty[seg->ndirty++] = (uint32_t)pg;
        }
        uint64_t *cov = seg->cov + (uint64_t)seg->cov_slot[pg] * words;
        uint64_t first = pg * ps, from = off > first ? off - first : 0;
        uint64_t to = end - first < ps ? end - first : ps;
        for (uint64_t i = bits_find(cov, from, to, 0); i < to; i = bits_find(cov, i, to, 0)) {
            uint64_t j = bits_find(cov, i, to, 1);       /* [i, j): not kept yet */
            if (undo_keep(seg, first + i, j - i) != 0) {
                seg->undo_lost = 1;
                return;
            }
            bits_fill(cov, i, j);
            i = j;
        }
    }
}

struct wal_span { uint64_t off, end; };

/* Up to this many entries are sorted by insertion, in place: qsort's calls through its
 * comparison function cost more than the few moves a handful of entries need. */
#define SMALL_SORT 32

static int cmp_span(const void *a, const void *b)
{
    const struct wal_span *x = (const struct wal_span *)a, *y = (const struct wal_span *)b;
    return (x->off > y->off) - (x->off < y->off);
}

/* The undo entries' ranges, sorted and merged: overlapping ones, and those a few bytes
 * apart (a gap shorter than a record header costs less logged than a second header). */
static uint64_t wal_spans(p2_seg *seg, struct wal_span *sp)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < seg->nundo; i++) {
        uint64_t off, len;
        memcpy(&off, seg->undo + seg->undo_at[i], 8);
        memcpy(&len, seg->undo + seg->undo_at[i] + 8, 8);
        sp[n].off = off;
        sp[n].end = off + len;
        n++;
    }
    if (n <= SMALL_SORT) {          /* a typical transaction: a handful of ranges */
        for (uint64_t i = 1; i < n; i++) {
            struct wal_span v = sp[i];
            uint64_t j = i;
            for (; j > 0 && sp[j - 1].off > v.off; j--)
                sp[j] = sp[j - 1];
            sp[j] = v;
        }
    } else {
        qsort(sp, (size_t)n, sizeof *sp, cmp_span);
    }
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (m > 0 && sp[i].off <= sp[m - 1].end + sizeof(struct log_range)) {
            if (sp[i].end > sp[m - 1].end)
                sp[m - 1].end = sp[i].end;
        } else {
            sp[m++] = sp[i];
        }
    }
    return m;
}

/* The commit record of a transaction whose records were appended at `at`, `bytes` long. */
static uint64_t commit_record_at(uint64_t at, uint64_t bytes)
{
    return at + bytes - sizeof(struct log_commit);
}

/* The record log's bytes [0, end) mapped shared, to append into with stores instead of a
 * system call (the page cache holds them as soon as they are stored: a process crash keeps
 * them, fdatasync of the file makes them durable), or NULL where that is not safe: past
 * the blocks the log has reserved (journal_room), a store would extend nothing (SIGBUS). */
static uint8_t *log_window(p2_seg *seg, uint64_t end)
{
    if (end > seg->log_alloc)
        return NULL;
    if (end <= seg->log_mapped)
        return (uint8_t *)seg->log_map;
    void *p = seg->log_map != NULL
        ? mremap(seg->log_map, (size_t)seg->log_mapped, (size_t)seg->log_alloc, MREMAP_MAYMOVE)
        : mmap(NULL, (size_t)seg->log_alloc, PROT_READ | PROT_WRITE, MAP_SHARED, seg->log_fd, 0);
    if (p == MAP_FAILED)
        return NULL;            /* the caller writes with pwrite instead */
    seg->log_map = (char *)p;
    seg->log_mapped = seg->log_alloc;
    return (uint8_t *)p;
}

static void log_unmap(p2_seg *seg)
{
    if (seg->log_map != NULL)
        munmap(seg->log_map, (size_t)seg->log_mapped);
    seg->log_map = NULL;
    seg->log_mapped = 0;
}

/* Append the open transaction of a record-logged segment to its log -- the records (each
 * merged range with the bytes it holds now; first, for a transaction over several files,
 * the transaction record `x` with its parts) and the commit record, built in memory and
 * written with one pwrite -- without syncing it or counting it as committed (wal_done).
 * Fails with nothing of the transaction counted: a torn or unsynced append is never
 * replayed on its own (no commit record, or one a later append overwrites). */
static int wal_append(p2_seg *seg, const struct log_xact *x, const struct log_xpart *xparts,
                      uint64_t *at_out, uint64_t *bytes_out, p2_err *err)
{
    if (seg->undo_lost)
        return seg_fail(seg, err, P2_ENOMEM, "record log: a write of this transaction could not "
                        "be recorded (out of memory); it cannot be committed: abort it, or close "
                        "the database (the next open replays the committed transactions)");
    struct p2_seg_header *h = seg->hdr;
    if (!h->journal) {                        /* initialised: a reopen will not re-create it */
        wal_note(NULL, seg, offsetof(struct p2_seg_header, journal), sizeof h->journal);
        h->journal = 1;
    }
    if (h->state != SEG_STATE_OPEN) {         /* once a session: a crash leaves it OPEN */
        wal_note(NULL, seg, offsetof(struct p2_seg_header, state), sizeof h->state);
        h->state = SEG_STATE_OPEN;
    }
    if (bit_get(seg->dirty_bits, 0)) {        /* the header changed: its checksum with it */
        wal_note(NULL, seg, offsetof(struct p2_seg_header, checksum), sizeof h->checksum);
        h->checksum = header_crc(h);
    }
    if (seg->undo_lost)       /* the notes just above could not be kept */
        return seg_fail(seg, err, P2_ENOMEM, "record log: out of memory recording the commit; "
                        "the transaction was not committed: abort it, or close the database");
    struct wal_span *sp = (struct wal_span *)malloc((size_t)(seg->nundo + 1) * sizeof *sp);
    if (sp == NULL)
        return seg_fail(seg, err, P2_ENOMEM, "record log: out of memory building the commit; "
                        "the transaction was not committed and is still open");
    uint64_t nsp = wal_spans(seg, sp), bytes = 0, nrec = 0;
    for (uint64_t i = 0; i < nsp; i++) {
        uint64_t len = sp[i].end - sp[i].off;
        uint64_t recs = (len + RANGE_MAX - 1) / RANGE_MAX;
        nrec += recs;
        bytes += recs * sizeof(struct log_range) + round_up(len, 8);
    }
    uint64_t xbytes = x != NULL ? sizeof *x + (uint64_t)x->nparts * sizeof *xparts : 0;
    bytes += xbytes + sizeof(struct log_commit);
    uint64_t seq = seg->seq + 1, at = seg->log_end;
    int rc = journal_room(seg, at + bytes, err);
    /* built in place in the mapped log where it can be (no copy, no system call), else
     * in memory and written with one pwrite. Stores only go to log pages a pwrite of this
     * open already brought into the page cache (log_hot): a store to one that is not there
     * would fault it in from the file (a major fault, a read for blocks just reserved),
     * where a pwrite fills it without reading; a commit reaching a new page writes. */
    uint8_t *win = rc == P2_OK && at + bytes <= seg->log_hot ? log_window(seg, at + bytes) : NULL;
    if (rc == P2_OK && win == NULL && grow_buf(&seg->redo, &seg->redo_cap, bytes) != 0)
        rc = seg_fail(seg, err, P2_ENOMEM, "record log: out of memory building the commit; "
                      "the transaction was not committed and is still open");
    if (rc != P2_OK) {
        free(sp);
        return rc;
    }
    uint8_t *b = win != NULL ? win + at : seg->redo;
    uint32_t recs_crc = 0;
    if (x != NULL) {
        struct log_xact xr = *x;
        xr.magic = REC_XACT;
        xr.crc = xact_crc(1, seq, &xr, xparts);
        recs_crc = p2_crc32c(recs_crc, &xr.crc, sizeof xr.crc);
        memcpy(b, &xr, sizeof xr);
        memcpy(b + sizeof xr, xparts, (size_t)(xbytes - sizeof xr));
        b += xbytes;
        nrec++;
    }
    for (uint64_t i = 0; i < nsp; i++) {
        for (uint64_t off = sp[i].off; off < sp[i].end;) {
            uint64_t len = sp[i].end - off < RANGE_MAX ? sp[i].end - off : RANGE_MAX;
            struct log_range r;
            r.magic = REC_RANGE;
            r.where = off | (len - 1) << RANGE_OFF_BITS;
            r.crc = range_crc(1, seq, r.where, seg->base + off, len);
            recs_crc = p2_crc32c(recs_crc, &r.crc, sizeof r.crc);
            memcpy(b, &r, sizeof r);
            memcpy(b + sizeof r, seg->base + off, (size_t)len);
            memset(b + sizeof r + len, 0, (size_t)(round_up(len, 8) - len));
            b += sizeof r + round_up(len, 8);
            off += len;
        }
    }
    free(sp);
    struct log_commit c;
    memset(&c, 0, sizeof c);
    c.magic = REC_COMMIT;
    c.seq = seq;
    c.npages = nrec;
    c.pages_crc = recs_crc;
    c.crc = commit_crc(1, &c);     /* a record log of this build: CRC-32C */
    /* the commit record is stored last: a process killed before it leaves a torn tail */
    atomic_signal_fence(memory_order_seq_cst);
    memcpy(b, &c, sizeof c);
    if (win == NULL) {
        if (full_pwrite(seg->log_fd, seg->redo, (size_t)bytes, at) != 0) {
            int e = errno;      /* a torn tail without its commit record: never replayed */
            return seg_fail(seg, err, P2_EIO,
                            "journal: cannot append the transaction to %s%s: %s; it was not "
                            "committed and is still open (commit again, or abort it)",
                            seg->path, LOG_SUFFIX(seg), strerror(e));
        }
        if (round_up(at + bytes, seg->pgsize) > seg->log_hot)
            seg->log_hot = round_up(at + bytes, seg->pgsize);
    }
    *at_out = at;
    *bytes_out = bytes;
    return P2_OK;
}

/* Sync a segment's log for a commit appended at `at`: on failure the commit record is
 * voided and the transaction stays open. */
static int wal_sync(p2_seg *seg, uint64_t at, uint64_t bytes, p2_err *err)
{
    if (fdatasync(seg->log_fd) == 0)
        return P2_OK;
    int e = errno;
    commit_record_void(seg, commit_record_at(at, bytes));
    return seg_fail(seg, err, P2_EIO,
                    "journal: cannot sync %s%s: %s; the transaction was not committed "
                    "and is still open (commit again, or abort it)", seg->path, LOG_SUFFIX(seg),
                    strerror(e));
}

/* After the commit point: the appended transaction is committed; its pages go into the
 * data file at the next checkpoint. */
static void wal_done(p2_seg *seg, uint64_t at, uint64_t bytes)
{
    seg->log_end = at + bytes;
    seg->seq++;
    for (uint64_t i = 0; i < seg->ndirty; i++) {
        uint64_t pg = seg->dirty[i];
        if (!bit_get(seg->unflushed_bits, pg)) {
            bit_set(seg->unflushed_bits, pg);
            seg->unflushed[seg->nunflushed++] = (uint32_t)pg;
        }
    }
    journal_protect(seg);
    seg->undo_len = seg->nundo = 0;
}

/* A group of commits ended (its log synced, sync permitting): checkpoint when the log has
 * grown past its size; a failure is not the commit's (see p2_seg_commit). */
static void wal_group_end(p2_seg *seg, p2_err *err)
{
    seg->unsynced = 0;
    if (seg->log_end >= seg->jopts.checkpoint && journal_checkpoint(seg, err) != P2_OK) {
        seg->ckpt_failed = 1;   /* committed all the same, as in p2_seg_commit */
        p2_err_clear(err);
    }
}

/* Commit of a record-logged segment by itself (the page journal's rules: see p2_seg_commit). */
static int wal_commit(p2_seg *seg, p2_err *err)
{
    uint64_t at = 0, bytes = 0;
    int rc = wal_append(seg, NULL, NULL, &at, &bytes, err);
    if (rc == P2_OK && seg->unsynced + 1 >= seg->jopts.group && seg->jopts.sync)
        rc = wal_sync(seg, at, bytes, err);
    if (rc != P2_OK)
        return rc;
    /* ---- the commit point: the transaction is durable (as far as sync and group say) ---- */
    wal_done(seg, at, bytes);
    if (++seg->unsynced >= seg->jopts.group)
        wal_group_end(seg, err);
    return P2_OK;
}

/* The segments committed together with `seg` (p2_seg_commit_all) sync their logs before
 * its data file takes a checkpoint's pages: else an OS crash could leave this file holding
 * a transaction over several files that another file's log has lost. */
static int peers_sync(p2_seg *seg, p2_err *err)
{
    for (uint32_t i = 0; seg->peers != NULL && i < seg->npeers; i++) {
        p2_seg *o = &seg->peers[seg->peer_idx[i]];
        if (o == seg || o->base == NULL || !o->journal || o->unsynced == 0)
            continue;
        if (o->jopts.sync && fdatasync(o->log_fd) != 0)
            return log_fail(o, err, P2_EIO, "cannot sync it before a checkpoint of a file "
                            "it commits with");
        o->unsynced = 0;
    }
    return P2_OK;
}

/* A transaction's identifier, the same in each file it spans: told apart from the
 * identifiers of transactions that reused its numbers after a crash dropped it. */
static uint64_t xact_id(void)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
    z ^= (uint64_t)getpid() << 40 ^ ++counter * UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);     /* splitmix64's finaliser */
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

int p2_seg_commit_all(p2_seg *segs, const uint32_t *idx, uint32_t n, p2_err *err)
{
    if (segs == NULL || idx == NULL || n == 0 || n > MAX_JSEGS)
        return p2_err_set(err, P2_EINVAL, "p2_seg_commit_all: between 1 and %d segments",
                          MAX_JSEGS);
    uint32_t part[MAX_JSEGS], np = 0;
    for (uint32_t i = 0; i < n; i++) {
        p2_seg *seg = &segs[idx[i]];
        if (seg->base == NULL)
            return p2_err_set(err, P2_ECLOSED, "p2_seg_commit_all: segment is not open");
        if (!seg->journal || !seg->jopts.record)
            return seg_fail(seg, err, P2_EINVAL, "p2_seg_commit_all: not a record-logged segment");
        seg->peers = segs;
        seg->peer_idx = idx;
        seg->npeers = n;
    }
    for (uint32_t i = 0; i < n; i++) {
        p2_seg *seg = &segs[idx[i]];
        if (seg->ckpt_failed) {      /* as in p2_seg_commit: before anything is written */
            int rc = journal_checkpoint(seg, err);
            if (rc != P2_OK) {
                checkpoint_failed(seg, rc, err);
                if (err != NULL) {
                    size_t m = strnlen(err->msg, sizeof err->msg);
                    snprintf(err->msg + m, sizeof err->msg - m,
                             "; the current transaction was not committed and is still open");
                }
                return rc;
            }
            seg->ckpt_failed = 0;
        }
        if (seg->ndirty > 0 || seg->undo_lost)
            part[np++] = i;
    }
    if (np == 0)
        return P2_OK;
    struct log_xact x;
    struct log_xpart xp[MAX_JSEGS];
    memset(&x, 0, sizeof x);
    memset(xp, 0, sizeof xp);
    x.gtid = xact_id();
    x.nparts = np;
    for (uint32_t k = 0; k < np; k++) {
        xp[k].file = part[k];
        xp[k].seq = segs[idx[part[k]]].seq + 1;
    }
    uint64_t at[MAX_JSEGS], bytes[MAX_JSEGS];
    int group_end = 0, rc = P2_OK;
    uint32_t written = 0;
    for (; written < np && rc == P2_OK; written++) {
        p2_seg *seg = &segs[idx[part[written]]];
        x.self = part[written];
        rc = wal_append(seg, np > 1 ? &x : NULL, xp, &at[written], &bytes[written], err);
        if (rc != P2_OK)
            break;
        if (seg->unsynced + 1 >= seg->jopts.group)
            group_end = 1;
    }
    /* a group ends for all of them together: each part's log synced before any counts */
    for (uint32_t k = 0; k < np && rc == P2_OK && group_end; k++) {
        p2_seg *seg = &segs[idx[part[k]]];
        if (seg->jopts.sync)
            rc = wal_sync(seg, at[k], bytes[k], err);
    }
    if (rc != P2_OK) {
        /* not committed: no file may replay its part alone (wal_sync voided its own) */
        for (uint32_t k = 0; k < written && k < np; k++)
            commit_record_void(&segs[idx[part[k]]], commit_record_at(at[k], bytes[k]));
        return rc;
    }
    /* ---- the commit point: every part is in its log (synced, as sync and group say) ---- */
    for (uint32_t k = 0; k < np; k++) {
        p2_seg *seg = &segs[idx[part[k]]];
        wal_done(seg, at[k], bytes[k]);
        seg->unsynced++;
    }
    if (group_end) {
        /* the other files' logs too, before any checkpoint (peers_sync); one that cannot
         * sync keeps its commits counted, and its checkpoint waits for a sync that works */
        uint32_t k = 0;
        for (uint32_t i = 0; i < n; i++) {
            p2_seg *seg = &segs[idx[i]];
            int synced = k < np && part[k] == i;
            k += synced ? 1u : 0u;
            if (!synced && seg->unsynced > 0 && seg->jopts.sync && fdatasync(seg->log_fd) != 0)
                continue;
            wal_group_end(seg, err);
        }
    }
    return P2_OK;
}

/* Abort of a record-logged segment: every announced byte gets back the value it had
 * before the transaction (undo keeps each byte once, from its first announcement). */
static int wal_abort(p2_seg *seg, p2_err *err)
{
    for (uint64_t i = seg->nundo; i-- > 0;) {
        const uint8_t *e = seg->undo + seg->undo_at[i];
        uint64_t off, len;
        memcpy(&off, e, 8);
        memcpy(&len, e + 8, 8);
        if (off <= seg->mapped && len <= seg->mapped - off)
            memcpy(seg->base + off, e + 16, (size_t)len);
    }
    seg->undo_len = seg->nundo = 0;
    if (seg->undo_lost)
        return seg_fail(seg, err, P2_EIO, "record log: a write of the aborted transaction could "
                        "not be recorded (out of memory), so memory may still hold some of it; "
                        "close the database: its file and log are as of the last commit, and the "
                        "next open replays them");
    return P2_OK;
}

/* Commit. The commit point is the commit record in the journal: written (and synced,
 * when this commit ends a group and sync is on). Whatever fails before it leaves the
 * transaction open and untouched (nothing of the bookkeeping changes), so that a retry
 * commits it and an abort undoes it; whatever fails after it -- the checkpoint -- does not
 * make the commit fail: the transaction is durable in the journal, and the checkpoint is
 * retried (before the next commit, at sync and at close, which report its failure). */
int p2_seg_commit(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->base == NULL)
        return p2_err_set(err, P2_ECLOSED, "p2_seg_commit: segment is not open");
    if (pl_txn(seg))
        return pl_commit(seg, err);
    if (!seg->journal)
        return p2_seg_sync(seg, err);
    if (seg->ckpt_failed) {
        /* before this transaction goes into the journal: if the retry fails, this commit
         * fails with nothing of it written, and the transaction stays open */
        int rc = journal_checkpoint(seg, err);
        if (rc != P2_OK) {
            checkpoint_failed(seg, rc, err);
            if (err != NULL && seg->ndirty > 0) {
                size_t n = strnlen(err->msg, sizeof err->msg);
                snprintf(err->msg + n, sizeof err->msg - n,
                         "; the current transaction was not committed and is still open");
            }
            return rc;
        }
        seg->ckpt_failed = 0;
    }
    if (seg->ndirty == 0 && !seg->undo_lost)
        return P2_OK;
    if (seg->jopts.record)
        return wal_commit(seg, err);
    struct p2_seg_header *h = seg->hdr;
    if (!h->journal)
        h->journal = 1;                      /* initialised: a reopen will not re-create it */
    if (h->state != SEG_STATE_OPEN)
        h->state = SEG_STATE_OPEN;           /* once a session: a crash leaves it OPEN */
    if (bit_get(seg->dirty_bits, 0))
        h->checksum = header_crc(h);
    uint64_t seq = seg->seq + 1, start = seg->log_end, off = start, ps = seg->pgsize;
    uint32_t pages_crc = 0;
    int rc = journal_room(seg, off + seg->ndirty * (sizeof(struct log_page) + ps) +
                          sizeof(struct log_commit), err);
    if (rc != P2_OK)
        return rc;
    struct log_page recs[IOV_BATCH / 2];
    struct iovec iov[IOV_BATCH];
    struct log_commit c;
    memset(&c, 0, sizeof c);
    for (uint64_t i = 0; i < seg->ndirty;) {
        int k = 0, cnt;
        uint64_t at = off;
        size_t len = 0;
        for (; i < seg->ndirty && k < IOV_BATCH / 2 - 1; i++, k++) {
            uint64_t pg = seg->dirty[i];
            struct log_page *r = &recs[k];
            r->magic = REC_PAGE;
            r->seq = seq;
            r->pgno = pg;
            r->crc = page_crc(seq, pg, seg->base + pg * ps, ps);
            pages_crc = p2_crc32(pages_crc, &r->crc, sizeof r->crc);
            iov[2 * k].iov_base = r;
            iov[2 * k].iov_len = sizeof *r;
            iov[2 * k + 1].iov_base = seg->base + pg * ps;
            iov[2 * k + 1].iov_len = (size_t)ps;
            off += sizeof *r + ps;
            len += sizeof *r + (size_t)ps;
        }
        cnt = 2 * k;
        if (i == seg->ndirty) {    /* the last batch carries the commit record: one system call */
            c.magic = REC_COMMIT;
            c.seq = seq;
            c.npages = seg->ndirty;
            c.pages_crc = pages_crc;
            c.crc = commit_crc(0, &c);
            iov[cnt].iov_base = &c;
            iov[cnt].iov_len = sizeof c;
            cnt++;
            len += sizeof c;
        }
        ssize_t n = pwritev(seg->log_fd, iov, cnt, (off_t)at);
        if (n != (ssize_t)len) {   /* a torn tail without its commit record: never replayed */
            int e = n < 0 ? errno : ENOSPC;
            return seg_fail(seg, err, P2_EIO,
                            "journal: cannot append the transaction to %s%s: %s; it was not "
                            "committed and is still open (commit again, or abort it)",
                            seg->path, LOG_SUFFIX(seg), strerror(e));
        }
    }
    if (seg->unsynced + 1 >= seg->jopts.group && seg->jopts.sync && fdatasync(seg->log_fd) != 0) {
        int e = errno;
        commit_record_void(seg, off);
        return seg_fail(seg, err, P2_EIO,
                        "journal: cannot sync %s%s: %s; the transaction was not committed "
                        "and is still open (commit again, or abort it)", seg->path, LOG_SUFFIX(seg),
                        strerror(e));
    }
    /* ---- the commit point: the transaction is durable (as far as sync and group say) ---- */
    seg->log_end = off + sizeof c;
    seg->seq = seq;
    for (uint64_t i = 0; i < seg->ndirty; i++) {
        uint64_t pg = seg->dirty[i];
        /* an abort restores a committed page not yet in the data file from here */
        seg->img_off[pg] = start + i * (sizeof(struct log_page) + ps) + sizeof(struct log_page);
        if (!bit_get(seg->unflushed_bits, pg)) {
            bit_set(seg->unflushed_bits, pg);
            seg->unflushed[seg->nunflushed++] = (uint32_t)pg;
        }
    }
    journal_protect(seg);
    if (++seg->unsynced >= seg->jopts.group) {
        seg->unsynced = 0;   /* synced above */
        if (seg->log_end >= seg->jopts.checkpoint && journal_checkpoint(seg, err) != P2_OK) {
            /* committed all the same: the failure surfaces when the retry fails too */
            seg->ckpt_failed = 1;
            p2_err_clear(err);
        }
    }
    return P2_OK;
}

int p2_seg_abort(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->base == NULL)
        return p2_err_set(err, P2_ECLOSED, "p2_seg_abort: segment is not open");
    if (pl_txn(seg))
        return pl_abort(seg, err);
    if (!seg->journal)
        return seg_fail(seg, err, P2_EINVAL, "abort: the segment has no journal");
    int rc = seg->jopts.record ? wal_abort(seg, err) : P2_OK;
    for (uint64_t i = 0; i < seg->ndirty && !seg->jopts.record; i++) {
        uint64_t pg = seg->dirty[i];
        char *a = seg->base + pg * seg->pgsize;
        if (bit_get(seg->unflushed_bits, pg)) {
            /* committed, not yet in the data file: its last image is in the journal */
            if (full_pread(seg->log_fd, a, (size_t)seg->pgsize, seg->img_off[pg]) != 0 && rc == P2_OK)
                rc = log_fail(seg, err, P2_EIO, "cannot read a committed page back");
        } else if (madvise(a, (size_t)seg->pgsize, MADV_DONTNEED) != 0 && rc == P2_OK) {
            rc = log_fail(seg, err, P2_EIO, "cannot drop a changed page");
        }
    }
    journal_protect(seg);
    /* A transaction that grew the file mapped more of it; the restored header says how
     * much is in use again, so give the rest back to the reservation (the file stays
     * longer, which is harmless): later growth then goes through seg_grow and the
     * header's file size, as it must. */
    uint64_t keep = seg->hdr->file_size;
    if (rc == P2_OK && keep >= P2_SEG_HEADER_SIZE && keep < seg->mapped) {
        void *p = mmap(seg->base + keep, (size_t)(seg->mapped - keep), PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        if (p == MAP_FAILED)
            rc = log_fail(seg, err, P2_EIO, "cannot unmap the pages an aborted transaction added");
        else
            seg->mapped = keep;
    }
    return rc;
}

uint64_t p2_seg_pending(const p2_seg *seg)
{
    if (pl_txn(seg))
        return pl_pending(seg);
    return seg != NULL && seg->base != NULL && seg->journal ? seg->ndirty : 0;
}

int p2_seg_commit_idle(const p2_seg *seg)
{
    /* what p2_seg_commit returns P2_OK for before it touches anything (a reader's commit
       checks what it read) */
    if (pl_txn(seg))
        return pl_pending(seg) == 0 && !pl_reader(seg);
    return seg != NULL && seg->base != NULL && seg->journal && !seg->ckpt_failed &&
           seg->ndirty == 0 && !seg->undo_lost;
}

/* ------------------------------------------------------------------------
 * 5.5b Record log: which transactions over several files every file holds
 * ------------------------------------------------------------------------ */

/* What p2_wal_resolve knows of one file: `known` 0 if its log could not be read or judged
 * (its own open says why); `held` the last transaction its data file holds; `cut` the last
 * one it may replay (its log's last complete transaction, lowered by the resolution). */
struct wal_view {
    int known;
    uint64_t held, cut;
    struct wal_txns txns;
};

static void wal_view_read(struct wal_view *v, const char *path)
{
    memset(v, 0, sizeof *v);
    p2_seg *seg = (p2_seg *)calloc(1, sizeof *seg);
    if (seg == NULL)
        return;
    uint64_t dseq = 0;
    int dread = 0;
    struct p2_seg_header dh;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        dread = full_pread(fd, &dh, sizeof dh, 0) == 0;
        if (dread && data_header_ok(&dh, NULL))
            dseq = dh.data_seq;
    }
    seg->fd = fd;                   /* the scan reads its header (the sizes committed) */
    snprintf(seg->path, sizeof seg->path, "%s", path);
    seg->jopts.record = 1;
    seg->reserved = SEG_MAX_RESERVE;
    char lpath[4096 + 16];
    snprintf(lpath, sizeof lpath, "%s%s", path, LOG_SUFFIX(seg));
    seg->log_fd = open(lpath, O_RDONLY | O_CLOEXEC);
    struct stat st;
    struct log_header lh;
    if (seg->log_fd < 0 || fstat(seg->log_fd, &st) != 0 || (uint64_t)st.st_size < LOG_HDR_SIZE) {
        v->known = seg->log_fd >= 0 || errno == ENOENT;    /* no log: nothing to replay */
        v->held = v->cut = dseq;
    } else if (full_pread(seg->log_fd, &lh, sizeof lh, 0) == 0 &&
               memcmp(lh.magic, LOG_MAGIC, sizeof lh.magic) == 0 &&
               lh.crc == log_header_crc(&lh) && log_version_read(seg, lh.version) &&
               lh.page_size >= 512 && (lh.page_size & (lh.page_size - 1)) == 0) {
        uint64_t last = 0, bad = 0, applied = 0;
        p2_err err;
        p2_err_clear(&err);
        seg->pgsize = lh.page_size;
        if (dseq == 0 && dread && data_header_ok(&dh, &lh))
            dseq = dh.data_seq;   /* replayed over an advanced data_seq (data_header_ok) */
        if (journal_scan(seg, &lh, (uint64_t)st.st_size, 1, 0, 0, &last, &bad, &applied,
                         &v->txns, NULL, &err) == P2_OK) {
            v->known = 1;
            v->held = dseq > lh.base_seq ? dseq : lh.base_seq;
            v->cut = last;
        }
    }
    if (seg->log_fd >= 0)
        close(seg->log_fd);
    if (fd >= 0)
        close(fd);
    free(seg);
}

/* Does file v hold transaction `seq` of the transaction drawn `gtid`: in its data file
 * already (whose transactions cannot be told apart any more), or complete in its log up
 * to the cut, as the same transaction. A file that cannot be judged is taken to hold it:
 * its own open refuses it. */
static int wal_view_holds(const struct wal_view *v, uint64_t seq, uint64_t gtid)
{
    if (!v->known || seq <= v->held)
        return 1;
    if (seq > v->cut)
        return 0;
    uint64_t lo = 0, hi = v->txns.ntx;          /* the transactions are in seq order */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (v->txns.tx[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < v->txns.ntx && v->txns.tx[lo].seq == seq && v->txns.tx[lo].gtid == gtid;
}

int p2_wal_resolve(const char *const *paths, uint32_t n, uint64_t *upto, p2_err *err)
{
    if (paths == NULL || upto == NULL || n > MAX_JSEGS)
        return p2_err_set(err, P2_EINVAL, "p2_wal_resolve: between 0 and %d files", MAX_JSEGS);
    struct wal_view *v = (struct wal_view *)calloc(n ? n : 1, sizeof *v);
    if (v == NULL)
        return p2_err_set(err, P2_ENOMEM, "record log: out of memory reading the logs");
    for (uint32_t i = 0; i < n; i++)
        wal_view_read(&v[i], paths[i]);
    /* Cut each file before the first transaction that another file taking part in it
     * lacks; a cut can make another file lack one of its own: again until none moves. */
    for (int moved = 1; moved;) {
        moved = 0;
        for (uint32_t i = 0; i < n; i++) {
            for (uint64_t t = 0; v[i].known && t < v[i].txns.ntx; t++) {
                const struct wal_txn *tx = &v[i].txns.tx[t];
                if (tx->seq > v[i].cut)
                    break;
                if (tx->seq <= v[i].held)
                    continue;
                int whole = tx->self == i;
                for (uint32_t k = 0; whole && k < tx->nparts; k++) {
                    const struct log_xpart *pt = &v[i].txns.parts[tx->first + k];
                    whole = pt->file < n &&
                            (pt->file == i ? pt->seq == tx->seq
                                           : wal_view_holds(&v[pt->file], pt->seq, tx->gtid));
                }
                if (!whole) {
                    v[i].cut = tx->seq - 1;
                    moved = 1;
                    break;
                }
            }
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        upto[i] = v[i].known ? v[i].cut : UINT64_MAX;
        free(v[i].txns.tx);
        free(v[i].txns.parts);
    }
    free(v);
    return P2_OK;
}
/************** End of record_log.c ****************************************************/

/************** Begin file journal_open.c **********************************************/
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
/************** End of journal_open.c **************************************************/

/************** Begin file verify.c ****************************************************/
/* ==========================================================================
 * 6. Integrity checks (p2_verify, p2_seg_verify, p2_seg_contains): used by the
 * generated <prefix>_verify functions.  Read-only; they read the allocator's
 * structures through the helpers of 4.2.
 * ========================================================================== */

int p2_seg_contains(const p2_seg *seg, p2_off off, uint64_t len)
{
    uint64_t used;
    if (seg == NULL || seg->base == NULL)
        return 0;
    used = p2_seg_used(seg);
    if (used > seg->mapped)
        used = seg->mapped;
    return off >= P2_SEG_HEADER_SIZE && off % 16 == 0 && off <= used && len <= used - off;
}

/* A block in use or free, as seen by the integrity check. */
struct p2_verify_claim {
    const p2_seg *seg;
    p2_off off;
    uint64_t end;               /* off + the allocator's block size */
    const char *what;           /* NULL: a free block */
    uint64_t cls;               /* free blocks: size class (0: large) */
};

static void claim_add(p2_verify *v, const p2_seg *seg, p2_off off, uint64_t end, const char *what,
                      uint64_t cls)
{
    if (v->claims_lost)
        return;
    if (v->nclaims == v->capclaims) {
        size_t ncap = v->capclaims ? v->capclaims * 2 : 256;
        void *p = ncap < SIZE_MAX / sizeof *v->claims ? realloc(v->claims, ncap * sizeof *v->claims) : NULL;
        if (p == NULL) {
            v->claims_lost = 1;
            return;
        }
        v->claims = (struct p2_verify_claim *)p;
        v->capclaims = ncap;
    }
    struct p2_verify_claim c = { seg, off, end, what, cls };
    v->claims[v->nclaims++] = c;
}

void p2_verify_claim(p2_verify *v, const p2_seg *seg, p2_off off, uint64_t len, const char *what)
{
    if (v == NULL || seg == NULL || seg->base == NULL)
        return;
    uint64_t bs = block_size(seg, len);
    if (bs == 0 || !p2_seg_contains(seg, off, bs))
        return;
    claim_add(v, seg, off, off + bs, what, 0);
}

static int claim_cmp(const void *a, const void *b)
{
    const struct p2_verify_claim *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static void claim_name(const struct p2_verify_claim *c, char *buf, size_t n)
{
    if (c->what != NULL)
        snprintf(buf, n, "%s at offset %" PRIu64, c->what, c->off);
    else if (c->cls != 0)
        snprintf(buf, n, "free %" PRIu64 "-byte block at offset %" PRIu64, c->cls, c->off);
    else
        snprintf(buf, n, "free large block at offset %" PRIu64, c->off);
}

void p2_seg_verify(const p2_seg *seg, p2_verify *v, const char *file)
{
    if (seg == NULL || seg->base == NULL || v == NULL)
        return;
    const struct p2_seg_header *h = seg->hdr;
    uint64_t brk = p2_seg_used(seg);
    size_t first = v->nclaims;
    if (brk > seg->mapped || brk < P2_SEG_HEADER_SIZE) {
        p2_verify_fail(v, "file %s: allocator: brk %" PRIu64 " outside the mapped file", file, brk);
        return;
    }
    for (uint32_t i = 0; i < h->nroots && i < P2_MAX_ROOTS; i++)
        if (p2_seg_contains(seg, h->roots[i].off, block_size(seg, h->roots[i].size)))
            claim_add(v, seg, h->roots[i].off, h->roots[i].off + block_size(seg, h->roots[i].size),
                      seg->alloc_exact && i == h->nroots - 1 ? "the allocator's class table"
                                                             : "a container root block", 0);
    if (seg->alloc_exact)
        for (unsigned c = 0; c < NCLASSES; c++)
            if (h->free_small[c] != 0)
                p2_verify_fail(v, "file %s: allocator: a power-of-two free list (%" PRIu64 "-byte blocks) "
                               "in a file of exact size classes", file, (uint64_t)SMALL_MIN << c);
    /* small free lists: each a chain of blocks of one class, at most as many as fit */
    for (unsigned c = 0; c < nclasses(seg); c++) {
        uint64_t bs = class_size(seg, c), n = 0, limit = (brk - P2_SEG_HEADER_SIZE) / bs;
        for (p2_off off = *small_head(seg, c); off != 0; off = small_at(seg, off)->next) {
            if (!block_ok(seg, off, bs)) {
                p2_verify_fail(v, "file %s: allocator: free list for %" PRIu64 "-byte blocks: block at offset %"
                               PRIu64 " lies outside the allocated area", file, bs, off);
                break;
            }
            if (++n > limit) {
                p2_verify_fail(v, "file %s: allocator: free list for %" PRIu64 "-byte blocks is longer than "
                               "the blocks that fit (a cycle)", file, bs);
                break;
            }
            claim_add(v, seg, off, off + bs, NULL, bs);
        }
    }
    /* the large free list: address-ordered, so a bounded walk */
    uint64_t n = 0;
    for (p2_off off = h->free_large; off != 0; off = large_at(seg, off)->next) {
        if (!large_node_ok(seg, off)) {
            p2_verify_fail(v, "file %s: allocator: free list for large blocks: bad block at offset %" PRIu64
                           " (outside the allocated area, bad size, or out of address order)", file, off);
            break;
        }
        if (++n > brk / LARGE_UNIT)
            break;   /* cannot happen: the list is address-ordered */
        claim_add(v, seg, off, off + large_at(seg, off)->size, NULL, 0);
    }
    if (v->claims_lost) {
        p2_verify_fail(v, "file %s: allocator: out of memory: overlaps between blocks not checked", file);
        return;
    }
    /* this segment's blocks (claimed by the layers, roots, free ones), sorted: no overlaps */
    for (size_t i = 0; i < first; i++)     /* gather this segment's claims after the others */
        if (v->claims[i].seg == seg) {
            struct p2_verify_claim t = v->claims[i];
            claim_add(v, seg, t.off, t.end, t.what, t.cls);
        }
    if (v->claims_lost) {
        p2_verify_fail(v, "file %s: allocator: out of memory: overlaps between blocks not checked", file);
        return;
    }
    size_t cnt = v->nclaims - first;
    struct p2_verify_claim *cl = v->claims + first;
    qsort(cl, cnt, sizeof *cl, claim_cmp);
    size_t reported = 0;
    uint64_t reach = 0;
    size_t reach_i = 0;
    for (size_t i = 0; i < cnt; i++) {
        if (i > 0 && cl[i].off < reach && reported < 20) {
            char a[160], b[160];
            claim_name(&cl[reach_i], a, sizeof a);
            claim_name(&cl[i], b, sizeof b);
            p2_verify_fail(v, "file %s: allocator: %s overlaps %s", file, b, a);
            reported++;
        }
        if (cl[i].end > reach) {
            reach = cl[i].end;
            reach_i = i;
        }
    }
    v->nclaims = first;   /* drop the sorted copy; the claims of this segment stay as gathered */
}

void p2_verify_done(p2_verify *v)
{
    if (v == NULL)
        return;
    free(v->claims);
    v->claims = NULL;
    v->nclaims = v->capclaims = 0;
}

void p2_verify_init(p2_verify *v, char *buf, size_t cap, int max)
{
    v->claims = NULL;
    v->nclaims = v->capclaims = 0;
    v->claims_lost = 0;
    v->errors = 0;
    v->buf = buf;
    v->cap = buf != NULL ? cap : 0;
    v->len = 0;
    v->max = max;
    if (v->cap > 0)
        v->buf[0] = '\0';
}

void p2_verify_fail(p2_verify *v, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (v == NULL)
        return;
    if (v->errors < INT_MAX)
        v->errors++;
    if (v->errors > v->max || v->buf == NULL || v->len + 1 >= v->cap)
        return;
    va_start(ap, fmt);
    n = vsnprintf(v->buf + v->len, v->cap - v->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        v->buf[v->len] = '\0';
        return;
    }
    if ((size_t)n >= v->cap - v->len) {   /* truncated: keep what fitted, end with a newline */
        v->len = v->cap - 1;
        v->buf[v->len - 1] = '\n';
        v->buf[v->len] = '\0';
        return;
    }
    v->len += (size_t)n;
    if (v->len + 1 < v->cap) {
        v->buf[v->len++] = '\n';
        v->buf[v->len] = '\0';
    }
}
/************** End of verify.c ********************************************************/

/************** Begin file refset.c ****************************************************/
/* ==========================================================================
 * 7. Sets of element references (p2_refset: cursors that move the element under them)
 * ========================================================================== */

#define P2_REFSET_EMPTY UINT64_MAX

static uint64_t refset_home(uint64_t ref, uint64_t cap)
{
    ref ^= ref >> 33;                      /* a 64-bit mix (murmur3's finaliser) */
    ref *= UINT64_C(0xff51afd7ed558ccd);
    ref ^= ref >> 33;
    return ref & (cap - 1);
}

static void refset_put(uint64_t *slot, uint64_t cap, uint64_t ref)
{
    uint64_t i = refset_home(ref, cap);
    while (slot[i] != P2_REFSET_EMPTY && slot[i] != ref) i = (i + 1) & (cap - 1);
    slot[i] = ref;
}

static uint64_t *refset_table(uint64_t cap)
{
    uint64_t *t = malloc(cap * sizeof *t);
    if (t != NULL) memset(t, 0xff, cap * sizeof *t);   /* every slot P2_REFSET_EMPTY */
    return t;
}

int p2_refset_reserve(p2_refset *s, int remap)
{
    if ((s->n + 1) * 2 > s->cap) {         /* keep the load at most one half */
        uint64_t cap = s->cap ? s->cap * 2 : 16, i;
        uint64_t *t;
        if (cap > (UINT64_MAX / sizeof *t) / 2) return P2_ENOMEM;
        t = refset_table(cap);
        if (t == NULL) return P2_ENOMEM;
        for (i = 0; i < s->cap; i++)
            if (s->slot[i] != P2_REFSET_EMPTY) refset_put(t, cap, s->slot[i]);
        free(s->slot);
        free(s->spare);
        s->slot = t;
        s->spare = NULL;
        s->cap = cap;
    }
    if (remap && s->spare == NULL) {
        s->spare = refset_table(s->cap);
        if (s->spare == NULL) return P2_ENOMEM;
    }
    return P2_OK;
}

void p2_refset_add(p2_refset *s, uint64_t ref)
{
    uint64_t i;
    if (s->cap == 0 || ref == P2_REFSET_EMPTY) return;   /* not reserved: nothing to add to */
    i = refset_home(ref, s->cap);
    while (s->slot[i] != P2_REFSET_EMPTY) {
        if (s->slot[i] == ref) return;
        i = (i + 1) & (s->cap - 1);
    }
    if (s->n + 1 >= s->cap) return;        /* not reserved: one slot always stays empty */
    s->slot[i] = ref;
    s->n++;
}

int p2_refset_has(const p2_refset *s, uint64_t ref)
{
    uint64_t i;
    if (s->n == 0 || ref == P2_REFSET_EMPTY) return 0;
    i = refset_home(ref, s->cap);
    while (s->slot[i] != P2_REFSET_EMPTY) {
        if (s->slot[i] == ref) return 1;
        i = (i + 1) & (s->cap - 1);
    }
    return 0;
}

void p2_refset_del(p2_refset *s, uint64_t ref)
{
    uint64_t i, j, mask;
    if (s->n == 0 || ref == P2_REFSET_EMPTY) return;
    mask = s->cap - 1;
    i = refset_home(ref, s->cap);
    while (s->slot[i] != ref) {
        if (s->slot[i] == P2_REFSET_EMPTY) return;
        i = (i + 1) & mask;
    }
    /* backward-shift deletion: members after the hole that may live there move up */
    for (j = (i + 1) & mask; s->slot[j] != P2_REFSET_EMPTY; j = (j + 1) & mask) {
        uint64_t h = refset_home(s->slot[j], s->cap);
        if (((j - h) & mask) >= ((j - i) & mask)) {   /* its home is not in (i, j] */
            s->slot[i] = s->slot[j];
            i = j;
        }
    }
    s->slot[i] = P2_REFSET_EMPTY;
    s->n--;
}

void p2_refset_remap(p2_refset *s, uint64_t (*f)(uint64_t r, uint64_t a, uint64_t b),
                     uint64_t a, uint64_t b)
{
    uint64_t i, *t;
    if (s->n == 0 || s->spare == NULL) return;
    t = s->spare;
    for (i = 0; i < s->cap; i++)
        if (s->slot[i] != P2_REFSET_EMPTY) refset_put(t, s->cap, f(s->slot[i], a, b));
    memset(s->slot, 0xff, s->cap * sizeof *s->slot);
    s->spare = s->slot;                    /* the old table, emptied, is the next spare */
    s->slot = t;
}

/* A big block's mapping: whole pages. 0 if size cannot be mapped. */
static size_t heap_big_len(uint64_t size)
{
    uint64_t pg = page_size();
    if (size == 0 || size > (uint64_t)SIZE_MAX - pg)
        return 0;
    return (size_t)((size + pg - 1) / pg * pg);
}

/* Huge pages for the whole mapping: faults, not zeroing, are what a first touch of fresh
   memory costs most (a 1,000,000-row bulk load spent most of its time in them). Advice for
   a 2 MiB-aligned part of it only would split the mapping in three, and mremap cannot move
   a range that spans more than one. Advice only: a refusal changes nothing. */
static void heap_big_advise(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE);
#else
    (void)p; (void)len;
#endif
}

void *p2_heap_big_alloc(uint64_t size)
{
    size_t len = heap_big_len(size);
    void *p = len ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                  : MAP_FAILED;
    if (p == MAP_FAILED)
        return NULL;
    heap_big_advise(p, len);
    return p;
}

void *p2_heap_big_realloc(void *p, uint64_t old_size, uint64_t new_size)
{
    size_t ol = heap_big_len(old_size), nl = heap_big_len(new_size);
    if (p == NULL || ol == 0 || nl == 0)
        return NULL;
    void *q = ol == nl ? p : mremap(p, ol, nl, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
        return NULL;
    if (new_size > old_size) {
        /* the rest of the old last page may hold what a shrink left behind; the pages
           after it are new, and zero */
        uint64_t end = (uint64_t)ol < new_size ? (uint64_t)ol : new_size;
        if (end > old_size)
            memset((char *)q + old_size, 0, (size_t)(end - old_size));
        heap_big_advise(q, nl);
    }
    return q;
}

void p2_heap_big_free(void *p, uint64_t size)
{
    size_t len = heap_big_len(size);
    if (p != NULL && len)
        (void)munmap(p, len);
}

void p2_refset_free(p2_refset *s)
{
    free(s->slot);
    free(s->spare);
    memset(s, 0, sizeof *s);
}
/************** End of refset.c ********************************************************/

/************** Begin file backend.c ***************************************************/
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
/************** End of backend.c *******************************************************/

/************** Begin file pageserver.c ************************************************/
/* ==========================================================================
 * 9. Page servers: the client buffer (design in p2_runtime.h, @ref server)
 *
 * A segment whose bytes live behind a backend (section 8).  Its reservation is the
 * persistent segment's, but nothing is mapped from a file: a page not in a frame is
 * brought into one on its first touch, through userfaultfd where the kernel lets this
 * process have one (the page readable and writable but missing: the kernel stops the
 * toucher and a handler thread fills the page with UFFDIO_COPY, section 9.1), else
 * through SIGSEGV (the page PROT_NONE: the handler below fills it in the toucher's
 * thread).  Either way the clock's reference bits and the first write to a clean page
 * are seen by mprotect and SIGSEGV.  Per page one state byte (in a frame, dirty,
 * protected by the clock, held on the server, written back before, ranges pending under
 * ship = ranges); per frame the page it holds and its reference bit.
 * The segment's own code (section 4) reaches the server through four hooks: reading the
 * header at open (pb_read), growth (pb_grow), and writing back what is dirty where a
 * local file is msync'ed (pb_sync at create, attach, sync; pb_close).
 * ========================================================================== */

#define PB_RES    1u    /* in a frame */
#define PB_DIRTY  2u    /* written since it was last written back (writable) */
#define PB_PROT   4u    /* in a frame but made inaccessible by the clock's hand */
#define PB_SRV    8u    /* the server holds its bytes (else: a new page, zero) */
#define PB_WB     16u   /* written back at least once since the open or the last reset */
#define PB_PEND   32u   /* ship = ranges: its announced ranges wait in the pending store */
#define MAX_PBUFS 64    /* page-server segments open at once in a process */
/* pageserver(ship = ranges): the announced bytes of a page, in granules of 1/256 page */
#define PB_GRANULES 256u
/* announced runs closer than this many granules ship as one range: a one-granule gap
   (16 bytes of a 4 KiB page) costs less than a request's header (NBD's: 28 bytes) */
#define PB_GAP      2u
#define PB_MAXR     ((PB_GRANULES + PB_GAP) / (PB_GAP + 1))   /* ranges of a page at most */
#define PB_IOS      (P2_SERVER_INFLIGHT * 8)  /* ranges a write-back sends at once, at most */
_Static_assert(PB_MAXR <= PB_IOS, "a write-back sends a page's ranges at once");
#define PB_RECENT   256u /* the last notices, applied again to a page turning dirty */

/* ship = ranges: a page evicted dirty keeps its announced ranges here until the next sync
 * (section 9.4): the granules held (runs closer than PB_GAP filled in) and their bytes */
typedef struct pb_pend {
    uint64_t page;
    uint64_t mask[PB_GRANULES / 64];
    char    *bytes;         /* the held granules' bytes, in granule order */
    uint64_t nbytes;
} pb_pend;

typedef struct p2_pagebuf {
    p2_backend be;
    p2_seg  *seg;
    uint64_t pg;            /* page: the unit of faults, frames and requests */
    uint64_t npages;        /* pages of the reservation */
    uint32_t nframes, used, hand;
    uint8_t *state;         /* per page */
    uint32_t *frame_of;     /* per page in a frame: its frame */
    uint32_t *frame_page;   /* per frame: its page */
    uint8_t *frame_ref;     /* per frame: referenced since the hand last passed */
    uint64_t track_bytes;   /* of the mapping holding the four arrays above */
    p2_server_stats st;
    int      failed;        /* a page could not be read inside a fault: see @ref server */
    char     why[P2_ERR_MSG_SIZE];
    struct p2_objcache *oc; /* an object server's cache (section 10), else NULL */
    /* transactions through a log export (section 9.5): a journal or wal above */
    uint32_t cap;           /* frames the tables hold: nframes, or npages under txn */
    int      txn;           /* no steal: dirty pages stay until commit or abort */
    int      sync;          /* flush the log and the data at commit (the journal's sync) */
    int      reader;        /* opened read-only: no lease, commits of changes refused */
    int      stale;         /* a reader's page was read after a newer commit began */
    p2_backend log;         /* the log export (ops NULL: none) */
    p2_server_stats log_st; /* its requests (not in the buffer's counters) */
    uint64_t gen;           /* the commit the buffer's clean pages are of */
    uint64_t replayed;      /* the commit the open wrote back from the log, 0: none */
    uint64_t token, expiry_ms, lease_ms;   /* the writer's lease */
    char     owner[96];     /* "pid N on HOST" */
    /* ship = ranges (section 9.4): per page PB_GRANULES bits, the granules announced by
       p2_seg_will_write since the page was last written back; NULL: whole pages */
    uint64_t *wmask;
    uint64_t  wmask_bytes;
    uint32_t *mask_gen;               /* per page: the sync its granules are of (else stale) */
    uint32_t  sync_gen;               /* syncs so far: masks of an older one are empty */
    uint64_t  recent[PB_RECENT][2];   /* the last notices (offset, bytes), a ring */
    uint32_t  nrecent;                /* notices so far (the ring's next is nrecent % size) */
    uint32_t *pend_of;                /* per page: its pending entry + 1, 0: none */
    pb_pend  *pend;                   /* the pending store: entries [0, npend) */
    uint32_t  npend, pend_cap;
    uint64_t  pend_bytes, pend_max;   /* bytes held; at most (P2_SERVER_PENDING_BYTES) */
    /* faults through userfaultfd (section 9.1) */
    int      uffd_on;           /* pages fault in through the userfaultfd (else SIGSEGV) */
    int      uffd_tried;        /* asked the kernel for one (once per open) */
    int      uffd, uffd_stop;   /* the userfaultfd; an eventfd that stops its thread */
    char    *uffd_base;         /* the reservation registered with it, NULL: none */
    char    *bounce;            /* pages the thread reads into, then copies in place (one
                                   and the read-ahead's: P2_SERVER_INFLIGHT) */
    /* read-ahead (section 9: pb_ahead): P2_SERVER_READAHEAD at open, 0 or 1: off */
    uint32_t ra_max, ra_win;    /* pages a miss may bring in at most; the window now */
    uint64_t ra_next;           /* the page after the last run brought in by a miss */
#ifdef __linux__
    pthread_t uffd_thread;
#endif
} p2_pagebuf;

static __thread int pl_reader_next;   /* p2_server_open_reader: the next open is a reader's */
static void pl_reader_check(p2_pagebuf *pb);
static int pl_close(p2_seg *seg, p2_err *err);
static int pl_open(p2_seg *seg, const char *log_uri, int sync, uint64_t fingerprint, p2_err *err);
static void pl_drop_frame(p2_pagebuf *pb, uint32_t f);

/* An object server's segment (section 10) is a p2_pagebuf with an object cache: these
 * hooks are its where the page server's are a page buffer's. */
struct p2_objcache;
static int ob_sync(p2_seg *seg, p2_err *err);
static int ob_close(p2_seg *seg, p2_err *err);
static int ob_grow(p2_seg *seg, uint64_t want, p2_err *err);
static int ob_drop(p2_seg *seg, p2_err *err);
static void ob_free(p2_pagebuf *pb);
static void ob_forget_writebacks(p2_pagebuf *pb);

static p2_pagebuf *volatile pbufs[MAX_PBUFS];
static struct sigaction pbprev;
static int pbinstalled;
static volatile sig_atomic_t pbchaining;

static char *pb_addr(const p2_pagebuf *pb, uint64_t p) { return pb->seg->base + p * pb->pg; }

static int pb_protect(p2_pagebuf *pb, uint64_t p, int prot)
{
    return mprotect(pb_addr(pb, p), (size_t)pb->pg, prot);
}

/* Page p leaves its frame: its memory given back, and its next touch a fault (a missing
 * page under userfaultfd, PROT_NONE under SIGSEGV).  Under ship = ranges its announced
 * granules stay: a clean page's were announced for a write still to come. */
static void pb_mask_clear(p2_pagebuf *pb, uint64_t p);

static void pb_unmap(p2_pagebuf *pb, uint64_t p)
{
    (void)madvise(pb_addr(pb, p), (size_t)pb->pg, MADV_DONTNEED);
    (void)pb_protect(pb, p, pb->uffd_on ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static int pb_failed(p2_pagebuf *pb, p2_err *err)
{
    return seg_fail(pb->seg, err, P2_EIO, "%s", pb->why);
}

/* P2_EIO where the segment has failed (see @ref server), else P2_OK. */
static int pb_check(const p2_seg *seg, p2_err *err)
{
    return seg->pb->failed ? pb_failed(seg->pb, err) : P2_OK;
}

/* Announced granules m[] with the gaps between runs closer than PB_GAP filled in: what
 * ships (a few bytes more, one request less). */
static void pb_mask_fill(uint64_t *m)
{
    unsigned end = 0;     /* after the last set granule, 0: none yet */
    for (unsigned i = 0; i < PB_GRANULES; i++) {
        if (!(m[i / 64] >> (i % 64) & 1))
            continue;
        if (end != 0 && i - end < PB_GAP)
            for (unsigned j = end; j < i; j++)
                m[j / 64] |= 1ull << (j % 64);
        end = i + 1;
    }
}

/* The next run of set granules of m[] at or after *i: [*a, *i) after the call; 0: none. */
static int pb_mask_run(const uint64_t *m, unsigned *i, unsigned *a)
{
    while (*i < PB_GRANULES && !(m[*i / 64] >> (*i % 64) & 1))
        (*i)++;
    if (*i >= PB_GRANULES)
        return 0;
    *a = *i;
    while (*i < PB_GRANULES && (m[*i / 64] >> (*i % 64) & 1))
        (*i)++;
    return 1;
}

static int pb_mask_any(const uint64_t *m)
{
    return (m[0] | m[1] | m[2] | m[3]) != 0;
}

/* Page p's announced granules since the last sync (a mask of an older sync is emptied
 * here first: a sync forgets every page's at once). */
static uint64_t *pb_mask(p2_pagebuf *pb, uint64_t p)
{
    uint64_t *m = pb->wmask + p * (PB_GRANULES / 64);
    if (pb->mask_gen[p] != pb->sync_gen) {
        memset(m, 0, PB_GRANULES / 8);
        pb->mask_gen[p] = pb->sync_gen;
    }
    return m;
}

/* A sync (a commit, an abort) wrote or dropped every page's changes: what was announced
 * before it is forgotten, for every page at once. */
static void pb_masks_forget(p2_pagebuf *pb)
{
    if (pb->wmask != NULL && ++pb->sync_gen == 0)
        pb->sync_gen = 1;        /* 0 is a fresh page's: never current */
}

/* Does dirty page p go back as its announced ranges (else whole)?  Not a page the server
 * does not hold yet, nor the header's page (the runtime writes its header without
 * notices), nor a page dirtied with nothing announced. */
static int pb_by_ranges(p2_pagebuf *pb, uint64_t p)
{
    return pb->wmask != NULL && p != 0 && (pb->state[p] & PB_SRV) && pb_mask_any(pb_mask(pb, p));
}

/* What of dirty page p goes back to the server, into io (PB_MAXR entries at most): the
 * whole page, or under ship = ranges the announced ranges, coalesced (PB_GAP). */
static unsigned pb_ranges(p2_pagebuf *pb, uint64_t p, p2_io *io)
{
    if (!pb_by_ranges(pb, p)) {
        io[0] = (p2_io){pb_addr(pb, p), pb->pg, p * pb->pg};
        return 1;
    }
    uint64_t m[PB_GRANULES / 64], g = pb->pg / PB_GRANULES;
    memcpy(m, pb_mask(pb, p), sizeof m);
    pb_mask_fill(m);
    unsigned n = 0, i = 0, a;
    while (pb_mask_run(m, &i, &a))
        io[n++] = (p2_io){pb_addr(pb, p) + a * g, (i - a) * g, p * pb->pg + a * g};
    pb->st.ranges += n;
    return n;
}

static void pb_mask_clear(p2_pagebuf *pb, uint64_t p)
{
    if (pb->wmask != NULL)
        memset(pb_mask(pb, p), 0, PB_GRANULES / 8);
}

/* The granules of [off, off + n) announced, n > 0, off + n within the reservation. */
static void pb_mark(p2_pagebuf *pb, uint64_t off, uint64_t n)
{
    uint64_t g = pb->pg / PB_GRANULES;
    for (uint64_t i = off / g; i <= (off + n - 1) / g; i++) {
        unsigned k = (unsigned)(i % PB_GRANULES);
        pb_mask(pb, i / PB_GRANULES)[k / 64] |= 1ull << (k % 64);
    }
}

/* ship = ranges: the bytes [off, off + n) are about to be written (p2_seg_will_write). */
static void pb_note(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    p2_pagebuf *pb = (p2_pagebuf *)ctx;
    uint64_t top = pb->npages * pb->pg;
    (void)seg;
    if (n == 0 || off >= top)
        return;
    if (off + n > top || off + n < off)
        n = top - off;
    pb_mark(pb, off, n);
    uint32_t r = pb->nrecent++ % PB_RECENT;
    pb->recent[r][0] = off;
    pb->recent[r][1] = n;
}

/* Page p turns dirty: its first write since it was last written back is happening.  The
 * write was announced before it, maybe before a sync forgot p's notices (a sync between
 * an operation's notice and its write): the recent notices that touch p are its again. */
static void pb_turns_dirty(p2_pagebuf *pb, uint64_t p)
{
    pb->state[p] |= PB_DIRTY;
    pb->st.dirty++;
    if (pb->wmask == NULL)
        return;
    uint64_t lo = p * pb->pg, hi = lo + pb->pg;
    uint32_t n = pb->nrecent < PB_RECENT ? pb->nrecent : PB_RECENT;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = pb->recent[i][0], b = a + pb->recent[i][1];
        if (a < hi && b > lo)
            pb_mark(pb, a < lo ? lo : a, (b > hi ? hi : b) - (a < lo ? lo : a));
    }
}

/* ------------------------------------------------------------------------
 * ship = ranges: the pending store (section 9.4)
 *
 * A dirty page evicted under ship = ranges is not written back: its announced ranges
 * (with the ones it had pending, and the gaps shorter than PB_GAP filled in) are copied
 * into the store, a few bytes each, and the page leaves its frame clean.  A fetch of the
 * page applies them over what the server sends, so the process reads its own writes; a
 * write-back of the page (at sync, or of a page dirtied with nothing announced) takes
 * them with it; the sync ships the rest in one batch.  So a page evicted and fetched many
 * times between two syncs is written once, as the object server writes an object.  A
 * crash before the sync loses them, as it loses a transaction's pages.  The store holds
 * at most pend_max bytes (P2_SERVER_PENDING_BYTES): beyond it, it is written back whole
 * and the page that overflowed it is written back as before.
 * ------------------------------------------------------------------------ */

static pb_pend *pb_pend_of(const p2_pagebuf *pb, uint64_t p)
{
    return (pb->state[p] & PB_PEND) ? &pb->pend[pb->pend_of[p] - 1] : NULL;
}

static uint64_t pb_mask_bytes(const p2_pagebuf *pb, const uint64_t *m)
{
    uint64_t n = 0;
    for (unsigned w = 0; w < PB_GRANULES / 64; w++)
        n += (uint64_t)__builtin_popcountll(m[w]);
    return n * (pb->pg / PB_GRANULES);
}

/* Copy the granules of m between the page at `page` and the packed bytes at `packed`
 * (to_page: onto the page, else from it). */
static void pb_mask_copy(const p2_pagebuf *pb, const uint64_t *m, char *page, char *packed, int to_page)
{
    uint64_t g = pb->pg / PB_GRANULES, at = 0;
    unsigned i = 0, a;
    while (pb_mask_run(m, &i, &a)) {
        if (to_page)
            memcpy(page + a * g, packed + at, (size_t)((i - a) * g));
        else
            memcpy(packed + at, page + a * g, (size_t)((i - a) * g));
        at += (i - a) * g;
    }
}

/* Page p's entry dropped (the last entry takes its place). */
static void pb_pend_drop(p2_pagebuf *pb, uint64_t p)
{
    uint32_t k = pb->pend_of[p] - 1, last = --pb->npend;
    pb->pend_bytes -= pb->pend[k].nbytes;
    free(pb->pend[k].bytes);
    if (k != last) {
        pb->pend[k] = pb->pend[last];
        pb->pend_of[pb->pend[k].page] = k + 1;
    }
    pb->pend_of[p] = 0;
    pb->state[p] &= (uint8_t)~PB_PEND;
}

/* Page p's announced granules get m's too. */
static void pb_mask_or(p2_pagebuf *pb, uint64_t p, const uint64_t *m)
{
    uint64_t *t = pb_mask(pb, p);
    for (unsigned w = 0; w < PB_GRANULES / 64; w++)
        t[w] |= m[w];
}

/* Page p, fetched into buf, gets the bytes it has pending: the process reads its writes. */
static void pb_pend_apply(const p2_pagebuf *pb, uint64_t p, char *buf)
{
    const pb_pend *e = pb_pend_of(pb, p);
    if (e != NULL)
        pb_mask_copy(pb, e->mask, buf, e->bytes, 1);
}

/* Dirty page p is about to be written back: its entry goes with it (its granules join
 * the page's announced ones, or the page goes whole). */
static void pb_pend_fold(p2_pagebuf *pb, uint64_t p)
{
    const pb_pend *e = pb_pend_of(pb, p);
    if (e == NULL)
        return;
    if (pb_by_ranges(pb, p))
        pb_mask_or(pb, p, e->mask);
    pb_pend_drop(pb, p);
}

/* Every entry written back (several requests in flight), then the store emptied, its
 * granules the pages' again until the sync (see pb_write_back).  On a failure the entries
 * stay: the next sync writes them again. */
static int pb_pend_flush(p2_pagebuf *pb, p2_err *err)
{
    p2_io io[PB_IOS];
    uint64_t g = pb->pg / PB_GRANULES;
    for (uint32_t k = 0; k < pb->npend;) {
        unsigned m = 0;
        uint32_t first = k;
        for (; k < pb->npend && m + PB_MAXR <= sizeof io / sizeof io[0]; k++) {
            const pb_pend *e = &pb->pend[k];
            uint64_t at = 0;
            unsigned i = 0, a;
            while (pb_mask_run(e->mask, &i, &a)) {
                io[m++] = (p2_io){e->bytes + at, (i - a) * g, e->page * pb->pg + a * g};
                at += (i - a) * g;
            }
        }
        int rc = pb->be.ops->writev(&pb->be, io, m, err);
        if (rc != P2_OK)
            return rc;
        pb->st.ranges += m;
        for (uint32_t j = first; j < k; j++) {
            uint64_t p = pb->pend[j].page;
            if (pb->state[p] & PB_WB)
                pb->st.rewrites++;
            pb->state[p] |= PB_WB;
            pb->st.writebacks++;
        }
    }
    while (pb->npend > 0) {
        const pb_pend *e = &pb->pend[pb->npend - 1];
        pb_mask_or(pb, e->page, e->mask);
        pb_pend_drop(pb, e->page);
    }
    return P2_OK;
}

/* Dirty page p leaves its frame under ship = ranges (readable: its bytes are copied).
 * *kept: its ranges are in the store; else it is to be written back as before (the store
 * full: written back first, so that nothing older follows the page's write). */
static int pb_pend_put(p2_pagebuf *pb, uint64_t p, int *kept, p2_err *err)
{
    uint64_t m[PB_GRANULES / 64];
    const pb_pend *e = pb_pend_of(pb, p);
    memcpy(m, pb_mask(pb, p), sizeof m);
    for (unsigned w = 0; e != NULL && w < PB_GRANULES / 64; w++)
        m[w] |= e->mask[w];
    pb_mask_fill(m);
    uint64_t n = pb_mask_bytes(pb, m), old = e != NULL ? e->nbytes : 0;
    char *b = pb->pend_bytes - old + n <= pb->pend_max ? (char *)malloc((size_t)n) : NULL;
    if (b != NULL && e == NULL && pb->npend == pb->pend_cap) {
        uint32_t cap = pb->pend_cap ? 2 * pb->pend_cap : 64;
        pb_pend *t = (pb_pend *)realloc(pb->pend, cap * sizeof *t);
        if (t == NULL) {
            free(b);
            b = NULL;
        } else {
            pb->pend = t;
            pb->pend_cap = cap;
        }
    }
    *kept = b != NULL;
    if (b == NULL)            /* full (or no memory): written back, as without the store */
        return pb_pend_flush(pb, err);
    if (!(pb->state[p] & PB_PEND)) {
        pb->pend[pb->npend] = (pb_pend){p, {0}, NULL, 0};
        pb->pend_of[p] = ++pb->npend;
        pb->state[p] |= PB_PEND;
    }
    pb_pend *t = &pb->pend[pb->pend_of[p] - 1];
    pb_mask_copy(pb, m, pb_addr(pb, p), b, 0);
    free(t->bytes);
    t->bytes = b;
    pb->pend_bytes += n - t->nbytes;
    t->nbytes = n;
    memcpy(t->mask, m, sizeof m);
    return P2_OK;
}

/* Write back dirty pages list[0..n): read-only first (so a write after this faults and
 * marks the page dirty again), then all of them in one vectored request.  Under ship =
 * ranges a page's announced granules are forgotten only at a sync (pb_masks_forget): a
 * write-back keeps them, since a write announced before it may come after it (an
 * operation announces a block once, at its allocation, and may write it after hundreds
 * of other notices), so each later write-back ships every granule announced since the
 * last sync. */
static int pb_write_back(p2_pagebuf *pb, const uint32_t *list, unsigned n, p2_err *err)
{
    p2_io io[PB_IOS];
    while (n > 0) {
        unsigned k = 0, m = 0;
        for (; k < n && m + PB_MAXR <= sizeof io / sizeof io[0]; k++) {
            uint64_t p = list[k];
            pb_pend_fold(pb, p);
            m += pb_ranges(pb, p, io + m);
            if (pb->state[p] & PB_PROT)
                pb->state[p] &= (uint8_t)~PB_PROT;
            (void)pb_protect(pb, p, PROT_READ);
        }
        int rc = pb->be.ops->writev(&pb->be, io, m, err);
        for (unsigned i = 0; i < k; i++) {
            uint64_t p = list[i];
            if (rc != P2_OK) {          /* still dirty: writable again */
                (void)pb_protect(pb, p, PROT_READ | PROT_WRITE);
                continue;
            }
            if (pb->state[p] & PB_WB)
                pb->st.rewrites++;
            pb->state[p] = (uint8_t)((pb->state[p] & ~PB_DIRTY) | PB_SRV | PB_WB);
            pb->st.writebacks++;
            pb->st.dirty--;
        }
        if (rc != P2_OK)
            return rc;
        list += k;
        n -= k;
    }
    return P2_OK;
}

/* Drop frame f's page (written back first if dirty): the next touch faults it in.  Once
 * the segment has failed nothing more reaches the server: a dirty page is dropped
 * unwritten (the server keeps what was written before the failure). */
static int pb_evict(p2_pagebuf *pb, uint32_t f, p2_err *err)
{
    uint32_t p = pb->frame_page[f];
    if ((pb->state[p] & PB_DIRTY) && pb->failed) {
        pb->state[p] &= (uint8_t)~PB_DIRTY;
        pb->st.dirty--;
    } else if (pb->state[p] & PB_DIRTY) {
        int kept = 0, rc = P2_OK;
        if (pb->pend_of != NULL && !pb->txn && pb_by_ranges(pb, p)) {
            pb->state[p] &= (uint8_t)~PB_PROT;
            (void)pb_protect(pb, p, PROT_READ);      /* its bytes are read */
            rc = pb_pend_put(pb, p, &kept, err);
        }
        if (kept) {
            pb_mask_clear(pb, p);                     /* in its entry now */
            pb->state[p] &= (uint8_t)~PB_DIRTY;
            pb->st.dirty--;
        } else if (rc == P2_OK) {
            rc = pb_write_back(pb, &p, 1, err);
        }
        if (rc != P2_OK) {            /* still dirty: writable again */
            (void)pb_protect(pb, p, PROT_READ | PROT_WRITE);
            return rc;
        }
    }
    pb_unmap(pb, p);
    pb->state[p] &= (uint8_t)~(PB_RES | PB_PROT);
    pb->st.evictions++;
    pb->st.resident--;
    return P2_OK;
}

/* The clock: the first frame not referenced since the hand last passed.  A referenced
 * one is spared, its bit cleared and its page made inaccessible, so that its next touch
 * is seen (a hit) and sets the bit again.  Two turns at most.  Under a transaction the
 * hand passes over dirty pages (no steal): UINT32_MAX when every frame holds one.  It
 * passes over a frame being filled (its page not resident yet). */
static uint32_t pb_victim(p2_pagebuf *pb)
{
    for (uint64_t seen = 0; seen <= 2 * (uint64_t)pb->used; seen++) {
        uint32_t f = pb->hand;
        pb->hand = f + 1 >= pb->used ? 0 : f + 1;
        if (pb->txn && (pb->state[pb->frame_page[f]] & PB_DIRTY))
            continue;
        if (!(pb->state[pb->frame_page[f]] & PB_RES))
            continue;                    /* being filled: a miss's or its read-ahead's */
        if (!pb->frame_ref[f])
            return f;
        pb->frame_ref[f] = 0;
        uint32_t p = pb->frame_page[f];
        if (!(pb->state[p] & PB_PROT)) {
            pb->state[p] |= PB_PROT;
            (void)pb_protect(pb, p, PROT_NONE);
        }
    }
    return UINT32_MAX;
}

/* A page fell out of the fault: zeros, the segment failed (see @ref server). */
static void pb_fail_page(p2_pagebuf *pb, const p2_err *e)
{
    if (!pb->failed)
        snprintf(pb->why, sizeof pb->why, "a page could not be brought in from the server inside a "
                 "fault, so the operation read zeros for it; nothing more is written to the server "
                 "(%.300s)", e->msg);
    pb->failed = 1;
}

/* Dirty page p could not be written back to free a frame for `what` inside a fault: the
 * segment failed (see @ref server), as when a page cannot be read, naming the write-back. */
static void pb_fail_writeback(p2_pagebuf *pb, uint64_t p, const char *what, const p2_err *e)
{
    if (!pb->failed)
        snprintf(pb->why, sizeof pb->why, "page %" PRIu64 " could not be written back to free a frame "
                 "for %s inside a fault, so its changes since its last write-back are lost; nothing "
                 "more is written to the server (%.300s)", p, what, e->msg);
    pb->failed = 1;
}

/* Page p could not be placed in its frame inside a fault (`what` failed, errno says why):
 * the segment failed (see @ref server), as when a page cannot be read. */
static void pb_fail_place(p2_pagebuf *pb, uint64_t p, const char *what)
{
    if (!pb->failed)
        snprintf(pb->why, sizeof pb->why, "page %" PRIu64 " could not be placed in its frame inside a "
                 "fault (%s: %s), so it was left out; nothing more is written to the server",
                 p, what, strerror(errno));
    pb->failed = 1;
}

/* Under userfaultfd: page p copied in place from bounce page i (UFFDIO_COPY), with the
 * protection its range has now; wake: the copy wakes its toucher.  1: woken; 0: placed,
 * not woken (a page already there is left as it is); -1: failed (errno says why). */
static int pb_copy(p2_pagebuf *pb, uint64_t p, unsigned i, int wake)
{
#ifdef __linux__
    struct uffdio_copy c = {(uintptr_t)pb_addr(pb, p), (uintptr_t)(pb->bounce + i * pb->pg), pb->pg,
                            wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE, 0};
    if (!FI_INJECTED(UFFDIO_COPY) && ioctl(pb->uffd, UFFDIO_COPY, &c) == 0)
        return wake;
    return errno == EEXIST ? 0 : -1;
#else
    (void)pb; (void)p; (void)i; (void)wake;
    return 0;
#endif
}

/* Fill pages pages[0..*k) (k <= P2_SERVER_INFLIGHT; more than one only when fetched): their
 * bytes from the server (fetch), one read request a page, all in flight at once, else
 * zeros.  Under SIGSEGV the pages are made readable and writable and read in place; one
 * that cannot be made so ends the run before it (*k, and the segment failed).  Under
 * userfaultfd the reads land in the bounce pages, which pb_settle copies in place.
 * 1: the bytes arrived from the server; 0: zeros (not fetched, or the read failed and the
 * segment with it); -1: not even pages[0] could be made accessible. */
static int pb_fill(p2_pagebuf *pb, const uint64_t *pages, unsigned *k, int fetch)
{
    p2_io io[P2_SERVER_INFLIGHT];
    for (unsigned i = 0; i < *k; i++) {
        if (!pb->uffd_on && pb_protect(pb, pages[i], PROT_READ | PROT_WRITE) != 0) {
            pb_fail_place(pb, pages[i], "mprotect");
            *k = i;
            break;
        }
        io[i] = (p2_io){pb->uffd_on ? pb->bounce + i * pb->pg : pb_addr(pb, pages[i]), pb->pg,
                        pages[i] * pb->pg};
    }
    if (*k == 0)
        return -1;
    if (!fetch) {
        if (pb->uffd_on)
            memset(pb->bounce, 0, (size_t)pb->pg);
        return 0;
    }
    p2_err e;
    p2_err_clear(&e);
    if (pb->be.ops->readv(&pb->be, io, *k, &e) != P2_OK) {
        for (unsigned i = 0; i < *k; i++)
            memset(io[i].buf, 0, (size_t)pb->pg);
        pb_fail_page(pb, &e);
        return 0;
    }
    if (pb->reader)
        pl_reader_check(pb);
    for (unsigned i = 0; i < *k; i++)
        pb_pend_apply(pb, pages[i], io[i].buf);
    return 1;
}

/* Filled pages pages[0..k) into their frames frames[0..k), in order: each marked resident
 * and, under userfaultfd, copied in place (wake: pages[0]'s copy wakes its toucher, so its
 * state is final before it: a toucher let go may fault on it again at once).  A copy that
 * fails ends the run there, that page not resident (the segment failed).  How many were
 * placed; *woke: the toucher was woken. */
static unsigned pb_settle(p2_pagebuf *pb, const uint64_t *pages, const uint32_t *frames, unsigned k,
                          int wake, int *woke)
{
    *woke = 0;
    for (unsigned i = 0; i < k; i++) {
        uint64_t q = pages[i];
        pb->frame_of[q] = frames[i];
        pb->state[q] |= PB_RES;
        pb->st.resident++;
        int r = pb->uffd_on ? pb_copy(pb, q, i, i == 0 && wake) : 0;
        if (r < 0) {
            pb_fail_place(pb, q, "UFFDIO_COPY");
            pb->state[q] &= (uint8_t)~PB_RES;
            pb->st.resident--;
            return i;
        }
        *woke |= r;
    }
    return k;
}

/* Frame f free again: the last frame takes its place (the frames in use stay 0..used). */
static void pb_free_frame(p2_pagebuf *pb, uint32_t f)
{
    uint32_t last = --pb->used;
    if (f != last) {
        pb->frame_page[f] = pb->frame_page[last];
        pb->frame_ref[f] = pb->frame_ref[last];
        pb->frame_of[pb->frame_page[f]] = f;
    }
    if (pb->hand >= pb->used)
        pb->hand = 0;
}

/* Pages pages[0..k), claimed by a miss but not placed, given up: each absent again (its
 * next touch faults it in) and its frame frames[i] free.  The highest frame first, so
 * that the last frame, which takes a freed one's place, is none of the others. */
static void pb_give_back(p2_pagebuf *pb, const uint64_t *pages, uint32_t *frames, unsigned k)
{
    for (unsigned i = 0; i < k; i++)
        pb_unmap(pb, pages[i]);
    while (k > 0) {
        unsigned top = 0;
        for (unsigned i = 1; i < k; i++)
            if (frames[i] > frames[top])
                top = i;
        pb_free_frame(pb, frames[top]);
        frames[top] = frames[--k];
    }
}

/* A frame for a page read ahead: a free one, else the clock's victim, written back first
 * if dirty.  UINT32_MAX: none (every frame dirty under a transaction, or the victim could
 * not be written back: the segment failed, saying so). */
static uint32_t pb_frame(p2_pagebuf *pb)
{
    if (pb->used < pb->nframes)
        return pb->used++;
    uint32_t f = pb_victim(pb);
    p2_err e;
    p2_err_clear(&e);
    if (f != UINT32_MAX && pb_evict(pb, f, &e) != P2_OK) {
        pb_fail_writeback(pb, pb->frame_page[f], "a read-ahead", &e);
        return UINT32_MAX;
    }
    return f;
}

/* Read-ahead (P2_SERVER_READAHEAD=N at open; off by default, so that the page server's
 * requests are the paper's, one page a miss): a miss near the end of the run the last
 * miss brought in (within PB_RA_SLOP pages: a scan through clustered objects touches its
 * pages a little out of order) is a scan's, and brings in with it the pages in the window
 * after it that the server holds and no frame does, the window doubling at each such miss
 * (2, 4, ... N, at most P2_SERVER_INFLIGHT and a quarter of the frames) and falling back
 * to one page at a miss elsewhere.  So a scan keeps up to N requests in flight where it
 * waited for each.  The pages after p into pages[], their frames into frames[]; returns
 * how many (0: p alone).  Each frame is taken as a miss's (a victim written back first);
 * the clock passes over frames whose page is not resident yet, so none holding this
 * run's pages is taken again. */
#define PB_RA_SLOP 4u
static unsigned pb_ahead(p2_pagebuf *pb, uint64_t p, uint64_t *pages, uint32_t *frames)
{
    uint32_t cap = pb->nframes / 4 < pb->ra_max ? pb->nframes / 4 : pb->ra_max;
    int near = pb->ra_next != UINT64_MAX && p + PB_RA_SLOP >= pb->ra_next && p <= pb->ra_next + PB_RA_SLOP;
    pb->ra_win = near ? (pb->ra_win * 2 > cap ? cap : pb->ra_win * 2) : 1;
    unsigned n = 0;
    uint64_t q = p + 1, end = pb->seg->mapped / pb->pg;
    for (; q < p + pb->ra_win && q < end; q++) {
        if (pb->state[q] & PB_RES)
            continue;                    /* touched already, out of order */
        if (!(pb->state[q] & PB_SRV))
            break;                       /* past what the server holds */
        uint32_t f = pb_frame(pb);
        if (f == UINT32_MAX)
            break;
        pages[n] = q;
        frames[n++] = f;
        pb->frame_page[f] = (uint32_t)q;    /* claimed: not resident yet, the clock passes over it */
        pb->frame_ref[f] = 1;
    }
    pb->ra_next = q > pb->ra_next || !near ? q : pb->ra_next;
    return n;
}

/* Bring page p into a frame (a miss), and with it what read-ahead brings (pb_ahead);
 * write: the access writes.  0 on success, 1 where the toucher was woken already (under
 * userfaultfd a read's page is made read-only before it is placed, and its copy wakes the
 * toucher: one system call less than a copy, an mprotect and a wake), -1 on failure. */
static int pb_fault_in(p2_pagebuf *pb, uint64_t p, int write)
{
    p2_err e;
    p2_err_clear(&e);
    uint32_t f;
    pb->st.misses++;
    if (pb->used < pb->nframes) {
        f = pb->used++;
    } else if ((f = pb_victim(pb)) == UINT32_MAX) {
        if (pb->used == pb->cap)        /* cannot be: cap is every page of the reservation */
            return -1;
        f = pb->used++;                 /* a transaction larger than the buffer: one more */
    } else {
        if (pb_evict(pb, f, &e) != P2_OK) {
            /* the victim cannot be written back: the segment fails, and the victim is
               dropped unwritten (pb_evict once failed); the page coming in gets zeros */
            pb_fail_writeback(pb, pb->frame_page[f], "a miss", &e);
            (void)pb_evict(pb, f, &e);
        }
    }
    pb->frame_page[f] = (uint32_t)p;    /* claimed: not resident yet, the clock passes over it */
    pb->frame_ref[f] = 1;
    int fetch = (pb->state[p] & PB_SRV) && !pb->failed;
    uint64_t pages[P2_SERVER_INFLIGHT];
    uint32_t frames[P2_SERVER_INFLIGHT];
    pages[0] = p;
    frames[0] = f;
    unsigned n = 1 + (fetch && pb->ra_max > 1 ? pb_ahead(pb, p, pages + 1, frames + 1) : 0);
    int later = pb->uffd_on && !write;     /* placed read-only, waking the toucher */
    /* a page is resident once placed: read in place (SIGSEGV) or copied there (userfaultfd);
       those a failure left out (m..n) are given back, to be faulted in again */
    unsigned m = n;
    int arrived = pb_fill(pb, pages, &m, fetch);
    for (unsigned i = 0; i < m; i++)      /* read-only: a write to a read-ahead page is seen */
        if ((i > 0 || later) && pb_protect(pb, pages[i], PROT_READ) != 0) {
            pb_fail_place(pb, pages[i], "mprotect");
            m = i;
        }
    int woke = 0;
    m = pb_settle(pb, pages, frames, m, later, &woke);
    pb_give_back(pb, pages + m, frames + m, n - m);
    if (m == 0)
        return -1;
    if (arrived > 0)
        pb->st.bundled += m - 1;        /* what arrived with the miss, and stayed */
    if (later)
        return woke;
    if (write) {
        pb_turns_dirty(pb, p);
        return 0;
    }
    return pb_protect(pb, p, PROT_READ);
}

/* Handle a fault at a, in pb's reservation.  0: handled; -1: not ours to handle. */
static int pb_fault(p2_pagebuf *pb, char *a, int write)
{
    uint64_t off = (uint64_t)(a - pb->seg->base);
    if (off >= pb->seg->mapped)
        return -1;                       /* outside the database: a real fault */
    uint64_t p = off / pb->pg;
    uint8_t s = pb->state[p];
    if (!(s & PB_RES) && pb->uffd_on)   /* left inaccessible by the thread: missing again */
        return pb_protect(pb, p, PROT_READ | PROT_WRITE);
    if (!(s & PB_RES))
        return pb_fault_in(pb, p, write) < 0 ? -1 : 0;
    if (s & PB_PROT) {                   /* the clock had taken its reference bit */
        pb->st.hits++;
        pb->frame_ref[pb->frame_of[p]] = 1;
        pb->state[p] &= (uint8_t)~PB_PROT;
        if ((s & PB_DIRTY) || !write)
            return pb_protect(pb, p, (s & PB_DIRTY) ? PROT_READ | PROT_WRITE : PROT_READ);
    } else if (s & PB_DIRTY) {
        return -1;                       /* writable already: a real fault */
    }
    pb_turns_dirty(pb, p);               /* the first write since the last write-back */
    pb->frame_ref[pb->frame_of[p]] = 1;
    return pb_protect(pb, p, PROT_READ | PROT_WRITE);
}

static void pb_handler(int sig, siginfo_t *si, void *uc)
{
    char *a = (char *)si->si_addr;
    int write = 0;
#if defined(__x86_64__) && defined(REG_ERR)
    write = uc != NULL && (((ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
    for (int i = 0; i < MAX_PBUFS; i++) {
        p2_pagebuf *pb = pbufs[i];
        if (pb == NULL || a < pb->seg->base || a >= pb->seg->base + pb->seg->reserved)
            continue;
        if (pb_fault(pb, a, write) == 0)
            return;
        break;
    }
    /* not a page of ours: the previous handler's, as the journal's handler does */
    if (pbchaining) {
        signal(sig, SIG_DFL);
        return;
    }
    pbchaining = 1;
    if (pbprev.sa_flags & SA_SIGINFO) {
        if (pbprev.sa_sigaction != NULL) {
            pbprev.sa_sigaction(sig, si, uc);
            pbchaining = 0;
            return;
        }
    } else if (pbprev.sa_handler != SIG_DFL && pbprev.sa_handler != SIG_IGN) {
        pbprev.sa_handler(sig);
        pbchaining = 0;
        return;
    }
    pbchaining = 0;
    signal(sig, SIG_DFL);
}

/* Install the handler (again, on top, if another replaced it). */
static int pb_install(p2_seg *seg, p2_err *err)
{
    struct sigaction cur;
    if (pbinstalled && sigaction(SIGSEGV, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == pb_handler)
        return P2_OK;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = pb_handler;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;   /* on the thread's stack: a fault may wait on the server */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old) != 0)
        return seg_fail(seg, err, P2_EIO, "cannot install the page server's SIGSEGV handler: %s",
                        strerror(errno));
    pbprev = old;
    pbinstalled = 1;
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * 9.1 faults through userfaultfd
 *
 * Per open, a userfaultfd with the reservation registered for missing pages, and a
 * thread that serves them: the toucher stops in the kernel, the thread runs the same
 * buffer code the SIGSEGV handler runs (pb_fault_in: a frame, a victim written back,
 * the page read) and wakes it.  Cheaper than a signal and two mprotects per fault (the
 * spec's acob.md, section 8), and a system call given a missing page waits for it rather
 * than failing with EFAULT (where the kernel lets user faults alone be handled,
 * UFFD_USER_MODE_ONLY, it still fails).  Where the kernel refuses one (EPERM:
 * vm.unprivileged_userfaultfd = 0 without CAP_SYS_PTRACE; ENOSYS), or
 * P2_SERVER_FAULTS=sigsegv says so, the open keeps the SIGSEGV path; the counters say
 * which (p2_server_stats.userfaultfd).
 * ------------------------------------------------------------------------ */

#ifdef __linux__
/* A missing page at a was touched (write: by a write). */
static void pb_uffd_fault(p2_pagebuf *pb, char *a, int write)
{
    uint64_t p = (uint64_t)(a - pb->seg->base) / pb->pg;
    int rc = 0;
    if ((uint64_t)(a - pb->seg->base) >= pb->seg->mapped) {
        (void)pb_protect(pb, p, PROT_NONE);    /* outside the database: SIGSEGV says so */
    } else if (!(pb->state[p] & PB_RES) && (rc = pb_fault_in(pb, p, write)) < 0) {
        if (!pb->failed)
            snprintf(pb->why, sizeof pb->why, "page %" PRIu64 " could not be given a frame inside "
                     "a fault (%s), so the operation read zeros for it; nothing more is written to "
                     "the server", p, strerror(errno));
        pb->failed = 1;
        memset(pb->bounce, 0, (size_t)pb->pg);
        struct uffdio_copy c = {(uintptr_t)pb_addr(pb, p), (uintptr_t)pb->bounce, pb->pg,
                                UFFDIO_COPY_MODE_DONTWAKE, 0};
        (void)ioctl(pb->uffd, UFFDIO_COPY, &c);
    }
    if (rc == 1)
        return;                                /* the page's copy woke the toucher */
    struct uffdio_range r = {(uintptr_t)pb_addr(pb, p), pb->pg};
    (void)ioctl(pb->uffd, UFFDIO_WAKE, &r);
}

static void *pb_uffd_thread(void *arg)
{
    p2_pagebuf *pb = (p2_pagebuf *)arg;
    struct pollfd fds[2] = {{pb->uffd, POLLIN, 0}, {pb->uffd_stop, POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        if (fds[1].revents != 0)
            break;
        struct uffd_msg m;
        if (read(pb->uffd, &m, sizeof m) != (ssize_t)sizeof m || m.event != UFFD_EVENT_PAGEFAULT)
            continue;
        pb_uffd_fault(pb, (char *)(uintptr_t)m.arg.pagefault.address,
                      (m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0);
    }
    return NULL;
}
#endif

/* The segment's reservation (new, or made again by seg_create) under userfaultfd: the
 * descriptor and its thread at the first call; the reservation registered, readable and
 * writable (every page missing).  Where the kernel says no, the SIGSEGV path. */
static void pb_uffd_attach(p2_pagebuf *pb)
{
#ifdef __linux__
    const char *want = getenv("P2_SERVER_FAULTS");
    if (pb->uffd_base == pb->seg->base || (want != NULL && strcmp(want, "sigsegv") == 0))
        return;
    if (!pb->uffd_tried) {
        pb->uffd_tried = 1;
        int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
#ifdef UFFD_USER_MODE_ONLY
        if (fd < 0 && errno == EPERM)
            fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
#endif
        if (fd < 0)
            return;
        struct uffdio_api api = {UFFD_API, 0, 0};
        pb->bounce = (char *)mmap(NULL, (size_t)pb->pg * P2_SERVER_INFLIGHT, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        pb->uffd_stop = eventfd(0, EFD_CLOEXEC);
        pb->uffd = fd;
        if (ioctl(fd, UFFDIO_API, &api) != 0 || pb->bounce == MAP_FAILED || pb->uffd_stop < 0 ||
            pthread_create(&pb->uffd_thread, NULL, pb_uffd_thread, pb) != 0) {
            if (pb->bounce != MAP_FAILED)
                munmap(pb->bounce, (size_t)pb->pg * P2_SERVER_INFLIGHT);
            pb->bounce = NULL;
            if (pb->uffd_stop >= 0)
                close(pb->uffd_stop);
            close(fd);
            return;
        }
        pb->uffd_on = 1;
    }
    if (!pb->uffd_on)
        return;
    struct uffdio_register reg = {{(uintptr_t)pb->seg->base, pb->seg->reserved},
                                  UFFDIO_REGISTER_MODE_MISSING, 0};
    if (ioctl(pb->uffd, UFFDIO_REGISTER, &reg) == 0 &&
        mprotect(pb->seg->base, (size_t)pb->seg->reserved, PROT_READ | PROT_WRITE) == 0) {
        pb->uffd_base = pb->seg->base;
        return;
    }
    /* cannot be registered: its pages PROT_NONE again, and faults through SIGSEGV from now
       (the thread is stopped at close) */
    (void)mprotect(pb->seg->base, (size_t)pb->seg->reserved, PROT_NONE);
    pb->uffd_on = 0;
#else
    (void)pb;
#endif
}

/* The thread stopped, the descriptor closed (before the reservation is unmapped). */
static void pb_uffd_detach(p2_pagebuf *pb)
{
#ifdef __linux__
    if (pb->bounce != NULL) {         /* the thread was started */
        uint64_t one = 1;
        if (write(pb->uffd_stop, &one, sizeof one) == (ssize_t)sizeof one)
            (void)pthread_join(pb->uffd_thread, NULL);
        close(pb->uffd_stop);
        close(pb->uffd);
        pb->uffd_on = 0;
    }
#endif
    if (pb->bounce != NULL)
        munmap(pb->bounce, (size_t)pb->pg * P2_SERVER_INFLIGHT);
    pb->bounce = NULL;
}

/* ------------------------------------------------------------------------
 * 9.2 the hooks of section 4
 * ------------------------------------------------------------------------ */

/* Read n bytes at off from the server, around the buffer (the header at open). */
static int pb_read(p2_seg *seg, void *buf, uint64_t n, uint64_t off, p2_err *err)
{
    if (seg->pb->oc != NULL) {      /* an object server: its meta is here since the open */
        if (off + n > seg->mapped)
            return seg_fail(seg, err, P2_EFORMAT, "%" PRIu64 " bytes at %" PRIu64 " lie past the "
                            "database's cells", n, off);
        memcpy(buf, seg->base + off, (size_t)n);
        return P2_OK;
    }
    p2_io io = {buf, n, off};
    return seg->pb->be.ops->readv(&seg->pb->be, &io, 1, err);
}

/* The segment grows to `want` bytes: the server must hold them; the new pages are zero. */
static int pb_grow(p2_seg *seg, uint64_t want, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed)
        return pb_failed(pb, err);
    if (pb->oc != NULL)
        return ob_grow(seg, want, err);
    if (pb->uffd_on && pb->uffd_base != seg->base)   /* seg_create's reservation */
        pb_uffd_attach(pb);
    if (want > pb->be.size && pb->be.ops->grow(&pb->be, want, err) != P2_OK)
        return P2_ENOMEM;
    return P2_OK;
}

/* Write back every dirty page and flush the server. */
static int pb_sync(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->oc != NULL)
        return ob_sync(seg, err);
    if (pb->failed)
        return pb_failed(pb, err);
    if (pb->txn)
        return P2_OK;   /* only commits write (section 9.5): a new database's first too */
    uint32_t list[256];
    unsigned n = 0;
    for (uint32_t f = 0; f < pb->used; f++) {
        uint32_t p = pb->frame_page[f];
        if ((pb->state[p] & (PB_PEND | PB_DIRTY)) == PB_PEND) {
            /* in a frame: its entry goes back with it, as its ranges */
            pb_mask_or(pb, p, pb_pend_of(pb, p)->mask);
            pb->state[p] |= PB_DIRTY;
            pb->st.dirty++;
        }
        if (!(pb->state[p] & PB_DIRTY))
            continue;
        list[n++] = p;
        if (n == sizeof list / sizeof list[0]) {
            int rc = pb_write_back(pb, list, n, err);
            if (rc != P2_OK)
                return rc;
            n = 0;
        }
    }
    int rc = n ? pb_write_back(pb, list, n, err) : P2_OK;
    if (rc == P2_OK)
        rc = pb_pend_flush(pb, err);
    if (rc == P2_OK)
        rc = pb->be.ops->flush(&pb->be, err);
    if (rc == P2_OK)
        pb_masks_forget(pb);
    return rc;
}

static void pb_unregister(p2_pagebuf *pb)
{
    for (int i = 0; i < MAX_PBUFS; i++)
        if (pbufs[i] == pb)
            pbufs[i] = NULL;
}

/* Release everything but the reservation (the segment's close unmaps it). */
static void pb_free(p2_seg *seg)
{
    p2_pagebuf *pb = seg->pb;
    if (pb == NULL)
        return;
    pb_unregister(pb);
    pb_uffd_detach(pb);
    ob_free(pb);
    if (pb->be.ops != NULL)
        pb->be.ops->close(&pb->be);
    if (pb->log.ops != NULL)
        pb->log.ops->close(&pb->log);
    if (pb->frame_of != NULL)     /* the tables' mapping starts with frame_of */
        munmap(pb->frame_of, (size_t)pb->track_bytes);
    if (pb->wmask != NULL)        /* the mapping holds pend_of too */
        munmap(pb->wmask, (size_t)pb->wmask_bytes);
    for (uint32_t k = 0; k < pb->npend; k++)
        free(pb->pend[k].bytes);
    free(pb->pend);
    free(pb);
    seg->pb = NULL;
}

/* Close: data first, then the CLEAN mark, as a local file's close. */
static int pb_close(p2_seg *seg, p2_err *err)
{
    if (seg->pb->oc != NULL)
        return ob_close(seg, err);
    if (seg->pb->txn)
        return pl_close(seg, err);
    struct p2_seg_header *h = seg->hdr;
    int rc = P2_OK;
    if (seg->pb->failed) {
        rc = pb_failed(seg->pb, err);
    } else {
        roots_seal(seg);
        h->checksum = header_crc(h);
        rc = pb_sync(seg, err);
        if (rc == P2_OK) {
            h->state = SEG_STATE_CLEAN;
            h->checksum = header_crc(h);
            rc = pb_sync(seg, err);
        }
    }
    pb_free(seg);
    munmap(seg->base, (size_t)seg->reserved);
    seg_reset(seg);
    return rc;
}

/* ------------------------------------------------------------------------
 * 9.3 open, counters
 * ------------------------------------------------------------------------ */

int p2_seg_open_server_log(p2_seg *seg, const char *uri, uint32_t frames, uint32_t page,
                           const char *log_uri, int sync, uint64_t fingerprint, uint32_t nroots,
                           const char *const *root_names, const uint64_t *root_sizes,
                           uint64_t reserve, int *created, p2_err *err)
{
    if (created != NULL)
        *created = 0;
    if (seg == NULL || uri == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_open_server: seg or uri is NULL");
    if (log_uri == NULL && pl_reader_next)
        return p2_err_set(err, P2_EINVAL, "%s: a reader needs the log export that holds the "
                          "commit generation (pageserver(log = ...) under a journal or wal)", uri);
    seg_reset(seg);
    seg->pb = NULL;
    snprintf(seg->path, sizeof seg->path, "%s", uri);
    if ((page != 4096 && page != 8192) || page % page_size() != 0)
        return seg_fail(seg, err, P2_EINVAL, "page size %" PRIu32 " is not supported (4096 or 8192, "
                        "a multiple of the machine's %" PRIu64 ")", page, page_size());
    if (frames < 2)
        return seg_fail(seg, err, P2_EINVAL, "a client buffer of %" PRIu32 " frames: at least 2 are needed", frames);
    seg->alloc_exact = root_names != NULL && roots_exact(nroots, root_names);
    int rc = check_roots(seg, nroots, root_names, root_sizes, err);
    if (rc != P2_OK)
        return rc;
    p2_pagebuf *pb = (p2_pagebuf *)calloc(1, sizeof *pb);
    if (pb == NULL)
        return seg_fail(seg, err, P2_ENOMEM, "out of memory for the client buffer");
    seg->pb = pb;
    pb->seg = seg;
    pb->pg = page;
    pb->be.st = &pb->st;
    rc = backend_open(&pb->be, uri, err);
    if (rc != P2_OK) {
        pb->be.ops = NULL;   /* nothing to close: the open undid itself */
        if (pb->be.nbd != NULL || pb->be.fd >= 0)
            pb->be.ops = strncmp(uri, "file://", 7) == 0 ? &file_ops : &nbd_ops;
        pb_free(seg);
        seg_reset(seg);
        return rc;
    }
    if (reserve == 0)
        reserve = P2_SEG_DEFAULT_RESERVE;
    uint64_t g = seg_granule();
    seg->reserved = round_up(reserve > SEG_MAX_RESERVE ? SEG_MAX_RESERVE : reserve, g);
    if (!pb->be.growable && pb->be.size / g * g < seg->reserved)
        seg->reserved = pb->be.size / g * g;     /* an export holds what it holds */
    if (seg->reserved < 2 * g) {
        rc = seg_fail(seg, err, P2_ENOMEM, "the export holds %" PRIu64 " bytes: too small for a database "
                      "(%" PRIu64 " at least)", pb->be.size, 2 * g);
        goto fail;
    }
    pb->npages = seg->reserved / pb->pg;
    pb->nframes = frames;
    {   /* read-ahead: off unless P2_SERVER_READAHEAD asks (pb_ahead) */
        const char *ra = getenv("P2_SERVER_READAHEAD");
        long v = ra != NULL ? strtol(ra, NULL, 10) : 0;
        pb->ra_max = v < 0 ? 0 : v > P2_SERVER_INFLIGHT ? P2_SERVER_INFLIGHT : (uint32_t)v;
        pb->ra_win = 1;
        pb->ra_next = UINT64_MAX;
    }
    pb->st.frames = frames;
    /* a transaction keeps its dirty pages (no steal): the frame tables may need a frame
       per page of the reservation (lazily backed: only what is used costs memory) */
    pb->cap = log_uri != NULL && pb->npages > frames ? (uint32_t)pb->npages : frames;
    {   /* per page: state and frame; per frame: page and reference bit (lazily backed) */
        uint64_t bytes = round_up(pb->npages, 8) + 4 * pb->npages + 5 * (uint64_t)pb->cap;
        bytes = round_up(bytes, page_size());
        void *t = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (t == MAP_FAILED) {
            rc = seg_fail(seg, err, P2_ENOMEM, "cannot map the client buffer's tables: %s", strerror(errno));
            goto fail;
        }
        pb->track_bytes = bytes;
        pb->frame_of = (uint32_t *)t;
        pb->frame_page = pb->frame_of + pb->npages;
        pb->state = (uint8_t *)(pb->frame_page + pb->cap);
        pb->frame_ref = pb->state + round_up(pb->npages, 8);
    }
    if ((rc = seg_reserve(seg, err)) != P2_OK)
        goto fail;
    if ((rc = pb_install(seg, err)) != P2_OK)
        goto fail;
    pb_uffd_attach(pb);
    for (int i = 0;; i++) {
        if (i == MAX_PBUFS) {
            rc = seg_fail(seg, err, P2_ENOMEM, "more than %d page-server segments open in this process", MAX_PBUFS);
            goto fail;
        }
        if (pbufs[i] == NULL) {
            pbufs[i] = pb;
            break;
        }
    }

    /* with a log: the lease, and the last commit written back if it was not whole */
    if (log_uri != NULL && (rc = pl_open(seg, log_uri, sync, fingerprint, err)) != P2_OK)
        goto fail;
    /* an export of zeros is empty: a new database; anything else is validated */
    struct p2_seg_header h;
    static const struct p2_seg_header zero_header;
    /* a file that grows and holds nothing yet (a new NFS or local file) is empty too */
    if (pb->be.size == 0 && pb->be.growable && !pb->reader &&
        (rc = pb->be.ops->grow(&pb->be, P2_SEG_HEADER_SIZE, err)) != P2_OK)
        goto fail;
    if (pb->be.size < sizeof h) {
        rc = seg_fail(seg, err, P2_EFORMAT, "truncated: the server holds %" PRIu64 " bytes, "
                      "smaller than the %d-byte header", pb->be.size, P2_SEG_HEADER_SIZE);
        goto fail;
    }
    if ((rc = pb_read(seg, &h, sizeof h, 0, err)) != P2_OK)
        goto fail;
    if (memcmp(&h, &zero_header, sizeof h) == 0 && pb->reader) {
        rc = seg_fail(seg, err, P2_EINVAL, "a reader cannot create the database: the export holds "
                      "none yet (a writer's open creates it)");
        goto fail;
    } else if (memcmp(&h, &zero_header, sizeof h) == 0) {
        /* seg_create reserves again: give it a fresh segment state with the same buffer */
        munmap(seg->base, (size_t)seg->reserved);
        seg->base = NULL;
        pb->uffd_base = NULL;      /* the registration went with the mapping */
        rc = seg_create(seg, fingerprint, nroots, root_names, root_sizes, err);
        if (rc != P2_OK)
            goto fail;
        if (created != NULL)
            *created = 1;
    } else if (memcmp(h.magic, SEG_MAGIC, sizeof h.magic) == 0 && h.state == SEG_STATE_OPEN &&
               !pb->txn) {
        /* a server has no lock: the header a client marks OPEN is the lock. Its checksum is
           not asked for: the client's writes of the header between its open and its close
           (the file's size, evicted with its page) reach the server unchecksummed. */
        rc = seg_fail(seg, err, P2_EBUSY, "in use by another client (its header is marked open; "
                      "if no client uses it, one crashed without closing it)");
        goto fail;
    } else {
        rc = seg_validate(seg, &h, pb->be.size, fingerprint, nroots, root_names, root_sizes, err);
        if (rc == P2_OK && h.file_size > seg->reserved)
            rc = seg_fail(seg, err, P2_ENOMEM, "the database is %" PRIu64 " bytes, more than the %" PRIu64
                          " this open may map (pageserver(reserve = ...))", h.file_size, seg->reserved);
        if (rc != P2_OK)
            goto fail;
        seg->mapped = h.file_size;
        for (uint64_t p = 0; p < h.file_size / pb->pg; p++)
            pb->state[p] = PB_SRV;
        seg->hdr = (struct p2_seg_header *)(void *)seg->base;
        if (!pb->txn) {   /* with a log the lease marks the writer, and commits alone write */
            seg->hdr->state = SEG_STATE_OPEN;   /* faults the header page in */
            seg->hdr->checksum = header_crc(seg->hdr);
            if ((rc = pb_sync(seg, err)) != P2_OK)
                goto fail;
        }
    }
    if (seg->alloc_exact)
        seg->class_table = seg->hdr->roots[nroots - 1].off;
    return P2_OK;
fail:
    pb_free(seg);
    if (seg->base != NULL)
        munmap(seg->base, (size_t)seg->reserved);
    seg_reset(seg);
    return rc;
}

int p2_seg_open_server(p2_seg *seg, const char *uri, uint32_t frames, uint32_t page,
                       uint64_t fingerprint, uint32_t nroots, const char *const *root_names,
                       const uint64_t *root_sizes, uint64_t reserve, int *created, p2_err *err)
{
    return p2_seg_open_server_log(seg, uri, frames, page, NULL, 1, fingerprint, nroots, root_names,
                                  root_sizes, reserve, created, err);
}

int p2_seg_server_stats(const p2_seg *seg, p2_server_stats *out)
{
    if (seg == NULL || seg->pb == NULL || out == NULL)
        return 0;
    const p2_server_stats *s = &seg->pb->st;
    out->reads += s->reads;
    out->writes += s->writes;
    out->flushes += s->flushes;
    out->bytes_read += s->bytes_read;
    out->bytes_written += s->bytes_written;
    out->misses += s->misses;
    out->hits += s->hits;
    out->evictions += s->evictions;
    out->writebacks += s->writebacks;
    out->rewrites += s->rewrites;
    out->frames += s->frames;
    out->resident += s->resident;
    out->dirty += s->dirty;
    out->bundled += s->bundled;
    out->userfaultfd += seg->pb->uffd_on ? 1u : 0u;
    out->ranges += s->ranges;
    out->conflicts += s->conflicts;
    if (s->inflight > out->inflight)    /* a peak: the files' largest */
        out->inflight = s->inflight;
    return 1;
}

/* ------------------------------------------------------------------------
 * 9.4 ship = ranges: the hybrid (pages read, announced byte ranges written back)
 * ------------------------------------------------------------------------ */

int p2_seg_server_ship_ranges(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || seg->pb->oc != NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_server_ship_ranges: not a page-server segment");
    p2_pagebuf *pb = seg->pb;
    if (pb->wmask != NULL)
        return P2_OK;
    /* per page: its announced granules, their sync, and its entry in the pending store */
    uint64_t bytes = round_up(pb->npages * (PB_GRANULES / 8 + 8), page_size());
    void *t = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (t == MAP_FAILED)
        return seg_fail(seg, err, P2_ENOMEM, "cannot map the table of announced ranges: %s",
                        strerror(errno));
    pb->wmask = (uint64_t *)t;
    pb->wmask_bytes = bytes;
    pb->pend_of = (uint32_t *)(void *)(pb->wmask + pb->npages * (PB_GRANULES / 64));
    pb->mask_gen = pb->pend_of + pb->npages;
    pb->sync_gen = 1;
    const char *max = getenv("P2_SERVER_PENDING_BYTES");
    pb->pend_max = max != NULL ? strtoull(max, NULL, 10) : P2_SERVER_PENDING_BYTES;
    /* pages dirty before now have nothing announced: they go back whole */
    seg->will_write = pb_note;
    seg->will_write_ctx = pb;
    return P2_OK;
}

void p2_seg_server_stats_reset(p2_seg *seg)
{
    if (seg == NULL || seg->pb == NULL)
        return;
    p2_server_stats *s = &seg->pb->st;
    uint64_t frames = s->frames, resident = s->resident, dirty = s->dirty;
    memset(s, 0, sizeof *s);
    s->frames = frames;
    s->resident = resident;
    s->dirty = dirty;
    /* rewrites count from here: what was written back before is forgotten */
    if (seg->pb->oc != NULL) {
        ob_forget_writebacks(seg->pb);
        return;
    }
    for (uint64_t p = 0; p < seg->pb->npages; p++)
        seg->pb->state[p] &= (uint8_t)~PB_WB;
}

int p2_seg_server_drop(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_server_drop: not a page-server segment");
    p2_pagebuf *pb = seg->pb;
    if (pb->oc != NULL)
        return ob_drop(seg, err);
    if (pb->txn) {   /* an open transaction's pages stay: the server has not got them */
        for (uint32_t f = pb->used; f > 0;)
            if (!(pb->state[pb->frame_page[--f]] & PB_DIRTY))
                pl_drop_frame(pb, f);
        pb->hand = 0;
        return P2_OK;
    }
    int rc = pb_sync(seg, err);
    if (rc != P2_OK)
        return rc;
    for (uint32_t f = 0; f < pb->used; f++) {
        uint32_t p = pb->frame_page[f];
        pb_unmap(pb, p);
        pb->state[p] &= (uint8_t)~(PB_RES | PB_PROT);
        pb->frame_ref[f] = 0;
    }
    pb->used = 0;
    pb->hand = 0;
    pb->st.resident = 0;
    return P2_OK;
}
/************** End of pageserver.c ****************************************************/

/************** Begin file pagelog.c ***************************************************/
/* ==========================================================================
 * 9.5 Page servers: transactions through a log export, the writer's lease, readers
 *     (design in p2_runtime.h, @ref server, "Transactions")
 *
 * A `journal` or `wal` over `pageserver(log = ...)`: the log lives on a second export.
 * Its first page is the lease block (who writes, until when, the last generation written
 * back whole, the one being written back); its second page on, the log record of the last
 * commit (header, page numbers, page images, one CRC over all of it).  The buffer keeps a
 * transaction's dirty pages in memory until it commits (no steal: the clock passes over
 * them, and a transaction larger than the buffer takes more frames until it ends), so
 * the data export only ever holds committed pages.  A commit: the record written and
 * flushed on the log export (the commit point), the lease block marks the write-back,
 * the pages go to the data export and are flushed, the lease block marks it done.
 * ========================================================================== */

#define PL_LEASE_MAGIC "P2GENLS"
#define PL_REC_MAGIC   "P2GENPR"
#define PL_VERSION     1u
#define PL_DELTA_MS    50       /* Fischer's bound: a lease write lands within this of its read */

struct pl_lease {               /* page 0 of the log export */
    char     magic[8];          /* PL_LEASE_MAGIC; all zero: a new log, nobody holds it */
    uint32_t version;
    uint32_t crc;               /* CRC-32 of this block's first sizeof bytes, this field 0 */
    uint64_t token;             /* the holder's, drawn at its open; 0: free */
    uint64_t expiry_ms;         /* CLOCK_REALTIME, ms: after it, the lease may be taken over */
    uint64_t gen;               /* the last commit the data export holds whole */
    uint64_t wb;                /* the commit being written back into it, 0: none */
    char     owner[96];         /* "pid N on HOST": named in the refusal of a second writer */
};
struct pl_rec {                 /* page 1 of the log export: the last commit */
    char     magic[8];          /* PL_REC_MAGIC */
    uint32_t version;
    uint32_t crc;               /* CRC-32 of this header (crc 0), the page numbers and images */
    uint64_t seq;               /* the commit's generation: the data header's data_seq after it */
    uint64_t fingerprint;       /* of the database: a log is never replayed elsewhere */
    uint64_t npages;
    uint32_t page;
    uint32_t zero;
};                              /* then npages uint64_t page numbers, zero-padded to a page,
                                   then the npages images in that order */

void p2_server_open_reader(int on) { pl_reader_next = on != 0; }

static uint64_t pl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void pl_sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static uint32_t pl_lease_crc(const struct pl_lease *l)
{
    struct pl_lease c = *l;
    c.crc = 0;
    return p2_crc32(0, &c, sizeof c);
}

static uint64_t pl_lease_ms(void)
{
    const char *t = getenv("P2_SERVER_LEASE_MS");
    long v = t != NULL ? strtol(t, NULL, 10) : 0;
    return v > 0 ? (uint64_t)v : P2_SERVER_LEASE_MS;
}

/* Read the lease block. P2_EFORMAT where it is neither zero nor a lease. */
static int pl_lease_read(p2_pagebuf *pb, struct pl_lease *l, p2_err *err)
{
    p2_io io = {l, sizeof *l, 0};
    int rc = pb->log.ops->readv(&pb->log, &io, 1, err);
    if (rc != P2_OK)
        return rc;
    static const struct pl_lease zero;
    if (memcmp(l, &zero, sizeof zero) == 0)
        return P2_OK;
    if (memcmp(l->magic, PL_LEASE_MAGIC, sizeof l->magic) != 0 || l->version != PL_VERSION ||
        l->crc != pl_lease_crc(l))
        return seg_fail(pb->seg, err, P2_EFORMAT, "the log export %s is not a p2gen page-server log "
                        "(its lease block is damaged or of another program)", pb->log.uri);
    return P2_OK;
}

static int pl_lease_write(p2_pagebuf *pb, struct pl_lease *l, p2_err *err)
{
    memcpy(l->magic, PL_LEASE_MAGIC, sizeof l->magic);
    l->version = PL_VERSION;
    l->crc = pl_lease_crc(l);
    p2_io io = {l, sizeof *l, 0};
    return pb->log.ops->writev(&pb->log, &io, 1, err);
}

/* A holder on this machine whose process is gone: its lease need not run out. */
static int pl_holder_dead(const struct pl_lease *l)
{
    char host[64] = "";
    long pid = 0;
    char at[80];
    (void)gethostname(host, sizeof host - 1);
    if (sscanf(l->owner, "pid %ld on %79s", &pid, at) != 2 || pid <= 0 || strcmp(at, host) != 0)
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static int pl_busy(p2_pagebuf *pb, const struct pl_lease *l, uint64_t now, p2_err *err)
{
    return seg_fail(pb->seg, err, P2_EBUSY, "another writer holds the lease of this database: %.96s, "
                    "for %" PRIu64 " ms more unless it renews it (a writer that crashed is taken over "
                    "once its lease runs out; readers may open with <prefix>_open_reader)",
                    l->owner, l->expiry_ms > now ? l->expiry_ms - now : 0);
}

/* Take the lease, Fischer's way (no compare-and-swap over NBD): see it free, write ours
 * within PL_DELTA_MS of that read, wait twice that, and read it back: of writers racing,
 * only the last one's write is still there. */
static int pl_lease_take(p2_pagebuf *pb, struct pl_lease *l, p2_err *err)
{
    for (int attempt = 0;; attempt++) {
        uint64_t t0 = pl_now_ms();
        int rc = pl_lease_read(pb, l, err);
        if (rc != P2_OK)
            return rc;
        if (l->token != 0 && l->token != pb->token && l->expiry_ms > t0 && !pl_holder_dead(l))
            return pl_busy(pb, l, t0, err);
        l->token = pb->token;
        l->expiry_ms = t0 + pb->lease_ms;
        snprintf(l->owner, sizeof l->owner, "%s", pb->owner);
        if ((rc = pl_lease_write(pb, l, err)) != P2_OK)
            return rc;
        if (pl_now_ms() - t0 > PL_DELTA_MS) {   /* too slow to be sure: once more */
            if (attempt < 3)
                continue;
            return seg_fail(pb->seg, err, P2_EBUSY, "cannot take the lease on %s: the server took "
                            "more than %d ms to answer, four times", pb->log.uri, PL_DELTA_MS);
        }
        pl_sleep_ms(2 * PL_DELTA_MS);
        if ((rc = pl_lease_read(pb, l, err)) != P2_OK)
            return rc;
        if (l->token != pb->token)
            return pl_busy(pb, l, pl_now_ms(), err);
        pb->expiry_ms = l->expiry_ms;
        return P2_OK;
    }
}

/* The writer still holds its lease (read back: a writer paused past its expiry may have
 * been taken over), renewed with `gen` and `wb` as given. */
static int pl_lease_renew(p2_pagebuf *pb, uint64_t gen, uint64_t wb, p2_err *err)
{
    struct pl_lease l;
    int rc = pl_lease_read(pb, &l, err);
    if (rc != P2_OK)
        return rc;
    if (l.token != pb->token)
        return seg_fail(pb->seg, err, P2_EBUSY, "this writer's lease ran out and %.96s took it over: "
                        "nothing more is written (the transaction was not committed; close)", l.owner);
    l.gen = gen;
    l.wb = wb;
    l.expiry_ms = pl_now_ms() + pb->lease_ms;
    if ((rc = pl_lease_write(pb, &l, err)) != P2_OK)
        return rc;
    pb->expiry_ms = l.expiry_ms;
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * the buffer without steal
 * ------------------------------------------------------------------------ */

/* Drop frame f (its page must be clean, or be dropped as an abort drops it); the last
 * frame takes its place, so that frames stay [0, used). */
static void pl_drop_frame(p2_pagebuf *pb, uint32_t f)
{
    uint32_t p = pb->frame_page[f];
    pb_unmap(pb, p);
    if (pb->state[p] & PB_DIRTY)
        pb->st.dirty--;
    pb->state[p] &= (uint8_t)~(PB_RES | PB_PROT | PB_DIRTY);
    pb->st.resident--;
    pb_free_frame(pb, f);
}

/* After a commit or an abort: a transaction that took more frames than the buffer has
 * gives them back (clean pages, the newest frames first). */
static void pl_shrink(p2_pagebuf *pb)
{
    for (uint32_t f = pb->used; f > pb->nframes;) {
        f--;
        if (!(pb->state[pb->frame_page[f]] & PB_DIRTY))
            pl_drop_frame(pb, f);
    }
}

/* Every page of the buffer dropped (dirty ones too: an abort's, or a reader's), the pages
 * the database holds marked as on the server: the next touch reads each again. */
static void pl_drop_all(p2_pagebuf *pb, uint64_t file_size)
{
    while (pb->used > 0)
        pl_drop_frame(pb, pb->used - 1);
    for (uint64_t p = 0; p < pb->npages; p++)
        pb->state[p] = p < file_size / pb->pg ? PB_SRV : 0;
}

/* A reader's page just read: was it of the generation the read transaction started at?
 * Read after it, the lease block says whether a write-back had begun since. */
static void pl_reader_check(p2_pagebuf *pb)
{
    struct pl_lease l;
    p2_err e;
    p2_err_clear(&e);
    p2_io io = {&l, sizeof l, 0};
    if (pb->log.ops->readv(&pb->log, &io, 1, &e) != P2_OK || l.gen != pb->gen || l.wb != 0)
        pb->stale = 1;
}

/* ------------------------------------------------------------------------
 * recovery: the last commit's record into the data export
 * ------------------------------------------------------------------------ */

static uint64_t pl_rec_head_bytes(uint64_t npages, uint64_t pg)
{
    return round_up(sizeof(struct pl_rec) + 8 * npages, pg);
}

/* The data export lacks the log's last commit (a writer died between the commit point and
 * the end of its write-back): write it there.  A record that does not check is a commit
 * that never reached its commit point (a torn write) and is ignored. */
static int pl_recover(p2_pagebuf *pb, uint64_t fingerprint, p2_err *err)
{
    struct pl_rec r;
    struct p2_seg_header h;
    p2_io io = {&r, sizeof r, pb->pg};
    if (pb->log.size < 2 * pb->pg)
        return seg_fail(pb->seg, err, P2_ENOMEM, "the log export %s holds %" PRIu64 " bytes: too small "
                        "for a log (%" PRIu64 " at least)", pb->log.uri, pb->log.size, 2 * pb->pg);
    int rc = pb->log.ops->readv(&pb->log, &io, 1, err);
    if (rc != P2_OK)
        return rc;
    if (memcmp(r.magic, PL_REC_MAGIC, sizeof r.magic) != 0 || r.page != pb->pg || r.npages == 0 ||
        r.npages > pb->npages || r.version != PL_VERSION)
        return P2_OK;                     /* no commit yet, or a torn first one */
    uint64_t head = pl_rec_head_bytes(r.npages, pb->pg), bytes = head + r.npages * pb->pg;
    if (pb->pg + bytes > pb->log.size)
        return P2_OK;                     /* a header torn into a size that cannot be */
    p2_io hio = {&h, sizeof h, 0};
    if ((rc = pb->be.ops->readv(&pb->be, &hio, 1, err)) != P2_OK)
        return rc;
    uint64_t held = memcmp(h.magic, SEG_MAGIC, sizeof h.magic) == 0 ? h.data_seq : 0;
    if (r.seq <= held)
        return P2_OK;                     /* written back whole before */
    char *buf = (char *)malloc((size_t)bytes);
    if (buf == NULL)
        return seg_fail(pb->seg, err, P2_ENOMEM, "out of memory reading the log's last commit");
    p2_io rio = {buf, bytes, pb->pg};
    if ((rc = pb->log.ops->readv(&pb->log, &rio, 1, err)) != P2_OK)
        goto out;
    struct pl_rec *c = (struct pl_rec *)(void *)buf;
    uint32_t want = c->crc;
    c->crc = 0;
    if (p2_crc32(0, buf, (size_t)bytes) != want)
        goto out;                         /* never committed: its commit point is its CRC */
    if (c->fingerprint != fingerprint) {
        rc = seg_fail(pb->seg, err, P2_EMISMATCH, "the log export %s holds a commit of another "
                      "database (fingerprint %016" PRIx64 ")", pb->log.uri, c->fingerprint);
        goto out;
    }
    if (c->npages != r.npages) {         /* the list read is the one the buffer was sized for */
        rc = seg_fail(pb->seg, err, P2_EFORMAT, "the log export %s changed its last commit's "
                      "page count while it was read", pb->log.uri);
        goto out;
    }
    const uint64_t *pgno = (const uint64_t *)(const void *)(buf + sizeof *c);
    uint64_t top = 0;
    for (uint64_t i = 0; i < c->npages; i++) {
        if (pgno[i] >= pb->npages) {     /* each one, before top + 1 can wrap */
            rc = seg_fail(pb->seg, err, P2_EFORMAT, "the log export %s names page %" PRIu64
                          ", past the database's reservation", pb->log.uri, pgno[i]);
            goto out;
        }
        top = pgno[i] + 1 > top ? pgno[i] + 1 : top;
    }
    if (top * pb->pg > pb->be.size && (rc = pb->be.ops->grow(&pb->be, top * pb->pg, err)) != P2_OK)
        goto out;
    for (uint64_t i = 0; i < c->npages && rc == P2_OK; i += P2_SERVER_INFLIGHT) {
        p2_io w[P2_SERVER_INFLIGHT];
        unsigned k = 0;
        for (; k < P2_SERVER_INFLIGHT && i + k < c->npages; k++) {
            w[k].buf = buf + head + (i + k) * pb->pg;
            w[k].len = pb->pg;
            w[k].off = pgno[i + k] * pb->pg;
        }
        rc = pb->be.ops->writev(&pb->be, w, k, err);
    }
    if (rc == P2_OK)
        rc = pb->be.ops->flush(&pb->be, err);
    if (rc == P2_OK)
        pb->replayed = c->seq;
out:
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------------
 * begin, commit, abort, close
 * ------------------------------------------------------------------------ */

static int pl_txn(const p2_seg *seg)
{
    return seg != NULL && seg->base != NULL && seg->pb != NULL && seg->pb->txn;
}

static uint64_t pl_pending(const p2_seg *seg)
{
    return seg->pb->st.dirty;
}

static int pl_reader(const p2_seg *seg)
{
    return seg->pb->reader;
}

/* ------------------------------------------------------------------------
 * ------------------------------------------------------------------------ */

/* A read transaction starts at the last generation written back whole (a reader's buffer
 * of an older one is dropped); a writer renews its lease when half of it has run. */
static int pl_begin(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed)
        return pb_failed(pb, err);
    if (!pb->reader) {
        if (pl_now_ms() + pb->lease_ms / 2 < pb->expiry_ms)
            return P2_OK;
        return pl_lease_renew(pb, pb->gen, 0, err);
    }
    struct pl_lease l;
    uint64_t deadline = pl_now_ms() + (uint64_t)pb->be.timeout_ms;
    for (;;) {
        int rc = pl_lease_read(pb, &l, err);
        if (rc != P2_OK)
            return rc;
        if (l.wb == 0)
            break;
        if (l.expiry_ms < pl_now_ms() || pl_now_ms() > deadline)
            return seg_fail(seg, err, P2_EBUSY, "the writer %.96s stopped in the middle of writing "
                            "back commit %" PRIu64 ": a reader waits for a writer's open to finish "
                            "it from the log", l.owner, l.wb);
        pl_sleep_ms(1);
    }
    if (l.gen != pb->gen || pb->st.dirty > 0) {
        pb->gen = l.gen;
        pl_drop_all(pb, pb->be.size);     /* bounded below by the header's size */
        seg->mapped = pb->pg;             /* the header's page, to read its size */
        seg->mapped = seg->hdr->file_size > pb->npages * pb->pg ? pb->npages * pb->pg
                                                                : seg->hdr->file_size;
        if (seg->mapped < pb->pg)
            seg->mapped = pb->pg;
    }
    pb->stale = 0;
    return P2_OK;
}

int p2_seg_server_begin(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || !seg->pb->txn)
        return P2_OK;
    return pl_begin(seg, err);
}

/* Abort: the transaction's pages are dropped; the server holds them as committed. */
static int pl_abort(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    for (uint32_t f = pb->used; f > 0;) {
        f--;
        if (pb->state[pb->frame_page[f]] & PB_DIRTY)
            pl_drop_frame(pb, f);
    }
    pl_shrink(pb);
    pb_masks_forget(pb);          /* the abort's announcements die with its pages */
    if (pb->failed)
        return pb_failed(pb, err);
    uint64_t keep = seg->hdr->file_size;   /* the committed header, read again */
    if (keep >= P2_SEG_HEADER_SIZE && keep <= seg->reserved)
        seg->mapped = keep;
    return P2_OK;
}

/* Commit: the record on the log export (the commit point), then the write-back. */
static int pl_commit(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed)
        return pb_failed(pb, err);
    if (pb->reader) {
        if (pb->st.dirty > 0)
            return seg_fail(seg, err, P2_EINVAL, "opened as a reader: it cannot commit changes "
                            "(abort them; open with <prefix>_open to write)");
        if (pb->stale)
            return seg_fail(seg, err, P2_EBUSY, "a writer committed while this read transaction "
                            "read: what it read may mix two commits; read again after begin");
        return P2_OK;
    }
    if (pb->st.dirty == 0)
        return P2_OK;
    int rc = P2_OK;   /* the record's writes loop while it is: the lease renewed or not */
    if (pl_now_ms() + PL_DELTA_MS >= pb->expiry_ms && (rc = pl_lease_renew(pb, pb->gen, 0, err)) != P2_OK)
        return rc;
    struct p2_seg_header *h = seg->hdr;
    uint64_t seq = pb->gen + 1;
    h->state = SEG_STATE_CLEAN;           /* the lease, not the header, says who writes */
    h->journal = 1;
    h->data_seq = seq;
    roots_seal(seg);
    h->checksum = header_crc(h);
    uint64_t n = 0;
    uint32_t *list = (uint32_t *)malloc((size_t)pb->used * sizeof *list);
    if (list == NULL)
        return seg_fail(seg, err, P2_ENOMEM, "out of memory for the commit's page list");
    for (uint32_t f = 0; f < pb->used; f++)
        if (pb->state[pb->frame_page[f]] & PB_DIRTY)
            list[n++] = pb->frame_page[f];
    uint64_t head = pl_rec_head_bytes(n, pb->pg), bytes = head + n * pb->pg;
    char *hb = NULL;
    if (pb->pg + bytes > pb->log.size &&
        (!pb->log.growable || (rc = pb->log.ops->grow(&pb->log, pb->pg + bytes, err)) != P2_OK)) {
        rc = seg_fail(seg, err, P2_ENOMEM, "the log export %s holds %" PRIu64 " bytes: this commit "
                      "needs %" PRIu64 "; it was not committed and is still open", pb->log.uri,
                      pb->log.size, pb->pg + bytes);
        goto out;
    }
    hb = (char *)calloc(1, (size_t)head);
    if (hb == NULL) {
        rc = seg_fail(seg, err, P2_ENOMEM, "out of memory for the commit's record");
        goto out;
    }
    struct pl_rec *r = (struct pl_rec *)(void *)hb;
    memcpy(r->magic, PL_REC_MAGIC, sizeof r->magic);
    r->version = PL_VERSION;
    r->seq = seq;
    r->fingerprint = h->fingerprint;
    r->npages = n;
    r->page = (uint32_t)pb->pg;
    uint64_t *pgno = (uint64_t *)(void *)(hb + sizeof *r);
    for (uint64_t i = 0; i < n; i++)
        pgno[i] = list[i];
    uint32_t crc = p2_crc32(0, hb, (size_t)head);
    for (uint64_t i = 0; i < n; i++)
        crc = p2_crc32(crc, pb_addr(pb, list[i]), (size_t)pb->pg);
    r->crc = crc;
    {   /* the record: its head, then the images, several requests in flight */
        p2_io io[P2_SERVER_INFLIGHT];
        io[0] = (p2_io){hb, head, pb->pg};
        unsigned k = 1;
        for (uint64_t i = 0; i <= n && rc == P2_OK; i++) {
            if (i < n) {
                io[k++] = (p2_io){pb_addr(pb, list[i]), pb->pg, pb->pg + head + i * pb->pg};
                if (k < P2_SERVER_INFLIGHT)
                    continue;
            }
            rc = k ? pb->log.ops->writev(&pb->log, io, k, err) : P2_OK;
            k = 0;
        }
    }
    if (rc == P2_OK && pb->sync)
        rc = pb->log.ops->flush(&pb->log, err);
    if (rc != P2_OK && err != NULL) {
        size_t m = strnlen(err->msg, sizeof err->msg);
        snprintf(err->msg + m, sizeof err->msg - m, "; the transaction was not committed and is "
                 "still open (commit again, or abort it)");
    }
    if (rc != P2_OK)
        goto out;
    /* ---- the commit point: the record is on the log export ---- */
    pb->gen = seq;
    rc = pl_lease_renew(pb, seq - 1, seq, err);
    if (rc == P2_OK)
        rc = pb_write_back(pb, list, (unsigned)n, err);
    if (rc == P2_OK && pb->sync)
        rc = pb->be.ops->flush(&pb->be, err);
    if (rc == P2_OK)
        rc = pl_lease_renew(pb, seq, 0, err);
    if (rc != P2_OK) {
        /* committed all the same: the next writer's open writes it back from the log */
        if (!pb->failed)
            snprintf(pb->why, sizeof pb->why, "commit %" PRIu64 " is durable on the log export "
                     "%.120s but could not be written back to the data (%.200s): nothing more is "
                     "written; the next open writes it back from the log", seq, pb->log.uri,
                     err != NULL ? err->msg : "");
        pb->failed = 1;
        rc = pb_failed(pb, err);
        goto out;
    }
    pb_masks_forget(pb);
    pl_shrink(pb);
out:
    free(hb);
    free(list);
    return rc;
}

/* Close: an uncommitted transaction dropped, the lease given back. */
static int pl_close(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    int rc = pb->failed ? pb_failed(pb, err) : P2_OK;
    if (!pb->failed && !pb->reader) {
        struct pl_lease l;
        if (pl_lease_read(pb, &l, err) == P2_OK && l.token == pb->token) {
            l.token = 0;
            l.expiry_ms = 0;
            l.wb = 0;
            rc = pl_lease_write(pb, &l, err);
            if (rc == P2_OK && pb->sync)
                rc = pb->log.ops->flush(&pb->log, err);
        }
    }
    pb_free(seg);
    munmap(seg->base, (size_t)seg->reserved);
    seg_reset(seg);
    return rc;
}

/* Open's part: the log export, the lease (a writer's), recovery; the header is read
 * after it. A reader takes no lease and waits out a write-back in progress. */
static int pl_open(p2_seg *seg, const char *log_uri, int sync, uint64_t fingerprint, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    pb->txn = 1;
    pb->sync = sync;
    pb->reader = pl_reader_next;
    pb->lease_ms = pl_lease_ms();
    pb->log.st = &pb->log_st;
    int rc = backend_open(&pb->log, log_uri, err);
    if (rc != P2_OK) {
        pb->log.ops = NULL;
        if (pb->log.nbd != NULL || pb->log.fd >= 0)
            pb->log.ops = strncmp(log_uri, "file://", 7) == 0 ? &file_ops : &nbd_ops;
        return rc;
    }
    if (pb->log.size < 2 * pb->pg && pb->log.growable &&
        (rc = pb->log.ops->grow(&pb->log, 2 * pb->pg, err)) != P2_OK)
        return rc;
    char host[64] = "";
    (void)gethostname(host, sizeof host - 1);
    snprintf(pb->owner, sizeof pb->owner, "pid %ld on %s", (long)getpid(), host);
    pb->token = ((uint64_t)getpid() << 40) ^ pl_now_ms() ^ (uint64_t)(uintptr_t)pb;
    if (pb->token == 0)
        pb->token = 1;
    struct pl_lease l;
    if (pb->reader) {
        rc = pl_lease_read(pb, &l, err);
        if (rc == P2_OK && l.wb != 0)
            rc = seg_fail(seg, err, P2_EBUSY, "the writer %.96s is writing back commit %" PRIu64
                          " (or stopped in the middle): a reader opens once a writer finished it", l.owner, l.wb);
        if (rc == P2_OK)
            pb->gen = l.gen;
        return rc;
    }
    if ((rc = pl_lease_take(pb, &l, err)) != P2_OK)
        return rc;
    if ((rc = pl_recover(pb, fingerprint, err)) != P2_OK)
        return rc;
    struct p2_seg_header h;
    p2_io hio = {&h, sizeof h, 0};
    if ((rc = pb->be.ops->readv(&pb->be, &hio, 1, err)) != P2_OK)
        return rc;
    pb->gen = memcmp(h.magic, SEG_MAGIC, sizeof h.magic) == 0 ? h.data_seq : 0;
    return pl_lease_renew(pb, pb->gen, 0, err);
}
/************** End of pagelog.c *******************************************************/

/************** Begin file objserver.c *************************************************/
/* ==========================================================================
 * 10. Object servers: a client object cache over Redis (design in p2_runtime.h,
 *     @ref objserver)
 *
 * The segment of a persistent file, reserved in this process as anonymous memory: the
 * header, the container roots and the allocator's state (its free lists, threaded
 * through the free blocks) are always here, kept on the server as 64-byte cells of one
 * hash (`p2:meta`) read whole at open; every block the layers allocate (an element under
 * malloc storage, a bucket table, a btree node, a text) is an object, the key
 * `p2:o:<offset>`, brought to its place in the segment by p2_obj_ptr() on a miss.  At
 * most `objects` of them are here between calls into the API (a software check per
 * reference: a hash lookup); an object touched since the API was last entered is pinned
 * (the cache overflows rather than evict it), so that a pointer stays valid until the
 * next call.  An evicted object is written back first if dirty, then its bytes are
 * zeroed: a read that skipped p2_obj_ptr reads zeros, never stale data.  Writes are
 * known from the write-intent notices (seg->will_write): inside an object they make it
 * dirty; anywhere else they make their cells dirty.  A dirty object is never evicted.
 * Several clients share the database with optimistic transactions (10.2): a commit
 * checks the versions of what it read (WATCH + HMGET p2:ver) and ships every dirty
 * object, every freed object's deletion, every dirty cell and the new versions in one
 * MULTI ... EXEC, or reports P2_ECONFLICT.
 * ========================================================================== */

#define OB_RES   1u     /* its bytes are at base + off */
#define OB_DIRTY 2u     /* written since it was last shipped */
#define OB_DEL   4u     /* freed: its key is deleted at the next sync */
#define OB_NEW   8u     /* never shipped: the server has no key for it */
#define OB_READ  16u    /* in the current transaction's read set */

#define OC_DIRTY  1u    /* cell: written, to be shipped */
#define OC_STORED 2u    /* cell: the server holds it */
#define OC_DEL    4u    /* cell: now inside an object, to be deleted from the server */
#define OC_LISTED 8u    /* cell: in the list of cells to visit at sync */

#define OB_CELL   64u
#define OB_NONE   UINT32_MAX
#define OB_FIELDS 512u  /* cells per HSET / HDEL command */

typedef struct ob_ent {
    uint64_t off, size;
    uint64_t gen;       /* the call generation of its last touch: pinned while oc->gen */
    uint64_t ver;       /* its version (p2:ver) when fetched or last shipped; 0: none yet */
    uint32_t flags;
    uint32_t ref;       /* the clock's reference bit */
} ob_ent;

typedef struct p2_objcache {
    uint32_t target;            /* objects = N */
    uint64_t gen;               /* bumped at each entry into the API */
    ob_ent  *ents;              /* dense; flags 0: a free slot */
    uint32_t nents, cap;
    uint32_t *freel;            /* free slots of ents */
    uint32_t nfree;
    uint32_t *table;            /* linear probing: ents index + 1, 0 empty */
    uint32_t tcap, count;
    uint32_t hand;
    uint32_t *pins;             /* entries touched since the API was entered */
    uint32_t npins, pcap;
    uint32_t last;              /* the entry p2_obj_ptr() handed out last */
    uint8_t *cells;             /* per 64-byte cell of the reservation: OC_* */
    uint64_t ncells, cells_bytes;
    uint64_t *clist;            /* cells with OC_LISTED */
    uint64_t nclist, clcap;
    uint64_t mver;              /* the version of the meta cells here (p2:ver field m) */
    uint64_t *rs_off, *rs_ver;  /* the read set: objects the transaction touched, with the
                                   version each had when fetched (an object fetched again
                                   after an eviction is listed again) */
    uint32_t nrs, rscap;
    int      conflict;          /* the last commit met a conflict: only abort is taken */
    int      meta_stale;        /* another client changed the meta cells: reloaded at abort */
    int      creating;          /* the open is making a new database: nothing is shipped
                                   until the caller's first commit, which ships it whole */
    unsigned char *hdr_copy;    /* the header as the server holds it */
    uint32_t bundle;            /* neighbours fetched with a miss (p2_obj_set_bundle) */
    uint64_t guess;             /* the size of the last object fetched: the stride */
    uint64_t *wb;               /* offsets written back since the open or the last stats
                                   reset, + 1 (0 empty) */
    uint64_t wbcap, wbcount;
} p2_objcache;

static const char OB_META[] = "p2:meta";
static const char OB_VER[] = "p2:ver";      /* field <offset>: an object's version; m: the meta's */

static int ob_grow_array(void **p, uint32_t *cap, size_t elem, uint32_t need)
{
    if (need <= *cap)
        return 1;
    uint32_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (q == NULL)
        return 0;
    *p = q;
    *cap = n;
    return 1;
}

static uint32_t ob_hash(uint64_t off, uint32_t tcap)
{
    return (uint32_t)((off >> 4) * 0x9E3779B97F4A7C15ull >> 32) & (tcap - 1);
}

static uint32_t ob_find(const p2_objcache *oc, uint64_t off)
{
    if (oc->tcap == 0)
        return OB_NONE;
    for (uint32_t i = ob_hash(off, oc->tcap);; i = (i + 1) & (oc->tcap - 1)) {
        uint32_t t = oc->table[i];
        if (t == 0)
            return OB_NONE;
        if (oc->ents[t - 1].off == off)
            return t - 1;
    }
}

static void ob_place(p2_objcache *oc, uint32_t idx)
{
    uint32_t i = ob_hash(oc->ents[idx].off, oc->tcap);
    while (oc->table[i] != 0)
        i = (i + 1) & (oc->tcap - 1);
    oc->table[i] = idx + 1;
}

static int ob_rehash(p2_objcache *oc, uint32_t tcap)
{
    uint32_t *t = (uint32_t *)calloc(tcap, sizeof *t);
    if (t == NULL)
        return 0;
    free(oc->table);
    oc->table = t;
    oc->tcap = tcap;
    for (uint32_t i = 0; i < oc->nents; i++)
        if (oc->ents[i].flags != 0)
            ob_place(oc, i);
    return 1;
}

/* A new entry for off (not in the table), or OB_NONE: out of memory. */
static uint32_t ob_add(p2_objcache *oc, uint64_t off, uint64_t size, uint32_t flags)
{
    if ((uint64_t)(oc->count + 1) * 2 > oc->tcap && !ob_rehash(oc, oc->tcap ? oc->tcap * 2 : 64))
        return OB_NONE;
    uint32_t idx;
    if (oc->nfree > 0) {
        idx = oc->freel[--oc->nfree];
    } else {
        if (!ob_grow_array((void **)&oc->ents, &oc->cap, sizeof *oc->ents, oc->nents + 1))
            return OB_NONE;
        idx = oc->nents++;
        uint32_t fcap = oc->cap;    /* the free list never holds more than the slots */
        void *f = realloc(oc->freel, (size_t)fcap * sizeof *oc->freel);
        if (f == NULL)
            return OB_NONE;
        oc->freel = (uint32_t *)f;
    }
    ob_ent *e = &oc->ents[idx];
    e->off = off;
    e->size = size;
    e->flags = flags;
    e->ref = 1;
    e->gen = 0;
    e->ver = 0;
    ob_place(oc, idx);
    oc->count++;
    return idx;
}

/* Remove entry idx (backward-shift deletion keeps the probe chains whole). */
static void ob_remove(p2_objcache *oc, uint32_t idx)
{
    uint32_t i = ob_hash(oc->ents[idx].off, oc->tcap);
    while (oc->table[i] != idx + 1)
        i = (i + 1) & (oc->tcap - 1);
    for (uint32_t j = (i + 1) & (oc->tcap - 1);; j = (j + 1) & (oc->tcap - 1)) {
        uint32_t t = oc->table[j];
        if (t == 0)
            break;
        uint32_t h = ob_hash(oc->ents[t - 1].off, oc->tcap);
        /* t may move to i if its home is not in (i, j] (cyclically) */
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            oc->table[i] = t;
            i = j;
        }
    }
    oc->table[i] = 0;
    oc->ents[idx].flags = 0;
    oc->freel[oc->nfree++] = idx;
    oc->count--;
    if (oc->last == idx)
        oc->last = OB_NONE;
}

/* The counters' reset: no object has been written back since. */
static void ob_forget_writebacks(p2_pagebuf *pb)
{
    p2_objcache *oc = pb->oc;
    if (oc->wb != NULL)
        memset(oc->wb, 0, (size_t)oc->wbcap * sizeof *oc->wb);
    oc->wbcount = 0;
}

/* An object at off was written back: counted a rewrite if it was before since the open
 * or the last reset (the entry itself may have been evicted in between). */
static void ob_wb_note(p2_pagebuf *pb, uint64_t off)
{
    p2_objcache *oc = pb->oc;
    pb->st.writebacks++;
    if ((oc->wbcount + 1) * 2 > oc->wbcap) {
        uint64_t n = oc->wbcap ? oc->wbcap * 2 : 256;
        uint64_t *t = (uint64_t *)calloc((size_t)n, sizeof *t);
        if (t == NULL)
            return;                      /* the counter only: it stays low */
        for (uint64_t i = 0; i < oc->wbcap; i++) {
            if (oc->wb[i] == 0)
                continue;
            uint64_t j = (oc->wb[i] * 0x9E3779B97F4A7C15ull >> 20) & (n - 1);
            while (t[j] != 0)
                j = (j + 1) & (n - 1);
            t[j] = oc->wb[i];
        }
        free(oc->wb);
        oc->wb = t;
        oc->wbcap = n;
    }
    uint64_t k = off + 1;
    for (uint64_t j = (k * 0x9E3779B97F4A7C15ull >> 20) & (oc->wbcap - 1);; j = (j + 1) & (oc->wbcap - 1)) {
        if (oc->wb[j] == k) {
            pb->st.rewrites++;
            return;
        }
        if (oc->wb[j] == 0) {
            oc->wb[j] = k;
            oc->wbcount++;
            return;
        }
    }
}

static void ob_pin(p2_objcache *oc, uint32_t idx)
{
    ob_ent *e = &oc->ents[idx];
    e->ref = 1;
    oc->last = idx;
    if (e->gen == oc->gen)
        return;
    e->gen = oc->gen;
    if (ob_grow_array((void **)&oc->pins, &oc->pcap, sizeof *oc->pins, oc->npins + 1))
        oc->pins[oc->npins++] = idx;
    /* else: the pin holds (gen), only the write classification will not find it */
}

/* The transaction read object idx: listed with the version it had (once per fetch). */
static void ob_read(p2_objcache *oc, uint32_t idx)
{
    ob_ent *e = &oc->ents[idx];
    if (e->flags & (OB_READ | OB_NEW))
        return;
    if (!ob_grow_array((void **)&oc->rs_off, &oc->rscap, sizeof *oc->rs_off, oc->nrs + 1))
        return;                 /* the commit finds the gap: rs_ver is one short */
    uint32_t cap = oc->rscap;
    void *q = realloc(oc->rs_ver, (size_t)cap * sizeof *oc->rs_ver);
    if (q == NULL) {
        oc->conflict = -1;      /* out of memory for the read set: the commit refuses */
        return;
    }
    oc->rs_ver = (uint64_t *)q;
    oc->rs_off[oc->nrs] = e->off;
    oc->rs_ver[oc->nrs++] = e->ver;
    e->flags |= OB_READ;
}

static void ob_cell_mark(p2_objcache *oc, uint64_t c, uint8_t set, uint8_t clear)
{
    if (c >= oc->ncells)
        return;
    oc->cells[c] = (uint8_t)((oc->cells[c] & ~clear) | set);
    if (!(oc->cells[c] & OC_LISTED)) {
        if (oc->nclist == oc->clcap) {
            uint64_t n = oc->clcap ? oc->clcap * 2 : 256;
            void *q = realloc(oc->clist, (size_t)n * sizeof *oc->clist);
            if (q == NULL)
                return;     /* not listed: the next header write lists it again */
            oc->clist = (uint64_t *)q;
            oc->clcap = n;
        }
        oc->clist[oc->nclist++] = c;
        oc->cells[c] |= OC_LISTED;
    }
}

/* Bytes [off, off + n) outside every object were written: their cells go at sync. */
static void ob_meta_dirty(p2_objcache *oc, uint64_t off, uint64_t n)
{
    if (n == 0)
        return;
    for (uint64_t c = off / OB_CELL; c <= (off + n - 1) / OB_CELL; c++)
        ob_cell_mark(oc, c, OC_DIRTY, OC_DEL);
}

/* [off, off + size) became an object: the cells wholly inside it are no longer meta
 * (deleted from the server at sync where it holds them). */
static void ob_meta_claim(p2_objcache *oc, uint64_t off, uint64_t size)
{
    uint64_t first = (off + OB_CELL - 1) / OB_CELL, end = (off + size) / OB_CELL;
    for (uint64_t c = first; c < end && c < oc->ncells; c++) {
        if (oc->cells[c] & OC_STORED)
            ob_cell_mark(oc, c, OC_DEL, OC_DIRTY);
        else
            oc->cells[c] &= (uint8_t)~OC_DIRTY;
    }
}

static void ob_mark_dirty(p2_pagebuf *pb, ob_ent *e)
{
    if (!(e->flags & OB_DIRTY)) {
        e->flags |= OB_DIRTY;
        pb->st.dirty++;
    }
}

/* The segment's write hook: inside an object it is dirty; elsewhere, the cells.  The
 * header is not marked here: the commit compares it whole with the server's copy
 * (ob_seal_header), since p2_seg_sync() announces all of it at every commit, and
 * marking it would ship it and move the meta cells' version, a conflict for every other
 * client, at every commit. */
static void ob_note(void *ctx, p2_seg *seg, uint64_t off, uint64_t n)
{
    p2_pagebuf *pb = (p2_pagebuf *)ctx;
    p2_objcache *oc = pb->oc;
    uint64_t hdr = sizeof *seg->hdr;
    if (off < hdr) {
        if (off + n <= hdr)
            return;
        n -= hdr - off;
        off = hdr;
    }
    if (oc->last != OB_NONE) {
        ob_ent *e = &oc->ents[oc->last];
        if ((e->flags & OB_RES) && off >= e->off && off + n <= e->off + e->size) {
            ob_mark_dirty(pb, e);
            return;
        }
    }
    for (uint32_t i = oc->npins; i-- > 0;) {
        ob_ent *e = &oc->ents[oc->pins[i]];
        if (!(e->flags & OB_RES) || e->gen != oc->gen)
            continue;
        if (off >= e->off && off + n <= e->off + e->size) {
            ob_mark_dirty(pb, e);
            return;
        }
        if (off < e->off + e->size && e->off < off + n) {   /* straddles: both */
            ob_mark_dirty(pb, e);
            break;
        }
    }
    ob_meta_dirty(oc, off, n);
}

static void ob_fail(p2_pagebuf *pb, const p2_err *e)
{
    if (!pb->failed)
        snprintf(pb->why, sizeof pb->why, "an object could not be fetched from the server inside an "
                 "operation, so the operation read what the client held there; nothing more is "
                 "written to the server (%.300s)", e->msg);
    pb->failed = 1;
}

static int ob_key(char *buf, size_t n, uint64_t off)
{
    return snprintf(buf, n, "p2:o:%" PRIu64, off);
}

/* Zero an object's bytes (large ones' whole pages given back to the kernel). */
static void ob_wipe(p2_pagebuf *pb, uint64_t off, uint64_t size)
{
    char *p = pb->seg->base + off;
    uint64_t pg = page_size();
    uint64_t a = round_up(off, pg), b = (off + size) / pg * pg;
    if (b > a + pg) {
        memset(p, 0, (size_t)(a - off));
        (void)madvise(pb->seg->base + a, (size_t)(b - a), MADV_DONTNEED);
        memset(pb->seg->base + b, 0, (size_t)(off + size - b));
    } else {
        memset(p, 0, (size_t)size);
    }
}


/* Evict entry idx, a clean object: its bytes zeroed.  (A dirty object is never evicted:
 * the server holds committed states only, so it stays until its transaction ends.) */
static void ob_evict(p2_pagebuf *pb, uint32_t idx)
{
    p2_objcache *oc = pb->oc;
    ob_ent *e = &oc->ents[idx];
    ob_wipe(pb, e->off, e->size);
    ob_remove(oc, idx);
    pb->st.evictions++;
    pb->st.resident--;
}

/* The clock: the first resident clean object not pinned and not referenced since the
 * hand last passed; OB_NONE if every one is pinned or dirty. */
static uint32_t ob_victim(p2_objcache *oc)
{
    if (oc->nents == 0)
        return OB_NONE;
    for (uint64_t steps = 0; steps < 2 * (uint64_t)oc->nents + 1; steps++) {
        uint32_t i = oc->hand;
        oc->hand = i + 1 >= oc->nents ? 0 : i + 1;
        ob_ent *e = &oc->ents[i];
        if (!(e->flags & OB_RES) || (e->flags & OB_DIRTY) || e->gen == oc->gen)
            continue;
        if (e->ref) {
            e->ref = 0;
            continue;
        }
        return i;
    }
    return OB_NONE;
}

/* Room for one more object: evict until fewer than `target` are here, or every one left
 * is pinned or dirty (the cache overflows). */
static void ob_make_room(p2_pagebuf *pb, uint64_t want)
{
    p2_objcache *oc = pb->oc;
    while (pb->st.resident + want > oc->target && !pb->failed) {
        uint32_t v = ob_victim(oc);
        if (v == OB_NONE)
            return;
        ob_evict(pb, v);
    }
}

/* ------------------------------------------------------------------------
 * 10.1 what the memory layer calls
 * ------------------------------------------------------------------------ */

void p2_obj_enter(p2_seg *seg)
{
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    oc->gen++;
    oc->npins = 0;
    oc->last = OB_NONE;
    ob_make_room(pb, 0);
    /* a cache that overflowed far (a walk of everything in one call) gives its table back */
    if (oc->tcap > 1024 && (uint64_t)oc->count * 16 < oc->tcap && oc->nfree * 2 > oc->nents) {
        /* compact the entries (indexes change: nothing is pinned now) */
        uint32_t j = 0;
        for (uint32_t i = 0; i < oc->nents; i++)
            if (oc->ents[i].flags != 0)
                oc->ents[j++] = oc->ents[i];
        oc->nents = j;
        oc->nfree = 0;
        oc->hand = 0;
        uint32_t t = 64;
        while (t < 2 * (oc->count + 1))
            t *= 2;
        if (!ob_rehash(oc, t))
            (void)ob_rehash(oc, oc->tcap);
    }
}

struct ob_fetch {
    p2_pagebuf *pb;
    uint64_t off;
    int found;
    uint64_t size;
    uint64_t ver;
};

/* A version (an HGET or HMGET element of p2:ver): nil is 0 (never shipped); -1 if it is
 * not a number (the caller names it corrupt). */
static int64_t ob_version(const p2_rreply *r)
{
    if (r->type == REDIS_NIL)
        return 0;
    char num[24];
    if (r->type != REDIS_STRING || r->len == 0 || r->len >= sizeof num)
        return -1;
    memcpy(num, r->str, r->len);
    num[r->len] = '\0';
    char *end;
    unsigned long long v = strtoull(num, &end, 10);
    return *end != '\0' || num[0] == '-' || v > INT64_MAX ? -1 : (int64_t)v;
}

static int ob_take_object(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_fetch *f = (struct ob_fetch *)ctx;
    if (i == 0) {               /* HGET p2:ver <off>, sent first (see ob_fetch_cmds) */
        int64_t v = ob_version(r);
        if (v < 0)
            return P2_EFORMAT;
        f->ver = (uint64_t)v;
        return P2_OK;
    }
    if (r->type == REDIS_NIL)
        return P2_OK;
    p2_seg *seg = f->pb->seg;
    if (r->type != REDIS_STRING || r->len == 0 || f->off + r->len > seg->mapped)
        return P2_EFORMAT;      /* the caller names it */
    memcpy(seg->base + f->off, r->str, r->len);
    f->found = 1;
    f->size = r->len;
    return P2_OK;
}

void p2_obj_set_bundle(p2_seg *seg, uint32_t k)
{
    if (seg != NULL && seg->pb != NULL && seg->pb->oc != NULL)
        seg->pb->oc->bundle = k > 64 ? 64 : k;
}

/* MGET's answer: element 0 is the missed object (as GET's), the others neighbours, each
 * placed where the client has no object and the server holds one. */
struct ob_bundle {
    struct ob_fetch f;
    uint64_t off[65];
    uint64_t ver[65];
    unsigned n;
    uint64_t got, bytes;
};

static int ob_take_bundle(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_bundle *b = (struct ob_bundle *)ctx;
    if (r->type != REDIS_ARRAY || r->elements != b->n)
        return P2_EFORMAT;
    if (i == 0) {               /* HMGET p2:ver, sent before the MGET */
        for (unsigned k = 0; k < b->n; k++) {
            p2_rreply x;
            redis_read_reply(r->element[k], &x);
            int64_t v = ob_version(&x);
            if (v < 0)
                return P2_EFORMAT;
            b->ver[k] = (uint64_t)v;
        }
        b->f.ver = b->ver[0];
        return P2_OK;
    }
    p2_rreply first;
    redis_read_reply(r->element[0], &first);
    int rc = ob_take_object(&b->f, 1, &first);
    if (rc != P2_OK || !b->f.found)
        return rc;
    p2_pagebuf *pb = b->f.pb;
    p2_seg *seg = pb->seg;
    for (unsigned k = 1; k < b->n; k++) {
        p2_rreply x;
        redis_read_reply(r->element[k], &x);
        uint64_t off = b->off[k];
        if (x.type != REDIS_STRING || x.len == 0 || off + x.len > seg->mapped ||
            off < b->f.off + b->f.size || ob_find(pb->oc, off) != OB_NONE)
            continue;           /* none there, or the client's is newer (or freed) */
        ob_make_room(pb, 1);
        uint32_t idx = ob_add(pb->oc, off, x.len, OB_RES);
        if (idx == OB_NONE)
            break;
        memcpy(seg->base + off, x.str, x.len);
        pb->oc->ents[idx].ver = b->ver[k];
        pb->st.resident++;
        b->got++;
        b->bytes += x.len;
    }
    return P2_OK;
}

void *p2_obj_ptr(p2_seg *seg, uint64_t ref)
{
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    uint32_t idx = ob_find(oc, ref);
    if (idx != OB_NONE) {
        if (oc->ents[idx].flags & OB_RES) {
            pb->st.hits++;
            ob_pin(oc, idx);
            ob_read(oc, idx);
        }
        return seg->base + ref;          /* or freed: the allocator's bytes */
    }
    if (ref < P2_SEG_HEADER_SIZE || ref >= seg->mapped || pb->failed)
        return seg->base + ref;          /* no object there: the caller bounds references */
    ob_make_room(pb, 1);
    /* its version first, then its bytes (one round trip): a commit of another client
     * between the two gives an old version with new bytes, which the commit's check
     * takes for a conflict (never new version, old bytes: commits are atomic) */
    char key[40], field[24];
    ob_key(key, sizeof key, ref);
    snprintf(field, sizeof field, "%" PRIu64, ref);
    const char *vargv[] = {"HGET", OB_VER, field};
    const size_t vlens[] = {4, sizeof OB_VER - 1, strlen(field)};
    const char *argv[] = {"GET", key};
    const size_t lens[] = {3, strlen(key)};
    const int fargc[] = {3, 2};
    const char *const *fargv[] = {vargv, argv};
    const size_t *const flens[] = {vlens, lens};
    struct ob_fetch f = {pb, ref, 0, 0, 0};
    p2_err e;
    p2_err_clear(&e);
    if (oc->bundle > 0 && oc->guess > 0) {
        /* one MGET: the object and its neighbours at the last object's stride */
        struct ob_bundle b;
        memset(&b, 0, sizeof b);
        b.f = f;
        char keys[65][40], fields[65][24];
        const char *bargv[66], *hargv[67];
        size_t blens[66], hlens[67];
        bargv[0] = "MGET";
        blens[0] = 4;
        hargv[0] = "HMGET";
        hlens[0] = 5;
        hargv[1] = OB_VER;
        hlens[1] = sizeof OB_VER - 1;
        for (unsigned k = 0; k <= oc->bundle; k++) {
            uint64_t off = ref + k * oc->guess;
            if (k > 0 && off >= seg->mapped)
                break;
            b.off[k] = off;
            ob_key(keys[k], sizeof keys[k], off);
            bargv[k + 1] = keys[k];
            blens[k + 1] = strlen(keys[k]);
            snprintf(fields[k], sizeof fields[k], "%" PRIu64, off);
            hargv[k + 2] = fields[k];
            hlens[k + 2] = strlen(fields[k]);
            b.n = k + 1;
        }
        const int bargc[] = {(int)b.n + 2, (int)b.n + 1};
        const char *const *bargvs[] = {hargv, bargv};
        const size_t *const blenss[] = {hlens, blens};
        int rc = redis_pipe(&pb->be, 2, bargc, bargvs, blenss, ob_take_bundle, &b, "a read", &e);
        f = b.f;
        if (rc == P2_OK) {
            pb->st.bundled += b.got;
            pb->st.bytes_read += b.bytes;
        } else if (e.code == P2_OK) {
            p2_err_set(&e, P2_EFORMAT, "%s: the object at offset %" PRIu64 " is corrupt (not a "
                       "block inside the database)", pb->be.uri, ref);
        }
        if (rc != P2_OK) {
            ob_fail(pb, &e);
            return seg->base + ref;
        }
    } else if (redis_pipe(&pb->be, 2, fargc, fargv, flens, ob_take_object, &f, "a read", &e) != P2_OK) {
        if (e.code == P2_OK)
            p2_err_set(&e, P2_EFORMAT, "%s: the object at offset %" PRIu64 " is corrupt (not a "
                       "block inside the database)", pb->be.uri, ref);
        ob_fail(pb, &e);
        return seg->base + ref;
    }
    pb->st.reads++;
    if (!f.found)
        return seg->base + ref;          /* not an object: meta (the caller's business) */
    pb->st.misses++;
    pb->st.bytes_read += f.size;
    oc->guess = f.size;
    idx = ob_add(oc, ref, f.size, OB_RES);
    if (idx == OB_NONE) {
        p2_err_set(&e, P2_ENOMEM, "%s: out of memory for the object cache", pb->be.uri);
        ob_fail(pb, &e);
        return seg->base + ref;
    }
    oc->ents[idx].ver = f.ver;
    pb->st.resident++;
    ob_pin(oc, idx);
    ob_read(oc, idx);
    return seg->base + ref;
}

/* Register [off, off + size) as a new (dirty, pinned) object. */
static int ob_new_object(p2_pagebuf *pb, uint64_t off, uint64_t size, p2_err *err)
{
    p2_objcache *oc = pb->oc;
    uint32_t idx = ob_find(oc, off);
    if (idx != OB_NONE) {                /* freed since the last sync: its key is rewritten */
        ob_ent *e = &oc->ents[idx];
        e->flags = OB_RES;
        e->size = size;
    } else {
        idx = ob_add(oc, off, size, OB_RES | OB_NEW);
        if (idx == OB_NONE)
            return seg_fail(pb->seg, err, P2_ENOMEM, "out of memory for the object cache");
    }
    pb->st.resident++;
    ob_mark_dirty(pb, &oc->ents[idx]);
    ob_pin(oc, idx);
    ob_meta_claim(oc, off, size);
    return P2_OK;
}

/* An object stops being one (freed, or moved away by a realloc). */
static void ob_forget(p2_pagebuf *pb, uint64_t off, uint64_t size, int wipe)
{
    p2_objcache *oc = pb->oc;
    uint32_t idx = ob_find(oc, off);
    if (idx == OB_NONE) {                /* on the server only */
        if (wipe)
            memset(pb->seg->base + off, 0, (size_t)size);
        (void)ob_add(oc, off, size, OB_DEL);   /* out of memory: a stale key stays unread */
        return;
    }
    ob_ent *e = &oc->ents[idx];
    if (!(e->flags & OB_RES))
        return;
    pb->st.resident--;
    if (e->flags & OB_DIRTY)
        pb->st.dirty--;
    if (wipe)
        memset(pb->seg->base + off, 0, (size_t)size);
    if (e->flags & OB_NEW)
        ob_remove(oc, idx);
    else
        e->flags = OB_DEL;
}

p2_off p2_obj_alloc(p2_seg *seg, uint64_t size, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed) {
        seg_fail(seg, err, P2_EIO, "%s", pb->why);
        return 0;
    }
    ob_make_room(pb, 1);
    p2_off off = p2_seg_alloc(seg, size, err);
    if (!off)
        return 0;
    /* the whole block is the object: the allocator zero-filled it all */
    if (ob_new_object(pb, off, block_size(seg, size), err) != P2_OK) {
        p2_seg_free(seg, off, size);
        return 0;
    }
    return off;
}

void p2_obj_free(p2_seg *seg, p2_off ref, uint64_t size)
{
    ob_forget(seg->pb, ref, block_size(seg, size), 1);
    p2_seg_free(seg, ref, size);         /* its links: cells, no object is there now */
}

p2_off p2_obj_realloc(p2_seg *seg, p2_off ref, uint64_t old_size, uint64_t new_size, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    if (pb->failed) {
        seg_fail(seg, err, P2_EIO, "%s", pb->why);
        return 0;
    }
    if (ref != 0)
        (void)p2_obj_ptr(seg, ref);      /* its bytes are copied: here first */
    p2_off off = p2_seg_realloc(seg, ref, old_size, new_size, err);
    if (!off)
        return 0;
    if (off == ref) {
        uint32_t idx = ob_find(pb->oc, ref);
        if (idx != OB_NONE) {
            pb->oc->ents[idx].size = block_size(seg, new_size);
            ob_mark_dirty(pb, &pb->oc->ents[idx]);
            ob_meta_claim(pb->oc, ref, block_size(seg, new_size));
        }
        return off;
    }
    if (ref != 0) {
        ob_forget(pb, ref, block_size(seg, old_size), 0);  /* the allocator's link is in it now */
        ob_meta_dirty(pb->oc, ref, block_size(seg, old_size));
    }
    if (ob_new_object(pb, off, block_size(seg, new_size), err) != P2_OK)
        return 0;
    return off;
}

/* ------------------------------------------------------------------------
 * 10.2 transactions: the check of the read set, commit (one MULTI ... EXEC), abort
 *
 * Several clients share the database, optimistically.  Each object has a version, the
 * field <offset> of the hash p2:ver (the meta cells theirs, the field m), raised by every
 * commit that ships it.  A fetch reads the version before the bytes (one round trip).  A
 * transaction lists what it reads (the read set: offset and version); its commit then
 *   1. WATCHes p2:meta and the key of every object read, and reads their versions now
 *      (HMGET p2:ver m ...): one round trip.  A version that moved is a conflict
 *      (another client committed the object, or the meta cells, since this one read it);
 *   2. ships the dirty objects (SET), the freed ones (DEL), the dirty cells (HSET / HDEL
 *      p2:meta) and the new versions in one MULTI ... EXEC: one round trip.  An EXEC
 *      the server aborts (nil: a watched key changed between 1 and 2) is a conflict.
 * A transaction that wrote nothing needs no WATCH: step 1 alone (the versions all still
 * as read: what it read was the committed state at that instant).  One that read and
 * wrote nothing sends nothing.  A conflict is P2_ECONFLICT: nothing was shipped, the
 * objects found changed are dropped from the cache, and the transaction stays open for
 * the caller to abort (which drops what it changed; meta cells changed here or by
 * another client make it drop the cache and read the cells again) and retry.  Nothing
 * reaches the server but through a commit: a dirty object is never evicted.
 * ------------------------------------------------------------------------ */

/* One pipeline of commands, its arrays sized by the caller's bounds. */
typedef struct ob_batch {
    unsigned ncmd;
    int *argc;
    const char ***argv;
    const size_t **lens;
    const char **args;
    size_t *alen;
    uint64_t narg, start;
    char *text;                 /* keys and numbers: 32 bytes each */
    uint64_t ntext;
    uint64_t infields;          /* fields in the hash command being built */
} ob_batch;

#define OB_TEXT 32u

static int ob_batch_init(ob_batch *b, uint64_t cmds, uint64_t args, uint64_t texts)
{
    memset(b, 0, sizeof *b);
    b->argc = (int *)calloc((size_t)cmds, sizeof *b->argc);
    b->argv = (const char ***)calloc((size_t)cmds, sizeof *b->argv);
    b->lens = (const size_t **)calloc((size_t)cmds, sizeof *b->lens);
    b->args = (const char **)calloc((size_t)args, sizeof *b->args);
    b->alen = (size_t *)calloc((size_t)args, sizeof *b->alen);
    b->text = (char *)malloc((size_t)(texts ? texts : 1) * OB_TEXT);
    return b->argc && b->argv && b->lens && b->args && b->alen && b->text;
}

static void ob_batch_free(ob_batch *b)
{
    free(b->argc);
    free(b->argv);
    free(b->lens);
    free(b->args);
    free(b->alen);
    free(b->text);
}

static void ob_cmd_begin(ob_batch *b)
{
    b->argv[b->ncmd] = &b->args[b->narg];
    b->lens[b->ncmd] = &b->alen[b->narg];
    b->start = b->narg;
}

static void ob_arg(ob_batch *b, const char *s, size_t n)
{
    b->args[b->narg] = s;
    b->alen[b->narg++] = n;
}

static void ob_cmd_end(ob_batch *b)
{
    b->argc[b->ncmd++] = (int)(b->narg - b->start);
}

/* An argument "<prefix><v>", kept in the batch's text. */
static void ob_num_arg(ob_batch *b, const char *prefix, uint64_t v)
{
    char *t = b->text + OB_TEXT * b->ntext++;
    int n = snprintf(t, OB_TEXT, "%s%" PRIu64, prefix, v);
    ob_arg(b, t, (size_t)n);
}

/* Fields of a hash command (HSET / HDEL key f [v] ...), OB_FIELDS per command. */
static void ob_field_begin(ob_batch *b, const char *cmd, const char *key)
{
    if (b->infields == 0) {
        ob_cmd_begin(b);
        ob_arg(b, cmd, strlen(cmd));
        ob_arg(b, key, strlen(key));
    }
}

static void ob_field_end(ob_batch *b, int last)
{
    if (!last && ++b->infields < OB_FIELDS)
        return;
    if (b->infields > 0 || !last)
        ob_cmd_end(b);
    b->infields = 0;
}

static uint64_t ob_chunks(uint64_t n)
{
    return (n + OB_FIELDS - 1) / OB_FIELDS;
}

/* The read set checked against the server's versions. */
struct ob_check {
    p2_objcache *oc;
    unsigned last;              /* the HMGET's command */
    uint8_t *moved;             /* per read-set entry */
    uint64_t nmoved;
    int meta_moved, bad;
};

static int ob_take_check(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_check *x = (struct ob_check *)ctx;
    if (i != x->last)
        return P2_OK;           /* WATCH: OK */
    if (r->type != REDIS_ARRAY || r->elements != (size_t)x->oc->nrs + 1) {
        x->bad = 1;
        return P2_OK;
    }
    for (size_t k = 0; k < r->elements; k++) {
        p2_rreply v;
        redis_read_reply(r->element[k], &v);
        int64_t ver = ob_version(&v);
        if (ver < 0) {
            x->bad = 1;
            return P2_OK;
        }
        if (k == 0) {
            x->meta_moved = (uint64_t)ver != x->oc->mver;
        } else if ((uint64_t)ver != x->oc->rs_ver[k - 1]) {
            x->moved[k - 1] = 1;
            x->nmoved++;
        }
    }
    return P2_OK;
}

/* Drop a clean object from the cache (another client changed it): the next touch fetches
 * it again.  A dirty one stays until the abort. */
static void ob_drop_stale(p2_pagebuf *pb, uint64_t off)
{
    p2_objcache *oc = pb->oc;
    uint32_t idx = ob_find(oc, off);
    if (idx == OB_NONE || (oc->ents[idx].flags & (OB_DIRTY | OB_NEW)) || !(oc->ents[idx].flags & OB_RES))
        return;
    ob_wipe(pb, off, oc->ents[idx].size);
    ob_remove(oc, idx);
    pb->st.resident--;
}

/* Read the versions of p2:meta and of every object of the read set (with watch, WATCH
 * their keys first, in the same round trip).  *moved: how many changed since they were
 * read (the meta counted); those objects are dropped from the cache. */
static int ob_check(p2_pagebuf *pb, int watch, uint64_t *moved, p2_err *err)
{
    p2_objcache *oc = pb->oc;
    uint64_t n = oc->nrs;
    ob_batch b;
    struct ob_check x = {oc, watch ? 1u : 0u, (uint8_t *)calloc((size_t)n + 1, 1), 0, 0, 0};
    int rc;
    if (!ob_batch_init(&b, 2, 2 * n + 6, 2 * n) || x.moved == NULL) {
        rc = seg_fail(pb->seg, err, P2_ENOMEM, "out of memory for the check of %" PRIu64 " objects", n);
        goto out;
    }
    if (watch) {
        ob_cmd_begin(&b);
        ob_arg(&b, "WATCH", 5);
        ob_arg(&b, OB_META, sizeof OB_META - 1);
        for (uint64_t k = 0; k < n; k++)
            ob_num_arg(&b, "p2:o:", oc->rs_off[k]);
        ob_cmd_end(&b);
    }
    ob_cmd_begin(&b);
    ob_arg(&b, "HMGET", 5);
    ob_arg(&b, OB_VER, sizeof OB_VER - 1);
    ob_arg(&b, "m", 1);
    for (uint64_t k = 0; k < n; k++)
        ob_num_arg(&b, "", oc->rs_off[k]);
    ob_cmd_end(&b);
    rc = redis_pipe(&pb->be, b.ncmd, b.argc, (const char *const *const *)b.argv,
                    (const size_t *const *)b.lens, ob_take_check, &x, "a commit's check", err);
    if (rc != P2_OK)
        goto out;
    /* not counted among reads, which stay the fetches (ACOB counts them: acob.md 6.1) */
    if (x.bad) {
        rc = seg_fail(pb->seg, err, P2_EFORMAT, "not a p2gen database: its %s hash holds something other "
                      "than versions", OB_VER);
        goto out;
    }
    for (uint64_t k = 0; k < n; k++)
        if (x.moved[k])
            ob_drop_stale(pb, oc->rs_off[k]);
    if (x.meta_moved)
        oc->meta_stale = 1;
    *moved = x.nmoved + (uint64_t)x.meta_moved;
out:
    ob_batch_free(&b);
    free(x.moved);
    return rc;
}

/* The transaction is over: its read set empties. */
static void ob_txn_end(p2_objcache *oc)
{
    for (uint32_t k = 0; k < oc->nrs; k++) {
        uint32_t idx = ob_find(oc, oc->rs_off[k]);
        if (idx != OB_NONE)
            oc->ents[idx].flags &= ~OB_READ;
    }
    oc->nrs = 0;
    oc->conflict = 0;
}

static int ob_conflict(p2_pagebuf *pb, uint64_t moved, p2_err *err)
{
    pb->oc->conflict = 1;
    pb->st.conflicts++;
    return seg_fail(pb->seg, err, P2_ECONFLICT, "another client committed %s%" PRIu64 " object%s this "
                    "transaction read since it read %s: nothing of it was shipped; abort it and retry",
                    pb->oc->meta_stale ? "the database's roots or allocator and " : "", moved,
                    moved == 1 ? "" : "s", moved == 1 ? "it" : "them");
}

/* The header as the server must hold it (clean, roots sealed, checksummed), its cells
 * dirty if that differs from what the server holds. */
static void ob_seal_header(p2_seg *seg)
{
    p2_objcache *oc = seg->pb->oc;
    struct p2_seg_header *h = seg->hdr;
    h->state = SEG_STATE_CLEAN;
    roots_seal(seg);
    h->checksum = header_crc(h);
    if (memcmp(h, oc->hdr_copy, sizeof *h) != 0)
        ob_meta_dirty(oc, 0, sizeof *h);
}

struct ob_exec {
    unsigned ncmds;
    int exec_ok;
};

static int ob_take_exec(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_exec *x = (struct ob_exec *)ctx;
    if (i == x->ncmds - 1)
        x->exec_ok = r->type == REDIS_ARRAY;
    return P2_OK;
}

/* Commit (sync and close too): check the read set, then ship in one MULTI ... EXEC. */
static int ob_sync(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    if (pb->failed)
        return pb_failed(pb, err);
    if (pb->be.dead)
        return seg_fail(seg, err, P2_EIO, "%s", pb->be.why);
    if (oc->conflict > 0)
        return seg_fail(seg, err, P2_ECONFLICT, "this transaction met a conflict at its commit: abort it, "
                        "then retry");
    if (oc->conflict < 0)
        return seg_fail(seg, err, P2_ENOMEM, "out of memory for the transaction's read set: abort it");
    if (oc->creating)
        return P2_OK;           /* seg_create's bare roots: the empty containers come first */
    ob_seal_header(seg);
    uint64_t nobj = 0, ndel = 0, ncell = 0, ncdel = 0;
    for (uint32_t i = 0; i < oc->nents; i++) {
        if ((oc->ents[i].flags & (OB_RES | OB_DIRTY)) == (OB_RES | OB_DIRTY))
            nobj++;
        else if (oc->ents[i].flags & OB_DEL)
            ndel++;
    }
    for (uint64_t k = 0; k < oc->nclist; k++) {
        uint8_t c = oc->cells[oc->clist[k]];
        ncell += (c & OC_DIRTY) != 0;
        ncdel += (c & OC_DEL) != 0;
    }
    int writes = nobj + ndel + ncell + ncdel > 0, meta = ncell + ncdel > 0;
    if (!writes && oc->nrs == 0)
        return P2_OK;           /* nothing read from the server, nothing to ship */
    uint64_t moved = 0;
    int rc = ob_check(pb, writes, &moved, err);
    if (rc != P2_OK)
        return rc;
    if (moved > 0) {
        if (writes) {           /* the WATCH is not wanted any more */
            const char *argv[] = {"UNWATCH"};
            const size_t lens[] = {7};
            p2_err e;
            p2_err_clear(&e);
            (void)redis_cmd(&pb->be, 1, argv, lens, NULL, NULL, "an UNWATCH", &e);
        }
        return ob_conflict(pb, moved, err);
    }
    if (!writes) {
        ob_txn_end(oc);
        return P2_OK;
    }
    uint64_t vfields = nobj + (uint64_t)meta;
    uint64_t ncmds = 2 + nobj + ndel + ob_chunks(ncell) + ob_chunks(ncdel) + ob_chunks(vfields) + ob_chunks(ndel);
    uint64_t nargs = 2 + 3 * nobj + 2 * ndel + 2 * ncell + ncdel + 2 * vfields + ndel + 2 * ncmds;
    ob_batch b;
    if (!ob_batch_init(&b, ncmds, nargs, nobj + ndel + ncell + ncdel + 2 * vfields + ndel)) {
        rc = seg_fail(seg, err, P2_ENOMEM, "out of memory for a commit of %" PRIu64 " objects", nobj);
        goto out;
    }
    ob_cmd_begin(&b);
    ob_arg(&b, "MULTI", 5);
    ob_cmd_end(&b);
    for (uint32_t i = 0; i < oc->nents; i++) {
        ob_ent *e = &oc->ents[i];
        int set = (e->flags & (OB_RES | OB_DIRTY)) == (OB_RES | OB_DIRTY);
        if (!set && !(e->flags & OB_DEL))
            continue;
        ob_cmd_begin(&b);
        ob_arg(&b, set ? "SET" : "DEL", 3);
        ob_num_arg(&b, "p2:o:", e->off);
        if (set)
            ob_arg(&b, seg->base + e->off, (size_t)e->size);
        ob_cmd_end(&b);
    }
    for (int del = 0; del < 2; del++) {
        for (uint64_t k = 0; k < oc->nclist; k++) {
            uint64_t cell = oc->clist[k];
            if (!(oc->cells[cell] & (del ? OC_DEL : OC_DIRTY)))
                continue;
            ob_field_begin(&b, del ? "HDEL" : "HSET", OB_META);
            ob_num_arg(&b, "", cell);
            if (!del)
                ob_arg(&b, seg->base + cell * OB_CELL, OB_CELL);
            ob_field_end(&b, 0);
        }
        ob_field_end(&b, 1);
    }
    /* the new versions: one more than each had (a new object's first is 1) */
    for (uint32_t i = 0; i < oc->nents; i++) {
        ob_ent *e = &oc->ents[i];
        if ((e->flags & (OB_RES | OB_DIRTY)) != (OB_RES | OB_DIRTY))
            continue;
        ob_field_begin(&b, "HSET", OB_VER);
        ob_num_arg(&b, "", e->off);
        ob_num_arg(&b, "", e->ver + 1);
        ob_field_end(&b, 0);
    }
    if (meta) {
        ob_field_begin(&b, "HSET", OB_VER);
        ob_arg(&b, "m", 1);
        ob_num_arg(&b, "", oc->mver + 1);
        ob_field_end(&b, 0);
    }
    ob_field_end(&b, 1);
    for (uint32_t i = 0; i < oc->nents; i++) {
        if (!(oc->ents[i].flags & OB_DEL))
            continue;
        ob_field_begin(&b, "HDEL", OB_VER);
        ob_num_arg(&b, "", oc->ents[i].off);
        ob_field_end(&b, 0);
    }
    ob_field_end(&b, 1);
    ob_cmd_begin(&b);
    ob_arg(&b, "EXEC", 4);
    ob_cmd_end(&b);
    {
        struct ob_exec x = {b.ncmd, 0};
        rc = redis_pipe(&pb->be, b.ncmd, b.argc, (const char *const *const *)b.argv,
                        (const size_t *const *)b.lens, ob_take_exec, &x, "a commit", err);
        if (rc != P2_OK)
            goto out;
        if (!x.exec_ok) {       /* a watched key changed between the check and the EXEC */
            p2_err e;
            p2_err_clear(&e);
            moved = 0;
            if (ob_check(pb, 0, &moved, &e) != P2_OK || moved == 0)
                oc->meta_stale = 1;     /* cannot tell what: the abort reads everything again */
            rc = ob_conflict(pb, moved ? moved : 1, err);
            goto out;
        }
    }
    /* shipped: the objects are clean at their new versions, the freed ones gone, the
     * cells stored */
    pb->st.flushes++;
    for (uint32_t i = 0; i < oc->nents; i++) {
        ob_ent *e = &oc->ents[i];
        if ((e->flags & (OB_RES | OB_DIRTY)) == (OB_RES | OB_DIRTY)) {
            pb->st.writes++;
            pb->st.bytes_written += e->size;
            ob_wb_note(pb, e->off);
            e->flags &= ~(OB_DIRTY | OB_NEW);
            e->ver++;
            pb->st.dirty--;
        } else if (e->flags & OB_DEL) {
            ob_remove(oc, i);
        }
    }
    for (uint64_t k = 0; k < oc->nclist; k++) {
        uint8_t *c = &oc->cells[oc->clist[k]];
        if (*c & OC_DIRTY) {
            pb->st.bytes_written += OB_CELL;
            *c |= OC_STORED;
        }
        if (*c & OC_DEL)
            *c &= (uint8_t)~OC_STORED;
        *c &= (uint8_t)~(OC_DIRTY | OC_DEL | OC_LISTED);
    }
    oc->nclist = 0;
    if (meta)
        oc->mver++;
    memcpy(oc->hdr_copy, seg->hdr, sizeof *seg->hdr);
    ob_txn_end(oc);
out:
    ob_batch_free(&b);
    return rc;
}

/* The meta cells from the server (its version first, then p2:meta whole: one round trip)
 * into a reservation whose cells and objects are all zero.  *ncells: 0 where the server
 * has none (no database there). */
static int ob_load_meta(p2_seg *seg, uint64_t *ncells, p2_err *err);

/* Drop every object and read the meta cells again: the database as last committed. */
static int ob_reload(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    for (uint32_t i = 0; i < oc->nents; i++)
        if (oc->ents[i].flags != 0)
            ob_remove(oc, i);
    pb->st.resident = 0;
    pb->st.dirty = 0;
    oc->npins = 0;
    oc->last = OB_NONE;
    oc->gen++;
    oc->meta_stale = 0;
    if (madvise(seg->base, (size_t)seg->mapped, MADV_DONTNEED) != 0 ||
        madvise(oc->cells, (size_t)oc->cells_bytes, MADV_DONTNEED) != 0) {
        pb->failed = 1;
        snprintf(pb->why, sizeof pb->why, "cannot drop the object cache: %s", strerror(errno));
        return seg_fail(seg, err, P2_EIO, "%s", pb->why);
    }
    oc->nclist = 0;
    uint64_t n = 0;
    int rc = ob_load_meta(seg, &n, err);
    if (rc == P2_OK && n == 0)
        rc = seg_fail(seg, err, P2_EFORMAT, "the database is gone from the server (no %s)", OB_META);
    if (rc == P2_OK && (header_crc(seg->hdr) != seg->hdr->checksum ||
                        memcmp(seg->hdr->magic, SEG_MAGIC, sizeof seg->hdr->magic) != 0))
        rc = seg_fail(seg, err, P2_EFORMAT, "not a p2gen database: the header the server holds fails "
                      "its checksum");
    if (rc == P2_OK)
        rc = ob_grow(seg, seg->hdr->file_size, err);
    if (rc != P2_OK) {          /* the segment holds nothing sound now */
        pb->failed = 1;
        snprintf(pb->why, sizeof pb->why, "the database could not be read again from the server after "
                 "an abort (%.300s)", err != NULL ? err->msg : "");
        return rc;
    }
    seg->mapped = seg->hdr->file_size;
    memcpy(oc->hdr_copy, seg->hdr, sizeof *seg->hdr);
    return P2_OK;
}

int p2_obj_abort(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || seg->pb->oc == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_obj_abort: not an object-server segment");
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    /* the header changed here (the allocator's brk, its lists' heads: see ob_note) */
    int reload = oc->meta_stale || memcmp(seg->hdr, oc->hdr_copy, sizeof *seg->hdr) != 0;
    for (uint64_t k = 0; k < oc->nclist && !reload; k++)
        reload = (oc->cells[oc->clist[k]] & (OC_DIRTY | OC_DEL)) != 0;
    ob_txn_end(oc);
    if (pb->failed)
        return pb_failed(pb, err);
    if (!reload) {              /* objects only: drop the changed ones */
        for (uint32_t i = 0; i < oc->nents; i++) {
            ob_ent *e = &oc->ents[i];
            if (!(e->flags & OB_DIRTY))
                continue;
            ob_wipe(pb, e->off, e->size);
            ob_remove(oc, i);
            pb->st.resident--;
            pb->st.dirty--;
        }
        return P2_OK;
    }
    return ob_reload(seg, err);
}

int p2_obj_settled(p2_seg *seg, int any, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || seg->pb->oc == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_obj_settled: not an object-server segment");
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    if (pb->failed)
        return pb_failed(pb, err);
    if (oc->conflict || pb->st.dirty > 0 || oc->nclist > 0)
        return seg_fail(seg, err, P2_EINVAL, "p2_obj_settled: the transaction has %s",
                        oc->conflict ? "met a conflict" : "changes");
    uint64_t moved = 0;
    int rc = ob_check(pb, 0, &moved, err);
    if (rc != P2_OK)
        return rc;
    /* the objects moved are dropped from the cache already: the next touch fetches them
     * as last committed, and p2_obj_abort() reads the meta cells again */
    if (oc->meta_stale || (any && moved > 0)) {
        pb->st.conflicts++;
        return seg_fail(seg, err, P2_ECONFLICT, "another client committed %s since this client "
                        "read them", oc->meta_stale ? "the database's roots or allocator" : "objects");
    }
    ob_txn_end(oc);
    return P2_OK;
}

int p2_obj_begin(p2_seg *seg, p2_err *err)
{
    if (seg == NULL || seg->pb == NULL || seg->pb->oc == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_obj_begin: not an object-server segment");
    p2_pagebuf *pb = seg->pb;
    p2_objcache *oc = pb->oc;
    if (pb->failed)
        return pb_failed(pb, err);
    if (oc->conflict || pb->st.dirty > 0 || oc->nclist > 0)
        return seg_fail(seg, err, P2_EINVAL, "begin: the current transaction has %s; commit or abort it "
                        "first", oc->conflict ? "met a conflict" : "changes");
    ob_txn_end(oc);
    /* the meta's version: where another client changed the roots or the allocator since,
     * read them again (and drop the cache) */
    const char *argv[] = {"HGET", OB_VER, "m"};
    const size_t lens[] = {4, sizeof OB_VER - 1, 1};
    struct ob_fetch f = {pb, 0, 0, 0, 0};
    int rc = redis_cmd(&pb->be, 3, argv, lens, ob_take_object, &f, "a begin", err);
    if (rc != P2_OK)
        return rc == P2_EFORMAT ? seg_fail(seg, err, rc, "not a p2gen database: its meta version is not "
                                           "a number") : rc;
    return f.ver != oc->mver ? ob_reload(seg, err) : P2_OK;
}

static void ob_free(p2_pagebuf *pb)
{
    p2_objcache *oc = pb->oc;
    if (oc == NULL)
        return;
    free(oc->ents);
    free(oc->freel);
    free(oc->table);
    free(oc->pins);
    free(oc->clist);
    free(oc->wb);
    free(oc->rs_off);
    free(oc->rs_ver);
    free(oc->hdr_copy);
    if (oc->cells != NULL)
        munmap(oc->cells, (size_t)oc->cells_bytes);
    free(oc);
    pb->oc = NULL;
}

/* Close: a commit of what is open, then the connection goes. */
static int ob_close(p2_seg *seg, p2_err *err)
{
    int rc = seg->pb->failed ? pb_failed(seg->pb, err) : ob_sync(seg, err);
    pb_free(seg);
    munmap(seg->base, (size_t)seg->reserved);
    seg_reset(seg);
    return rc;
}

static int ob_drop(p2_seg *seg, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    int rc = ob_sync(seg, err);
    if (rc != P2_OK)
        return rc;
    p2_objcache *oc = pb->oc;
    for (uint32_t i = 0; i < oc->nents; i++)
        if (oc->ents[i].flags & OB_RES) {
            ob_wipe(pb, oc->ents[i].off, oc->ents[i].size);
            ob_remove(oc, i);
        }
    oc->npins = 0;
    oc->last = OB_NONE;
    oc->gen++;
    pb->st.resident = 0;
    return P2_OK;
}

/* The segment grows: the new bytes are zero, in this process. */
static int ob_grow(p2_seg *seg, uint64_t want, p2_err *err)
{
    if (want > seg->mapped &&
        mprotect(seg->base + seg->mapped, (size_t)(want - seg->mapped), PROT_READ | PROT_WRITE) != 0)
        return seg_fail(seg, err, P2_ENOMEM, "cannot map %" PRIu64 " more bytes: %s", want - seg->mapped,
                        strerror(errno));
    return P2_OK;
}

/* ------------------------------------------------------------------------
 * 10.3 open
 * ------------------------------------------------------------------------ */

struct ob_meta_load {
    p2_seg *seg;
    p2_objcache *oc;
    uint64_t ncells;
    int bad;
};

static int ob_take_meta(void *ctx, unsigned i, const p2_rreply *r)
{
    struct ob_meta_load *m = (struct ob_meta_load *)ctx;
    if (i == 0) {               /* HGET p2:ver m */
        int64_t v = ob_version(r);
        if (v < 0)
            m->bad = 1;
        else
            m->oc->mver = (uint64_t)v;
        return P2_OK;
    }
    if (r->type != REDIS_ARRAY || r->elements % 2 != 0) {
        m->bad = 1;
        return P2_OK;
    }
    uint64_t maxc = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < r->elements; k += 2) {
            p2_rreply f, v;
            redis_read_reply(r->element[k], &f);
            redis_read_reply(r->element[k + 1], &v);
            char num[24];
            if (f.type != REDIS_STRING || f.len == 0 || f.len >= sizeof num || v.type != REDIS_STRING ||
                v.len != OB_CELL) {
                m->bad = 1;
                return P2_OK;
            }
            memcpy(num, f.str, f.len);
            num[f.len] = '\0';
            char *end;
            unsigned long long c = strtoull(num, &end, 10);
            if (*end != '\0' || c >= m->oc->ncells) {
                m->bad = 1;
                return P2_OK;
            }
            if (pass == 0) {
                if (c + 1 > maxc)
                    maxc = c + 1;
                continue;
            }
            memcpy(m->seg->base + c * OB_CELL, v.str, OB_CELL);
            m->oc->cells[c] = OC_STORED;
        }
        if (pass == 0) {
            uint64_t bytes = round_up(maxc * OB_CELL, seg_granule());
            if (bytes > m->seg->reserved ||
                mprotect(m->seg->base, (size_t)bytes, PROT_READ | PROT_WRITE) != 0) {
                m->bad = 1;
                return P2_OK;
            }
            m->seg->mapped = bytes;
        }
    }
    m->ncells = r->elements / 2;
    return P2_OK;
}

static int ob_load_meta(p2_seg *seg, uint64_t *ncells, p2_err *err)
{
    p2_pagebuf *pb = seg->pb;
    const char *vargv[] = {"HGET", OB_VER, "m"};
    const size_t vlens[] = {4, sizeof OB_VER - 1, 1};
    const char *argv[] = {"HGETALL", OB_META};
    const size_t lens[] = {7, sizeof OB_META - 1};
    const int argc[] = {3, 2};
    const char *const *argvs[] = {vargv, argv};
    const size_t *const lenss[] = {vlens, lens};
    struct ob_meta_load m = {seg, pb->oc, 0, 0};
    int rc = redis_pipe(&pb->be, 2, argc, argvs, lenss, ob_take_meta, &m, "a read", err);
    if (rc != P2_OK)
        return rc;
    pb->st.reads++;
    if (m.bad)
        return seg_fail(seg, err, P2_EFORMAT, "not a p2gen database: its %s hash is not a segment's "
                        "64-byte cells (or %s m not a version)", OB_META, OB_VER);
    pb->st.bytes_read += m.ncells * OB_CELL;
    *ncells = m.ncells;
    return P2_OK;
}

int p2_seg_open_objserver(p2_seg *seg, const char *uri, uint32_t objects, uint64_t fingerprint,
                          uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                          uint64_t reserve, int *created, p2_err *err)
{
    if (created != NULL)
        *created = 0;
    if (seg == NULL || uri == NULL)
        return p2_err_set(err, P2_EINVAL, "p2_seg_open_objserver: seg or uri is NULL");
    seg_reset(seg);
    seg->pb = NULL;
    snprintf(seg->path, sizeof seg->path, "%s", uri);
    if (strncmp(uri, "redis://", 8) != 0)
        return seg_fail(seg, err, P2_EINVAL, "an object server is a Redis server: redis://HOST[:PORT][/DB]");
    if (objects < 1)
        return seg_fail(seg, err, P2_EINVAL, "an object cache of 0 objects: at least 1 is needed");
    seg->alloc_exact = root_names != NULL && roots_exact(nroots, root_names);
    int rc = check_roots(seg, nroots, root_names, root_sizes, err);
    if (rc != P2_OK)
        return rc;
    p2_pagebuf *pb = (p2_pagebuf *)calloc(1, sizeof *pb);
    p2_objcache *oc = (p2_objcache *)calloc(1, sizeof *oc);
    if (pb == NULL || oc == NULL) {
        free(pb);
        free(oc);
        return seg_fail(seg, err, P2_ENOMEM, "out of memory for the object cache");
    }
    seg->pb = pb;
    pb->seg = seg;
    pb->oc = oc;
    pb->pg = page_size();
    pb->be.st = &pb->st;
    oc->target = objects;
    oc->gen = 1;
    oc->last = OB_NONE;
    pb->st.frames = objects;
    rc = backend_open(&pb->be, uri, err);
    if (rc != P2_OK) {
        pb->be.ops = NULL;   /* the open undid itself */
        goto fail;
    }
    oc->hdr_copy = (unsigned char *)calloc(1, sizeof(struct p2_seg_header));
    if (oc->hdr_copy == NULL) {
        rc = seg_fail(seg, err, P2_ENOMEM, "out of memory for the object cache");
        goto fail;
    }
    if (reserve == 0)
        reserve = P2_SEG_DEFAULT_RESERVE;
    seg->reserved = round_up(reserve > SEG_MAX_RESERVE ? SEG_MAX_RESERVE : reserve, seg_granule());
    oc->ncells = seg->reserved / OB_CELL;
    oc->cells_bytes = round_up(oc->ncells, page_size());
    {
        void *t = mmap(NULL, (size_t)oc->cells_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (t == MAP_FAILED) {
            oc->cells = NULL;
            rc = seg_fail(seg, err, P2_ENOMEM, "cannot map the object cache's tables: %s", strerror(errno));
            goto fail;
        }
        oc->cells = (uint8_t *)t;
    }
    if ((rc = seg_reserve(seg, err)) != P2_OK)
        goto fail;
    {
        uint64_t ncells = 0;
        if ((rc = ob_load_meta(seg, &ncells, err)) != P2_OK)
            goto fail;
        if (ncells == 0) {
            /* nothing there: a new database (seg_create reserves again) */
            munmap(seg->base, (size_t)seg->reserved);
            seg->base = NULL;
            seg->mapped = 0;
            /* not shipped yet: the caller creates its containers in it, then commits
             * (objserver's after_create), so that no client ever reads bare roots (zeros
             * where an empty container has P2_NIL) and an abort comes back to the empty
             * containers */
            oc->creating = 1;
            rc = seg_create(seg, fingerprint, nroots, root_names, root_sizes, err);
            oc->creating = 0;
            if (rc != P2_OK)
                goto fail;
            ob_meta_dirty(oc, 0, seg->hdr->brk);
            if (created != NULL)
                *created = 1;
        } else {
            struct p2_seg_header h;
            memcpy(&h, seg->base, sizeof h);
            rc = seg_validate(seg, &h, seg->reserved, fingerprint, nroots, root_names, root_sizes, err);
            if (rc != P2_OK)
                goto fail;
            if ((rc = ob_grow(seg, h.file_size, err)) != P2_OK)
                goto fail;
            seg->mapped = h.file_size;
            seg->hdr = (struct p2_seg_header *)(void *)seg->base;
            /* the server's copy stays as it is: it is always a committed state */
            memcpy(oc->hdr_copy, seg->hdr, sizeof *seg->hdr);
        }
    }
    seg->will_write = ob_note;
    seg->will_write_ctx = pb;
    if (seg->alloc_exact)
        seg->class_table = seg->hdr->roots[nroots - 1].off;
    return P2_OK;
fail:
    pb_free(seg);
    if (seg->base != NULL)
        munmap(seg->base, (size_t)seg->reserved);
    seg_reset(seg);
    return rc;
}
/************** End of objserver.c *****************************************************/
