// oo7_main.cc -- options, the cold/warm/hot protocol and main() of the OO7 benchmark binary.
//
// Every implementation linked in registers an oo7::System (oo7.h); this file builds each
// system's database once per (size, fanout), checks its counts, then runs every operation
// of spec section 3 as Google Benchmark benchmarks with manual time:
//
//   OO7/<system>/<mem>/<size>_f<fanout>/<op>/cold   persistent systems: one run in a fresh
//                                                   process, the files dropped from the page cache
//   OO7/<system>/<mem>/<size>_f<fanout>/<op>/warm   persistent systems: one run in a fresh
//                                                   process, the files in the page cache
//   OO7/<system>/<mem>/<size>_f<fanout>/<op>/hot    every system: --oo7_hot_runs runs in the
//                                                   driver's open, after one untimed run (their
//                                                   mean); --oo7_update_runs runs in a row
//                                                   for an update operation
//
// (a system name may hold a '/', e.g. HASH/ILIST: parse the name from the right.)
// Cold and warm (one_main below says how each is made and why a fresh process): the
// driver closes its database, starts this binary again with --oo7_one=cold|warm, which
// opens the files, runs the operation once and prints its result and counters, and
// reopens the database for the hot runs. A transient system has no files, so nothing to
// be cold or warm: it has hot runs only. Counters of every run: major and minor page
// faults (getrusage), write_bytes (/proc/self/io: the bytes made dirty, see Usage); of
// the fresh runs: resident_pct (the files' pages in the page cache before the open, by
// mincore: the proof that a cold run was cold -- cold_proved = 0 when more than
// kColdResidentMaxPct stayed, as on tmpfs) and resident_after_pct; file_MB and alloc_MB
// (the files' apparent and allocated sizes).
// Every run is bracketed by db.begin()/db.commit() (commit included in its time) and
// starts from the reseeded random stream, so every run does the same work. Update
// operations (T2x, T3x, T5do/T5undo, SM1/SM2, CU) leave the database as built after every
// run: T2a/T2b/T3a/T3b run a second time untimed (two swaps or two toggles are the
// identity), T2c/T3c are identities already, T5do is followed by an untimed T5undo (and
// T5undo preceded by an untimed T5do), SM1 by an untimed SM2 (SM2 preceded by SM1). After
// each update operation's hot runs the object counts and Db::verify() are checked again.
//
// Checks: every run's count must equal the system's own first count, the count of
// the first system that ran the operation (HAND, which runs first, when it is linked in;
// a count that fails the exact check below is no reference), and, for the operations
// whose result the spec fixes exactly, the value derived from the parameters. A mismatch
// turns the benchmark into an error row (SkipWithError with both numbers) and makes the
// exit status 3.
//
// Options (besides Google Benchmark's --benchmark_*):
//   --oo7_size=small         tiny | small | medium | large
//   --oo7_fanout=3           connections per atomic part; a list runs each: 3,6,9
//   --oo7_seed=1             the generator's and the operations' random seed
//   --oo7_dir=PATH           where database files go (default: a new directory in $TMPDIR);
//                            each system builds into its own subdirectory, removed after it
//   --oo7_ops=T1,Q1          only these operations (default: all)
//   --oo7_hot_runs=3         hot runs per read-only operation
//   --oo7_hot_batch_us=200   a read-only operation's hot run repeats it back to back until
//                            the run lasts about this long (0: once), timed as one span and
//                            reported per repetition: a microsecond operation timed alone
//                            measures the clock and the counters read around it (whose
//                            system calls also evict the caches the next run would use)
//   --oo7_update_runs=1      hot runs per update operation, each its own transaction, in a
//                            row: the durable comparison runs 100, so that a system that
//                            commits (or syncs) once per 100 transactions pays it once per
//                            100 runs. T2a/T2b/T3a/T3b restore each other, T2c/T3c are
//                            identities; SM1 runs that often with new ids each time (rounds,
//                            oo7.h) and the SM2s that restore follow after, untimed, as the
//                            SM1s an SM2 run needs come before it: so the timed runs are
//                            consecutive commits. T5do/T5undo and CU interleave their
//                            untimed restores, which are commits too.
//   --oo7_verify=1           re-check counts and Db::verify() after every update operation
//   --oo7_list               print the registered systems and exit
//   --oo7_durable=0          1: also the systems measured only in the durable comparison
//                            (System::durable_only: those that group commits by 100)
//   --oo7_inject_fault=NAME[/OP]   (tests) add 1 to every count of system NAME (of OP
//                            only): the run must turn into an error row
//   --oo7_readahead=default  default: the kernel's readahead as the data managers leave it;
//                            random: the fresh processes advise it off (advise_random)
//   --oo7_one=cold|warm --oo7_system=NAME/MEM --oo7_dir=DIR --oo7_ops=OP
//                            the fresh process: one run on the database in DIR (one_main)
//   --oo7_one=build --oo7_system=NAME/MEM --oo7_dir=DIR
//                            build that system's database into DIR for such runs and exit
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "oo7.h"
#include "../bench_main.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
    std::string size = "small";
    std::vector<int> fanouts{3};
    uint64_t seed = 1;
    std::string dir;
    std::set<std::string> ops;   // empty: all
    int hot_runs = 3;
    double hot_batch_us = 200;   // --oo7_hot_batch_us
    int update_runs = 1;
    bool verify = true;
    std::string fault_system, fault_op;   // --oo7_inject_fault
    std::string one, one_system;          // --oo7_one, --oo7_system: the fresh process
    bool readahead_random = false;        // --oo7_readahead=random
    bool durable = false;                 // --oo7_durable=1: the durable_only systems too
};

Config &cfg() {
    static Config c;
    return c;
}

std::atomic<int> g_failures{0};
std::string g_tmp_root;   // created by us: removed at exit

void note_failure(const std::string &what) {
    g_failures++;
    std::cerr << "OO7 FAILURE: " << what << std::endl;
}

// ---------------------------------------------------------------------------------------
// operations

enum class Kind {
    Read,          // read-only: cold and hot
    UpdateTwice,   // T2a, T2b, T3a, T3b: a second untimed run restores the database
    UpdateIdem,    // T2c, T3c: the identity already
    T5Do,
    T5Undo,
    SM1,
    SM2,
    CU,
};

struct Op {
    const char *name;
    Kind kind;
    bool update() const { return kind != Kind::Read; }
};

const std::vector<Op> &all_ops() {
    static const std::vector<Op> ops = {
        {"T1", Kind::Read},         {"T2a", Kind::UpdateTwice}, {"T2b", Kind::UpdateTwice},
        {"T2c", Kind::UpdateIdem},  {"T3a", Kind::UpdateTwice}, {"T3b", Kind::UpdateTwice},
        {"T3c", Kind::UpdateIdem},  {"T4", Kind::Read},         {"T5do", Kind::T5Do},
        {"T5undo", Kind::T5Undo},   {"T6", Kind::Read},         {"T7", Kind::Read},
        {"T8", Kind::Read},         {"T9", Kind::Read},         {"Q1", Kind::Read},
        {"Q2", Kind::Read},         {"Q3", Kind::Read},         {"Q4", Kind::Read},
        {"Q5", Kind::Read},         {"Q6", Kind::Read},         {"Q7", Kind::Read},
        {"Q8", Kind::Read},         {"SM1", Kind::SM1},         {"SM2", Kind::SM2},
        {"CU", Kind::CU},
    };
    return ops;
}

