/** @file p2_runtime.h
 *  @brief p2gen runtime: error reporting, CRC-32 and CRC-32C, the persistent segment and its
 *         allocator, journalled segments, integrity checks and reference sets.
 *
 *  Every C data manager that p2gen generates links this small, hand-written
 *  runtime.  This header is its manual.
 *
 *  @section errors Errors
 *
 *  Every fallible function returns an int code (#P2_OK on success) or, for
 *  functions returning an offset, 0 on failure.  When a #p2_err pointer is
 *  passed, the code is stored in it together with a human-readable message
 *  that names the file concerned and says exactly what is wrong, e.g.
 *
 *      /data/emp.p2: created by a different spec or equation
 *      (fingerprint 0x1234..., expected 0xabcd...)
 *
 *  Passing NULL for the #p2_err is always allowed; only the code is returned
 *  then.  The codes are shared by every generated data manager.
 *
 *  @section segment The persistent segment
 *
 *  The `persistent` memory layer keeps all of its data in one file, mapped
 *  with mmap(MAP_SHARED).  Data structures inside the file refer to each other
 *  by #p2_off offsets from the start of the file (0 is the null offset), never
 *  by pointers, so the file is valid wherever it is mapped.
 *
 *  At open the runtime reserves a large range of virtual address space
 *  (`reserve` bytes, default #P2_SEG_DEFAULT_RESERVE = 64 GiB; PROT_NONE and
 *  MAP_NORESERVE, so it costs neither memory nor swap) and maps the file at
 *  its start.  Growing the file maps the new tail right after the old one,
 *  inside the reservation, so the base address never moves while the segment
 *  is open: a pointer obtained from p2_seg_ptr() stays valid across any
 *  number of allocations until the block is freed or the segment closed.
 *  The file grows geometrically (by 1/32 of its size past what an allocation
 *  needs, in multiples of #P2_SEG_GRANULE = 64 KiB), so growth costs amortised
 *  O(1) per byte and the file's size stays within a few percent of what is in use.
 *  A segment can never exceed its reservation; allocations that would are
 *  refused with #P2_ENOMEM and a message naming the limit.
 *
 *  File layout (all integers in the byte order of the machine that created
 *  the file; files are not portable between little- and big-endian hosts).
 *  The header at offset 0 (`struct p2_seg_header` in p2_runtime.c; the third
 *  column names its field):
 *
 *      offset  size  field         contents
 *           0     8  magic         "P2GENDB\0"
 *           8     4  version       format version (#P2_SEG_VERSION = 1)
 *          12     4  header_size   #P2_SEG_HEADER_SIZE = 4096
 *          16     4  page_size     page size of the machine that created the file
 *          20     4  state         0 = CLEAN (closed properly), 1 = OPEN
 *          24     8  fingerprint   of the spec / type equation
 *          32     8  file_size     the file is at least this long
 *          40     8  brk           allocator high-water mark (end of used space)
 *          48    64  free_small    8 free-list heads for block sizes 16, 32, ..., 2048
 *                                  (power-of-two size classes; 0 in a file of exact ones)
 *         112     8  free_large    free-list head for large blocks (multiples of 4096)
 *         120     4  nroots        number of roots in use
 *         124     4  checksum      CRC-32 of bytes 0..4095, this field taken as 0
 *         128     4  journal       1: a journalled file, committed at least once
 *                                  (0: a journalled open initialises it again)
 *         132     4  roots_sealed  1: roots_crc is set (0 in older files)
 *         136     4  roots_crc     CRC-32 of every root block, in root order, as of
 *                                  the last sync or close; a CLEAN file whose root
 *                                  blocks fail it is refused as corrupt
 *         140     4  zero0         zero (alignment)
 *         144     8  data_seq      journalled files: the last transaction whose pages
 *                                  are in this file (see @ref journal)
 *         152    96  desc          which spec and equations made the file (printable
 *                                  ASCII, NUL-padded, cut short with "..."; zero in
 *                                  older files), named in the "created by a different
 *                                  spec" message
 *         248     8  map_base      0: references in the file are offsets (the file maps
 *                                  anywhere); else a file of p2_seg_open_fixed(), whose
 *                                  references are addresses: the address it is mapped at
 *                                  (see @ref fixed)
 *         256  3840  roots         root table: #P2_MAX_ROOTS entries of 64 bytes
 *        4096     .  -             allocated blocks, from offset 4096 up to brk
 *
 *  A file of exact size classes (see @ref alloc) has one more root than its caller's
 *  containers, the last: #P2_SEG_EXACT_ROOT, its allocator's class table.
 *
 *  A root table entry (`struct p2_seg_root_entry`):
 *
 *      offset  size  field         contents
 *           0    48  name          the root's name, NUL-terminated
 *          48     8  off           offset of the root block
 *          56     8  size          its size, as passed to p2_seg_open()
 *
 *  The header checksum is brought up to date by p2_seg_sync() and
 *  p2_seg_close() only (not by every allocation), so it is meaningful only
 *  in a file marked CLEAN.  While a segment is open its on-disk state is OPEN;
 *  closing first flushes all data, then writes CLEAN.  A file still marked
 *  OPEN was therefore not closed cleanly (its process crashed, or is still
 *  running) and may be half-written: p2_seg_open() refuses it.
 *
 *  A segment is opened by one process at a time: p2_seg_open() takes an
 *  exclusive flock(2) on the file and fails with #P2_EBUSY if another open
 *  file description holds it (this includes a second open in the same
 *  process).
 *
 *  @section fixed Mapped at a fixed address
 *
 *  p2_seg_open_fixed() opens a segment whose users store raw addresses in it (the
 *  `mapped` memory layer: a reference is base + offset, so resolving one costs nothing,
 *  as on the heap).  The file must then always be mapped at the same address: a new
 *  file gets a base in the quiet range [#P2_SEG_FIXED_LO, #P2_SEG_FIXED_HI) (far from
 *  the heap, the libraries, the stack and the sanitizers' shadow memory; a slot of the
 *  reservation's size, the first free one from a start that differs per file, so the
 *  files of one spec, and files made by different processes, rarely collide), recorded
 *  in the header (`map_base`).  Opening an existing file reserves exactly that range with
 *  MAP_FIXED_NOREPLACE (Linux >= 4.17; never plain MAP_FIXED, which would replace
 *  whatever is mapped there) and maps the file inside it.  The open is refused
 *  (#P2_ENOMEM, as any reservation that fails) when something in the process already occupies the range, and
 *  (#P2_EFORMAT) when the recorded base is not one this runtime could have chosen (not
 *  aligned to #P2_SEG_GRANULE, outside the quiet range, or the file would reach past
 *  it): nothing in such a file is followed.  Files of p2_seg_open() (map_base 0) and of
 *  p2_seg_open_fixed() are not interchangeable; each open refuses the other's.
 *
 *  Relocation (#P2_SEG_FIXED_RELOCATE, the layer's `mapped(relocate = true)`): when the
 *  recorded range is taken, the open reserves a free slot of the quiet range instead and
 *  maps the file there privately (MAP_PRIVATE), so that rewriting its references
 *  changes the process's copy of the pages and never the file.  The segment is then
 *  `relocated`: its caller moves every address the file stores by one delta
 *  (p2_seg_reloc_begin(), p2_reloc_word(), p2_seg_reloc_end(): the generated code knows
 *  where the addresses lie, from the pointer maps of its layers) before anything follows
 *  one.  A relocated open that writes nothing leaves the file as it was (the close only
 *  marks it CLEAN again): readers stay readers.  Writes are allowed: the first one
 *  (announced through p2_seg_will_write(), by the allocator and by the generated code)
 *  marks the open as written, and then p2_seg_sync() and p2_seg_close() write the whole
 *  image back, as relocated, recording the new base: the file has moved.  A recorded base
 *  that is not valid is refused as without relocation; it is never mapped or followed.
 *
 *  Forced relocation, for measurements: with #P2_SEG_FIXED_RELOCATE, the environment
 *  variable `P2_MAPPED_RELOCATE=P` (1 to 100) relocates an open although its range is
 *  free: P = 100 moves the file to another slot (every address is rewritten, as when the
 *  range is taken); P < 100 leaves it at its base, mapped privately, and rewrites (by a
 *  delta of 0) the addresses lying in P % of its pages, chosen by a hash of the page
 *  number: the reads, checks, stores and copy-on-write faults of relocating that share
 *  of the file, which one delta for the whole file cannot otherwise produce.
 *
 *  @section alloc Allocator
 *
 *  p2_seg_alloc() returns 16-byte aligned, zero-filled blocks; a large block
 *  (over 2048 bytes) taken from the end of the allocated area starts on a 64-byte
 *  line, the 16 to 48 bytes before it going to the 16-byte class (a slot block
 *  then lies on lines the same way in every file).  In-use blocks
 *  carry no header: the caller remembers each block's size and passes it back
 *  to p2_seg_free() and p2_seg_realloc().  Sizes up to 2048 bytes are small:
 *  rounded up to a size class and kept on one free list per class.  Which
 *  classes is the file's allocator policy, fixed when the file is created:
 *
 *  - power-of-two size classes (the default; the `alloc = pow2` of the memory
 *    layers): 16, 32, 64, ..., 2048, as the segregated allocator of Texas
 *    did: a 40-byte block takes 64 bytes, a 300-byte one 512.  Their 8
 *    free-list heads are in the header (`free_small`).
 *  - exact size classes (`alloc = exact`): every multiple of 16 up to 2048,
 *    so a 40-byte block takes 48 bytes and a 300-byte one 304.  Their 128
 *    heads do not fit in the header: they are the class table, a 1024-byte
 *    block at the start of the allocated area, recorded in the root table as
 *    its last root, named #P2_SEG_EXACT_ROOT.  A caller asks for exact
 *    classes by passing that root last (name and #P2_SEG_EXACT_TABLE_SIZE)
 *    to any of the open functions; files of the other policy are refused
 *    (#P2_EMISMATCH, "... a file keeps the allocator policy it was created
 *    with").  Files made before the policy existed have power-of-two
 *    classes and open as they did: the format did not change.
 *
 *  Larger sizes are rounded up to a multiple of 4096 and kept on one
 *  address-ordered free list, allocated first-fit with splitting; freed
 *  neighbours are merged.  When a small size class is empty, a 4096-byte
 *  piece of a free large block is cut into blocks of that class before the
 *  segment is extended (an exact class that does not divide 4096 leaves a
 *  rest, which goes to the rest's own class).  Free-list links live inside
 *  the free blocks themselves; memory is never returned to the file system
 *  (brk only rises).
 *
 *  @section threads Threads
 *
 *  A #p2_seg is not thread-safe: callers serialise access to each segment.
 *  Different segments may be used from different threads.
 *
 *  @section caveats Caveats
 *
 *  - Growing the file reserves its disk blocks (posix_fallocate), so a full
 *    file system is #P2_EIO ("disk full") from the allocation that grows it,
 *    not a SIGBUS at the first write to a new page.  Where the file system
 *    cannot reserve blocks the file is extended sparsely, and a full disk can
 *    still end in SIGBUS (as with every mmap-based store).
 *  - Freed small blocks stay in their size class; they are never merged back
 *    into large free space.
 *  - Valgrind cannot reserve 64 GiB of address space (open fails with
 *    #P2_ENOMEM "cannot reserve ..."); pass a smaller reserve, e.g. 1 GiB,
 *    when running under it.  AddressSanitizer copes with the default.
 */
