// tpcb_main.cc -- options, helpers and main() of the TPC-B benchmark binary.
//
// Options (besides Google Benchmark's own --benchmark_*; each also read from the
// environment variable of the same name in capitals, e.g. TPCB_SF=2,4):
//   --tpcb_sf=2,4,8          relation size scale factors
//   --tpcb_accounts=1000     accounts per branch (TPC-B: 100000)
//   --tpcb_txns=20000        transactions per run (reference: 200000)
//   --tpcb_seeds=1,2,3       random seeds (one benchmark per seed; report the median)
//   --tpcb_dir=PATH          where database files go (default: a new directory in $TMPDIR)
//   --tpcb_commit_every=K    SQLite/LMDB: commit every K transactions (0: once per run)
//   --tpcb_iterations=1      iterations per benchmark
//   --tpcb_reopen=1          persistent systems: close, reopen and check again
//   --tpcb_list              print the registered systems and exit
//   --tpcb_inject_fault=1    (tests) one transaction too many per run: every check must fail
//   --tpcb_durable=1         also register the durable systems: journalled generated variants
//                            (a commit per TPC-B transaction), SQLITE-WAL*, LMDB-SYNC*
//                            (default 0: the no-durability systems only)
// Benchmarks are named tpcb/<SYSTEM>/<mem>/sf:<SF>/seed:<seed>; the exit status is 3 when
// any run failed (an invariant violated, an error from a system).
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tpcb.h"
#include "../bench_main.h"

namespace tpcb {

Config &config() { return benchmain::the<Config>(); }
std::vector<System> &registry() { return benchmain::the<std::vector<System>>(); }

static std::atomic<int> g_failures{0};
static std::string g_tmp_root;   // created by us: removed at exit

void note_failure(const std::string &what) {
    g_failures++;
    std::cerr << "TPC-B FAILURE: " << what << std::endl;
}

std::string check_invariant(const Sums &s, const Run &r) {
    std::ostringstream o;
    if (s.nbranch != r.sf) o << "branch holds " << s.nbranch << " records, expected " << r.sf << "; ";
    if (s.nteller != r.tellers()) o << "teller holds " << s.nteller << " records, expected " << r.tellers() << "; ";
    if (s.naccount != r.naccounts()) o << "account holds " << s.naccount << " records, expected " << r.naccounts() << "; ";
    if (s.nhistory != r.txns) o << "history holds " << s.nhistory << " records, expected " << r.txns << "; ";
    if (!(s.account == s.teller && s.teller == s.branch && s.branch == s.delta))
        o << "sums differ: account " << s.account << ", teller " << s.teller << ", branch " << s.branch
          << ", history.delta " << s.delta << "; ";
    return o.str();
}

static uint64_t status_kb(const char *key) {
    std::ifstream f("/proc/self/status");
    std::string line;
    size_t n = std::strlen(key);
    while (std::getline(f, line))
        if (line.compare(0, n, key) == 0) return std::strtoull(line.c_str() + n, nullptr, 10);
    return 0;
}
uint64_t heap_bytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
#else
    return 0;
#endif
}
uint64_t rss_bytes() { return status_kb("VmRSS:") * 1024; }
uint64_t hwm_bytes() { return status_kb("VmHWM:") * 1024; }
void reset_hwm() {
    int fd = ::open("/proc/self/clear_refs", O_WRONLY);
    if (fd >= 0) {
        if (::write(fd, "5", 1) != 1) { /* old kernel: the peak is then since process start */ }
        ::close(fd);
    }
}

IoCounts io_counts() {
    IoCounts c;
    std::ifstream f("/proc/self/io");
    std::string key;
    double v;
    while (f >> key >> v) {
        if (key == "wchar:") c.wchar = v;
        else if (key == "write_bytes:") c.write_bytes = v;
        else if (key == "syscw:") c.syscw = v;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        c.minflt = (double)ru.ru_minflt;
        c.majflt = (double)ru.ru_majflt;
    }
    return c;
}