// The round of new composite parts SM1 makes and SM2 deletes (oo7.h): 0 but in a row of
// hot SM1 or SM2 runs (bench_hot).
int g_sm_round = 0;

// One run of an operation's body (no transaction, no timing). `extra` receives T1's
// connections examined and Q5's (assembly, part) pairs.
uint64_t body(const std::string &op, oo7::Db &db, const oo7::Params &p, oo7::Rng &rng,
              uint64_t *extra) {
    uint64_t dummy = 0;
    if (!extra) extra = &dummy;
    if (op == "T1") return db.t1(extra);
    if (op.size() == 3 && op[0] == 'T' && op[1] == '2') return db.t2(op[2]);
    if (op.size() == 3 && op[0] == 'T' && op[1] == '3') return db.t3(op[2]);
    if (op == "T4") return db.t4();
    if (op == "T5do") return db.t5(false);
    if (op == "T5undo") return db.t5(true);
    if (op == "T6") return db.t6();
    if (op == "T7") return oo7::t7(db, p, rng);
    if (op == "T8") return db.t8();
    if (op == "T9") return db.t9();
    if (op == "Q1") return oo7::q1(db, p, rng);
    if (op == "Q2") return oo7::q2(db);
    if (op == "Q3") return oo7::q3(db);
    if (op == "Q4") return oo7::q4(db, p, rng);
    if (op == "Q5") return db.q5(extra);
    if (op == "Q6") return db.q6();
    if (op == "Q7") return db.q7();
    if (op == "Q8") return db.q8();
    if (op == "SM1") return oo7::sm1(db, p, rng, g_sm_round);
    if (op == "SM2") return oo7::sm2(db, p, g_sm_round);
    throw std::logic_error("unknown operation " + op);
}

uint64_t count_char(const std::string &s, char c) {
    return (uint64_t)std::count(s.begin(), s.end(), c);
}

// The results spec section 5 fixes exactly, derived from the parameters (the traversals
// run on module 1). false: the result depends on the random data.
bool exact_result(const std::string &op, const oo7::Params &p, uint64_t *out) {
    const uint64_t priv = (uint64_t)p.base_per_module() * p.comp_per_assm;   // module 1
    const uint64_t parts = priv * p.atomic_per_comp;   // the ring reaches every part
    if (op == "T1" || op == "T2b" || op == "T3b") *out = parts;
    else if (op == "T2c" || op == "T3c") *out = parts * oo7::kUpdateRepeatCnt;
    else if (op == "T2a" || op == "T3a" || op == "T6" || op == "CU") *out = priv;
    else if (op == "T4") *out = priv * count_char(oo7::document_text(1, p.document_size), 'I');
    else if (op == "T8") *out = count_char(oo7::manual_text(1, p.manual_size), 'I');
    else if (op == "T9") {
        std::string m = oo7::manual_text(1, p.manual_size);
        *out = !m.empty() && m.front() == m.back() ? 1 : 0;
    } else if (op == "Q1") *out = oo7::kQuery1RepeatCnt;
    else if (op == "Q7" || op == "Q8") *out = (uint64_t)p.total_atomic();
    else if (op == "SM1" || op == "SM2") *out = oo7::kNumNewCompParts;
    else return false;
    return true;
}

oo7::Counts expected_counts(const oo7::Params &p) {
    oo7::Counts c;
    c.modules = c.manuals = (uint64_t)p.modules;
    c.complex_assemblies = (uint64_t)p.total_complex();
    c.base_assemblies = (uint64_t)p.total_base();
    c.composite_parts = c.documents = (uint64_t)p.total_comp();
    c.atomic_parts = (uint64_t)p.total_atomic();
    c.connections = (uint64_t)p.total_atomic() * p.conn_per_atomic;
    c.private_links = c.shared_links = (uint64_t)p.total_base() * p.comp_per_assm;
    return c;
}

// ---------------------------------------------------------------------------------------
// files, caches and counters

void remove_dir(const std::string &dir) { benchmain::remove_tree(dir); }

std::string sanitize(const std::string &s) {
    std::string o;
    for (char c : s) o += (std::isalnum((unsigned char)c) || c == '-' || c == '_') ? c : '_';
    return o;
}

// The paths of a persistent system's files in `dir` (System::files are relative to it).
std::vector<std::string> file_paths(const oo7::System &sys, const std::string &dir) {
    std::vector<std::string> out;
    for (const std::string &f : sys.files) out.push_back(!f.empty() && f[0] == '/' ? f : dir + "/" + f);
    return out;
}

// What the files hold: pages in the page cache (mincore through a mapping of our own,
// which reads nothing and creates no page-table entry for the database's mapping), pages
// in all, bytes (apparent size) and bytes allocated on disk. Absent files count nothing;
// *found says how many were there.
struct FileState {
    uint64_t resident = 0, pages = 0, bytes = 0, allocated = 0;
    int found = 0;
    double resident_pct() const { return pages ? 100.0 * (double)resident / (double)pages : 0.0; }
};

FileState file_state(const std::vector<std::string> &paths) {
    FileState s;
    const long page = sysconf(_SC_PAGESIZE);
    for (const std::string &path : paths) {
        int fd = ::open(path.c_str(), O_RDONLY);
        if (fd < 0) continue;
        s.found++;
        struct stat sb;
        if (fstat(fd, &sb) == 0) {
            s.bytes += (uint64_t)sb.st_size;
            s.allocated += (uint64_t)sb.st_blocks * 512u;
            if (sb.st_size > 0) {
                size_t len = (size_t)sb.st_size, n = (len + page - 1) / page;
                void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
                if (m != MAP_FAILED) {
                    std::vector<unsigned char> vec(n);
                    if (mincore(m, len, vec.data()) == 0)
                        for (unsigned char v : vec) s.resident += v & 1;
                    munmap(m, len);
                }
                s.pages += n;
            }
        }
        ::close(fd);
    }
    return s;
}

// Cold: write back what is dirty (DONTNEED drops clean pages only), then drop the file
// from the page cache. Nobody has it open or mapped (the driver closed its database before
// starting the fresh process), so every page can go.
void drop_file(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
}

// Warm: write back what is dirty (so that the run's write counter starts from clean pages,
// as the cold run's does), then read the whole file through read(2): every page in the
// page cache, none mapped in this process.
void load_file(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    ::fdatasync(fd);
    std::vector<char> buf(1 << 20);
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
}

size_t llc_bytes() {
    static size_t bytes = [] {
        size_t b = 32u << 20;
        std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
        std::string s;
        if (f >> s && !s.empty()) {
            char *end = nullptr;
            unsigned long long v = std::strtoull(s.c_str(), &end, 10);
            if (v > 0) {
                if (*end == 'K' || *end == 'k') v <<= 10;
                else if (*end == 'M' || *end == 'm') v <<= 20;
                else if (*end == 'G' || *end == 'g') v <<= 30;
                b = (size_t)v;
            }
        }
        return b;
    }();
    return bytes;
}

