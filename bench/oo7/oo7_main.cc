// oo7_main.cc -- options, the cold/hot protocol and main() of the OO7 benchmark binary.
//
// Every implementation linked in registers an oo7::System (oo7.h); this file builds each
// system's database once per (size, fanout), checks its counts, then runs every operation
// of spec section 3 as Google Benchmark benchmarks with manual time:
//
//   OO7/<system>/<mem>/<size>_f<fanout>/<op>/cold   one run after emptying the caches
//   OO7/<system>/<mem>/<size>_f<fanout>/<op>/hot    the next --oo7_hot_runs runs (their mean)
//
// (a system name may hold a '/', e.g. HASH/ILIST: parse the name from the right.)
// Cold: persistent systems close the database, drop every file of theirs from the page
// cache (fdatasync + posix_fadvise DONTNEED; the counters dropped_MB and cached_pct say
// how much was dropped and how much stayed; no file found is an error) and reopen it; every system then sweeps a buffer of 4x the last-level cache a few times.
// Every run is bracketed by db.begin()/db.commit() (commit included in its time) and
// starts from the reseeded random stream, so every run does the same work. Update
// operations (T2x, T3x, T5do/T5undo, SM1/SM2, CU) are cold only and leave the database as
// built: T2a/T2b/T3a/T3b run a second time untimed (two swaps or two toggles are the
// identity), T2c/T3c are identities already, T5do is followed by an untimed T5undo (and
// T5undo preceded by an untimed T5do), SM1 by an untimed SM2 (SM2 preceded by SM1). After
// each update operation the object counts and Db::verify() are checked again.
//
// Checks: every run's count must equal the system's own first (cold) count, the count of
// the first system that ran the operation (HAND, which runs first, when it is linked in;
// a count that fails the exact check below is no reference), and, for the operations
// whose result the spec fixes exactly, the value derived from the parameters. A mismatch turns the benchmark into an error row (SkipWithError with both
// numbers) and makes the exit status 3.
//
// Options (besides Google Benchmark's --benchmark_*):
//   --oo7_size=small         tiny | small | medium | large
//   --oo7_fanout=3           connections per atomic part; a list runs each: 3,6,9
//   --oo7_seed=1             the generator's and the operations' random seed
//   --oo7_dir=PATH           where database files go (default: a new directory in $TMPDIR);
//                            each system builds into its own subdirectory, removed after it
//   --oo7_ops=T1,Q1          only these operations (default: all)
//   --oo7_hot_runs=3         hot runs per operation
//   --oo7_verify=1           re-check counts and Db::verify() after every update operation
//   --oo7_list               print the registered systems and exit
//   --oo7_inject_fault=NAME[/OP]   (tests) add 1 to every count of system NAME (of OP
//                            only): the run must turn into an error row
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
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
#include "../flags.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
    std::string size = "small";
    std::vector<int> fanouts{3};
    uint64_t seed = 1;
    std::string dir;
    std::set<std::string> ops;   // empty: all
    int hot_runs = 3;
    bool verify = true;
    std::string fault_system, fault_op;   // --oo7_inject_fault
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
    bool hot() const { return kind == Kind::Read; }
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
    if (op == "SM1") return oo7::sm1(db, p, rng);
    if (op == "SM2") return oo7::sm2(db, p);
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
// files and caches

void remove_dir(const std::string &dir) {
    DIR *d = opendir(dir.c_str());
    if (d) {
        while (struct dirent *e = readdir(d)) {
            if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
            std::string p = dir + "/" + e->d_name;
            struct stat sb;
            if (lstat(p.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode)) remove_dir(p);
            else ::unlink(p.c_str());
        }
        closedir(d);
    }
    ::rmdir(dir.c_str());
}

std::string sanitize(const std::string &s) {
    std::string o;
    for (char c : s) o += (std::isalnum((unsigned char)c) || c == '-' || c == '_') ? c : '_';
    return o;
}