#ifndef P2_RUNTIME_H
#define P2_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define P2_PRINTF_LIKE(fmt_idx, args_idx) __attribute__((format(printf, fmt_idx, args_idx)))
#define P2_COLD __attribute__((cold))
/* A rare path of a hot operation (a slot block's growth): kept out of line, so that the
   operation inlined into a caller's loop stays small enough for the caller to be inlined
   in turn. */
#define P2_SLOW_PATH __attribute__((noinline, cold))
#else
#define P2_PRINTF_LIKE(fmt_idx, args_idx)
#define P2_COLD
#define P2_SLOW_PATH
#endif

/** @defgroup errors Error codes and messages
 *  @{
 */

/** The return codes shared by the runtime and every generated data manager: their one
 *  table.  Each row is X(name, value, message).  The enum below and p2_strerror() are
 *  expanded from it; so are the code names the generated test harness prints, and the
 *  Python runtime (p2gen.runtime.codes) reads its rows from this header.  Values are part
 *  of the interface (compiled into programs and Python extensions): never change one;
 *  a new code takes the next number.  The comment on a row says more than its message. */
#define P2_ERROR_LIST(X)                                                                   \
    X(P2_OK,        0,  "success")                   /* success */                         \
    X(P2_END,       1,  "cursor exhausted")          /* cursor exhausted */                \
    X(P2_NOTFOUND,  2,  "not found")                 /* no such key */                     \
    X(P2_EDUP,      3,  "key already present")       /* ... in a unique layer */           \
    X(P2_ERANGE,    4,  "key or value out of range") /* outside what a layer can hold,     \
                                                        e.g. iarray capacity */            \
    X(P2_ENOMEM,    5,  "out of memory")             /* or out of reserved address space */\
    X(P2_EIO,       6,  "input/output error")        /* a system call on the file failed */\
    X(P2_EFORMAT,   7,  "not a valid p2gen file")    /* not a p2gen file, bad version,     \
                                                        truncated or corrupt */            \
    X(P2_EMISMATCH, 8,  "file made by another spec") /* file made by another spec */       \
    X(P2_EINVAL,    9,  "invalid argument")          /* invalid argument */                \
    X(P2_ECLOSED,   10, "already closed")            /* object already closed */           \
    X(P2_EBUSY,     11, "locked by another process") /* file locked by another process */\
    X(P2_ECONFLICT, 12, "transaction conflict")      /* another client committed what this \
                                                        transaction read: abort, retry */

/** Return codes: P2_OK = 0, P2_END = 1, ... (rows of #P2_ERROR_LIST). */
enum {
#define P2_ERROR_ENUM_(name, value, message) name = value,
    P2_ERROR_LIST(P2_ERROR_ENUM_)
#undef P2_ERROR_ENUM_
};

/* p2gen: public API begin. From here to "public API end": the runtime's declarations a
 * binding needs beside its spec's header -- declarations only, read as they stand: the
 * Python module's CFFI declarations take this region (generator/pybind.py, cdef). */
/** Describe a return code.
 *
 * @param[in] code  a P2_* code.
 * @return a short static string of the form "P2_EDUP: key already present";
 *         never NULL, "unknown error" for codes not listed above.
 */
const char *p2_strerror(int code);

/** The handle of a `text` field (variable-length bytes) inside a record: where its block
 *  is in the container's memory layer and how long the text is. Read it through the
 *  generated `<container>_get_<field>` and write it through `_set_<field>`; inserts and
 *  updates ignore the handle they are given. */
typedef struct p2_text {
    uint64_t mref;   /**< memory reference of len + 1 bytes (text, then NUL); 0 if empty */
    uint64_t len;    /**< bytes of text */
} p2_text;
/** The same handle in a memory of 32-bit links (persistent(links = offset32)): the block's
 *  memory reference stored as offset >> 3, and the length. */
typedef struct p2_text32 {
    uint32_t mref;   /**< stored memory reference of len + 1 bytes; 0 if empty */
    uint32_t len;    /**< bytes of text */
} p2_text32;
/** Counters of a server segment (pageserver, objserver), since its open (or the last reset). */
typedef struct p2_server_stats {
    uint64_t reads;          /**< read requests sent to the server */
    uint64_t writes;         /**< write requests sent */
    uint64_t flushes;        /**< flush requests sent */
    uint64_t bytes_read;     /**< payload bytes received */
    uint64_t bytes_written;  /**< payload bytes sent */
    uint64_t misses;         /**< touches of a page not in a frame (a read request, or a new
                                  page zero-filled without one) */
    uint64_t hits;           /**< touches of a page in a frame that the clock had made
                                  inaccessible (its reference bit); touches of resident
                                  accessible pages cost nothing and are not seen */
    uint64_t evictions;      /**< pages dropped from a frame to make room */
    uint64_t writebacks;     /**< dirty pages written back (at eviction, sync, commit, close) */
    uint64_t rewrites;       /**< write-backs of a page (an object) written back before since
                                  the open or the last reset */
    uint64_t frames;         /**< frames of the client buffer */
    uint64_t resident;       /**< pages in a frame now */
    uint64_t dirty;          /**< of them, dirty now */
    uint64_t bundled;        /**< object servers: objects fetched beside a missed one by
                                  bundling (objserver(bundle = K)), not themselves missed;
                                  page servers: pages read ahead of a missed one
                                  (P2_SERVER_READAHEAD); only those that arrived */
    uint64_t userfaultfd;    /**< page servers: 1 where this open's pages fault in through
                                  userfaultfd (a handler thread), 0 through SIGSEGV (the
                                  kernel refused one, or P2_SERVER_FAULTS=sigsegv) */
    uint64_t ranges;         /**< page servers with ship = ranges: byte ranges written back
                                  in place of whole pages (bytes_written: their bytes) */
    uint64_t conflicts;      /**< object servers: commits refused with #P2_ECONFLICT, and
                                  reads found moved by p2_obj_settled() (each a walk at
                                  open walked again) */
    uint64_t inflight;       /**< the most requests in flight at once (of a read-ahead: its
                                  pages; at most #P2_SERVER_INFLIGHT) */
} p2_server_stats;
/* p2gen: public API end */

/** Size of the message buffer in #p2_err. */
#define P2_ERR_MSG_SIZE 512

/** Detailed error: a code and a message saying what failed and why.
 *  Messages longer than the buffer are truncated (always NUL-terminated). */
typedef struct p2_err {
    int  code;                  /**< P2_* code, P2_OK if no error */
    char msg[P2_ERR_MSG_SIZE];  /**< NUL-terminated message */
} p2_err;

/** Record an error.
 *
 * @param[out] e     where to store it; may be NULL (then only the code is returned).
 * @param[in]  code  the P2_* code.
 * @param[in]  fmt   printf-style format of the message; NULL stores p2_strerror(code).
 * @return code, so that callers can write `return p2_err_set(e, P2_EINVAL, ...);`.
 */
int p2_err_set(p2_err *e, int code, const char *fmt, ...) P2_PRINTF_LIKE(3, 4) P2_COLD;
#if defined(__GNUC__) || defined(__clang__)
/* Every caller passes a constant code: the macro makes the call's value that constant in
   the caller's eyes, so that an error path never rejoins the path that succeeded (the
   compiler would otherwise keep a "p2_err_set returned P2_OK" path alive and re-check, on
   the hot path, what the path before it had already checked). `cold` moves the formatting
   out of the hot code. A statement expression, so that a call whose value is not used
   draws no warning. */
#define p2_err_set(e, code, ...) \
    __extension__({ (void)p2_err_set((e), (code), __VA_ARGS__); (int)(code); })
#endif

/** Reset an error to #P2_OK with an empty message.
 *
 * @param[out] e  the error; may be NULL.
 */
void p2_err_clear(p2_err *e);

/** @} */

/** Standard CRC-32 (polynomial 0xEDB88320 reflected, as in zlib, PNG and
 *  Python's zlib.crc32).
 *
 * @param[in] crc   0 to start, or the result of a previous call to continue.
 * @param[in] data  bytes to add; may be NULL if len is 0.
 * @param[in] len   number of bytes.
 * @return the updated CRC; p2_crc32(0, "123456789", 9) == 0xCBF43926.
 */
uint32_t p2_crc32(uint32_t crc, const void *data, size_t len);

/** CRC-32C (Castagnoli, polynomial 0x82F63B78 reflected, as in iSCSI and ext4): the
 *  record log's record checksums.  Computed with the CPU's CRC-32C instruction where
 *  there is one (x86-64 with SSE4.2, detected at run time; ARMv8 when built for its CRC
 *  extension), else with tables; both give the same values.  The environment variable
 *  P2_CRC32C_SOFTWARE=1, read once per process, forces the tables.
 *
 * @param[in] crc   0 to start, or the result of a previous call to continue.
 * @param[in] data  bytes to add; may be NULL if len is 0.
 * @param[in] len   number of bytes.
 * @return the updated CRC; p2_crc32c(0, "123456789", 9) == 0xE3069283.
 */
uint32_t p2_crc32c(uint32_t crc, const void *data, size_t len);

/** Which code computes p2_crc32c() in this process: "sse4.2", "armv8-crc" or "software". */
const char *p2_crc32c_impl(void);

/** @defgroup segment Persistent segment
 *  @{
 */

/** Offset of a block from the start of a segment; 0 is the null offset. */
typedef uint64_t p2_off;

/** A block resolved to its address: what a layer keeps in the database handle when it
 *  copies a root field there (a slot block's address, so that an element is one load from
 *  the handle). Valid while the segment is open and the block is neither freed nor moved. */
typedef void *p2_addr;

/** The name of the last root of a file of exact size classes (see @ref alloc): its
 *  allocator's class table, of #P2_SEG_EXACT_TABLE_SIZE bytes.  A caller passes it, last,
 *  to open (and create) a file of exact size classes. */