volatile unsigned g_sweep_sink;

// Evict the CPU caches: write a buffer of 4x the LLC, a few passes.
[[maybe_unused]] void sweep_caches() {
    static std::vector<unsigned char> buf(4 * llc_bytes(), 1);
    unsigned acc = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < buf.size(); i += 64) {
            buf[i] = (unsigned char)(buf[i] + pass + 1);
            acc += buf[i];
        }
    g_sweep_sink = acc;
}

// Warm: the files' bytes out of the CPU caches, their pages left in the page cache. The
// read that loaded them, and the runs before, passed them through the caches, and a small
// database fits in the last-level cache: without this a warm run would be CPU-cache hot.
// x86: clflush every line through a mapping of our own, unmapped after (cheap: as much
// work as the files are large; the 4x-LLC sweep costs a fresh process ~150 ms of page
// faults alone); elsewhere: the sweep.
void flush_from_cpu_caches(const std::string &path) {
#if defined(__x86_64__) || defined(__i386__)
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && sb.st_size > 0) {
        size_t len = (size_t)sb.st_size;
        void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
            const char *b = (const char *)m;
            for (size_t i = 0; i < len; i += 64) __builtin_ia32_clflush(b + i);
            __builtin_ia32_mfence();
            munmap(m, len);
        }
    }
    ::close(fd);
#else
    (void)path;
    sweep_caches();
#endif
}

// The readahead of the block device holding `dir` (KB; -1 if unknown, e.g. tmpfs): a
// major fault or a read miss fetches up to this much, so it sets how many faults a cold
// run takes for the bytes it reads. The benchmark states it and does not change it.
long read_ahead_kb(const std::string &dir) {
    struct stat sb;
    if (stat(dir.c_str(), &sb) != 0) return -1;
    std::string dev = std::to_string(major(sb.st_dev)) + ":" + std::to_string(minor(sb.st_dev));
    for (const std::string &p : {"/sys/dev/block/" + dev + "/queue/read_ahead_kb",
                                 "/sys/dev/block/" + dev + "/../queue/read_ahead_kb",
                                 "/sys/class/bdi/" + dev + "/read_ahead_kb"}) {
        std::ifstream f(p);
        long kb;
        if (f >> kb) return kb;
    }
    return -1;
}

