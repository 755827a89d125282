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