#define P2_SEG_EXACT_ROOT ".alloc=exact"
/** Size of the class table: 128 free-list heads of 8 bytes. */
#define P2_SEG_EXACT_TABLE_SIZE 1024

/** Format version written to and accepted from the header. */
#define P2_SEG_VERSION 1
/** Size of the header at offset 0; the first block starts right after it. */
#define P2_SEG_HEADER_SIZE 4096
/** Maximum number of roots: 60 entries of 64 bytes after 256 bytes of fixed
 *  fields fill the 4096-byte header page exactly. */
#define P2_MAX_ROOTS 60
/** Size of a root name field, including the terminating NUL. */
#define P2_ROOT_NAME_SIZE 48
/** Size of the header's description field (what made the file), NUL included. */
#define P2_SEG_DESC_SIZE 96
/** Files grow in multiples of this many bytes (or of the page size, if larger). */
#define P2_SEG_GRANULE (64u * 1024u)
/** Address space reserved when p2_seg_open() is passed reserve = 0: 64 GiB. */
#define P2_SEG_DEFAULT_RESERVE (UINT64_C(64) << 30)
/** The quiet address range segments of p2_seg_open_fixed() are mapped in: 32 TiB to
 *  80 TiB, above AddressSanitizer's shadow (which ends below 16 TiB on x86-64) and below
 *  where Linux loads position-independent executables and their heap under ASLR (from
 *  0x555555554000, about 85 TiB: a base there was found taken by another process's
 *  program), its mmap'ed libraries and the stack (near 128 TiB). */
#define P2_SEG_FIXED_LO (UINT64_C(32) << 40)
#define P2_SEG_FIXED_HI (UINT64_C(80) << 40)

struct p2_seg_header; /* the header at offset 0; layout in the comment above */

/** Options of a journalled segment (the `journal` memory layer). */
typedef struct p2_journal_opts {
    int      sync;        /**< 1: fdatasync the journal when a group of commits ends
                               (durable); 0: never (survives a process crash, not an OS
                               crash or power loss) */
    uint32_t group;       /**< commits per journal flush (group commit); 1 = every commit */
    uint64_t checkpoint;  /**< journal bytes after which a flush also checkpoints: syncs the
                               data file and empties the journal */
    int      record;      /**< 0: page journal `<path>-journal` (learns the pages a transaction
                               writes from their write faults, logs whole pages); 1: record log
                               `<path>-wal` (told every write through the write hook, logs
                               exactly the bytes written; see @ref journal) */
    int      limited;     /**< 1: at open, replay no transaction after `upto` (set from
                               p2_wal_resolve() for the files of a transaction over several
                               files; 0: every complete transaction) */
    uint64_t upto;        /**< with limited: the last transaction to replay */
} p2_journal_opts;

struct p2_seg;

/** Write intent: a callback told [off, off + n) of the segment before anything writes
 *  there -- the generated code (through its memory layer's `_will_write`, see
 *  layers/README.md, mem) and this runtime's allocator (its header fields, free lists,
 *  the zero-fill and copies of blocks).  A layer that must know every byte a transaction
 *  changes (a record log) sets it; an audit build (#P2_WRITE_AUDIT) checks with it that
 *  the announcements cover every change. */
typedef void (*p2_write_hook)(void *ctx, struct p2_seg *seg, uint64_t off, uint64_t n);

/** An open persistent segment.  The fields are read-only for callers, except the write
 *  hook (`will_write`, `will_write_ctx`), which an open segment's owner may set.
 *  A zero-initialised p2_seg, or one whose open failed, is "not open":
 *  p2_seg_close() on it does nothing. */
typedef struct p2_seg {
    int      fd;                /**< the file, -1 if not open */
    char    *base;              /**< start of the mapping, NULL if not open */
    uint64_t mapped;            /**< bytes of the file currently mapped */
    uint64_t reserved;          /**< bytes of address space reserved at base */
    struct p2_seg_header *hdr;  /**< == (void *)base */
    char     path[4096];        /**< path passed to p2_seg_open() */
    /* journalled segments only (see @ref journal) */
    int      journal;           /**< 1 if opened with p2_seg_open_journal() */
    int      log_fd;            /**< the journal file `<path>-journal`, -1 if none */
    p2_journal_opts jopts;      /**< its options */
    uint64_t pgsize;            /**< page size: the unit of journalling */
    uint64_t log_end;           /**< bytes of the journal in use */
    uint64_t log_alloc;         /**< bytes of the journal file allocated (reused in place) */
    uint64_t seq;               /**< number of the last committed transaction */
    uint32_t unsynced;          /**< commits since the journal was last flushed */
    uint8_t *dirty_bits;        /**< per page: written since the last commit or abort */
    uint32_t *dirty;            /**< those pages, in order of first write */
    uint64_t ndirty;
    uint8_t *unflushed_bits;    /**< per page: committed, not yet written to the data file */
    uint32_t *unflushed;        /**< those pages */
    uint64_t nunflushed;
    uint64_t *img_off;          /**< per unflushed page: journal offset of its last image */
    uint8_t *kept_bits;         /**< record log, per page: its private copy was kept at the
                                     last checkpoint (written in the interval before it) */
    uint32_t *kept;             /**< those pages */
    uint64_t nkept;
    uint64_t track_bytes;       /**< size of the bookkeeping mappings above */
    int      ckpt_failed;       /**< 1: a checkpoint failed after its commit; retried first */
    int      recovering;        /**< opened by p2_seg_open_recover() */
    int      fixed;             /**< opened by p2_seg_open_fixed(): mapped at the base the
                                     header records (references in it are addresses) */
    int      reloc_allowed;     /**< opened with #P2_SEG_FIXED_RELOCATE */
    int      relocated;         /**< mapped privately, its references to be moved by
                                     p2_seg_reloc_begin() .. p2_seg_reloc_end() (see @ref fixed) */
    uint64_t reloc_from;        /**< relocated: the base the file records (old addresses) */
    unsigned reloc_pct;         /**< relocated: share of the pages whose addresses are
                                     rewritten (100, or less when forced by P2_MAPPED_RELOCATE) */
    int      reloc_written;     /**< relocated: something was written; sync and close write
                                     the image back with its new base */
    struct p2_seg_header *reloc_disk_hdr;   /**< relocated: the header as the file has it */
    int      alloc_exact;       /**< 1: exact size classes (see @ref alloc), else powers of two */
    p2_off   class_table;       /**< exact size classes: offset of the class table */
    uint32_t rec_unclean;       /**< p2_seg_open_recover(): 1 if the file was not closed cleanly */
    uint32_t rec_lists_dropped; /**< p2_seg_open_recover(): allocator free lists found broken
                                     and emptied (their blocks stay unused) */
    uint32_t rec_journal;       /**< p2_seg_open_journal_recover(): 0 the journal was replayed
                                     as usual; 1 it was missing: the data file taken as it is;
                                     2 damaged: transactions after the damage dropped; 3 it
                                     ended before the data file: not replayed */
    uint64_t rec_tx_dropped;    /**< committed transactions lost with it (2, 3; at least) */
    int      log_fresh;         /**< journalled: the open found its journal with a header and
                                     nothing ever committed in it (see seg_open_journalled) */
    p2_write_hook will_write;   /**< told each range before it is written; NULL: nobody */
    void    *will_write_ctx;    /**< its first argument */
    /* record-logged segments only (p2_journal_opts.record; see @ref journal) */
    uint8_t *undo;              /**< the open transaction's writes: (offset, length, the
                                     bytes before) each, in the order they were announced */
    uint64_t undo_len, undo_cap;
    uint64_t *undo_at;          /**< where each of them starts in undo (an abort goes back) */
    uint64_t nundo, undo_at_cap;
    uint64_t *cov;              /**< per page the open transaction wrote (dirty[i]'s at
                                     cov_slot): a bit per byte already announced, whose old
                                     bytes undo holds; a later announcement keeps only the
                                     bytes not yet covered, so each byte is kept once */
    uint64_t cov_cap;
    uint32_t *cov_slot;         /**< per page: its bitmap's index in cov while it is dirty */
    uint8_t *redo;              /**< the commit's records, built here and written in one call
                                     where the log cannot be mapped */
    char    *log_map;           /**< the log, mapped shared: commits are stored into it */
    uint64_t log_mapped;        /**< its bytes mapped */
    uint64_t log_hot;           /**< the log's bytes [0, log_hot) a pwrite of this open
                                     brought into the page cache: stores go there only */
    uint64_t redo_cap;
    int      undo_lost;         /**< a write could not be recorded (no memory): the open
                                     transaction can be neither committed nor undone in
                                     memory; the segment refuses commits and, at close,
                                     leaves the data file to the log's replay */
    /* journalled segments: what the open wrote (the replay, the restarted log), so that an
     * open refused after it (p2_seg_close_refused) leaves every file as it was */
    int      open_keep;         /**< 1: the fields below describe the files before the open */
    int      open_log_made;     /**< the open created the log file */
    uint64_t open_data_bytes;   /**< the data file's size before the open */
    uint64_t open_log_bytes;    /**< the log's size before the open */
    uint64_t open_seq;          /**< seq when the open returned: a commit since ends the undo */
    uint8_t *open_undo;         /**< the data file's bytes each replayed record overwrote, as
                                     (bytes, offset, length) entries, in replay order */
    uint64_t open_undo_len, open_undo_cap;
    uint8_t  open_log_hdr[64];  /**< the log's first bytes before the open */
    /* the record-logged files it commits together with (p2_seg_commit_all), or NULL:
     * their logs are synced before this file's checkpoint writes its data file */
    struct p2_seg *peers;       /**< the spec's segment array */
    const uint32_t *peer_idx;   /**< the indexes of the files committed together */
    uint32_t npeers;
    /* page-server segments only (see @ref server) */
    struct p2_pagebuf *pb;      /**< the client buffer and its backend; NULL: a local file */
} p2_seg;