// --oo7_readahead=random, in the fresh process after the open: no readahead on the
// database's files, so that a cold run reads the pages it touches and little more (the
// device's readahead -- 8 MB on some virtual disks -- can bring a small database in whole
// with the first fault, hiding how many pages a layout makes a run touch). The data
// managers do not expose their mappings or descriptors, so the process finds its own:
// every mapping of a file in /proc/self/maps gets madvise(MADV_RANDOM), every descriptor
// in /proc/self/fd posix_fadvise(POSIX_FADV_RANDOM) (SQLite reads with pread). Returns how
// many were advised.
int advise_random(const std::vector<std::string> &paths) {
    std::set<std::string> real;
    for (const std::string &p : paths) {
        char buf[PATH_MAX];
        if (realpath(p.c_str(), buf)) real.insert(buf);
    }
    int advised = 0;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        // start-end perms offset dev inode path
        std::istringstream in(line);
        std::string range, perms, offset, dev, inode, path;
        if (!(in >> range >> perms >> offset >> dev >> inode) || !std::getline(in >> std::ws, path)) continue;
        if (!real.count(path)) continue;
        size_t dash = range.find('-');
        uintptr_t lo = std::strtoull(range.substr(0, dash).c_str(), nullptr, 16);
        uintptr_t hi = std::strtoull(range.substr(dash + 1).c_str(), nullptr, 16);
        if (madvise((void *)lo, hi - lo, MADV_RANDOM) == 0) advised++;
    }
    if (DIR *d = opendir("/proc/self/fd")) {
        while (struct dirent *e = readdir(d)) {
            char target[PATH_MAX];
            std::string link = std::string("/proc/self/fd/") + e->d_name;
            ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
            if (n <= 0) continue;
            target[n] = 0;
            if (real.count(target) && posix_fadvise(std::atoi(e->d_name), 0, 0, POSIX_FADV_RANDOM) == 0)
                advised++;
        }
        closedir(d);
    }
    return advised;
}

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What a run costs the process besides time: page faults (getrusage: major = the page
// had to be read from the file system, minor = it was in the page cache or zero-filled);
// read_bytes of /proc/self/io -- the bytes the process had read from storage, readahead
// included, whether through a fault of a mapping or a read(2) (SQLite reads with pread:
// its misses are no faults); and write_bytes -- the bytes the process caused to be written to the
// file system, which Linux charges when a page of the file becomes dirty (a store through
// a shared mapping or a write(2) into the page cache; whole pages, the journal's included)
// rather than when it reaches the disk. A page already dirty is not charged again, so the
// count is the bytes one commit writes only when the files start clean, as they do in
// the fresh-process runs (cold and warm). io = false: no /proc/self/io on this kernel.
struct Usage {
    uint64_t majflt = 0, minflt = 0, read_bytes = 0, write_bytes = 0;
    bool io = false;
};

// read_bytes and write_bytes of /proc/self/io, read with plain syscalls (no allocation:
// no faults of its own)
bool io_bytes(uint64_t *read, uint64_t *written) {
    int fd = ::open("/proc/self/io", O_RDONLY);
    if (fd < 0) return false;
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    const char *r = std::strstr(buf, "\nread_bytes:"), *w = std::strstr(buf, "\nwrite_bytes:");
    if (!r || !w) return false;
    *read = std::strtoull(r + 12, nullptr, 10);
    *written = std::strtoull(w + 13, nullptr, 10);
    return true;
}

Usage usage_now() {
    Usage u;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    u.majflt = (uint64_t)ru.ru_majflt;
    u.minflt = (uint64_t)ru.ru_minflt;
    u.io = io_bytes(&u.read_bytes, &u.write_bytes);
    return u;
}

Usage operator-(const Usage &b, const Usage &a) {
    Usage d;
    d.majflt = b.majflt - a.majflt;
    d.minflt = b.minflt - a.minflt;
    d.io = a.io && b.io;
    d.read_bytes = d.io ? b.read_bytes - a.read_bytes : 0;
    d.write_bytes = d.io ? b.write_bytes - a.write_bytes : 0;
    return d;
}

// ---------------------------------------------------------------------------------------
// one run of an operation, on any open database (the driver's or a fresh process's)

bool faulty(const oo7::System &s, const std::string &op) {
    const Config &c = cfg();
    if (c.fault_system.empty()) return false;
    std::string a = c.fault_system, b = s.name;
    std::transform(a.begin(), a.end(), a.begin(), ::toupper);
    std::transform(b.begin(), b.end(), b.begin(), ::toupper);
    return a == b && (c.fault_op.empty() || c.fault_op == op);
}

struct RunResult {
    double seconds = 0;
    uint64_t count = 0, extra = 0;
    Usage use;
};

// `reps` runs back to back in one timed span: each reseeded and in its own transaction
// (begin, the operation, commit), so each does the same work; the counters around the
// same span as the clock (they are read outside it). One is a timed run; more, a
// read-only operation's hot batch (--oo7_hot_batch_us). count is the first run's;
// *differs is set if another's was not.
RunResult timed_batch(oo7::Db &db, const oo7::Params &p, const std::string &op, oo7::Rng &rng,
                      int reps, bool *differs) {
    RunResult r;
    *differs = false;
    Usage u0 = usage_now();
    auto t0 = Clock::now();
    for (int i = 0; i < reps; i++) {
        rng.seed(cfg().seed);
        db.begin();
        uint64_t n = body(op, db, p, rng, &r.extra);
        db.commit();
        if (i == 0) r.count = n;
        else if (n != r.count) *differs = true;
    }
    r.seconds = since(t0);
    r.use = usage_now() - u0;
    return r;
}

RunResult timed(oo7::Db &db, const oo7::Params &p, const std::string &op, oo7::Rng &rng) {
    bool differs;
    return timed_batch(db, p, op, rng, 1, &differs);
}

// One untimed run in its own transaction (restores, preparations).
uint64_t untimed(oo7::Db &db, const oo7::Params &p, const std::string &op, oo7::Rng &rng) {
    rng.seed(cfg().seed);
    db.begin();
    uint64_t n = body(op, db, p, rng, nullptr);
    db.commit();
    return n;
}

// CU (spec section 3): one transaction of T1, T1, T2a, commit; the time reported is the
// total less the two T1 runs (cold and hot), i.e. T2a plus the commit on cached data; the
// counters are those of the same span.
RunResult timed_cu(oo7::Db &db, oo7::Rng &rng) {
    RunResult r;
    rng.seed(cfg().seed);
    auto t0 = Clock::now();
    db.begin();
    auto a = Clock::now();
    db.t1(&r.extra);
    double t1_cold = since(a);
    auto b = Clock::now();
    db.t1(&r.extra);
    double t1_hot = since(b);
    Usage u0 = usage_now();
    r.count = db.t2('a');
    db.commit();
    r.use = usage_now() - u0;
    r.seconds = since(t0) - t1_cold - t1_hot;
    return r;
}

// What puts the database in the state an operation needs (untimed, its own transaction).
void prepare(oo7::Db &db, const oo7::Params &p, const Op &op, oo7::Rng &rng) {
    if (op.kind == Kind::T5Undo) untimed(db, p, "T5do", rng);
    if (op.kind == Kind::SM2) untimed(db, p, "SM1", rng);
}

// The untimed run that leaves the database as built after an update operation (its name
// in *what, or "" if the operation needs none); returns that run's count.
uint64_t restore(oo7::Db &db, const oo7::Params &p, const Op &op, oo7::Rng &rng, std::string *what) {
    switch (op.kind) {
    case Kind::UpdateTwice: *what = op.name; break;
    case Kind::CU: *what = "T2a"; break;
    case Kind::T5Do: *what = "T5undo"; break;
    case Kind::SM1: *what = "SM2"; break;
    default: what->clear(); return 0;
    }
    return untimed(db, p, *what, rng);
}

RunResult run_op(oo7::Db &db, const oo7::Params &p, const Op &op, oo7::Rng &rng) {
    return op.kind == Kind::CU ? timed_cu(db, rng) : timed(db, p, op.name, rng);
}

// ---------------------------------------------------------------------------------------
// the fresh process: one operation at one temperature on an existing database
//
//   oo7_bench --oo7_one=cold|warm --oo7_system=NAME/MEM --oo7_dir=DIR --oo7_ops=OP
//             --oo7_size=S --oo7_fanout=F --oo7_seed=N
//
// (--oo7_one=build with the same system, directory, size, fanout and seed makes the
// database such runs open.)
//
// Cold: every file of the database is written back and dropped from the page cache
// (posix_fadvise DONTNEED), then opened; no byte of the files is then in any cache (the
// pages are freed, and come back from the disk during the run). Warm: every file is read
// into the page cache (read(2)) and flushed from the CPU caches, then opened -- the pages
// are cached but this process has no page-table entry for any of them, so every first
// touch is a minor fault, never a major one. Both happen
// in a process that never had the database open: no mapping, no handle, no user-space
// cache (SQLite's) survives from an earlier run. (The alternative for warm,
// madvise(MADV_DONTNEED) on the data manager's mapping in the same process, would need the
// layer's mapping address, which the public API does not give, would discard the
// uncommitted copy-on-write pages of a MAP_PRIVATE (journalled) mapping instead of merely
// unmapping them, and does nothing to SQLite's own page cache: a fresh process treats
// every system alike.)
//
// Prints one line of JSON: count, seconds, extra, the counters of the run (major_faults,
// minor_faults, read_bytes and write_bytes: -1 without /proc/self/io), resident_pct (of the files' pages,
// measured before the open: ~0 cold, ~100 warm), resident_after_pct (after the run: how
// much of the files the run and the open read), the restoring run's count (restore_count)
// and the files' sizes (file_bytes apparent, alloc_bytes allocated) after it. The caller
// must have closed every handle of its own on the database first. Exit status 1 with the
// reason on stderr if anything fails.

std::string check_structure(oo7::Db &db, const oo7::Params &p);

int one_main() {
    const Config &c = cfg();
    auto die = [](const std::string &why) {
        std::cerr << "oo7: --oo7_one: " << why << "\n";
        return 1;
    };
    if (c.one != "cold" && c.one != "warm" && c.one != "build")
        return die("cold, warm or build, not '" + c.one + "'");
    const oo7::System *sys = nullptr;
    for (const oo7::System &s : oo7::systems())
        if (s.name + "/" + s.mem == c.one_system) sys = &s;
    if (!sys) return die("no system '" + c.one_system + "' (--oo7_list names them: NAME/MEM)");
    if (sys->files.empty()) return die(c.one_system + " keeps no files: cold and warm runs need a persistent system");
    if (c.dir.empty()) return die("--oo7_dir: the directory holding the database");
    oo7::Params p;
    if (c.fanouts.size() != 1 || !oo7::Params::by_name(c.size, c.fanouts[0], p))
        return die("--oo7_size and one --oo7_fanout");
    const std::vector<std::string> paths = file_paths(*sys, c.dir);
    if (c.one == "build") {
        // the database the cold and warm runs open, for running them by hand (or under perf)
        if (file_state(paths).found) return die("a database of " + c.one_system + " is in " + c.dir + " already");
        ::mkdir(c.dir.c_str(), 0755);
        try {
            std::unique_ptr<oo7::Db> db = sys->open(c.dir);
            if (!db) throw std::runtime_error("open returned no database");
            oo7::build_database(*db, p, c.seed);
            std::string bad = check_structure(*db, p);
            if (!bad.empty()) throw std::runtime_error("after the build: " + bad);
        } catch (const std::exception &e) {
            return die(c.one_system + " build: " + e.what());
        }
        return 0;
    }
    if (c.ops.size() != 1) return die("--oo7_ops must name exactly one operation");
    const Op *op = nullptr;
    for (const Op &o : all_ops())
        if (*c.ops.begin() == o.name) op = &o;
    // never let the open create an empty database where one should be
    if (file_state(paths).found == 0) return die("no database of " + c.one_system + " in " + c.dir);
    try {
        for (const std::string &f : paths) {
            if (c.one == "cold") {
                drop_file(f);
            } else {
                load_file(f);
                flush_from_cpu_caches(f);
            }
        }
        FileState before = file_state(paths);
        oo7::Rng rng(c.seed);
        // the open, timed on its own (the run's time excludes it): what a system does to
        // its files at open -- a mapped file relocated in memory -- shows here
        Usage u0 = usage_now();
        auto t_open = std::chrono::steady_clock::now();
        std::unique_ptr<oo7::Db> db = sys->open(c.dir);
        double open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_open).count();
        Usage u1 = usage_now();
        if (!db) throw std::runtime_error("open returned no database");
        int advised = 0;
        if (c.readahead_random && (advised = advise_random(paths)) == 0)
            throw std::runtime_error("--oo7_readahead=random: no mapping or descriptor of the files to advise");
        RunResult r = run_op(*db, p, *op, rng);
        FileState after = file_state(paths);
        std::string what;
        uint64_t again = restore(*db, p, *op, rng, &what);
        db.reset();   // close: what the run wrote goes to the file
        FileState closed = file_state(paths);
        char line[768];
        std::snprintf(line, sizeof line,
                      "{\"open_seconds\": %.9g, \"open_major_faults\": %llu, \"open_minor_faults\": %llu, "
                      "\"count\": %llu, \"seconds\": %.9g, \"extra\": %llu, \"major_faults\": %llu, "
                      "\"minor_faults\": %llu, \"read_bytes\": %lld, \"write_bytes\": %lld, "
                      "\"resident_pct\": %.6g, "
                      "\"resident_after_pct\": %.6g, \"restore_count\": %lld, \"file_bytes\": %llu, "
                      "\"alloc_bytes\": %llu, \"readahead_advised\": %d}",
                      open_s, (unsigned long long)(u1.majflt - u0.majflt),
                      (unsigned long long)(u1.minflt - u0.minflt),
                      (unsigned long long)r.count, r.seconds, (unsigned long long)r.extra,
                      (unsigned long long)r.use.majflt, (unsigned long long)r.use.minflt,
                      r.use.io ? (long long)r.use.read_bytes : -1LL,
                      r.use.io ? (long long)r.use.write_bytes : -1LL, before.resident_pct(),
                      after.resident_pct(), what.empty() ? -1LL : (long long)again,
                      (unsigned long long)closed.bytes, (unsigned long long)closed.allocated, advised);
        std::cout << line << std::endl;
    } catch (const std::exception &e) {
        return die(c.one_system + " " + op->name + " " + c.one + ": " + e.what());
    }
    return 0;
}