// Drop a file from the page cache: write back what is dirty, then DONTNEED. Returns the
// pages still resident afterwards (mincore), and the file's pages in *total.
uint64_t drop_file(const std::string &path, uint64_t *total) {
    *total = 0;
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return 0;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    uint64_t resident = 0;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && sb.st_size > 0) {
        long page = sysconf(_SC_PAGESIZE);
        size_t len = (size_t)sb.st_size;
        void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
            size_t pages = (len + page - 1) / page;
            std::vector<unsigned char> vec(pages);
            if (mincore(m, len, vec.data()) == 0)
                for (unsigned char v : vec) resident += v & 1;
            *total = pages;
            munmap(m, len);
        }
    }
    ::close(fd);
    return resident;
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
void sweep_caches() {
    static std::vector<unsigned char> buf(4 * llc_bytes(), 1);
    unsigned acc = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < buf.size(); i += 64) {
            buf[i] = (unsigned char)(buf[i] + pass + 1);
            acc += buf[i];
        }
    g_sweep_sink = acc;
}

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---------------------------------------------------------------------------------------
// the live database: one system at one (size, fanout) at a time; benchmarks run in
// registration order, so a system's database is built by its first benchmark and dropped
// when the next system's first benchmark comes

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
    std::string warm_op;    // the operation whose cold run was the last one on this open
    std::map<std::string, uint64_t> own;   // op -> first count of this system
    std::map<std::string, double> cold_ms; // op -> its cold run's time
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
bool persistent(const oo7::System &s) { return s.mem == "persistent"; }

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
    } catch (const std::exception &e) {
        l.error = sys_label(sys) + " " + config_name(fanout) + ": build failed: " + e.what();
        note_failure(l.error);
        l.db.reset();
    }
    return l;
}

// Empty the caches before a cold run; returns the fraction of the database's file pages
// still cached after the drop (persistent systems; -1 for transient ones) and the bytes
// of the files dropped in *dropped.
double make_cold(Live &l, uint64_t *dropped) {
    double cached = -1;
    *dropped = 0;
    if (persistent(*l.sys)) {
        l.db.reset();   // closes: every mapping and handle goes
        uint64_t resident = 0, total = 0;
        for (const std::string &f : l.sys->files) {
            std::string path = !f.empty() && f[0] == '/' ? f : l.dir + "/" + f;
            uint64_t t = 0;
            resident += drop_file(path, &t);
            total += t;
        }
        cached = total ? (double)resident / (double)total : 0.0;
        *dropped = total * (uint64_t)sysconf(_SC_PAGESIZE);
        l.db = l.sys->open(l.dir);
        if (!l.db) throw std::runtime_error("reopen returned no database");
    }
    sweep_caches();
    l.warm_op.clear();
    return cached;
}

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
};

// One timed run: reseeded stream, begin, the operation, commit.
RunResult timed(Live &l, const std::string &op, oo7::Rng &rng) {
    RunResult r;
    rng.seed(cfg().seed);
    auto t0 = Clock::now();
    l.db->begin();
    r.count = body(op, *l.db, l.p, rng, &r.extra);
    l.db->commit();
    r.seconds = since(t0);
    if (faulty(*l.sys, op)) r.count += 1;
    return r;
}

// One untimed run in its own transaction (restores, preparations).
uint64_t untimed(Live &l, const std::string &op, oo7::Rng &rng) {
    rng.seed(cfg().seed);
    l.db->begin();
    uint64_t n = body(op, *l.db, l.p, rng, nullptr);
    l.db->commit();
    return n;
}

