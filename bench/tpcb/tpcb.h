// tpcb.h -- what every TPC-B system in the benchmark binary shares: the options, the
// seeded random stream, the transaction generator, the invariant check, the memory probes,
// the registry of systems and the one benchmark loop (a template over an engine).
//
// The workload (../../../shared/specs/tpcb.md): branch, teller and account relations of
// SF, 10*SF and A*SF records (100 declared bytes each), an appended history (50 bytes).
// Ids are dense from 0: teller t belongs to branch t / 10, account a to branch a / A.
// One transaction: a uniform teller (its branch is the transaction's), an account of that
// branch with probability 0.85 (else of one of the other SF-1 branches, when SF > 1),
// uniform within the branch, delta uniform in [-999999, 999999]; account, teller and
// branch balances += delta, each by a keyed retrieval and an in-place update; one history
// record appended; the account's new balance is the result.
//
// Counters of each benchmark (per iteration, averaged): load_ms, txn_ms (also the manual
// iteration time), txn_cpu_ms (the thread's CPU time), us_per_txn, ms_per_200k, peak_rss_MB
// (growth of VmHWM over VmRSS before the load), heap_MB (malloc'd bytes not freed after the
// run), file_MB / file_alloc_MB (database files: size / allocated blocks), raw_MB (100 bytes
// per branch/teller/account + 50 per history record) and the ratios to it, result_sum (sum
// of the transactions' results: equal for every system on the same stream), sf, seed,
// accounts, txns; and per transaction, over the timed region (from /proc/self/io and
// getrusage): written_KB_per_txn (bytes the process passed to write system calls: journal,
// WAL, pages), disk_KB_per_txn (bytes it caused to be sent to storage, page-cache
// writeback of mmap'd pages included), writes_per_txn (write system calls),
// faults_per_txn (minor + major page faults), major_faults_per_txn.
//
// An engine E provides:
//   static constexpr bool kData, kPersistent;
//   bool open(const std::string &dir, const Run &run, bool fresh, std::string &err);
//   bool load(const Run &run, std::string &err);          // SF branches, 10 SF tellers, A SF accounts
//   int64_t txn(const Txn &t);                             // may set failed/err
//   bool finish(std::string &err);                         // end of the run (commit)
//   bool sums(Sums &s, std::string &err);                  // walk every relation
//   void close();
//   bool failed; std::string err;
#pragma once

#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace tpcb {

// ---------------------------------------------------------------------------------------
// options (set by main from --tpcb_* flags)
struct Config {
    std::vector<int> sfs{2, 4};
    uint32_t accounts = 1000;       // A: accounts per branch (TPC-B: 100000)
    uint64_t txns = 20000;          // N: transactions per run (reference: 200000)
    std::vector<uint64_t> seeds{1};
    std::string dir;                // where database files go (a fresh subdirectory per run)
    uint64_t commit_every = 0;      // SQLite/LMDB: 0 = one write transaction per run
    int iterations = 1;             // benchmark iterations per (system, SF, seed)
    bool reopen = true;             // persistent systems: close, reopen and check again
    bool inject_fault = false;      // tests: run one transaction too many (the check must fail)
    bool durable = false;           // also register the durable systems (journalled, WAL, sync)
};
Config &config();

// One benchmark run's parameters.
struct Run {
    uint32_t sf;
    uint32_t accounts;
    uint64_t txns;
    uint64_t seed;
    uint64_t commit_every;
    bool reopen_loaded = false;     // persistent systems: close and reopen after the load, so
                                    // that the timed region starts from the file (durable runs)
    uint32_t tellers() const { return 10 * sf; }
    uint64_t naccounts() const { return (uint64_t)accounts * sf; }
};

// ---------------------------------------------------------------------------------------
// the random stream: splitmix64, identical for every system
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull ^ 0xD1B54A32D192ED03ull) {}
    inline uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // uniform in [0, n) (multiply-shift on the top 32 bits; n < 2^32)
    inline uint32_t below(uint32_t n) { return (uint32_t)(((next() >> 32) * (uint64_t)n) >> 32); }
};

struct Txn {
    uint32_t aid, tid, bid;
    int32_t delta;
    uint32_t time;      // the transaction's sequence number (deterministic "timestamp")
};