// The parsed line of a fresh process: key -> number.
std::map<std::string, double> parse_flat_json(const std::string &s) {
    std::map<std::string, double> out;
    size_t i = 0;
    while ((i = s.find('"', i)) != std::string::npos) {
        size_t j = s.find('"', i + 1);
        if (j == std::string::npos) break;
        std::string key = s.substr(i + 1, j - i - 1);
        size_t colon = s.find(':', j);
        if (colon == std::string::npos) break;
        char *end = nullptr;
        double v = std::strtod(s.c_str() + colon + 1, &end);
        if (end != s.c_str() + colon + 1) out[key] = v;
        i = end && end > s.c_str() + colon ? (size_t)(end - s.c_str()) : colon + 1;
    }
    return out;
}

std::string g_self;   // this binary (/proc/self/exe at start): fresh processes run it

// Run one operation at `temp` in a fresh process of this binary on the database in dir;
// its JSON line parsed, or throws with what went wrong.
std::map<std::string, double> fresh_run(const oo7::System &sys, int fanout, const std::string &dir,
                                        const std::string &op, const std::string &temp) {
    const Config &c = cfg();
    std::vector<std::string> args = {g_self,
                                     "--oo7_one=" + temp,
                                     "--oo7_system=" + sys.name + "/" + sys.mem,
                                     "--oo7_dir=" + dir,
                                     "--oo7_ops=" + op,
                                     "--oo7_size=" + c.size,
                                     "--oo7_fanout=" + std::to_string(fanout),
                                     "--oo7_seed=" + std::to_string(c.seed),
                                     std::string("--oo7_readahead=") + (c.readahead_random ? "random" : "default")};
    std::vector<char *> argv;
    for (std::string &a : args) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, g_self.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        throw std::runtime_error("cannot start " + g_self + ": " + std::strerror(rc));
    }
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) out.append(buf, (size_t)n);
    ::close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::ostringstream o;
        o << "the " << temp << " run's process ";
        if (WIFSIGNALED(status)) o << "died of signal " << WTERMSIG(status);
        else o << "exited with status " << WEXITSTATUS(status);
        o << " (its stderr says why)";
        throw std::runtime_error(o.str());
    }
    auto vals = parse_flat_json(out);
    if (!vals.count("count") || !vals.count("seconds"))
        throw std::runtime_error("the " + temp + " run's process printed no result: '" + out + "'");
    return vals;
}

// ---------------------------------------------------------------------------------------
// the live database: one system at one (size, fanout) at a time; benchmarks run in
// registration order, so a system's database is built by its first benchmark and dropped
// when the next system's first benchmark comes. A persistent system's database is closed
// while a fresh process runs on it and reopened when the driver needs it again.

struct Live {
    std::string key;
    const oo7::System *sys = nullptr;
    oo7::Params p;
    int fanout = 0;
    std::string dir;
    std::unique_ptr<oo7::Db> db;
    std::string error;      // the build failed: every benchmark of the system says so
    double build_s = 0;
    uint64_t size = 0, raw = 0;
    std::map<std::string, uint64_t> own;   // op -> first count of this system
    std::map<std::string, double> fresh_ms; // "cold/T1" -> that run's time
};

Live &live() {
    static Live l;
    return l;
}

// the first count of each (config, op), and who produced it
std::map<std::string, std::pair<std::string, uint64_t>> &reference() {
    static std::map<std::string, std::pair<std::string, uint64_t>> r;
    return r;
}

std::string config_name(int fanout) { return cfg().size + "_f" + std::to_string(fanout); }
std::string sys_label(const oo7::System &s) { return s.name + "/" + s.mem; }
// persistent: it keeps its database in files, so it has cold and warm runs
bool persistent(const oo7::System &s) { return !s.files.empty(); }

void release() {
    Live &l = live();
    l.db.reset();
    if (!l.dir.empty()) remove_dir(l.dir);
    l = Live();
}

std::string check_structure(oo7::Db &db, const oo7::Params &p) {
    oo7::Counts want = expected_counts(p), got = db.counts();
    if (!(got == want)) return "counts " + got.str() + ", expected " + want.str();
    std::string v = db.verify();
    if (!v.empty()) return "verify: " + v;
    return "";
}