/** Open a segment file, creating it if it does not exist.  A file that exists but is
 *  empty (0 bytes) is refused with #P2_EFORMAT "not a p2gen database: empty".
 *
 * A new file gets a fresh header and one zero-filled block for every root,
 * of the given size.  An existing file is locked and then validated, in this
 * order; the first failed check is reported:
 *  - file shorter than the header                   #P2_EFORMAT "truncated: file is N bytes..."
 *  - magic                                          #P2_EFORMAT "not a p2gen database (bad magic)"
 *  - format version                                 #P2_EFORMAT "format version V, this build reads version 1"
 *  - header checksum                                #P2_EFORMAT "header checksum mismatch (stored X, computed Y)..."
 *                                                   (but if the state is OPEN, the checksum is stale by
 *                                                   design: reported as "was not closed cleanly ...")
 *  - fingerprint                                    #P2_EMISMATCH "created by a different spec or equation
 *                                                   (the file was made by "<description>"; ...)"
 *  - number, names and sizes of the roots           #P2_EMISMATCH, naming the root
 *  - file shorter than the header says              #P2_EFORMAT "truncated: header says N bytes, file has M"
 *  - header size, root / brk / free-list offsets    #P2_EFORMAT "corrupt header: ..."
 *  - state OPEN                                     #P2_EFORMAT "was not closed cleanly ..."
 *
 * Then the file is marked OPEN on disk (header checksummed and synced), so
 * that a crash leaves it OPEN.  On any failure everything taken (file
 * descriptor, lock, mappings) is released, a file created by this call is
 * removed again, an existing file is left byte-for-byte unchanged, and *seg
 * is left "not open".
 *
 * @param[out] seg          the segment to initialise; must not be open.
 * @param[in]  path         file name (shorter than 4096 bytes).
 * @param[in]  fingerprint  identifies the spec / equation the file's layout comes from.
 * @param[in]  nroots       number of roots, at most #P2_MAX_ROOTS.
 * @param[in]  root_names   nroots distinct, non-empty names, each shorter
 *                          than #P2_ROOT_NAME_SIZE bytes.
 * @param[in]  root_sizes   size in bytes of each root block.
 * @param[in]  reserve      address space to reserve, i.e. the largest size the
 *                          file may reach while open; 0 = #P2_SEG_DEFAULT_RESERVE.
 *                          Rounded up to a multiple of #P2_SEG_GRANULE.
 * @param[out] created      set to 1 if the file was created, else 0; may be NULL.
 * @param[out] err          details of a failure; may be NULL.
 * @return #P2_OK, or
 *  - #P2_EINVAL    bad arguments (message says which);
 *  - #P2_EBUSY     "in use by another process": the lock is held;
 *  - #P2_EIO       the file cannot be opened, read, grown or synced;
 *  - #P2_ENOMEM    the reservation cannot be made, or the file (or the new
 *                  roots) does not fit into it;
 *  - #P2_EFORMAT, #P2_EMISMATCH  validation failed, see above.
 */
int p2_seg_open(p2_seg *seg, const char *path, uint64_t fingerprint,
                uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                uint64_t reserve, int *created, p2_err *err);

/** p2_seg_open_fixed() flags: open for `p2gen recover` (as p2_seg_open_recover()). */
#define P2_SEG_FIXED_RECOVER 1u
/** p2_seg_open_fixed() flags: if the recorded range is taken, map the file elsewhere and
 *  leave it to the caller to relocate (see @ref fixed); seg->relocated says so. */
#define P2_SEG_FIXED_RELOCATE 2u

/** Open a segment mapped at a fixed address (see @ref fixed): as p2_seg_open(), but a new
 *  file gets a base address in [#P2_SEG_FIXED_LO, #P2_SEG_FIXED_HI), recorded in its
 *  header, and an existing file is mapped at the base it records, or not at all.
 *  `flags`: 0 or #P2_SEG_FIXED_RECOVER.
 * @return as p2_seg_open(), and
 *  - #P2_ENOMEM   "the address range ... is taken": something else is mapped there in
 *                 this process (another file's segment, a library); "the kernel does not
 *                 support MAP_FIXED_NOREPLACE"; or no free slot of the quiet range for a
 *                 new file
 *  - #P2_EFORMAT  "recorded base address ... is not valid": the header (checksummed) holds
 *                 a base this runtime never chooses
 *  - #P2_EMISMATCH a file of p2_seg_open() (its references are offsets)
 *  With #P2_SEG_FIXED_RELOCATE a taken range is not refused: seg->relocated is set, and
 *  the caller must relocate (p2_seg_reloc_begin()) before it follows any reference. */
int p2_seg_open_fixed(p2_seg *seg, const char *path, uint64_t fingerprint,
                      uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                      uint64_t reserve, unsigned flags, int *created, p2_err *err);

/** Open a plain segment for recovery (`p2gen recover`): as p2_seg_open(), but a file
 *  that was not closed cleanly is accepted (its header checksum, stale by design, is not
 *  checked; every other header check is made), and the allocator's free lists are walked
 *  (bounded, every block in bounds, the large list address-ordered): a broken list is
 *  emptied, which leaves its free blocks unused rather than risk handing out a live one.
 *  seg->rec_unclean and seg->rec_lists_dropped say what was found.  The caller rebuilds
 *  what lives in the blocks, then closes with p2_seg_close() (marks the file CLEAN) or,
 *  if the rebuilt database does not verify, with p2_seg_close_unclean().
 *  Journalled files are not opened this way (their recovery is the journal's). */
int p2_seg_open_recover(p2_seg *seg, const char *path, uint64_t fingerprint,
                        uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                        uint64_t reserve, int *created, p2_err *err);

/** Open a journalled segment for recovery (`p2gen recover`): as p2_seg_open_journal(),
 *  but where an ordinary open refuses a journal it cannot replay in full, this takes what
 *  can be had and says so in seg->rec_journal and seg->rec_tx_dropped: a journal missing
 *  (deleted) -- the data file as of its last checkpoint (a file never checkpointed starts
 *  again empty); damaged with committed transactions after the damage -- the transactions
 *  before it; ending before the data file's last checkpoint -- the data file, not
 *  replayed.  The caller checks the result (rebuild, verify) and commits or aborts. */
int p2_seg_open_journal_recover(p2_seg *seg, const char *path, uint64_t fingerprint,
                                uint32_t nroots, const char *const *root_names,
                                const uint64_t *root_sizes, uint64_t reserve,
                                const p2_journal_opts *opts, int *created, p2_err *err);

/** Close a plain segment after flushing its data, leaving it marked as not closed cleanly
 *  (so that an ordinary open still refuses it).  For recovery that could not finish. */
int p2_seg_close_unclean(p2_seg *seg, p2_err *err);

/** Close a journalled segment whose open the caller refuses after all (the generated
 *  open's integrity check, another file of the spec refused): if nothing was committed
 *  or checkpointed since p2_seg_open_journal() returned, what the open wrote -- the
 *  replay's bytes in the data file, its size, the restarted journal's header, a journal
 *  the open created -- is put back, so that every file is byte for byte as it was (the
 *  journal still holds every transaction the replay had written: the files hold the
 *  same committed state, which the next open replays again); what is pending is dropped.
 *  Otherwise, and for a plain segment, as p2_seg_close().  #P2_EIO if something could
 *  not be put back. */
int p2_seg_close_refused(p2_seg *seg, p2_err *err);

/** @defgroup journal Journalled segments
 *
 *  p2_seg_open_journal() opens a segment whose changes are atomic and durable,
 *  in transactions: every change since the last commit or abort is one
 *  transaction; p2_seg_commit() makes it durable, p2_seg_abort() undoes it, and
 *  a crash at any moment (kill -9, power loss with sync on) leaves the file as
 *  of the last commit that returned.
 *
 *  How: the file is mapped MAP_PRIVATE and read-only.  The first write to a
 *  page in a transaction faults; a SIGSEGV handler (installed once per process,
 *  chaining to the previous handler for faults that are not ours) records the
 *  page as dirty and makes it writable; the write then lands in a private copy,
 *  never in the file.  A commit appends every dirty page to the redo journal
 *  `<path>-journal` as a checksummed record, then a checksummed commit record,
 *  fdatasyncs the journal (when its group of commits is complete and sync is
 *  on) and write-protects the pages again.  The data file is written only at
 *  checkpoints (when the journal passes its checkpoint size, and at close):
 *  the committed pages go into it, it is synced, the private copies are
 *  dropped and the journal, reused in place, starts again.
 *  Opening replays every complete, checksummed transaction of the journal into
 *  the data file (a torn tail -- a transaction without its commit record, or the
 *  last transaction with a torn page record: its commit never returned -- is
 *  dropped); a journal damaged before a later valid commit record, missing while
 *  the data file depends on it, or belonging to another spec, is refused with a
 *  message, and leaves both files unchanged (p2_seg_open_journal_recover() takes
 *  what can be had instead).  A checksum is not an authentication: before anything is
 *  written, the scan also checks every record against what the journal itself
 *  committed -- the data file's size at each commit, which is the header's file_size as
 *  the journal's records leave it at that commit (over the data file's header as found):
 *  every page or range of a transaction must lie inside the size its own commit
 *  committed, and that size inside the reservation.  A journal with a record outside
 *  (a crafted one, its checksums recomputed) is refused, wherever the record is, and
 *  nothing is written (recovery keeps the transactions before it).  A refusal after the
 *  replay -- of the replayed header at open, or by the caller (the generated open's
 *  integrity check, which closes with p2_seg_close_refused()) -- puts back what the
 *  replay wrote: every refused open leaves every file byte for byte as it was.  The
 *  format is unchanged (no version bump): the size each commit committed was always in
 *  the journal, as the header's logged bytes.  An abort drops the private copies
 *  (restoring a page of a commit not yet written to the data file from the
 *  journal).  Closing aborts what is not committed, checkpoints, and marks the
 *  file CLEAN.
 *
 *  Record log (p2_journal_opts.record, the `wal` memory layer): the same
 *  private mapping, writable, and the same commit, checkpoint and replay, but
 *  the segment learns what a transaction writes from the write hook (every
 *  write the generated code and the allocator make is announced first, see
 *  p2_seg_will_write), not from faults.  Each announcement keeps the bytes it
 *  is about to overwrite in memory, those the transaction has not announced
 *  before (undo: an abort copies them back; a byte written many times is kept
 *  once, so undo grows with the bytes changed, not with the writes); a commit
 *  logs the announced ranges, merged, with the bytes they hold then (redo:
 *  range records checksummed with CRC-32C, p2_crc32c(), and the commit record,
 *  built in memory and written with one call) into `<path>-wal`, a log of
 *  version 2 (a version 1 log, CRC-32, of an earlier build is replayed too).  Only redo reaches
 *  the disk: the data file is written at checkpoints, from committed memory,
 *  so a crash never leaves uncommitted bytes in it.  A checkpoint keeps the
 *  private copies of the pages written since the one before (dropping them
 *  would make the next write to each fault and copy it again) and drops those
 *  it kept then and that were not written since, so private memory stays
 *  within two checkpoint intervals' writes.  A write the generator
 *  cannot see (a program writing through a pointer it was given) is not
 *  logged: the page journal covers those, the record log does not.
 *
 *  Several files, one transaction (record log only): p2_seg_commit_all() commits
 *  the files of a spec together.  When more than one of them changed, each
 *  one's records begin with a transaction record naming every file that takes
 *  part and the transaction number it gets there (and an identifier drawn for
 *  the transaction); all are written, then synced (group permitting), and only
 *  then does any of them count as committed.  A crash between the files' writes
 *  leaves the transaction complete in some logs only: p2_wal_resolve(), run by
 *  the generated open over the spec's files before any is opened, finds for
 *  each file the last transaction every file taking part in it holds (in its
 *  log, or already in its data file), following the cut from file to file
 *  until nothing changes, and each file then replays only up to there.  A file
 *  checkpoints only after the logs of the files it commits with are synced, so
 *  no data file ever holds a transaction another file could lose.
 *
 *  Limits: one thread; the journal covers the segment's memory only; the page
 *  journal commits each file of a spec atomically by itself, not all together.
 *  @{
 */

