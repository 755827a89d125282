// range_main.cc -- options, the benchmarks and main() of the range-scan benchmark binary.
//
// Options (besides Google Benchmark's own --benchmark_*):
//   --range_rows=200000          relation size (rows; keys 0 .. rows-1)
//   --range_lengths=10,1000,100000   rows per cursor (lengths above rows are not run)
//   --range_seed=1               the load order's and the walks' random seed
//   --range_min_time=0.2         seconds each benchmark runs at least
//   --range_dir=PATH             where database files go (default: a new directory in $TMPDIR)
//   --range_load_order=random    random: keys inserted in a random order (how each system
//                                loads: range.h's Load); sorted: every system inserts in key
//                                order (elements stored in key order: the layout's best case)
//   --range_keep_loaded=1        keep every system loaded to the end (for
//                                --benchmark_repetitions with --benchmark_enable_random_interleaving)
//   --range_list                 print the registered systems and exit
//   --range_inject_fault=1       (tests) every walk one row longer than asked: every run must fail
// Benchmarks are named range/<SYSTEM>/<mem>/rows:<length>. Every system loads the relation
// once (outside the timed region; load_ms says how long it took) and serves its lengths in
// turn. An iteration is one walk from a random start: open a cursor over lo <= k < lo + length,
// step it to its end reading every row's key and payload. Counters: rows_per_s (rows walked
// per second of wall time), rows (per walk: must equal the length), load_ms, relation_rows.
// A walk that returns another number of rows, a wrong payload sum or keys out of order
// fails its benchmark; the exit status is then 3.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>

#include <benchmark/benchmark.h>

#include "range.h"
#include "../bench_main.h"
#include "../splitmix64.h"

namespace range {

Config &config() { return benchmain::the<Config>(); }
std::vector<System> &registry() { return benchmain::the<std::vector<System>>(); }

namespace {

int g_failures = 0;
std::string g_tmp_root;   // created by us: removed at exit

typedef benchmain::SplitMix64 Rng;

std::vector<uint32_t> load_order(uint64_t rows, uint64_t seed) {
    std::vector<uint32_t> v(rows);
    for (uint64_t i = 0; i < rows; i++) v[i] = (uint32_t)i;
    Rng r(seed * 1000003 + 17);
    for (uint64_t i = rows; i > 1; i--) std::swap(v[i - 1], v[r.next() % i]);
    return v;
}

void remove_files(const std::string &dir) {
    if (DIR *d = opendir(dir.c_str())) {
        while (struct dirent *ent = readdir(d))
            if (std::strcmp(ent->d_name, ".") && std::strcmp(ent->d_name, ".."))
                ::unlink((dir + "/" + ent->d_name).c_str());
        closedir(d);
    }
    ::rmdir(dir.c_str());
}

// A system's loaded relation. Benchmarks run in registration order, grouped by system, so
// by default one system is loaded at a time (each loads once, and its files are gone before
// the next loads); with --range_keep_loaded=1 (repetitions run interleaved at random) every
// system stays loaded from its first benchmark to the end.
struct Loaded {
    std::unique_ptr<Engine> eng;
    std::string dir, err;
    double load_ms = 0;

    ~Loaded() {
        if (eng) {
            std::string e;
            if (!eng->close(e)) std::cerr << "range: " << e << "\n";
            eng.reset();
        }
        if (!dir.empty()) remove_files(dir);
    }