Live &acquire(const oo7::System &sys, int fanout) {
    Live &l = live();
    std::string key = sys_label(sys) + "@" + config_name(fanout);
    if (l.key == key) return l;
    release();
    l.key = key;
    l.sys = &sys;
    l.fanout = fanout;
    if (!oo7::Params::by_name(cfg().size, fanout, l.p)) {
        l.error = "unknown size " + cfg().size;
        return l;
    }
    l.raw = oo7::raw_object_bytes(l.p);
    l.dir = cfg().dir + "/" + sanitize(sys.name + "_" + sys.mem + "_" + config_name(fanout));
    remove_dir(l.dir);
    ::mkdir(l.dir.c_str(), 0755);
    try {
        auto t0 = Clock::now();
        l.db = sys.open(l.dir);
        if (!l.db) throw std::runtime_error("open returned no database");
        oo7::build_database(*l.db, l.p, cfg().seed);
        l.build_s = since(t0);
        l.size = l.db->size_bytes();
        std::string bad = check_structure(*l.db, l.p);
        if (!bad.empty()) throw std::runtime_error("after the build: " + bad);
        if (persistent(sys) && file_state(file_paths(sys, l.dir)).found == 0)
            throw std::runtime_error("none of the files the system names (System::files) is in " + l.dir +
                                     ": cold runs would have nothing to drop from the page cache");
    } catch (const std::exception &e) {
        l.error = sys_label(sys) + " " + config_name(fanout) + ": build failed: " + e.what();
        note_failure(l.error);
        l.db.reset();
    }
    return l;
}

// The driver's own handle on the database, reopened after a fresh process ran on it.
oo7::Db &open_db(Live &l) {
    if (!l.db) {
        l.db = l.sys->open(l.dir);
        if (!l.db) throw std::runtime_error("reopen returned no database");
    }
    return *l.db;
}

// Compare one run's count with everything it must equal; "" if all agree.
std::string check_count(Live &l, const std::string &op, uint64_t count) {
    std::ostringstream o;
    std::string cfgn = config_name(l.fanout);
    uint64_t want;
    bool exact_ok = true;
    if (exact_result(op, l.p, &want) && count != want) {
        o << op << " returned " << count << ", the spec's exact result is " << want << "; ";
        exact_ok = false;
    }
    auto own = l.own.find(op);
    if (own == l.own.end()) l.own[op] = count;
    else if (own->second != count)
        o << op << " returned " << count << ", its own first run returned " << own->second
          << "; ";
    auto &ref = reference();
    std::string rk = cfgn + "/" + op;
    auto it = ref.find(rk);
    if (it == ref.end()) {
        if (exact_ok) ref[rk] = {sys_label(*l.sys), count};   // a wrong count is no reference
    }
    else if (it->second.first != sys_label(*l.sys) && it->second.second != count)
        o << op << " returned " << count << ", " << it->second.first << " returned "
          << it->second.second << "; ";
    std::string s = o.str();
    if (!s.empty()) s.resize(s.size() - 2);
    return s;
}

void set_common(benchmark::State &st, const Live &l) {
    st.counters["build_s"] = l.build_s;
    st.counters["db_MB"] = l.size / 1e6;
    st.counters["raw_MB"] = l.raw / 1e6;
    st.counters["size_ratio"] = l.raw ? (double)l.size / (double)l.raw : 0.0;
    st.counters["persistent"] = l.sys && persistent(*l.sys) ? 1 : 0;
}

void set_usage(benchmark::State &st, double majflt, double minflt, double read_bytes,
               double write_bytes) {
    st.counters["major_faults"] = majflt;
    st.counters["minor_faults"] = minflt;
    if (read_bytes >= 0) st.counters["read_bytes"] = read_bytes;
    if (write_bytes >= 0) st.counters["write_bytes"] = write_bytes;
}

void fail(benchmark::State &st, const std::string &what) {
    note_failure(what);
    st.SkipWithError(what.c_str());
}

// A cold run counts as cold when at most this share of the files' pages was in the page
// cache before the open (a file system that ignores DONTNEED, tmpfs, keeps them all).
constexpr double kColdResidentMaxPct = 1.0;

// The database of sys at fanout for one benchmark of op in phase temp (its label and
// common counters set; *where names the benchmark in failures), or nullptr (the benchmark
// skipped with the error) if it could not be made
Live *live_for(benchmark::State &st, const oo7::System *sys, int fanout, const Op *op,
               const std::string &temp, std::string *where) {
    Live &l = acquire(*sys, fanout);
    set_common(st, l);
    st.SetLabel(sys_label(*sys));
    if (!l.error.empty()) {
        st.SkipWithError(l.error.c_str());
        return nullptr;
    }
    *where = sys_label(*sys) + " " + config_name(fanout) + " " + op->name + " " + temp;
    return &l;
}

// cold and warm benchmarks (persistent systems): one run in a fresh process
void bench_fresh(benchmark::State &st, const oo7::System *sys, int fanout, const Op *op,
                 const std::string &temp) {
    std::string where;
    Live *live = live_for(st, sys, fanout, op, temp, &where);
    if (!live) return;
    Live &l = *live;
    const std::string name = op->name;
    oo7::Rng rng(cfg().seed);
    std::map<std::string, double> v;
    uint64_t count = 0;
    std::string err;
    for (auto _ : st) {
        try {
            // the state the operation needs, made here and committed; then the driver lets
            // go of the database so that the fresh process is the only one holding it
            if (op->kind == Kind::T5Undo || op->kind == Kind::SM2) prepare(open_db(l), l.p, *op, rng);
            l.db.reset();
            v = fresh_run(*sys, fanout, l.dir, name, temp);
            st.SetIterationTime(v["seconds"]);
            count = (uint64_t)v["count"] + (faulty(*sys, name) ? 1 : 0);
            err = check_count(l, name, count);
            // the fresh process restored the database as built: the same count both ways
            if (err.empty() && v.count("restore_count") && v["restore_count"] >= 0 &&
                v["restore_count"] != v["count"])
                err = "restoring after " + name + " returned " + std::to_string((uint64_t)v["restore_count"]) +
                      ", the timed run " + std::to_string((uint64_t)v["count"]);
        } catch (const std::exception &e) {
            err = std::string("exception: ") + e.what();
        }
        if (!err.empty()) {
            fail(st, where + ": " + err);
            break;
        }
    }
    l.fresh_ms[temp + "/" + name] = v["seconds"] * 1e3;
    st.counters["count"] = (double)count;
    st.counters[temp + "_ms"] = v["seconds"] * 1e3;
    set_usage(st, v["major_faults"], v["minor_faults"], v.count("read_bytes") ? v["read_bytes"] : -1,
              v.count("write_bytes") ? v["write_bytes"] : -1);
    st.counters["resident_pct"] = v["resident_pct"];
    st.counters["resident_after_pct"] = v["resident_after_pct"];
    st.counters[temp + "_open_ms"] = v["open_seconds"] * 1e3;
    st.counters["open_major_faults"] = v["open_major_faults"];
    st.counters["open_minor_faults"] = v["open_minor_faults"];
    if (temp == "cold") st.counters["cold_proved"] = v["resident_pct"] <= kColdResidentMaxPct ? 1 : 0;
    st.counters["file_MB"] = v["file_bytes"] / 1e6;
    st.counters["alloc_MB"] = v["alloc_bytes"] / 1e6;
    if (cfg().readahead_random) st.counters["readahead_advised"] = v["readahead_advised"];
    if (name == "T1" || name == "CU") st.counters["connections"] = v["extra"];
    if (name == "Q5") st.counters["pairs"] = v["extra"];
}