/** Open a journalled segment: as p2_seg_open(), plus recovery from the journal
 *  `<path>-journal` before the header is validated.  A journalled file that has
 *  never been committed is initialised again (*created = 1).
 * @param[in] opts  journal options; NULL = sync on, group 1, checkpoint 4 MiB.
 * @return as p2_seg_open(), and #P2_EFORMAT / #P2_EMISMATCH for a corrupt or
 *         foreign journal, #P2_EIO if it cannot be read or replayed. */
int p2_seg_open_journal(p2_seg *seg, const char *path, uint64_t fingerprint,
                        uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                        uint64_t reserve, const p2_journal_opts *opts, int *created, p2_err *err);

/** Commit the current transaction (every change since the last commit or
 *  abort).  A no-op if nothing changed.  On a plain segment: p2_seg_sync().
 *
 *  The commit point is the transaction's commit record in the journal, written and
 *  (when the commit ends a group and sync is on) fdatasynced.  #P2_OK means the
 *  transaction passed it.  #P2_EIO means it did not: nothing of it counts (a commit
 *  record that could not be synced is voided), it is still open, and may be committed
 *  again or aborted -- an abort then undoes it.  A checkpoint that fails after the commit
 *  point does not make the commit fail (the journal holds the transaction): it is retried
 *  before the next commit (which fails, leaving its own transaction open, if the retry
 *  fails too), at p2_seg_sync() and at p2_seg_close(); their messages say that the
 *  committed transactions are safe in the journal, which the next open replays.
 * @return #P2_OK, #P2_ECLOSED, or #P2_EIO (not committed; message says why: e.g. no
 *         space for the journal, a failed append or sync, a failed checkpoint retry). */
int p2_seg_commit(p2_seg *seg, p2_err *err);

/** Commit the current transaction of several record-logged segments together
 *  (segs[idx[0]], ..., segs[idx[n - 1]]: the spec's files with a record log, in
 *  the spec's order, the same at every open): all or none of the files' changes
 *  survive a crash (see @ref journal).  The same result codes and rules as
 *  p2_seg_commit(); on #P2_EIO none of the files' transactions is committed and
 *  all stay open. */
int p2_seg_commit_all(p2_seg *segs, const uint32_t *idx, uint32_t n, p2_err *err);

/** Before opening record-logged files committed together by p2_seg_commit_all()
 *  (paths[i] is the data file of the file committed as number i): read their
 *  logs, without changing anything, and set upto[i] to the last transaction
 *  file i may replay -- the transactions after it took part in a transaction
 *  that another file does not hold.  A file whose log cannot be read or judged
 *  gets UINT64_MAX (no limit): its own open then says what is wrong with it.
 * @return #P2_OK, #P2_ENOMEM. */
int p2_wal_resolve(const char *const *paths, uint32_t n, uint64_t *upto, p2_err *err);

/** Undo every change since the last commit or abort.
 * @return #P2_OK, #P2_ECLOSED, #P2_EINVAL on a plain segment, #P2_EIO. */
int p2_seg_abort(p2_seg *seg, p2_err *err);

/** Journalled segments find the first write to each page with a SIGSEGV handler
 *  (installed by the first journalled open, chaining to the handler it displaced
 *  for every other fault).  A host that installs its own SIGSEGV handler later
 *  (Python's faulthandler.enable() or signal.signal, a crash reporter) puts
 *  its handler in front of ours, and the next write to a journalled page would
 *  crash or spin there.  This checks that ours is still the installed one and,
 *  if not, installs it again on top, chaining to the new one (which still gets
 *  every fault that is not a journal page's).  Called by p2_seg_open_journal
 *  and by the generated begin, commit and journal_guard.
 * @return #P2_OK, or #P2_EIO (sigaction failed; the message says so). */
int p2_journal_guard(p2_err *err);

/** Pages changed in the current transaction (0 on a plain segment). */
uint64_t p2_seg_pending(const p2_seg *seg);

/** 1 if committing the open journalled segment now would do nothing and write nothing (no
 *  page changed, no write lost its undo, no checkpoint to retry): the generated commit then
 *  returns at once, without p2_journal_guard's system call -- a read-only transaction
 *  costs no system call at its commit. */
int p2_seg_commit_idle(const p2_seg *seg);

/** @} */

/** Record in the header what made the file (the generated open passes "spec <file>:
 *  <container> = <equation>; ..."), cut short to #P2_SEG_DESC_SIZE - 1 bytes.  Stored
 *  with the header at the next sync, commit or close; a mismatched open names it.
 * @param[in] seg   an open segment (else nothing happens).
 * @param[in] desc  a NUL-terminated description. */
void p2_seg_set_desc(p2_seg *seg, const char *desc);

/** Flush the whole segment to disk: update the header checksum and
 *  msync(MS_SYNC) the mapping.  The segment stays open (state OPEN).
 *
 * @param[in]  seg  an open segment.
 * @param[out] err  details of a failure; may be NULL.
 * @return #P2_OK, #P2_ECLOSED if seg is not open, #P2_EIO if msync fails.
 */
int p2_seg_sync(p2_seg *seg, p2_err *err);

/** Close a segment: flush all data, then mark the header CLEAN, checksum and
 *  flush it; unmap the reservation, unlock and close the file.  If flushing
 *  the data fails the header is left OPEN (so the file will be refused), the
 *  segment is still closed and #P2_EIO is returned.  On a segment that is
 *  not open (never opened, failed to open, already closed) this does nothing.
 *
 * @param[in,out] seg  the segment; may be NULL.  Left "not open".
 * @param[out]    err  details of a failure; may be NULL.
 * @return #P2_OK or #P2_EIO.
 */
int p2_seg_close(p2_seg *seg, p2_err *err);

/** Offset of root block i, as allocated (zero-filled) when the file was created.
 *
 * @param[in] seg  an open segment.
 * @param[in] i    root index, in the order of root_names at open.
 * @return the offset, or 0 if seg is not open or i is out of range.
 */
p2_off p2_seg_root(const p2_seg *seg, uint32_t i);

/** Allocate a zero-filled, 16-byte aligned block, growing the file if needed.
 *
 * @param[in]  seg   an open segment.
 * @param[in]  size  bytes wanted; 0 is treated like 1.  Pass the same size to
 *                   p2_seg_free() / p2_seg_realloc().
 * @param[out] err   details of a failure; may be NULL.
 * @return the block's offset, or 0 on failure with err set to
 *  - #P2_ENOMEM   the segment would exceed its reservation (message names the
 *                 limit), or the new part of the file cannot be mapped;
 *  - #P2_EIO      the file cannot be extended: "disk full" when the file system
 *                 has no room for the new blocks (nothing is changed then);
 *  - #P2_EFORMAT  a free list is corrupt;
 *  - #P2_ECLOSED  seg is not open.
 */
p2_off p2_seg_alloc(p2_seg *seg, uint64_t size, p2_err *err);

/** Return a block to the allocator.  Offset 0, a segment that is not open and
 *  offsets outside the allocated area are ignored.
 *
 * @param[in] seg   the segment.
 * @param[in] off   offset returned by p2_seg_alloc() / p2_seg_realloc().
 * @param[in] size  the size passed when the block was allocated.
 */
void p2_seg_free(p2_seg *seg, p2_off off, uint64_t size);

/** Resize a block, keeping min(old_size, new_size) bytes of its contents and
 *  zero-filling any growth.  The block may move (then the old one is freed);
 *  large blocks grow in place when followed by free space or the end of the
 *  used area.  off = 0 behaves like p2_seg_alloc(seg, new_size, err).
 *
 * @param[in]  seg       an open segment.
 * @param[in]  off       the block.
 * @param[in]  old_size  the size it was allocated with.
 * @param[in]  new_size  the size wanted.
 * @param[out] err       details of a failure; may be NULL.
 * @return the (possibly new) offset, or 0 on failure with err set as for
 *         p2_seg_alloc(), or to #P2_EINVAL if [off, off + old_size) is not
 *         inside the allocated area; the old block is then unchanged and
 *         still allocated.
 */
p2_off p2_seg_realloc(p2_seg *seg, p2_off off, uint64_t old_size, uint64_t new_size, p2_err *err);

/** Bytes in use up to the allocator's high-water mark (brk), header included;
 *  0 if seg is not open.  Freed blocks are reused but do not lower it. */
uint64_t p2_seg_used(const p2_seg *seg);

/** Pointer to the byte at offset off of an open segment.  Valid until the
 *  segment is closed (the base never moves).  Note p2_seg_ptr(seg, 0) is the
 *  header, not NULL: test offsets against 0 before converting. */
static inline void *p2_seg_ptr(const p2_seg *seg, p2_off off) { return seg->base + off; }

/** Announce that [p, p + n), inside the segment's mapping, is about to be written: calls
 *  the segment's write hook, if one is set. */
static inline void p2_seg_will_write(p2_seg *seg, const void *p, uint64_t n)
{
    if (seg->will_write != NULL)
        seg->will_write(seg->will_write_ctx, seg, (uint64_t)((const char *)p - seg->base), n);
}