struct Workload {
    Rng rng;
    uint32_t sf, A, tellers;
    explicit Workload(const Run &r) : rng(r.seed), sf(r.sf), A(r.accounts), tellers(r.tellers()) {}
    __attribute__((always_inline)) inline Txn next(uint32_t i) {
        Txn t;
        t.tid = rng.below(tellers);
        t.bid = t.tid / 10;
        uint32_t ab = t.bid;
        if (sf > 1 && rng.below(100) >= 85) {       // 15%: an account of another branch
            ab = rng.below(sf - 1);
            if (ab >= t.bid) ab++;
        }
        t.aid = ab * A + rng.below(A);
        t.delta = (int32_t)rng.below(1999999) - 999999;
        t.time = i;
        return t;
    }
};

// ---------------------------------------------------------------------------------------
// the records of the reference systems (tpcb_refs.cc, tpcb_peers.cc), laid out as the
// generated structs are (100 / 50 declared bytes; the C structs are 104 / 52 bytes)
struct Branch {
    uint32_t id;
    int64_t balance;
    char filler[88];
};
struct Teller {
    uint32_t id, branch_id;
    int64_t balance;
    char filler[84];
};
struct Account {
    uint32_t id, branch_id;
    int64_t balance;
    char filler[84];
};
struct History {
    uint32_t account_id, teller_id, branch_id;
    int32_t delta;
    uint32_t time;
    char filler[30];
};
static_assert(sizeof(Account) == 104 && sizeof(History) == 52, "record layout");

// ---------------------------------------------------------------------------------------
// the invariant
struct Sums {
    int64_t branch = 0, teller = 0, account = 0, delta = 0;
    uint64_t nbranch = 0, nteller = 0, naccount = 0, nhistory = 0;
};
// "" if sum(account) = sum(teller) = sum(branch) = sum(history.delta), the history holds
// exactly N records and every relation its cardinality; else what is wrong.
std::string check_invariant(const Sums &s, const Run &r);