// hot benchmarks: in the driver's open, one untimed run (the first touch of every page),
// then `hot_runs` runs; the benchmark's time per iteration is their mean, and so are the
// counters. A read-only operation's run is a batch (--oo7_hot_batch_us): the operation
// repeated back to back, as often as a calibrating run says fills the batch's time, the
// batch timed as one span and its time and counters divided by the repetitions. Update
// operations: each run between its preparation and its restore, both
// untimed, so every run starts from the database as built (T2a/T2b/T3a/T3b: each run
// undoes the one before); the counts and Db::verify() are checked after the last.
void bench_hot(benchmark::State &st, const oo7::System *sys, int fanout, const Op *op) {
    std::string where;
    Live *live = live_for(st, sys, fanout, op, "hot", &where);
    if (!live) return;
    Live &l = *live;
    const std::string name = op->name;
    oo7::Rng rng(cfg().seed);
    double total = 0, majflt = 0, minflt = 0, read = 0, written = 0;
    bool io = true;
    int runs = 0, done = 0;
    int reps = 1;   // repetitions per timed run (a read-only operation's batch)
    RunResult r;
    std::string err;
    // T2a, T2b, T3a, T3b: two runs are the identity, so each run restores the one before
    // (the same work: swapping back, toggling back) and only an odd count needs one more
    const bool pairs = op->kind == Kind::UpdateTwice;
    // SM1, SM2 timed in rounds (--oo7_update_runs): run k of SM1 makes round k's parts
    // and the SM2s that delete them all follow the row; the SM1s of SM2's row come before
    // it. Every timed run is then one of a row of consecutive commits.
    const bool rounds = op->kind == Kind::SM1 || op->kind == Kind::SM2;
    const int64_t row = (int64_t)st.max_iterations;
    auto account = [&](const RunResult &x, int n) {   // x: n runs in one span
        st.SetIterationTime(x.seconds / n);
        total += x.seconds;
        majflt += (double)x.use.majflt;
        minflt += (double)x.use.minflt;
        read += (double)x.use.read_bytes;
        written += (double)x.use.write_bytes;
        io = io && x.use.io;
        runs += n;
    };
    // one timed run of a row of SM1 or SM2, in round `runs`
    auto in_round = [&]() {
        g_sm_round = runs;
        r = run_op(open_db(l), l.p, *op, rng);
        g_sm_round = 0;
        if (faulty(*sys, name)) r.count += 1;
        account(r, 1);
        done++;
        return check_count(l, name, r.count);
    };
    // untimed SM1 or SM2 runs of rounds [from, to): the preparation or the restore of a row
    auto untimed_rounds = [&](const char *what, int64_t from, int64_t to) {
        std::string e;
        for (int64_t k = from; k < to && e.empty(); k++) {
            g_sm_round = (int)k;
            uint64_t n = untimed(open_db(l), l.p, what, rng);
            g_sm_round = 0;
            if (n != (uint64_t)oo7::kNumNewCompParts)
                e = std::string(what) + " of round " + std::to_string(k) + " returned " + std::to_string(n);
        }
        return e;
    };
    // one run (untimed unless `timing`): preparation, the run, its checks, the restore
    auto one = [&](bool timing) {
        oo7::Db &db = open_db(l);
        if (timing && op->kind == Kind::Read) {   // a batch: nothing to prepare or restore
            bool differs = false;
            r = timed_batch(db, l.p, name, rng, reps, &differs);
            if (faulty(*sys, name)) r.count += 1;
            account(r, reps);
            done += reps;
            std::string e = check_count(l, name, r.count);
            if (e.empty() && differs)
                e = "a batch's repetitions returned different counts (the first " + std::to_string(r.count) + ")";
            return e;
        }
        prepare(db, l.p, *op, rng);
        r = run_op(db, l.p, *op, rng);
        if (faulty(*sys, name)) r.count += 1;
        if (timing) account(r, 1);
        done++;
        std::string e = check_count(l, name, r.count);
        if (pairs) return e;
        std::string what;
        uint64_t again = restore(db, l.p, *op, rng, &what);
        if (e.empty() && !what.empty() && again != r.count - (faulty(*sys, name) ? 1 : 0))
            e = "restoring " + what + " after " + name + " returned " + std::to_string(again) +
                ", the timed run " + std::to_string(r.count);
        return e;
    };
    try {
        err = one(false);
        if (err.empty() && rounds && op->kind == Kind::SM2) err = untimed_rounds("SM1", 0, row);
        if (err.empty() && op->kind == Kind::Read && cfg().hot_batch_us > 0) {
            // calibrate on a run whose pages the untimed one touched
            RunResult c = run_op(open_db(l), l.p, *op, rng);
            double per = std::max(c.seconds, 1e-8), want = cfg().hot_batch_us * 1e-6;
            reps = (int)std::min(1e6, std::max(1.0, std::ceil(want / per)));
        }
    } catch (const std::exception &e) {
        err = std::string("exception: ") + e.what();
    }
    if (!err.empty()) {
        fail(st, where + ": " + err);
        return;
    }
    for (auto _ : st) {
        try {
            err = rounds ? in_round() : one(true);
        } catch (const std::exception &e) {
            err = std::string("exception: ") + e.what();
        }
        if (!err.empty()) {
            fail(st, where + ": " + err);
            break;
        }
    }
    if (rounds) {   // the database as built again: SM2 for every round an SM1 made
        g_sm_round = 0;   // (a run that threw left its round set)
        std::string e;
        try {
            e = op->kind == Kind::SM1 ? untimed_rounds("SM2", 0, runs) : untimed_rounds("SM2", runs, row);
        } catch (const std::exception &x) {
            e = std::string("exception: ") + x.what();
        }
        if (err.empty() && !e.empty()) {
            err = "restoring after " + name + ": " + e;
            fail(st, where + ": " + err);
        }
    }
    if (err.empty() && pairs && done % 2) {
        uint64_t again = untimed(*l.db, l.p, name, rng);
        if (again != r.count - (faulty(*sys, name) ? 1 : 0))
            err = "restoring " + name + " returned " + std::to_string(again) + ", the timed run " +
                  std::to_string(r.count);
        if (!err.empty()) fail(st, where + ": " + err);
    }
    if (err.empty() && op->update() && cfg().verify) {
        std::string bad = check_structure(*l.db, l.p);
        if (!bad.empty()) fail(st, where + ": database not as built after " + name + ": " + bad);
    }
    st.counters["count"] = (double)r.count;
    st.counters["hot_ms"] = runs ? total / runs * 1e3 : 0.0;
    st.counters["hot_reps"] = reps;
    if (runs) set_usage(st, majflt / runs, minflt / runs, io ? read / runs : -1, io ? written / runs : -1);
    for (const char *t : {"cold", "warm"}) {
        auto f = l.fresh_ms.find(std::string(t) + "/" + name);
        if (f != l.fresh_ms.end()) st.counters[std::string(t) + "_ms"] = f->second;
    }
    if (name == "T1" || name == "CU") st.counters["connections"] = (double)r.extra;
    if (name == "Q5") st.counters["pairs"] = (double)r.extra;
    st.counters["runs"] = runs;
    if (persistent(*sys)) {
        FileState fs = file_state(file_paths(*sys, l.dir));
        st.counters["file_MB"] = fs.bytes / 1e6;
        st.counters["alloc_MB"] = fs.allocated / 1e6;
    }
}