/** @defgroup server Page servers: a segment on a server, faulted into a client buffer
 *
 *  A page-server segment (the `pageserver` memory layer) has the format, the header, the
 *  allocator and the offsets of a persistent file, but the bytes live on a server: the
 *  client keeps at most `frames` pages of them in memory (the client buffer) and fetches
 *  the others when they are touched.  The engines are existing servers (an nbdkit,
 *  qemu-nbd or nbd-server export); the client side is this runtime's.
 *
 *  Backends.  A server is reached through a backend, a small table of callbacks (read,
 *  write -- both vectored, with several requests in flight --, flush, grow, close), one
 *  per URI scheme, as an nbdkit plugin is one table:
 *    - `nbd://HOST[:PORT][/EXPORT]`: libnbd (Debian package libnbd0; libnbd-dev to build
 *      against it), loaded with dlopen() at the first such open, so that a program that
 *      never opens one needs neither the library nor a link flag.  An export cannot grow:
 *      the database holds at most the export's size (`reserve` lowers that).
 *    - `nfs://HOST/EXPORT/FILE`: one file of an NFSv3 export (NFS-Ganesha), through libnfs
 *      4.0 (Debian package libnfs13; libnfs-dev to build against it), loaded the same way:
 *      the paper's file server.  libnfs finds the ports through the host's rpcbind, so
 *      the URI names none.  A missing FILE is created; the file grows (SETATTR).  Writes
 *      are UNSTABLE and a flush is an NFS COMMIT, unless the open asked for synchronous
 *      writes (p2_server_sync_writes(1), `pageserver(writes = sync)`): each WRITE is then
 *      FILE_SYNC, durable before the server answers, as the paper's NFS, and a flush sends
 *      nothing.
 *    - `file:///PATH`: a local file through pread/pwrite/fdatasync, the same buffer and
 *      faults (for measurements against the mmap'ed `persistent`, and tests without a
 *      server); it grows with ftruncate.
 *  Every request has a deadline: #P2_SERVER_TIMEOUT_MS (10 s), or the environment
 *  variable `P2_SERVER_TIMEOUT_MS` read at open.  A server that does not answer in time
 *  (down, stalled, a dropped connection) fails the request with #P2_EIO, naming the URI
 *  and the timeout; the connection is then dropped and every later request fails at once
 *  with the same message: no call waits longer than the timeout.  An open has one
 *  deadline for all of its steps: an NBD connection and handshake; an NFS mount (rpcbind,
 *  MNT, the NFS connection), the file's lookup or creation and its attributes, each
 *  driven by the runtime's poll loop (libnfs's own timeout, whole seconds a request, only
 *  a backstop); but a Redis open's connection and its SELECT have one each.  Not under
 *  it: the resolution of a host name (getaddrinfo inside the libraries: give an address
 *  to be sure) and an NFS file's growth (one SETATTR, bounded by libnfs's timeout: the
 *  deadline rounded up to whole seconds, plus up to one second).
 *  A cost model for measurements: the environment variables `P2_SERVER_DELAY_NBD_US`,
 *  `P2_SERVER_DELAY_NFS_US` and `P2_SERVER_DELAY_REDIS_US`, read at open, make every
 *  request to that engine (an NBD or NFS read, write or flush; a Redis command, each one
 *  of a pipeline) take at least that many microseconds, one request after the other, as
 *  a slower network's round trips would cost (`p2gen bench acob --cost 1990`): what the
 *  requests took less is owed and slept once a millisecond is owed; unset, nothing is
 *  slept.
 *
 *  Faults.  The segment's address range is reserved as for a persistent file.  Where the
 *  kernel gives the process a userfaultfd (not: vm.unprivileged_userfaultfd = 0 without
 *  CAP_SYS_PTRACE, or no such system call) and `P2_SERVER_FAULTS` is not `sigsegv`, the
 *  range is registered with one for missing pages and a thread per open serves them: the
 *  toucher waits in the kernel while the thread takes a frame, reads the page and copies
 *  it in place (UFFDIO_COPY).  Otherwise its pages start inaccessible (PROT_NONE) and the
 *  first touch of a page faults into a SIGSEGV handler (installed once per process,
 *  chaining to the previous handler for every other fault, as the page journal's does)
 *  that does the same in the toucher's thread.  Either way the page is read from the
 *  server (a page past the database's size on the server is new: zero-filled, not read)
 *  and made readable; #p2_server_stats.userfaultfd says which way an open took; the first write to a page in a frame faults again and marks it
 *  dirty (writable until it is written back).  On x86-64 the handler sees whether the
 *  access was a write and does both at once.
 *
 *  Read-ahead.  With the environment variable `P2_SERVER_READAHEAD` = N (read at open;
 *  unset or below 2: off, every miss reads its page alone), a miss within a few pages of
 *  the end of the run the previous miss brought in is taken as a scan's: the pages in the
 *  window after it that the server holds and no frame does come in with it, one read
 *  request a page, all in flight at once, the window doubling at each such miss up to N
 *  (at most #P2_SERVER_INFLIGHT and a quarter of the frames) and back to one page at a
 *  miss elsewhere.
 *  #p2_server_stats.bundled counts the pages read ahead, .inflight the most requests in
 *  flight at once.
 *
 *  Replacement.  When every frame holds a page, the clock's hand picks the victim: a frame
 *  whose page was referenced since the hand last passed is spared and its page made
 *  inaccessible again (its reference bit cleared: the next touch is a cheap fault that
 *  counts as a hit and sets the bit again; no server request); the first frame not
 *  referenced is the victim.  A dirty victim is written back first, then its page is
 *  dropped (MADV_DONTNEED, PROT_NONE), so the next touch fetches it again.  Commit,
 *  sync and close write back every dirty page (all at once, several requests in flight)
 *  and flush the server.  While every page the program uses fits in the frames, nothing
 *  is ever evicted or protected and a page costs one fault in the process's life: the
 *  generated code above is the persistent layer's, unchanged.
 *
 *  What stays valid.  p2_seg_ptr() is base + offset, as for a persistent file, and the
 *  base never moves while the segment is open: a pointer into the segment stays valid
 *  (dereferenceable, and reading what the database holds there) until the block is freed
 *  or the segment closed, as the mem contract promises -- eviction only drops the frame
 *  behind the address, and the next touch through the same pointer faults the page back
 *  in.  What does not hold: a pointer does not keep its page in memory, so a byte read
 *  through it may cost a server round trip at any access, and handing such a pointer to
 *  the kernel (write(2) from it, a read(2) into it) fails with EFAULT if its page is
 *  not in a frame at that moment where faults come through SIGSEGV (system calls do not
 *  take the handler's faults) or through a userfaultfd limited to user faults
 *  (UFFD_USER_MODE_ONLY); with a full userfaultfd the system call waits for the page.
 *
 *  Failures inside a fault.  An access cannot return an error: if the server fails or
 *  does not answer a page read within the timeout, the page is given zeros, the segment
 *  is marked failed, and from then on nothing more is written to the server, and every
 *  runtime call on the segment (allocation, sync, commit, close) returns #P2_EIO with
 *  the server's message.  The operation during which it happened may have read the
 *  zeros; its result is not to be trusted (stated in the generated header).  A page that
 *  cannot be placed in its frame (UFFDIO_COPY or mprotect failing) fails the segment the
 *  same way, naming the call: a read-ahead page so left out is absent again, its frame
 *  free, and its next touch faults it in (zeros, the segment having failed); the
 *  toucher's own page gets zeros under userfaultfd, and under SIGSEGV, where nothing can
 *  be given to it, the signal goes on to the previous handler.
 *
 *  Integrity.  The open reads the header through the backend and validates it as a local
 *  file's (magic, version, checksum, fingerprint, roots, sizes, state): an export of
 *  zeros is empty (a new database is created there); anything else that is not a clean
 *  p2gen image is refused with the local file's message, prefixed by the URI, and the
 *  generated open's integrity walk runs over the faulted pages as over a mapped file.
 *  One client at a time: a server has no lock, so the header, marked OPEN (and
 *  checksummed) on the server while a client has it, is the lock: a second client is
 *  refused with #P2_EBUSY ("in use by another client"), as is any client after one that
 *  crashed without closing (the message says so).  That is without a journal: see below.
 *
 *  Transactions (a `journal` or `wal` over `pageserver(log = URI)`, src/pagelog.c).  The
 *  log is a second export: its first page the lease block (holder's token, owner "pid N
 *  on HOST", expiry; the last commit written back whole, `gen`; the one being written
 *  back, `wb`), its second page on the record of the last commit (header, page numbers,
 *  images, one CRC-32 over all of it).  The buffer never writes an uncommitted page back
 *  (no steal: the clock passes over dirty pages, and a transaction larger than the buffer
 *  takes more frames until it ends, given back after), so the data export holds only
 *  committed pages.  Commit: the header gets data_seq = gen + 1; the record is written
 *  and the log flushed (the commit point: a record whose CRC fails never committed); the
 *  lease block says wb = gen + 1; the pages are written back and the data flushed; the
 *  lease block says gen + 1, wb 0.  A failure before the commit point leaves the
 *  transaction open (commit again or abort); after it, the commit is durable and the
 *  segment refuses to write more (the next open writes it back).  Abort drops the dirty
 *  pages (the server has their committed images).  Open, a writer's: take the lease,
 *  then write back the log's record if its data_seq is newer than the data header's.
 *  The lease: one writer at a time.  NBD has no compare-and-swap, so it is taken
 *  Fischer's way: read it free (no holder, expired, or a holder whose process is gone
 *  from this machine), write ours within 50 ms of that read, wait 100 ms, read it back:
 *  of writers racing only the last write stays.  A second writer gets #P2_EBUSY naming
 *  the holder.  The lease runs #P2_SERVER_LEASE_MS and is renewed at begin (past half)
 *  and at every commit, which first reads it back: a writer stalled past its lease and
 *  taken over gets #P2_EBUSY at its next commit, and writes nothing more.  Readers
 *  (p2_server_open_reader, the generated <prefix>_open_reader) take no lease; a read
 *  transaction starts at begin at `gen` (a buffer of an older generation is dropped;
 *  a write-back in progress is waited out), each page it faults in is followed by a read
 *  of the lease block (one more request), and a page read after a newer commit began
 *  makes the read transaction's commit return #P2_EBUSY: read again.  A reader cannot
 *  commit changes (#P2_EINVAL).
 *  @{
 */

/** A writer's lease on a page server's log export, in milliseconds, unless the
 *  environment variable P2_SERVER_LEASE_MS gives another at open. */
#define P2_SERVER_LEASE_MS 10000

/** Deadline of every server request, in milliseconds, unless the environment variable
 *  P2_SERVER_TIMEOUT_MS gives another at open. */
#define P2_SERVER_TIMEOUT_MS 10000
/** Requests a backend keeps in flight at once in a vectored read or write. */
#define P2_SERVER_INFLIGHT 16
/** pageserver(ship = ranges): bytes of announced ranges that pages evicted dirty keep in
 *  the client until the next sync (the pending store, 4 MiB), unless the environment
 *  variable P2_SERVER_PENDING_BYTES gives another bound at open (0: none kept). */
#define P2_SERVER_PENDING_BYTES (4u << 20)