// CU (spec section 3): one transaction of T1, T1, T2a, commit; the time reported is the
// total less the two T1 runs (cold and hot), i.e. T2a plus the commit on cached data.
RunResult timed_cu(Live &l, oo7::Rng &rng) {
    RunResult r;
    rng.seed(cfg().seed);
    auto t0 = Clock::now();
    l.db->begin();
    auto a = Clock::now();
    l.db->t1(&r.extra);
    double t1_cold = since(a);
    auto b = Clock::now();
    l.db->t1(&r.extra);
    double t1_hot = since(b);
    r.count = l.db->t2('a');
    l.db->commit();
    r.seconds = since(t0) - t1_cold - t1_hot;
    if (faulty(*l.sys, "CU")) r.count += 1;
    return r;
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
        o << op << " returned " << count << ", its own first (cold) run returned " << own->second
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

void fail(benchmark::State &st, const std::string &what) {
    note_failure(what);
    st.SkipWithError(what.c_str());
}

// cold benchmarks: one run after emptying the caches
void bench_cold(benchmark::State &st, const oo7::System *sys, int fanout, const Op *op) {
    Live &l = acquire(*sys, fanout);
    set_common(st, l);
    st.SetLabel(sys_label(*sys));
    if (!l.error.empty()) {
        st.SkipWithError(l.error.c_str());
        return;
    }
    const std::string name = op->name;
    const std::string where = sys_label(*sys) + " " + config_name(fanout) + " " + name + " cold";
    oo7::Rng rng(cfg().seed);
    RunResult r;
    double cached = -1;
    uint64_t dropped = 0;
    std::string err;
    for (auto _ : st) {
        try {
            // preparations that put the database in the state the operation needs
            if (op->kind == Kind::T5Undo) untimed(l, "T5do", rng);
            if (op->kind == Kind::SM2) untimed(l, "SM1", rng);
            cached = make_cold(l, &dropped);
            if (cached >= 0 && dropped == 0)
                throw std::runtime_error("none of the files the system names (System::files) is in " +
                                         l.dir + ": nothing to drop from the page cache");
            r = op->kind == Kind::CU ? timed_cu(l, rng) : timed(l, name, rng);
            st.SetIterationTime(r.seconds);
            err = check_count(l, name, r.count);
            // restore the database as built
            uint64_t again = 0;
            std::string restore;
            switch (op->kind) {
            case Kind::UpdateTwice: again = untimed(l, name, rng); restore = name; break;
            case Kind::CU: again = untimed(l, "T2a", rng); restore = "T2a"; break;
            case Kind::T5Do: again = untimed(l, "T5undo", rng); restore = "T5undo"; break;
            case Kind::SM1: again = untimed(l, "SM2", rng); restore = "SM2"; break;
            default: break;
            }
            if (err.empty() && !restore.empty() && again != r.count - (faulty(*sys, name) ? 1 : 0))
                err = "restoring " + restore + " after " + name + " returned " +
                      std::to_string(again) + ", the timed run " + std::to_string(r.count);
            if (err.empty() && op->update() && cfg().verify) {
                std::string bad = check_structure(*l.db, l.p);
                if (!bad.empty()) err = "database not as built after " + name + ": " + bad;
            }
            if (op->kind == Kind::Read) l.warm_op = name;
        } catch (const std::exception &e) {
            err = std::string("exception: ") + e.what();
            if (!l.db) l.error = where + ": " + err;   // a failed reopen: the system is gone
        }
        if (!err.empty()) {
            fail(st, where + ": " + err);
            break;
        }
    }
    l.cold_ms[name] = r.seconds * 1e3;
    st.counters["count"] = (double)r.count;
    st.counters["cold_ms"] = r.seconds * 1e3;
    if (name == "T1" || name == "CU") st.counters["connections"] = (double)r.extra;
    if (name == "Q5") st.counters["pairs"] = (double)r.extra;
    if (cached >= 0) {
        st.counters["cached_pct"] = cached * 100.0;   // of the files' pages, after the drop
        st.counters["dropped_MB"] = dropped / 1e6;
    }
}

// hot benchmarks: after the cold run, in the same open, `hot_runs` runs; the benchmark's
// time per iteration is their mean

void bench_hot(benchmark::State &st, const oo7::System *sys, int fanout, const Op *op) {
    Live &l = acquire(*sys, fanout);
    set_common(st, l);
    st.SetLabel(sys_label(*sys));
    if (!l.error.empty()) {
        st.SkipWithError(l.error.c_str());
        return;
    }
    const std::string name = op->name;
    const std::string where = sys_label(*sys) + " " + config_name(fanout) + " " + name + " hot";
    oo7::Rng rng(cfg().seed);
    double total = 0;
    int runs = 0;
    RunResult r;
    std::string err;
    try {
        // the cold run did not just happen (filtered out): one untimed run to warm up
        if (l.warm_op != name) {
            RunResult w = timed(l, name, rng);
            err = check_count(l, name, w.count);
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
            r = timed(l, name, rng);
            st.SetIterationTime(r.seconds);
            total += r.seconds;
            runs++;
            err = check_count(l, name, r.count);
        } catch (const std::exception &e) {
            err = std::string("exception: ") + e.what();
        }
        if (!err.empty()) {
            fail(st, where + ": " + err);
            break;
        }
    }
    l.warm_op = name;
    st.counters["count"] = (double)r.count;
    st.counters["hot_ms"] = runs ? total / runs * 1e3 : 0.0;
    auto cm = l.cold_ms.find(name);
    if (cm != l.cold_ms.end()) st.counters["cold_ms"] = cm->second;
    if (name == "T1") st.counters["connections"] = (double)r.extra;
    if (name == "Q5") st.counters["pairs"] = (double)r.extra;
    st.counters["runs"] = runs;
}

// ---------------------------------------------------------------------------------------
// options

bool apply(const std::string &key, const std::string &val, bool *list) {
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
    } else if (key == "oo7_list") {
        *list = val.empty() || val != "0";
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
    benchflags::take(argc, argv, "oo7", "oo7_",
                     [&](const std::string &k, const std::string &v) { return apply(k, v, &list); });

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
        for (auto &s : reg) std::cout << s.name << " " << s.mem << "\n";
        return 0;
    }

    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

    if (c.dir.empty()) {
        const char *t = std::getenv("TMPDIR");
        std::string tmpl = std::string(t && *t ? t : "/tmp") + "/oo7.XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back(0);
        if (!mkdtemp(buf.data())) {
            std::cerr << "oo7: cannot create a directory from " << tmpl << "\n";
            return 2;
        }
        c.dir = g_tmp_root = buf.data();
    } else {
        ::mkdir(c.dir.c_str(), 0755);
    }

    std::ostringstream fan, sys;
    for (size_t i = 0; i < c.fanouts.size(); i++) fan << (i ? "," : "") << c.fanouts[i];
    for (size_t i = 0; i < reg.size(); i++) sys << (i ? "," : "") << sys_label(reg[i]);
    benchmark::AddCustomContext("oo7_size", c.size);
    benchmark::AddCustomContext("oo7_fanout", fan.str());
    benchmark::AddCustomContext("oo7_seed", std::to_string(c.seed));
    benchmark::AddCustomContext("oo7_hot_runs", std::to_string(c.hot_runs));
    benchmark::AddCustomContext("oo7_dir", c.dir);
    benchmark::AddCustomContext("oo7_systems", sys.str());
    benchmark::AddCustomContext("oo7_llc_bytes", std::to_string(llc_bytes()));

    for (int fanout : c.fanouts)
        for (const oo7::System &s : reg)
            for (const Op &op : all_ops()) {
                if (!c.ops.empty() && !c.ops.count(op.name)) continue;
                std::string base = "OO7/" + s.name + "/" + s.mem + "/" + config_name(fanout) + "/" +
                                   op.name + "/";
                const oo7::System *sp = &s;
                const Op *opp = &op;
                benchmark::RegisterBenchmark((base + "cold").c_str(),
                                             [sp, fanout, opp](benchmark::State &st) {
                                                 bench_cold(st, sp, fanout, opp);
                                             })
                    ->Iterations(1)
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
                if (!op.hot()) continue;
                benchmark::RegisterBenchmark((base + "hot").c_str(),
                                             [sp, fanout, opp](benchmark::State &st) {
                                                 bench_hot(st, sp, fanout, opp);
                                             })
                    ->Iterations(c.hot_runs)
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
            }

    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    release();
    if (!g_tmp_root.empty()) remove_dir(g_tmp_root);
    if (g_failures > 0) {
        std::cerr << "oo7: " << g_failures << " run(s) FAILED\n";
        return 3;
    }
    return 0;
}