    bool load(const System *s) {
        dir = config().dir + "/" + s->name + "_" + s->mem;
        if (::mkdir(dir.c_str(), 0755) != 0) {
            err = "cannot create " + dir + ": " + std::strerror(errno);
            dir.clear();
            return false;
        }
        eng = s->make();
        auto order = load_order(config().rows, config().seed);
        if (config().sorted_load) std::sort(order.begin(), order.end());
        auto t0 = std::chrono::steady_clock::now();
        if (!eng->open(dir, err) || !eng->load(order, config().sorted_load ? Load::Sorted : s->load, err)) {
            std::string e;
            eng->close(e);
            eng.reset();
            return false;
        }
        load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return true;
    }
};

std::map<const System *, std::unique_ptr<Loaded>> g_loaded;

// the system's loaded relation (loading it, and dropping the others unless they are kept)
Loaded &loaded(const System *s) {
    auto it = g_loaded.find(s);
    if (it != g_loaded.end()) return *it->second;
    if (!config().keep_loaded) g_loaded.clear();
    Loaded &l = *(g_loaded[s] = std::unique_ptr<Loaded>(new Loaded()));
    l.load(s);
    return l;
}

void fail(benchmark::State &st, const std::string &what) {
    g_failures++;
    std::cerr << "RANGE FAILURE: " << what << std::endl;
    st.SkipWithError(what.c_str());
}

void bench_walk(benchmark::State &st, const System *sys, uint64_t len) {
    const Config &cfg = config();
    Loaded &ld = loaded(sys);
    Engine *eng = ld.eng.get();
    if (!eng) {
        fail(st, sys->name + " " + sys->mem + ": load: " + ld.err);
        for (auto _ : st) {}
        return;
    }
    const uint64_t n = cfg.rows;
    // the fault: one row more than asked (so the start leaves room for it)
    const uint64_t extra = cfg.inject_fault ? 1 : 0;
    Rng rng(cfg.seed * 7919 + len);
    uint64_t walked = 0, walks = 0;
    std::string err;
    for (auto _ : st) {
        uint32_t lo = (uint32_t)(rng.next() % (n - len - extra + 1));
        uint64_t rows = 0, sum = 0;
        uint32_t disorder = 0;
        if (!eng->walk(lo, (uint32_t)(lo + len + extra), &rows, &sum, &disorder, err)) break;
        benchmark::DoNotOptimize(sum);
        walked += rows;
        walks++;
        if (rows != len || sum != payload_sum(lo, len) || disorder) {
            std::ostringstream o;
            o << sys->name << " " << sys->mem << ": the walk from " << lo << " returned " << rows
              << " rows, expected " << len;
            if (rows == len && disorder) o << "; keys out of order";
            else if (rows == len) o << "; wrong payload sum";
            err = o.str();
            break;
        }
    }
    if (!err.empty()) {
        fail(st, err);
        return;
    }
    st.counters["rows_per_s"] = benchmark::Counter((double)walked, benchmark::Counter::kIsRate);
    st.counters["rows"] = benchmark::Counter(walks ? (double)walked / (double)walks : 0.0);
    st.counters["walks"] = benchmark::Counter((double)walks);
    st.counters["load_ms"] = benchmark::Counter(ld.load_ms);
    st.counters["relation_rows"] = benchmark::Counter((double)n);
}

}  // namespace
}  // namespace range

int main(int argc, char **argv) {
    using namespace range;
    Config &cfg = config();
    benchflags::take(argc, argv, "range_bench", "range_", [&](const std::string &k, const std::string &v) {
        if (k == "range_rows") cfg.rows = benchflags::to_u64("range_bench", k, v);
        else if (k == "range_lengths") {
            cfg.lengths.clear();
            for (auto &x : benchflags::split(v)) cfg.lengths.push_back(benchflags::to_u64("range_bench", k, x));
        } else if (k == "range_seed") cfg.seed = benchflags::to_u64("range_bench", k, v);
        else if (k == "range_min_time") cfg.min_time = std::atof(v.c_str());
        else if (k == "range_dir") cfg.dir = v;
        else if (k == "range_keep_loaded") cfg.keep_loaded = v != "0";
        else if (k == "range_load_order") {
            if (v != "random" && v != "sorted") {
                std::cerr << "range_bench: --range_load_order: random or sorted, not '" << v << "'\n";
                std::exit(2);
            }
            cfg.sorted_load = v == "sorted";
        }
        else if (k == "range_inject_fault") cfg.inject_fault = v != "0";
        else return false;
        return true;
    }, &cfg.list);
    auto &reg = registry();
    std::stable_sort(reg.begin(), reg.end(), [](const System &a, const System &b) { return a.rank < b.rank; });
    if (cfg.list) {
        for (auto &s : reg) std::cout << s.name << " " << s.mem << " " << (s.p2 ? "p2" : "reference") << "\n";
        return 0;
    }
    if (cfg.rows < 1 || cfg.rows > 0xFFFFFFFFull) {
        std::cerr << "range_bench: --range_rows must be 1 .. 2^32-1\n";
        return 2;
    }
    if (!benchmain::init(argc, argv) || !benchmain::scratch_dir("range_bench", "range", cfg.dir, g_tmp_root))
        return 2;
    benchmark::AddCustomContext("range_rows", std::to_string(cfg.rows));
    benchmark::AddCustomContext("range_lengths", benchmain::join(cfg.lengths));
    benchmark::AddCustomContext("range_seed", std::to_string(cfg.seed));
    benchmark::AddCustomContext("range_dir", cfg.dir);
    benchmark::AddCustomContext("range_load_order", cfg.sorted_load ? "sorted" : "random");
    for (const System &s : reg)
        for (uint64_t len : cfg.lengths) {
            // a walk of len rows (len + 1 with the fault) must fit in the relation
            if (len < 1 || len + (cfg.inject_fault ? 1 : 0) > cfg.rows) continue;
            std::string name = "range/" + s.name + "/" + s.mem + "/rows:" + std::to_string(len);
            const System *sp = &s;
            benchmark::RegisterBenchmark(name.c_str(), [sp, len](benchmark::State &st) { bench_walk(st, sp, len); })
                ->MinTime(cfg.min_time)
                ->UseRealTime()
                ->Unit(benchmark::kMicrosecond);
        }
    return benchmain::run("range_bench", g_failures, g_tmp_root, [] { g_loaded.clear(); });
}