/** Open (or create) a page-server segment: as p2_seg_open(), the database's bytes on the
 *  server named by `uri` (`nbd://HOST[:PORT][/EXPORT]`, `nfs://HOST/EXPORT/FILE` or
 *  `file:///PATH`) behind a client
 *  buffer of `frames` pages of `page` bytes (4096 or 8192).
 * @return as p2_seg_open(), and #P2_EIO naming the URI where the server cannot be
 *         reached or answered no request within the timeout; #P2_EINVAL for a URI of
 *         another form, a page size not supported, fewer than 2 frames; #P2_ENOMEM where
 *         the export is smaller than the header; #P2_EIO "libnbd is not installed ..."
 *         (or libnfs) naming the Debian package, where it is missing. */
int p2_seg_open_server(p2_seg *seg, const char *uri, uint32_t frames, uint32_t page,
                       uint64_t fingerprint, uint32_t nroots, const char *const *root_names,
                       const uint64_t *root_sizes, uint64_t reserve, int *created, p2_err *err);

/** As p2_seg_open_server(), with transactions: `log_uri` names a second export (the same
 *  forms) holding the lease and the last commit's record (see "Transactions" above);
 *  `sync`: flush the log and the data at each commit.  NULL log_uri: p2_seg_open_server().
 *  After p2_server_open_reader(1) on this thread, the open is a reader's (no lease).
 * @return as p2_seg_open_server(); #P2_EBUSY naming the holder where another writer holds
 *         the lease; #P2_EMISMATCH where the log holds another database's commit;
 *         #P2_EFORMAT where its lease block is damaged; #P2_EINVAL for a reader of an
 *         export that holds no database yet. */
int p2_seg_open_server_log(p2_seg *seg, const char *uri, uint32_t frames, uint32_t page,
                           const char *log_uri, int sync, uint64_t fingerprint, uint32_t nroots,
                           const char *const *root_names, const uint64_t *root_sizes,
                           uint64_t reserve, int *created, p2_err *err);

/** Make the next page-server opens of this thread readers' (on = 1) or writers' (0). */
void p2_server_open_reader(int on);

/** Make the next nfs:// opens of this thread write synchronously (on = 1: every WRITE
 *  FILE_SYNC, no COMMIT at flush) or unstably with a COMMIT at flush (0, the default). */
void p2_server_sync_writes(int on);

/** Start a transaction on a page-server segment with a log: a reader takes the last
 *  generation written back whole (dropping its buffer's pages if it moved on); a writer
 *  renews its lease.  P2_OK for any other segment. */
int p2_seg_server_begin(p2_seg *seg, p2_err *err);

/** Add the counters of a page-server segment to *out (frames, resident and dirty too);
 *  returns 1 if seg is one, else 0 (nothing added). */
int p2_seg_server_stats(const p2_seg *seg, p2_server_stats *out);

/** Reset the counters of a page-server segment (the request and fault counts; frames,
 *  resident and dirty describe the buffer and are kept), and forget which pages (objects)
 *  were written back, so that rewrites count from here. */
void p2_seg_server_stats_reset(p2_seg *seg);

/** pageserver(ship = ranges), called right after the open: from now on the writes
 *  announced with p2_seg_will_write() (by the allocator and by every layer) are recorded
 *  per page, in granules of 1/256 page, and a dirty page the server already holds goes
 *  back as those ranges (coalesced where less than 2 granules apart) rather than whole;
 *  the header's page, a new page and a page dirtied with nothing announced go back
 *  whole.  Pages are still read whole.  Without a journal, a page evicted dirty keeps its
 *  ranges (their bytes) in the client, in a pending store, until the next sync, which
 *  ships them all at once (each page once); a fetch of the page applies them over what
 *  the server sends, so the process reads its own writes; a crash before the sync loses
 *  them (the server holds the last sync's state, the header marked open).  The store
 *  holds at most #P2_SERVER_PENDING_BYTES: past it, it is written back, and the page
 *  evicted with it.  P2_OK, or P2_EINVAL if seg is not a page server. */
int p2_seg_server_ship_ranges(p2_seg *seg, p2_err *err);

/** Write back every dirty page and drop every page from the client buffer, so that the
 *  next touch of any page is a miss (a cold buffer, for measurements and tests).
 * @return #P2_OK, #P2_EIO (the server), #P2_EINVAL (not a page-server segment). */
int p2_seg_server_drop(p2_seg *seg, p2_err *err);

/** @} */

/** @defgroup objserver Object servers: allocator blocks on Redis, in a client object cache
 *
 *  An object-server segment (the `objserver` memory layer) has the format, the header,
 *  the allocator and the offsets of a persistent file, but its unit on the server is the
 *  allocator block, an object: one Redis string per block, the key `p2:o:<offset>`, in
 *  the database the URI `redis://HOST[:PORT][/DB]` names (hiredis, the Debian package
 *  libhiredis0.14, loaded with dlopen() at the first such open).  The segment is
 *  reserved in the process as anonymous memory, and each object, when here, is at its
 *  offset from the base, so that references are offsets as in a persistent file.
 *
 *  What is always here: the header, the container roots and the allocator's state (its
 *  free lists, threaded through the free blocks), kept on the server as the 64-byte
 *  cells of one hash, `p2:meta`, read whole at open.  What is fetched: an object, by
 *  p2_obj_ptr() (the memory layer's `_ptr`), which checks a table of the objects here
 *  in software (one hash lookup per reference, where QuickStore's page faults cost
 *  nothing on a hit and a fault on a miss); on a miss, one GET brings the object to its
 *  place.  At most `objects` are here between calls into the API: p2_obj_enter(), which
 *  the generated API calls on entry, evicts by the clock down to that number.  Every
 *  object touched since the API was last entered is pinned: the cache overflows rather
 *  than evict it, so a pointer the API hands out stays valid until the next call into
 *  the API (not longer: after it, the object may be evicted and its bytes zeroed).
 *
 *  Writes are known from the write-intent notices (p2_seg_will_write(), which every
 *  layer calls before it writes): a write inside an object makes it dirty; any other
 *  (the allocator's, a root's) makes its cells dirty.  A dirty object is never evicted
 *  (the cache overflows until the commit): the server only ever holds committed states.
 *
 *  Several clients, optimistically (no lock): every object has a version (the field
 *  <offset> of the hash `p2:ver`; the meta cells together have the field `m`), read
 *  before its bytes in the same round trip.  A transaction (everything since the last
 *  commit or abort) lists what it reads; its commit (p2_seg_sync(), also the close)
 *  WATCHes `p2:meta` and every object read and reads their versions (one round trip),
 *  then ships every dirty object (SET), every object freed (DEL), every dirty cell
 *  (HSET / HDEL `p2:meta`) and the new versions in one MULTI ... EXEC (one round trip),
 *  so that the server applies a commit whole or not at all.  A version that moved since
 *  it was read, or an EXEC the server aborts, is #P2_ECONFLICT: nothing was shipped, the
 *  objects found changed are dropped from the cache, and the transaction stays open until
 *  p2_obj_abort(), after which the caller retries.  A transaction that wrote nothing
 *  checks its versions only (one round trip, no WATCH); one that read nothing from the
 *  server sends nothing.  Round trips against the single-client path this replaces: one
 *  more per commit that read objects.  What is read is checked at the commit, not when
 *  read: inside a transaction that later conflicts, a call may have seen objects of two
 *  commits (so trust a transaction's results once its commit returns #P2_OK).  Changes
 *  to the meta cells (an insert or a delete: the allocator, the roots) conflict with
 *  every transaction running beside them.  The open's integrity walk (`verify_open`)
 *  is a transaction that reads only, checked when it ends (p2_obj_settled()): where
 *  another client's commit moved the meta cells under it, or moved anything it read and
 *  it found a problem, it walks again from the state last committed, at most
 *  #P2_OBJ_OPEN_WALKS times, then the open fails with #P2_ECONFLICT (open again); so it
 *  never takes a mix of two commits for corruption.  (A walk that found no problem while
 *  only objects moved stands: the objects moved are fetched again when touched, as
 *  every object committed later is.)
 *  Deadlines, a server that is down or stalls, and the counters (#p2_server_stats:
 *  reads are GETs with their versions and the HGETALLs of the meta cells (not the
 *  round trip of a commit's check of versions, nor begin's),
 *  writes SETs, flushes EXECs, misses objects fetched, hits references found here,
 *  frames the `objects` target, conflicts the commits refused and the open's walks
 *  walked again) are as for a page
 *  server (@ref server), with p2_seg_server_stats() and the rest.
 *  @{
 */

/** Open (or create) an object-server segment: as p2_seg_open(), the database's blocks on
 *  the Redis server named by `uri` (`redis://HOST[:PORT][/DB]`) behind a client cache of
 *  `objects` objects.  A Redis database with no `p2:meta` is empty: a new database
 *  (`*created` set), which nothing ships until the caller's first p2_seg_sync(): the
 *  caller creates its containers in it and commits, so that other clients (and an
 *  abort) meet the empty containers whole, never the bare roots.
 * @return as p2_seg_open_server(). */
int p2_seg_open_objserver(p2_seg *seg, const char *uri, uint32_t objects, uint64_t fingerprint,
                          uint32_t nroots, const char *const *root_names, const uint64_t *root_sizes,
                          uint64_t reserve, int *created, p2_err *err);

/** Bundling: each miss fetches, in the same request (one MGET), the objects at up to
 *  `k` allocation neighbours after the missed one -- the offsets ref + i * s, s the size
 *  of the last object fetched (a container's elements under malloc storage, allocated in
 *  turn, lie so) -- where the server holds one and the client has none there.  0: off. */
void p2_obj_set_bundle(p2_seg *seg, uint32_t k);

/** The API was entered: unpin every object and evict down to the cache's size. */
void p2_obj_enter(p2_seg *seg);

/** Begin a transaction: where another client changed the meta cells since this one read
 *  them (their version, one round trip), drop the cache and read them again.
 * @return #P2_OK, #P2_EINVAL (changes are pending, or a conflict: commit or abort first),
 *         #P2_EIO, #P2_EFORMAT. */
int p2_obj_begin(p2_seg *seg, p2_err *err);

/** End a transaction that changed nothing, checking what it read: its read set and the
 *  meta cells' version against the server's (one round trip, no WATCH).  #P2_ECONFLICT
 *  where another client committed the meta cells since this client read them (an insert
 *  or a delete: the roots and the allocator here are stale), or, with `any`, any object
 *  the transaction read; else #P2_OK and the transaction is over.  Either way the objects
 *  found changed are dropped from the cache (their next touch fetches them again), and
 *  after a conflict p2_obj_abort() reads the meta cells again.  The open's integrity walk
 *  ends with it: walked again where the meta cells moved under it, or where it found a
 *  problem (`any`: perhaps a mix of two commits) and anything it read moved.
 * @return #P2_OK, #P2_ECONFLICT, #P2_EINVAL (changes are pending), #P2_EIO, #P2_EFORMAT. */
int p2_obj_settled(p2_seg *seg, int any, p2_err *err);