void dir_bytes(const std::string &dir, uint64_t *size, uint64_t *allocated) {
    *size = *allocated = 0;
    DIR *d = opendir(dir.c_str());
    if (!d) return;
    while (struct dirent *e = readdir(d)) {
        struct stat sb;
        std::string p = dir + "/" + e->d_name;
        if (e->d_name[0] == '.' || stat(p.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        *size += (uint64_t)sb.st_size;
        *allocated += (uint64_t)sb.st_blocks * 512;
    }
    closedir(d);
}

void remove_dir(const std::string &dir) { benchmain::remove_tree(dir); }

std::string make_run_dir(const std::string &name) {
    std::string d = config().dir + "/" + name;
    remove_dir(d);
    ::mkdir(d.c_str(), 0755);
    return d;
}

}  // namespace tpcb

namespace {

bool apply(const std::string &key, const std::string &val) {
    tpcb::Config &c = tpcb::config();
    if (key == "tpcb_sf") {
        c.sfs.clear();
        for (auto &x : benchflags::split(val)) {
            uint64_t sf = benchflags::to_u64("tpcb", key, x);
            if (sf < 1 || sf > 100000) { std::cerr << "tpcb: scale factor out of range: " << x << "\n"; std::exit(2); }
            c.sfs.push_back((int)sf);
        }
    } else if (key == "tpcb_accounts") {
        uint64_t a = benchflags::to_u64("tpcb", key, val);
        if (a < 1 || a > 100000000) { std::cerr << "tpcb: accounts per branch out of range\n"; std::exit(2); }
        c.accounts = (uint32_t)a;
    } else if (key == "tpcb_txns") {
        c.txns = benchflags::to_u64("tpcb", key, val);
        if (c.txns < 1 || c.txns > 0xFFFFFFF0ull) { std::cerr << "tpcb: transactions out of range\n"; std::exit(2); }
    } else if (key == "tpcb_seeds") {
        c.seeds.clear();
        for (auto &x : benchflags::split(val)) c.seeds.push_back(benchflags::to_u64("tpcb", key, x));
    } else if (key == "tpcb_dir") {
        c.dir = val;
    } else if (key == "tpcb_commit_every") {
        c.commit_every = benchflags::to_u64("tpcb", key, val);
    } else if (key == "tpcb_iterations") {
        c.iterations = (int)std::max<uint64_t>(1, benchflags::to_u64("tpcb", key, val));
    } else if (key == "tpcb_reopen") {
        c.reopen = benchflags::to_u64("tpcb", key, val) != 0;
    } else if (key == "tpcb_durable") {
        c.durable = benchflags::to_u64("tpcb", key, val) != 0;
    } else if (key == "tpcb_inject_fault") {
        c.inject_fault = benchflags::to_u64("tpcb", key, val) != 0;
    } else {
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    bool list = false;
    tpcb::Config &cfg = tpcb::config();
    // Fixed malloc thresholds (no dynamic raising): big blocks are mmap'd and returned to
    // the system when freed, so each run's peak-RSS growth is its own.
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
    // environment first, then flags
    for (const char *k : {"tpcb_sf", "tpcb_accounts", "tpcb_txns", "tpcb_seeds", "tpcb_dir",
                          "tpcb_commit_every", "tpcb_iterations", "tpcb_reopen", "tpcb_durable"}) {
        std::string env(k);
        std::transform(env.begin(), env.end(), env.begin(), ::toupper);
        if (const char *v = std::getenv(env.c_str())) apply(k, v);
    }
    benchflags::take(argc, argv, "tpcb", "tpcb_", apply, &list);

    auto &reg = tpcb::registry();
    if (!cfg.durable)   // the durable systems are a separate comparison (fsync-bound)
        reg.erase(std::remove_if(reg.begin(), reg.end(), [](const tpcb::System &s) { return s.durable; }),
                  reg.end());
    std::stable_sort(reg.begin(), reg.end(), [](const tpcb::System &a, const tpcb::System &b) {
        return a.rank != b.rank ? a.rank < b.rank : a.mem < b.mem;
    });
    if (list) {
        for (auto &s : reg) std::cout << s.name << " " << s.mem << " " << s.kind << (s.durable ? " durable" : "") << "\n";
        return 0;
    }

    if (!benchmain::init(argc, argv) || !benchmain::scratch_dir("tpcb", "tpcb", cfg.dir, tpcb::g_tmp_root))
        return 2;

    benchmark::AddCustomContext("tpcb_sf", benchmain::join(cfg.sfs));
    benchmark::AddCustomContext("tpcb_accounts", std::to_string(cfg.accounts));
    benchmark::AddCustomContext("tpcb_txns", std::to_string(cfg.txns));
    benchmark::AddCustomContext("tpcb_seeds", benchmain::join(cfg.seeds));
    benchmark::AddCustomContext("tpcb_commit_every", std::to_string(cfg.commit_every));
    benchmark::AddCustomContext("tpcb_durable", cfg.durable ? "1" : "0");
    benchmark::AddCustomContext("tpcb_dir", cfg.dir);
    std::vector<std::string> systems;
    for (const tpcb::System &s : reg) systems.push_back(s.name + "/" + s.mem);
    benchmark::AddCustomContext("tpcb_systems", benchmain::join(systems));

    for (int sf : cfg.sfs)
        for (uint64_t seed : cfg.seeds)
            for (const tpcb::System &sys : reg) {
                tpcb::Run run{(uint32_t)sf, cfg.accounts, cfg.txns, seed, cfg.commit_every};
                run.reopen_loaded = cfg.durable;
                std::string name = "tpcb/" + sys.name + "/" + sys.mem + "/sf:" + std::to_string(sf) +
                                   "/seed:" + std::to_string(seed);
                const tpcb::System *sp = &sys;
                benchmark::RegisterBenchmark(name.c_str(),
                                             [run, sp](benchmark::State &st) { sp->run(st, run, *sp); })
                    ->Iterations(cfg.iterations)
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
            }

    return benchmain::run("tpcb", tpcb::g_failures, tpcb::g_tmp_root, [] {});
}