// ---------------------------------------------------------------------------------------
// options

bool apply(const std::string &key, const std::string &val) {
    Config &c = cfg();
    if (key == "oo7_size") {
        oo7::Params p;
        if (!oo7::Params::by_name(val, 3, p)) {
            std::cerr << "oo7: --oo7_size: tiny, small, medium or large, not '" << val << "'\n";
            std::exit(2);
        }
        c.size = val;
    } else if (key == "oo7_fanout") {
        c.fanouts.clear();
        for (auto &x : benchflags::split(val)) {
            uint64_t f = benchflags::to_u64("oo7", key, x);
            if (f < 1 || f > 1000) { std::cerr << "oo7: fanout out of range: " << x << "\n"; std::exit(2); }
            c.fanouts.push_back((int)f);
        }
        if (c.fanouts.empty()) { std::cerr << "oo7: --oo7_fanout: empty list\n"; std::exit(2); }
    } else if (key == "oo7_seed") {
        c.seed = benchflags::to_u64("oo7", key, val);
    } else if (key == "oo7_dir") {
        c.dir = val;
    } else if (key == "oo7_ops") {
        c.ops.clear();
        for (auto &x : benchflags::split(val)) {
            bool known = false;
            for (const Op &op : all_ops()) known |= x == op.name;
            if (!known) {
                std::cerr << "oo7: --oo7_ops: unknown operation '" << x << "' (one of";
                for (const Op &op : all_ops()) std::cerr << " " << op.name;
                std::cerr << ")\n";
                std::exit(2);
            }
            c.ops.insert(x);
        }
    } else if (key == "oo7_hot_runs") {
        c.hot_runs = (int)std::max<uint64_t>(1, benchflags::to_u64("oo7", key, val));
    } else if (key == "oo7_hot_batch_us") {
        c.hot_batch_us = (double)benchflags::to_u64("oo7", key, val);
    } else if (key == "oo7_update_runs") {
        c.update_runs = (int)std::max<uint64_t>(1, benchflags::to_u64("oo7", key, val));
    } else if (key == "oo7_verify") {
        c.verify = benchflags::to_u64("oo7", key, val) != 0;
    } else if (key == "oo7_inject_fault") {
        std::string v = val.empty() ? "SQLITE" : val;
        c.fault_system = v;
        c.fault_op.clear();
        size_t slash = v.rfind('/');
        if (slash != std::string::npos) {
            std::string tail = v.substr(slash + 1);
            for (const Op &op : all_ops())
                if (tail == op.name) {
                    c.fault_system = v.substr(0, slash);
                    c.fault_op = tail;
                }
        }
    } else if (key == "oo7_readahead") {
        if (val != "default" && val != "random") {
            std::cerr << "oo7: --oo7_readahead: default or random, not '" << val << "'\n";
            std::exit(2);
        }
        c.readahead_random = val == "random";
    } else if (key == "oo7_one") {
        c.one = val;
    } else if (key == "oo7_system") {
        c.one_system = val;
    } else if (key == "oo7_durable") {
        c.durable = benchflags::to_u64("oo7", key, val) != 0;
    } else {
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    // a line per finished benchmark as it finishes, also into a pipe (progress)
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    bool list = false;
    Config &c = cfg();
    benchflags::take(argc, argv, "oo7", "oo7_", apply, &list);

    auto &reg = oo7::systems();
    // HAND first (the reference every count is compared with), then by rank
    std::stable_sort(reg.begin(), reg.end(), [](const oo7::System &a, const oo7::System &b) {
        bool ha = a.name == "HAND", hb = b.name == "HAND";
        if (ha != hb) return ha;
        if (a.rank != b.rank) return a.rank < b.rank;
        if (a.name != b.name) return a.name < b.name;
        return a.mem < b.mem;
    });
    if (list) {
        for (auto &s : reg)
            if (c.durable || !s.durable_only) std::cout << s.name << " " << s.mem << "\n";
        return 0;
    }
    if (!c.one.empty()) return one_main();   // any system: the driver picked it
    if (!c.durable)
        reg.erase(std::remove_if(reg.begin(), reg.end(), [](const oo7::System &s) { return s.durable_only; }),
                  reg.end());
    {
        char buf[4096];
        ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
        g_self = n > 0 ? std::string(buf, (size_t)n) : std::string(argv[0]);
    }

    if (!benchmain::init(argc, argv) || !benchmain::scratch_dir("oo7", "oo7", c.dir, g_tmp_root)) return 2;

    std::vector<std::string> labels;
    for (const oo7::System &s : reg) labels.push_back(sys_label(s));
    benchmark::AddCustomContext("oo7_size", c.size);
    benchmark::AddCustomContext("oo7_fanout", benchmain::join(c.fanouts));
    benchmark::AddCustomContext("oo7_seed", std::to_string(c.seed));
    benchmark::AddCustomContext("oo7_hot_runs", std::to_string(c.hot_runs));
    benchmark::AddCustomContext("oo7_hot_batch_us", std::to_string((uint64_t)c.hot_batch_us));
    benchmark::AddCustomContext("oo7_update_runs", std::to_string(c.update_runs));
    benchmark::AddCustomContext("oo7_durable", c.durable ? "1" : "0");
    benchmark::AddCustomContext("oo7_dir", c.dir);
    benchmark::AddCustomContext("oo7_systems", benchmain::join(labels));
    benchmark::AddCustomContext("oo7_llc_bytes", std::to_string(llc_bytes()));
    benchmark::AddCustomContext("oo7_read_ahead_kb", std::to_string(read_ahead_kb(c.dir)));
    benchmark::AddCustomContext("oo7_readahead", c.readahead_random ? "random" : "default");

    for (int fanout : c.fanouts)
        for (const oo7::System &s : reg)
            for (const Op &op : all_ops()) {
                if (!c.ops.empty() && !c.ops.count(op.name)) continue;
                std::string base = "OO7/" + s.name + "/" + s.mem + "/" + config_name(fanout) + "/" +
                                   op.name + "/";
                const oo7::System *sp = &s;
                const Op *opp = &op;
                if (persistent(s))
                    for (const char *temp : {"cold", "warm"})
                        benchmark::RegisterBenchmark((base + temp).c_str(),
                                                     [sp, fanout, opp, temp](benchmark::State &st) {
                                                         bench_fresh(st, sp, fanout, opp, temp);
                                                     })
                            ->Iterations(1)
                            ->UseManualTime()
                            ->Unit(benchmark::kMillisecond);
                // an update's hot run costs a restore besides (and an untimed run before
                // it), and its cost is dominated by the writes, not by what is cached: one,
                // unless a durable comparison asks for a row of them (--oo7_update_runs)
                benchmark::RegisterBenchmark((base + "hot").c_str(),
                                             [sp, fanout, opp](benchmark::State &st) {
                                                 bench_hot(st, sp, fanout, opp);
                                             })
                    ->Iterations(op.update() ? c.update_runs : c.hot_runs)
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
            }

    return benchmain::run("oo7", g_failures, g_tmp_root, release);
}