// ---------------------------------------------------------------------------------------
// CPU time of the calling thread (robust against other processes sharing the cores)
inline double thread_cpu_seconds() {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// ---------------------------------------------------------------------------------------
// memory probes
uint64_t heap_bytes();           // bytes malloc has handed out and not got back (mallinfo2)
uint64_t rss_bytes();            // VmRSS now
uint64_t hwm_bytes();            // VmHWM (peak RSS since the last reset)
void reset_hwm();                // echo 5 > /proc/self/clear_refs
// I/O and faults of the process so far (/proc/self/io, getrusage)
struct IoCounts {
    double wchar = 0, write_bytes = 0, syscw = 0, minflt = 0, majflt = 0;
};
IoCounts io_counts();
void dir_bytes(const std::string &dir, uint64_t *size, uint64_t *allocated);
std::string make_run_dir(const std::string &name);   // a fresh empty directory
void remove_dir(const std::string &dir);

// ---------------------------------------------------------------------------------------
// the registry of systems (each driver object file adds its own at static-init time)
struct System {
    std::string name;       // AVL, QSORT, HASH0, HASH1, IARRAY, BASELINE, HANDC, SQLITE, LMDB...
    std::string mem;        // persistent | transient | none
    std::string kind;       // p2 | reference
    int rank;               // registration order
    void (*run)(benchmark::State &, const Run &, const System &);
    bool durable;           // atomic, durable transactions (registered by --tpcb_durable=1 only)
};
std::vector<System> &registry();
struct Registrar {
    explicit Registrar(const System &s) { registry().push_back(s); }
};
void note_failure(const std::string &what);   // counted; main exits nonzero

// ---------------------------------------------------------------------------------------
// the benchmark loop: per iteration load a fresh database (timed: load_ms), run N
// transactions (timed: the manual iteration time), check the invariant (and, persistent,
// again after close + reopen), measure memory.
template <class E>
void run_bench(benchmark::State &st, const Run &r, const System &sys) {
    using clock = std::chrono::steady_clock;
    double load_s = 0, txn_s = 0, cpu_s = 0, heap = 0, rss = 0, fsize = 0, falloc = 0, result = 0;
    IoCounts io;   // sums over iterations of the timed region's deltas
    int64_t iters = 0;
    std::string tag = sys.name + "_" + sys.mem;
    auto fail = [&](const std::string &msg) {
        std::string m = tag + " sf=" + std::to_string(r.sf) + " seed=" + std::to_string(r.seed) + ": " + msg;
        note_failure(m);
        st.SkipWithError(m.c_str());
    };
    for (auto _ : st) {
        std::string dir = make_run_dir(tag);
        std::string err;
        E e;
        uint64_t rss0 = rss_bytes(), heap0 = heap_bytes();
        reset_hwm();
        auto t0 = clock::now();
        if (!e.open(dir, r, true, err) || !e.load(r, err)) {
            e.close();
            remove_dir(dir);
            fail("load: " + err);
            break;
        }
        auto t1 = clock::now();
        double c1 = thread_cpu_seconds();
        IoCounts io1 = io_counts();
        Workload w(r);
        int64_t rsum = 0;
        const uint32_t n = (uint32_t)r.txns + (config().inject_fault ? 1 : 0);
        for (uint32_t i = 0; i < n; i++) {
            Txn t = w.next(i);
            rsum += e.txn(t);
        }
        bool fin = e.finish(err);
        auto t2 = clock::now();
        double c2 = thread_cpu_seconds();
        IoCounts io2 = io_counts();
        benchmark::DoNotOptimize(rsum);
        if (e.failed || !fin) {
            e.close();
            remove_dir(dir);
            fail("transactions: " + (e.failed ? e.err : err));
            break;
        }
        double ts = std::chrono::duration<double>(t2 - t1).count();
        st.SetIterationTime(ts);
        load_s += std::chrono::duration<double>(t1 - t0).count();
        txn_s += ts;
        cpu_s += c2 - c1;
        io.wchar += io2.wchar - io1.wchar;
        io.write_bytes += io2.write_bytes - io1.write_bytes;
        io.syscw += io2.syscw - io1.syscw;
        io.minflt += io2.minflt - io1.minflt;
        io.majflt += io2.majflt - io1.majflt;
        uint64_t hwm = hwm_bytes(), heap1 = heap_bytes();
        heap += heap1 > heap0 ? (double)(heap1 - heap0) : 0.0;
        rss += hwm > rss0 ? (double)(hwm - rss0) : 0.0;
        result = (double)rsum;
        iters++;
        if (E::kData) {
            Sums s;
            std::string bad;
            if (!e.sums(s, err)) bad = "walking the relations: " + err;
            else bad = check_invariant(s, r);
            if (bad.empty() && E::kPersistent && config().reopen) {
                e.close();
                Sums s2;
                if (!e.open(dir, r, false, err)) bad = "reopen: " + err;
                else if (!e.sums(s2, err)) bad = "walking the relations after reopen: " + err;
                else if (!(bad = check_invariant(s2, r)).empty()) bad = "after reopen: " + bad;
            }
            e.close();
            if (bad.empty() && e.failed) bad = e.err;
            uint64_t fs = 0, fa = 0;
            dir_bytes(dir, &fs, &fa);
            fsize += (double)fs;
            falloc += (double)fa;
            remove_dir(dir);
            if (!bad.empty()) {
                fail("TPC-B invariant violated: " + bad);
                break;
            }
        } else {
            e.close();
            remove_dir(dir);
        }
    }
    if (iters == 0) return;
    using C = benchmark::Counter;
    const double k = (double)iters, N = (double)r.txns;
    st.counters["sf"] = r.sf;
    st.counters["seed"] = (double)r.seed;
    st.counters["accounts"] = r.accounts;
    st.counters["txns"] = N;
    st.counters["load_ms"] = load_s / k * 1e3;
    st.counters["txn_ms"] = txn_s / k * 1e3;
    st.counters["txn_cpu_ms"] = cpu_s / k * 1e3;
    st.counters["us_per_txn"] = txn_s / k / N * 1e6;
    st.counters["ms_per_200k"] = txn_s / k / N * 200000 * 1e3;
    double rawb = ((double)r.sf * 11 + (double)r.naccounts()) * 100 + N * 50;
    st.counters["raw_MB"] = rawb / 1e6;
    st.counters["peak_rss_MB"] = rss / k / 1e6;
    st.counters["heap_MB"] = heap / k / 1e6;
    st.counters["file_MB"] = fsize / k / 1e6;
    st.counters["file_alloc_MB"] = falloc / k / 1e6;
    st.counters["rss_ratio"] = rss / k / rawb;
    st.counters["heap_ratio"] = heap / k / rawb;
    st.counters["file_ratio"] = falloc / k / rawb;
    st.counters["result_sum"] = C(result);
    st.counters["written_KB_per_txn"] = io.wchar / k / N / 1e3;
    st.counters["disk_KB_per_txn"] = io.write_bytes / k / N / 1e3;
    st.counters["writes_per_txn"] = io.syscw / k / N;
    st.counters["faults_per_txn"] = (io.minflt + io.majflt) / k / N;
    st.counters["major_faults_per_txn"] = io.majflt / k / N;
}

}  // namespace tpcb