/** How many times in a row the open's integrity walk over an object server is walked
 *  (each time another client's commit moved what it read: see p2_obj_settled()) before
 *  the open gives up with #P2_ECONFLICT. */
#define P2_OBJ_OPEN_WALKS 8

/** Abort the transaction: drop the objects it changed (the next touch fetches them
 *  again); where it changed meta cells, or a conflict found another client's change to
 *  them, drop the whole cache and read the cells again (one round trip).
 * @return #P2_OK, #P2_EIO, #P2_EFORMAT (the server's copy is no database now). */
int p2_obj_abort(p2_seg *seg, p2_err *err);

/** The address of the block at `ref`, fetched from the server on a miss (pinned until
 *  the next p2_obj_enter()).  A reference that names no object (the server has none
 *  there) is base + ref, as p2_seg_ptr() gives.  A fetch that fails fails the segment
 *  (see @ref server, "Failures inside a fault"). */
void *p2_obj_ptr(p2_seg *seg, uint64_t ref);

/** p2_seg_alloc(), p2_seg_free(), p2_seg_realloc() of an object-server segment: the
 *  block becomes (stops being) an object of the cache. */
p2_off p2_obj_alloc(p2_seg *seg, uint64_t size, p2_err *err);
void p2_obj_free(p2_seg *seg, p2_off ref, uint64_t size);
p2_off p2_obj_realloc(p2_seg *seg, p2_off ref, uint64_t old_size, uint64_t new_size, p2_err *err);

/** @} */

/** Relocation of a fixed-address segment (see @ref fixed): the addresses stored in it
 *  lie in [lo, lo + span) -- the used part of the file at the base it records -- and move
 *  by delta.  Set up by p2_seg_reloc_begin(). */
typedef struct p2_reloc {
    uint64_t lo, span, delta;   /**< old used range; new address = old + delta (mod 2^64) */
    const char *base;           /**< the mapping (to find a word's page) */
    unsigned pct;               /**< 100: every address; else those in pages chosen by hash */
    uint64_t moved;             /**< addresses rewritten */
} p2_reloc;

/** Start relocating an open segment with seg->relocated set. */
void p2_seg_reloc_begin(p2_seg *seg, p2_reloc *rl);

/** Finish: the header (in memory only) records the base the file is now mapped at. */
void p2_seg_reloc_end(p2_seg *seg, const p2_reloc *rl);

/** Is the page holding *w one whose addresses a forced partial relocation rewrites? */
static inline int p2_reloc_page_chosen(const p2_reloc *rl, const void *w)
{
    uint64_t pg = (uint64_t)((const char *)w - rl->base) >> 12;
    return (pg * UINT64_C(0x9e3779b97f4a7c15) >> 32) % 100 < rl->pct;
}

/** Relocate the word at w if it holds an address of the old used range; anything else
 *  (0, P2_NIL, a number a damaged file holds) is left as it is, for the integrity check. */
static inline void p2_reloc_word(p2_reloc *rl, uint64_t *w)
{
    uint64_t v = *w;
    if (v - rl->lo < rl->span && (rl->pct >= 100 || p2_reloc_page_chosen(rl, w))) {
        *w = v + rl->delta;
        rl->moved++;
    }
}

/** The write-intent hook of a plain persistent file (the `persistent` layer's
 *  `_will_write`): such a file needs no notice, so it compiles to nothing -- except in an
 *  audit build (compiled with P2_WRITE_AUDIT), where it reaches the write hook. */
#ifdef P2_WRITE_AUDIT
#define P2_SEG_AUDIT_WRITE(seg, p, n) p2_seg_will_write((seg), (p), (n))
#else
#define P2_SEG_AUDIT_WRITE(seg, p, n) ((void)(seg), (void)(p), (void)(n))
#endif

#ifdef P2_WRITE_AUDIT
/** Write audit (a test build, compiled with P2_WRITE_AUDIT; not thread-safe).  Every
 *  plain (not journalled) segment opened afterwards is watched: its mapping is copied,
 *  the write hook records the announced ranges, and p2_write_audit_check() compares the
 *  mapping with the copy.  Returns the number of changed bytes that no announcement
 *  covered, plus announcements outside the mapping; each problem (up to a few) is
 *  printed on stderr with the offset and `what` (the operation).  The copy is then taken
 *  again and the announcements forgotten. */
int p2_write_audit_check(const char *what);
#endif

/** @} */

#ifdef __cplusplus
}
#endif

/* ==========================================================================
 * integrity checks: what the generated <prefix>_verify functions use
 * ========================================================================== */
#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup verify Integrity checks
 *  The generated `<prefix>_verify` walks every structure of a database (slots,
 *  free lists, hash chains, trees, lists, relationships, texts) and reports
 *  what is inconsistent, one line per problem, through a #p2_verify.
 *  @{
 */

/** A report being written: problems counted in `errors`; the first `max` of
 *  them appended as lines to `buf` (capacity `cap`, `len` used, always
 *  NUL-terminated while cap > 0). */
struct p2_verify_claim;
typedef struct p2_verify {
    int    errors;   /**< problems found so far */
    char  *buf;      /**< report buffer; may be NULL (then only counted) */
    size_t cap, len; /**< buffer capacity and bytes used (without the NUL) */
    int    max;      /**< lines appended at most; further problems are only counted */
    struct p2_verify_claim *claims;   /**< blocks in use, found by the walk (p2_verify_claim) */
    size_t nclaims, capclaims;
    int    claims_lost;               /**< 1 if memory for claims ran out (overlaps unchecked) */
} p2_verify;

/** Start a report in buf (cap bytes; buf may be NULL), keeping at most max lines.
 *  Release it with p2_verify_done(). */
void p2_verify_init(p2_verify *v, char *buf, size_t cap, int max);

/** Free what a report holds besides its buffer (the claims). */
void p2_verify_done(p2_verify *v);

/** Record that the walk found the block [off, off + len) of a segment in use (len as
 *  allocated; the check uses the allocator's rounded block size).  Call it only for
 *  blocks that p2_seg_contains() accepted.  `what` names the block in messages and must
 *  outlive the report (a string literal). */
void p2_verify_claim(p2_verify *v, const p2_seg *seg, p2_off off, uint64_t len, const char *what);

/** Check a segment's allocator: every free list (one per small size class, the large
 *  one) lies inside the allocated area, is aligned, has no cycle (walks are bounded),
 *  holds blocks of its size class (large: address-ordered, not touching), and no free
 *  block overlaps another, a root block, or a block claimed in use with
 *  p2_verify_claim() (a free list pointing into a live element would make the next
 *  allocation overwrite it).  Claimed blocks must not overlap each other either.
 *  Problems are reported through v, naming `file`. */
void p2_seg_verify(const p2_seg *seg, p2_verify *v, const char *file);

/** Report one problem: count it, and append the formatted message and a newline
 *  unless `max` lines were appended already or the buffer is full (a message
 *  that does not fit is truncated).  Messages read like
 *  "container accounts, layer hash: bucket 17: element 42 is not live". */
void p2_verify_fail(p2_verify *v, const char *fmt, ...) P2_PRINTF_LIKE(2, 3);

/** Does [off, off + len) lie inside the allocated area of an open segment
 *  (after the header, below brk and inside the mapping), with off 16-byte
 *  aligned as every block is?  0 for a segment that is not open.  Never reads
 *  outside the header. */
int p2_seg_contains(const p2_seg *seg, p2_off off, uint64_t len);

/** @} */

/** @defgroup refset Sets of element references (cursors)
 *
 *  A cursor that changes the element under it so that the element moves along the
 *  cursor's own walk (a new key of the order it walks, or storage that relocates the
 *  element) remembers the element's reference here and skips it when the walk meets it
 *  again (the Halloween problem). An open-addressing hash set of uint64_t references;
 *  UINT64_MAX (P2_NIL) is never a member. A zeroed p2_refset is an empty set.
 *  @{
 */
typedef struct p2_refset {
    uint64_t *slot;    /**< cap slots, UINT64_MAX = empty; NULL while cap is 0 */
    uint64_t *spare;   /**< cap slots prepared by p2_refset_reserve(s, 1) for a remap */
    uint64_t cap, n;   /**< slots (0 or a power of two) and members */
} p2_refset;

/** Make room for one more member without failing later, and (remap != 0) a spare table
 *  for p2_refset_remap.  P2_OK or P2_ENOMEM (the set unchanged). */
int p2_refset_reserve(p2_refset *s, int remap);
/** Add ref (after p2_refset_reserve; adding a member again does nothing). */
void p2_refset_add(p2_refset *s, uint64_t ref);
/** Is ref a member? */
int p2_refset_has(const p2_refset *s, uint64_t ref);
/** Remove ref if it is a member. */
void p2_refset_del(p2_refset *s, uint64_t ref);
/** Replace every member r by f(r, a, b) (an injective map, as when positions shift),
 *  using the spare table of p2_refset_reserve(s, 1); cannot fail. */
void p2_refset_remap(p2_refset *s, uint64_t (*f)(uint64_t r, uint64_t a, uint64_t b),
                     uint64_t a, uint64_t b);
/** Free the tables: the set is empty (and zeroed) again. */
void p2_refset_free(p2_refset *s);

/** @} */

/** The block size from which the transient memory layer's blocks are the mappings below
 *  (smaller ones are malloc's: an element of `malloc` storage pays no system call). */
#define P2_HEAP_HUGE_MIN (UINT64_C(4) << 20)

/** Large heap blocks (P2_HEAP_HUGE_MIN bytes and up: the transient memory layer's slot,
 *  bucket and text blocks) are anonymous mappings of their own rather than malloc's. The
 *  kernel hands them out zeroed and faults a page in only when it is first touched, and a
 *  growth moves the block's pages (mremap) instead of copying them: a doubling slot array
 *  costs no touch of its new half until slots there are used (realloc and a memset of the
 *  growth touched all of it at once). Each asks for transparent huge pages (the kernel's
 *  default mode, "madvise", gives them only when asked), so that first touching a bulk
 *  load's memory costs one fault per 2 MiB instead of one per 4 KiB. The size given
 *  to p2_heap_big_realloc and p2_heap_big_free must be the block's (the memory layers'
 *  contract: p2_seg_free's too). NULL: out of memory; p2_heap_big_realloc then leaves the
 *  block as it was. */
void *p2_heap_big_alloc(uint64_t size);
void *p2_heap_big_realloc(void *p, uint64_t old_size, uint64_t new_size);
void p2_heap_big_free(void *p, uint64_t size);

#ifdef __cplusplus
}
#endif
/* ======================== end of integrity checks ======================== */

#endif /* P2_RUNTIME_H */
