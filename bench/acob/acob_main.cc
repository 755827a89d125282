// acob_main.cc -- options, generation, operations, benchmarks and main() of the ACOB
// benchmark binary (/work/shared/specs/acob.md; DeWitt, Futtersack, Maier, Velez 1990).
//
// Options (besides Google Benchmark's own --benchmark_*):
//   --acob_objects=1500   complex objects per set (a multiple of 5)
//   --acob_sets=5         sets, built one after the other with the same parameters
//   --acob_queries=N      objects per random query (default objects / 5: the paper's 300)
//   --acob_f=30           clustering factor, percent
//   --acob_region=5       clustering region, pages (odd)
//   --acob_smear=0        1: smear a quarter of the objects (acob.md §2.3)
//   --acob_seed=1990      the one seed: every step (build, read, update) starts from it
//   --acob_dir=PATH       where the local file goes (default: a new directory in $TMPDIR)
//   --acob_hot=0          1: also acob/<SYSTEM>/hotread, between read and update: each
//                         set's random read once to warm the client buffer, then again timed
//                         with the buffer kept (hot: with B >= 310 pages every page resident)
//   --acob_nbd=URI        also acob/RAWNBD/read, last: libnbd's nbd_pread of each page of
//                         the first set, one at a time, on the export at URI (the page
//                         server's, after its build): what one raw read of a page costs
//   --acob_list           print the registered systems and exit
// Benchmarks: acob/<SYSTEM>/<step> for step build, scan, read, update, one iteration each
// and in that order per system; the time is manual (the steps' work and commits over all
// sets, not the emptying of the client buffer before each set nor the checksums).
// Each (step, set) prints a line
//   acob-count system=S step=T set=K walk=.. roots=.. updates=.. reads=.. writes=.. ...
// (walk: records read by the walk; roots: root ids read from the driver's in-memory root
// set; reads/writes/bytes/misses/hits/writebacks/rewrites: the server's counters over
// the set, p2_server_stats, reset before it: rewrites are the write-backs of pages or
// objects written back before in the same step and set) and, after build and after update, one line per set
//   acob-checksum system=S when=build|update set=K value=HEX
// Exit status 3 if a step failed (its benchmark carries the error).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <benchmark/benchmark.h>
#if ACOB_RAWNBD
#include <libnbd.h>   // libnbd-dev: only for acob/RAWNBD/read (the runtime dlopens libnbd)
#endif

#include "acob.h"
#include "../bench_main.h"
#include "../splitmix64.h"

namespace acob {

std::vector<System> &registry() { return benchmain::the<std::vector<System>>(); }

namespace {

struct Config {
    uint32_t objects = 1500, sets = 5, queries = 0, f = 30, region = 5;
    bool smear = false, hot = false;
    uint64_t seed = 1990;
    std::string dir, root, nbd;
} cfg;

int g_failures = 0;

typedef benchmain::SplitMix64 Rng;   // tests/bench/acob_model.py draws the same

// One set's logical database: phys[7k+j] is the slot (place in the set's physical order,
// 35 to a page) of record j of object k; comp[8k+l] the object that link l of object k's
// leaves (leaf 3 + l/2, left then right) names.
struct Layout {
    std::vector<uint32_t> phys, comp;
};

Layout generate(Rng &r, uint32_t n) {
    Layout g;
    g.phys.resize((size_t)n * RECORDS_PER_OBJECT);
    for (size_t i = 0; i < g.phys.size(); i++) g.phys[i] = (uint32_t)i;
    g.comp.resize((size_t)n * 8);
    const uint32_t pages = n / OBJECTS_PER_PAGE, half = (cfg.region - 1) / 2;
    for (uint32_t k = 0; k < n; k++) {
        // the objects clustered near k: on its page or within half pages either side,
        // clipped at the set's ends, k itself excluded
        uint32_t p = k / OBJECTS_PER_PAGE;
        uint32_t lo = p >= half ? p - half : 0, hi = std::min(pages - 1, p + half);
        uint32_t first = lo * OBJECTS_PER_PAGE, near = (hi - lo + 1) * OBJECTS_PER_PAGE - 1;
        for (uint32_t l = 0; l < 8; l++) {
            uint32_t c;
            if (r.rnd(100) < cfg.f) {
                c = first + r.rnd(near);
                if (c >= k) c++;
            } else {
                c = r.rnd(n);
            }
            g.comp[(size_t)k * 8 + l] = c;
        }
    }
    if (cfg.smear) {
        // a quarter of the objects without replacement; each interior record and leaf
        // swaps places, with probability 1/4, with a record at its depth of another object
        std::vector<uint32_t> ids(n);
        for (uint32_t i = 0; i < n; i++) ids[i] = i;
        for (uint32_t i = 0; i < n / 4; i++) {
            std::swap(ids[i], ids[i + r.rnd(n - i)]);
            uint32_t x = ids[i];
            for (uint32_t j = 1; j < RECORDS_PER_OBJECT; j++) {
                if (r.rnd(4) != 0) continue;
                uint32_t y = r.rnd(n - 1);
                if (y >= x) y++;
                uint32_t j2 = j < 3 ? 1 + r.rnd(2) : 3 + r.rnd(4);
                std::swap(g.phys[(size_t)x * 7 + j], g.phys[(size_t)y * 7 + j2]);
            }
        }
    }
    return g;
}

// A system's database: its engine and where each set's pages start
struct Db {
    std::unique_ptr<Engine> eng;
    std::vector<uint64_t> base;                  // a set's first page (offset)
    std::vector<std::vector<uint64_t>> roots;    // the root-id set of each set
    bool ok = false;                             // built
};

uint64_t slot_ref(const Db &d, uint32_t set, uint32_t slot) {
    return d.base[set] + (uint64_t)(slot / RECORDS_PER_PAGE) * PAGE +
           (uint64_t)(slot % RECORDS_PER_PAGE) * REC_BLOCK;
}

// The slot of a reference into set `set`, or UINT32_MAX
uint32_t ref_slot(const Db &d, uint32_t set, uint64_t ref) {
    uint64_t pages = cfg.objects / OBJECTS_PER_PAGE;
    if (ref < d.base[set] || ref >= d.base[set] + pages * PAGE) return UINT32_MAX;
    uint64_t off = ref - d.base[set], in = off % PAGE;
    if (in % REC_BLOCK || in / REC_BLOCK >= RECORDS_PER_PAGE) return UINT32_MAX;
    return (uint32_t)(off / PAGE * RECORDS_PER_PAGE + in / REC_BLOCK);
}

std::map<std::string, Db> &dbs() { return benchmain::the<std::map<std::string, Db>>(); }

const char SET_NAMES[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

std::string set_name(uint32_t s) {
    return s < 26 ? std::string(1, SET_NAMES[s]) : std::to_string(s);
}

// 112a + 64b = g for some a, b >= 0
bool paddable(uint64_t g, uint64_t *a, uint64_t *b) {
    for (uint64_t j = 0; j * PAD_BLOCK <= g; j++)
        if ((g - j * PAD_BLOCK) % REC_BLOCK == 0) {
            *a = (g - j * PAD_BLOCK) / REC_BLOCK;
            *b = j;
            return true;
        }
    return false;
}

bool pad_rec(Engine &e, uint64_t want, std::string &err) {
    Rec r;
    std::memset(&r, 0, sizeof r);
    r.pos = 7;   // no record of an object
    uint64_t got;
    if (!e.insert(r, &got, err)) return false;
    if (want != UINT64_MAX && got != want) {
        err = "a padding record went to offset " + std::to_string(got) + ", not " +
              std::to_string(want) + ": the allocator no longer hands out blocks in address order";
        return false;
    }
    return true;
}

bool pad_small(Engine &e, uint64_t want, uint64_t *got, std::string &err) {
    if (!e.insert_pad(got, err)) return false;
    if (want != UINT64_MAX && *got != want) {
        err = "a 64-byte pad went to offset " + std::to_string(*got) + ", not " + std::to_string(want);
        return false;
    }
    return true;
}

struct Counts {
    uint64_t walk = 0, roots = 0, updates = 0;
    Stats s;
    double ms = 0;
};

Stats delta(const Stats &a, const Stats &b) {
    Stats d;
    d.reads = b.reads - a.reads; d.writes = b.writes - a.writes; d.flushes = b.flushes - a.flushes;
    d.bytes_read = b.bytes_read - a.bytes_read; d.bytes_written = b.bytes_written - a.bytes_written;
    d.misses = b.misses - a.misses; d.hits = b.hits - a.hits; d.evictions = b.evictions - a.evictions;
    d.writebacks = b.writebacks - a.writebacks; d.rewrites = b.rewrites - a.rewrites;
    d.bundled = b.bundled - a.bundled;
    d.inflight = b.inflight;     // a peak since the reset before the set
    return d;
}

void print_counts(const std::string &sys, const char *step, uint32_t set, const Counts &c, bool server) {
    std::printf("acob-count system=%s step=%s set=%s walk=%" PRIu64 " roots=%" PRIu64
                " updates=%" PRIu64, sys.c_str(), step, set_name(set).c_str(), c.walk, c.roots, c.updates);
    if (server)
        std::printf(" reads=%" PRIu64 " writes=%" PRIu64 " flushes=%" PRIu64 " bytes_read=%" PRIu64
                    " bytes_written=%" PRIu64 " misses=%" PRIu64 " hits=%" PRIu64
                    " evictions=%" PRIu64 " writebacks=%" PRIu64 " rewrites=%" PRIu64
                    " bundled=%" PRIu64 " inflight=%" PRIu64, c.s.reads, c.s.writes, c.s.flushes,
                    c.s.bytes_read, c.s.bytes_written, c.s.misses, c.s.hits, c.s.evictions,
                    c.s.writebacks, c.s.rewrites, c.s.bundled, c.s.inflight);
    std::printf(" ms=%.3f\n", c.ms);
    std::fflush(stdout);
}

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// FNV-1a over every record of the set in physical order, links as slots
bool checksum(Db &d, uint32_t set, uint64_t *out, std::string &err) {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](const void *p, size_t n) {
        for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
    };
    for (uint32_t slot = 0; slot < cfg.objects * RECORDS_PER_OBJECT; slot++) {
        Rec r;
        if (!d.eng->read(slot_ref(d, set, slot), &r, err)) return false;
        uint32_t l = ref_slot(d, set, r.left), rr = ref_slot(d, set, r.right);
        if (l == UINT32_MAX || rr == UINT32_MAX) {
            err = "set " + set_name(set) + " slot " + std::to_string(slot) + ": a link out of the set";
            return false;
        }
        mix(&r.key, 4); mix(&r.pos, 4); mix(&l, 4); mix(&rr, 4); mix(r.filler, sizeof r.filler);
    }
    *out = h;
    return true;
}

bool print_checksums(const std::string &sys, const char *when, std::string &err) {
    Db &d = dbs()[sys];
    for (uint32_t s = 0; s < cfg.sets; s++) {
        uint64_t h;
        if (!checksum(d, s, &h, err)) return false;
        std::printf("acob-checksum system=%s when=%s set=%s value=%016" PRIx64 "\n", sys.c_str(),
                    when, set_name(s).c_str(), h);
    }
    std::fflush(stdout);
    return true;
}

bool build(const std::string &sys, Engine &e, std::vector<Counts> &out, std::string &err) {
    Db &d = dbs()[sys];
    Rng r(cfg.seed);
    const uint32_t n = cfg.objects, nrec = n * RECORDS_PER_OBJECT, pages = n / OBJECTS_PER_PAGE;
    // where the allocator stands: a 64-byte pad's offset, then pads up to a page boundary
    uint64_t at;
    if (!pad_small(e, UINT64_MAX, &at, err)) return false;
    uint64_t brk = at + PAD_BLOCK, g = (PAGE - brk % PAGE) % PAGE, a = 0, b = 0;
    while (!paddable(g, &a, &b)) g += PAGE;
    for (uint64_t i = 0; i < a; i++)
        if (!pad_rec(e, brk + i * REC_BLOCK, err)) return false;
    for (uint64_t i = 0; i < b; i++)
        if (!pad_small(e, brk + a * REC_BLOCK + i * PAD_BLOCK, &at, err)) return false;
    const uint64_t base0 = brk + g;
    d.base.clear();
    d.roots.assign(cfg.sets, {});
    for (uint32_t s = 0; s < cfg.sets; s++) {
        Counts c;
        Stats sa, sb;
        e.reset_stats();
        bool server = e.stats(&sa);
        auto t0 = Clock::now();
        d.base.push_back(base0 + (uint64_t)s * pages * PAGE);
        Layout lay = generate(r, n);
        std::vector<uint32_t> inv(nrec);
        for (uint32_t i = 0; i < nrec; i++) inv[lay.phys[i]] = i;
        for (uint32_t slot = 0; slot < nrec; slot++) {
            uint32_t lg = inv[slot], k = lg / 7, j = lg % 7;
            Rec x;
            std::memset(&x, 0, sizeof x);
            x.key = k + 1;
            x.pos = j;
            if (j < 3) {
                x.left = slot_ref(d, s, lay.phys[(size_t)k * 7 + 2 * j + 1]);
                x.right = slot_ref(d, s, lay.phys[(size_t)k * 7 + 2 * j + 2]);
            } else {
                x.left = slot_ref(d, s, lay.phys[(size_t)lay.comp[(size_t)k * 8 + (j - 3) * 2] * 7]);
                x.right = slot_ref(d, s, lay.phys[(size_t)lay.comp[(size_t)k * 8 + (j - 3) * 2 + 1] * 7]);
            }
            std::snprintf(x.filler, sizeof x.filler, "set %s object %u record %u", set_name(s).c_str(),
                          k + 1, j);
            uint64_t ref, want = slot_ref(d, s, slot);
            if (!e.insert(x, &ref, err)) return false;
            if (ref != want) {
                err = "record " + std::to_string(slot) + " of set " + set_name(s) + " went to offset " +
                      std::to_string(ref) + ", not " + std::to_string(want) +
                      " (35 records to a page, in address order)";
                return false;
            }
            if (slot % RECORDS_PER_PAGE == RECORDS_PER_PAGE - 1) {   // the page's 176 bytes left
                uint64_t pg = want - want % PAGE;
                if (!pad_rec(e, pg + RECORDS_PER_PAGE * REC_BLOCK, err) ||
                    !pad_small(e, pg + (RECORDS_PER_PAGE + 1) * REC_BLOCK, &at, err))
                    return false;
            }
        }
        for (uint32_t k = 0; k < n; k++) d.roots[s].push_back(slot_ref(d, s, lay.phys[(size_t)k * 7]));
        if (!e.commit(err)) return false;
        c.ms = ms_since(t0);
        if (server && e.stats(&sb)) c.s = delta(sa, sb);
        out.push_back(c);
    }
    d.ok = true;
    return true;
}

// One (step, set): the scan, or the random read or update walk from rng
bool run_step(Db &d, const std::string &step, uint32_t s, Rng &rng, Counts &c, std::string &err) {
    Engine &e = *d.eng;
    Rec x;
    if (step == "scan") {
        uint64_t queue[RECORDS_PER_OBJECT];
        for (uint32_t k = 0; k < cfg.objects; k++) {
            c.roots++;
            size_t head = 0, tail = 0;
            queue[tail++] = d.roots[s][k];
            while (head < tail) {
                if (!e.read(queue[head++], &x, err)) return false;
                c.walk++;
                if (x.pos < 3 && tail + 2 <= RECORDS_PER_OBJECT) {   // components are not followed
                    queue[tail++] = x.left;
                    queue[tail++] = x.right;
                }
            }
        }
        return true;
    }
    const bool update = step == "update";
    // depth-first to depth 6, each step down with probability 0.8, the coin drawn just
    // before the child would be visited; revisits read and counted again
    struct Walk {
        Engine &e; Rng &rng; Counts &c; bool update; std::string &err;
        bool visit(uint64_t ref, int depth) {
            Rec x;
            if (!e.read(ref, &x, err)) return false;
            c.walk++;
            if (depth == 6) {
                if (update) {
                    if (!e.rewrite(ref, x, err)) return false;
                    c.updates++;
                }
                return true;
            }
            if (rng.rnd(10) < 8 && !visit(x.left, depth + 1)) return false;
            if (rng.rnd(10) < 8 && !visit(x.right, depth + 1)) return false;
            return true;
        }
    } w{e, rng, c, update, err};
    for (uint32_t q = 0; q < cfg.queries; q++) {
        uint32_t k = rng.rnd(cfg.objects);
        c.roots++;
        if (!w.visit(d.roots[s][k], 0)) return false;
    }
    return true;
}

void fail(benchmark::State &st, const std::string &msg) {
    g_failures++;
    std::fprintf(stderr, "acob: FAILED: %s\n", msg.c_str());
    st.SkipWithError(msg.c_str());
}

void set_counters(benchmark::State &st, const std::vector<Counts> &cs, bool server) {
    double n = (double)cs.size();
    Counts sum;
    for (const Counts &c : cs) {
        sum.walk += c.walk; sum.roots += c.roots; sum.updates += c.updates;
        sum.s.reads += c.s.reads; sum.s.writes += c.s.writes; sum.s.bytes_read += c.s.bytes_read;
        sum.s.bytes_written += c.s.bytes_written; sum.s.misses += c.s.misses;
        sum.s.rewrites += c.s.rewrites; sum.s.writebacks += c.s.writebacks;
    }
    st.counters["sets"] = n;
    st.counters["walk"] = sum.walk / n;       // per set, mean over the sets
    st.counters["roots"] = sum.roots / n;
    st.counters["updates"] = sum.updates / n;
    if (server) {
        st.counters["reads"] = sum.s.reads / n;
        st.counters["writes"] = sum.s.writes / n;
        st.counters["bytes_read"] = sum.s.bytes_read / n;
        st.counters["bytes_written"] = sum.s.bytes_written / n;
        st.counters["writebacks"] = sum.s.writebacks / n;
        st.counters["rewrites"] = sum.s.rewrites / n;
        if (sum.walk) st.counters["hit_rate"] = 1.0 - (double)sum.s.misses / (double)sum.walk;
    }
}

void bm_step(benchmark::State &st, System sys, std::string step) {
    for (auto _ : st) {
        std::string err;
        std::vector<Counts> cs;
        Db &d = dbs()[sys.name];
        Stats probe;
        if (step == "build") {
            if (!benchmain::scratch_dir("acob_bench", "acob", cfg.dir, cfg.root)) {
                fail(st, "cannot make a scratch directory");
                break;
            }
            std::string sub = cfg.dir + "/" + sys.name;
            ::mkdir(sub.c_str(), 0755);
            d.eng.reset(sys.make());
            if (!d.eng->open(sub, err)) { fail(st, err); break; }
            Stats a;
            bool server = d.eng->stats(&a);
            auto t0 = Clock::now();
            bool ok = build(sys.name, *d.eng, cs, err);
            st.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
            if (!ok) { fail(st, err); break; }
            for (uint32_t s = 0; s < cs.size(); s++) print_counts(sys.name, "build", s, cs[s], server);
            if (!print_checksums(sys.name, "build", err)) { fail(st, err); break; }
            set_counters(st, cs, server);
            continue;
        }
        if (!d.ok) { fail(st, sys.name + ": not built"); break; }
        bool server = d.eng->stats(&probe);
        Rng rng(cfg.seed);   // every step from the same seed
        double total = 0;
        bool ok = true;
        for (uint32_t s = 0; s < cfg.sets && ok; s++) {
            Counts c;
            Stats a, b;
            if (!d.eng->drop(err)) { ok = false; break; }   // a cold client cache per (step, set)
            d.eng->reset_stats();   // rewrites: written back more than once in this query and set
            d.eng->stats(&a);
            auto t0 = Clock::now();
            ok = run_step(d, step, s, rng, c, err) && d.eng->commit(err);
            c.ms = ms_since(t0);
            total += c.ms;
            if (server) {
                d.eng->stats(&b);
                c.s = delta(a, b);
            }
            if (ok) print_counts(sys.name, step.c_str(), s, c, server);
            cs.push_back(c);
        }
        st.SetIterationTime(total / 1000.0);
        if (!ok) { fail(st, err); break; }
        if (step == "update") {
            if (!print_checksums(sys.name, "update", err)) { fail(st, err); break; }
            d.eng->close();   // the last step: let the next system have the machine
            d.ok = false;
        }
        set_counters(st, cs, server);
    }
}

// acob/<SYSTEM>/hotread: per set, the random read once (the client buffer warmed, not
// timed), then the same walk again HOT_RUNS times, nothing dropped between, its time the
// median of the walks (a shared machine moves one run of 0.3 ms tenfold; the commits are not
// timed: LOCAL's costs milliseconds, the page server's nothing): with a buffer that holds the
// set, every page resident, so the page server runs the local file's code (the target:
// within 1.05x of LOCAL); the counters are the first timed run's
const int HOT_RUNS = 5;

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void bm_hotread(benchmark::State &st, System sys) {
    for (auto _ : st) {
        std::string err;
        Db &d = dbs()[sys.name];
        if (!d.ok) { fail(st, sys.name + ": not built"); break; }
        Stats probe;
        bool server = d.eng->stats(&probe), ok = true;
        double total = 0;
        std::vector<Counts> cs;
        for (uint32_t s = 0; s < cfg.sets && ok; s++) {
            Counts warm, c;
            Rng r1(cfg.seed);
            ok = d.eng->drop(err) && run_step(d, "read", s, r1, warm, err) && d.eng->commit(err);
            if (!ok) break;
            Stats a, b;
            d.eng->reset_stats();
            d.eng->stats(&a);
            std::vector<double> ms;
            for (int i = 0; i < HOT_RUNS && ok; i++) {
                Counts again;
                Rng rr(cfg.seed);
                auto t0 = Clock::now();
                ok = run_step(d, "read", s, rr, i ? again : c, err);
                ms.push_back(ms_since(t0));      // the walk: the commit (LOCAL's msync) apart
                ok = ok && d.eng->commit(err);
                if (i == 0 && server) {
                    d.eng->stats(&b);
                    c.s = delta(a, b);
                }
            }
            if (!ok) break;
            c.ms = median_of(ms);
            total += c.ms;
            if (ok) print_counts(sys.name, "hotread", s, c, server);
            cs.push_back(c);
        }
        st.SetIterationTime(total / 1000.0);
        if (!ok) { fail(st, err); break; }
        set_counters(st, cs, server);
    }
}

#if ACOB_RAWNBD
// acob/RAWNBD/read: one raw libnbd read of a 4 KiB page at a time, the first set's pages
// in order, on a connection of its own, three passes, the median pass's time; printed as a
// count line (system RAWNBD, step read, one pass's reads)
void bm_rawnbd(benchmark::State &st) {
    for (auto _ : st) {
        struct nbd_handle *h = nbd_create();
        if (h == nullptr || nbd_connect_uri(h, cfg.nbd.c_str()) == -1) {
            fail(st, std::string("libnbd: ") + (nbd_get_error() ? nbd_get_error() : "cannot connect"));
            if (h) nbd_close(h);
            break;
        }
        const uint64_t pages = cfg.objects / OBJECTS_PER_PAGE;
        std::vector<char> buf(PAGE);
        Counts c;
        bool ok = true;
        std::vector<double> passes;
        for (int pass = 0; pass < 3 && ok; pass++) {
            auto t0 = Clock::now();
            for (uint64_t i = 0; i < pages && ok; i++) {
                ok = nbd_pread(h, buf.data(), PAGE, i * PAGE, 0) == 0;
                if (pass == 0) {
                    c.s.reads++;
                    c.s.bytes_read += PAGE;
                }
            }
            passes.push_back(ms_since(t0));
        }
        c.ms = median_of(passes);
        std::string why = ok ? "" : std::string("libnbd: ") + (nbd_get_error() ? nbd_get_error() : "a read failed");
        (void)nbd_shutdown(h, 0);
        nbd_close(h);
        st.SetIterationTime(c.ms / 1000.0);
        if (!ok) { fail(st, why); break; }
        print_counts("RAWNBD", "read", 0, c, true);
        st.counters["reads"] = (double)c.s.reads;
    }
}
#endif

bool apply(const std::string &key, const std::string &val) {
    auto u = [&](const char *f) { return benchflags::to_u64("acob_bench", f, val); };
    if (key == "acob_objects") cfg.objects = (uint32_t)u("acob_objects");
    else if (key == "acob_sets") cfg.sets = (uint32_t)u("acob_sets");
    else if (key == "acob_queries") cfg.queries = (uint32_t)u("acob_queries");
    else if (key == "acob_f") cfg.f = (uint32_t)u("acob_f");
    else if (key == "acob_region") cfg.region = (uint32_t)u("acob_region");
    else if (key == "acob_smear") cfg.smear = u("acob_smear") != 0;
    else if (key == "acob_seed") cfg.seed = u("acob_seed");
    else if (key == "acob_dir") cfg.dir = val;
    else if (key == "acob_hot") cfg.hot = u("acob_hot") != 0;
    else if (key == "acob_nbd") cfg.nbd = val;
    else return false;
    return true;
}

}  // namespace
}  // namespace acob

int main(int argc, char **argv) {
    using namespace acob;
    bool list = false;
    benchflags::take(argc, argv, "acob_bench", "acob_", apply, &list);
    std::sort(registry().begin(), registry().end(),
              [](const System &a, const System &b) { return a.rank < b.rank; });
    if (list) {
        for (const System &s : registry()) std::cout << s.name << "\n";
        return 0;
    }
    if (cfg.objects < 10 || cfg.objects % OBJECTS_PER_PAGE || cfg.sets < 1 || cfg.sets > 26 ||
        cfg.f > 100 || cfg.region % 2 == 0) {
        std::cerr << "acob_bench: --acob_objects must be a multiple of 5 (at least 10), "
                     "--acob_sets 1..26, --acob_f 0..100, --acob_region odd\n";
        return 2;
    }
    if (!cfg.queries) cfg.queries = cfg.objects / 5;
    for (const System &s : registry())
        for (const char *step : {"build", "scan", "read", "hotread", "update"}) {
            std::string name = "acob/" + s.name + "/" + step;
            if (std::string(step) == "hotread") {
                if (cfg.hot)
                    benchmark::RegisterBenchmark(name.c_str(), bm_hotread, s)
                        ->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
                continue;
            }
            benchmark::RegisterBenchmark(name.c_str(), bm_step, s, std::string(step))
                ->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
        }
#if ACOB_RAWNBD
    if (!cfg.nbd.empty())
        benchmark::RegisterBenchmark("acob/RAWNBD/read", bm_rawnbd)
            ->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
#else
    if (!cfg.nbd.empty()) {
        std::cerr << "acob_bench: --acob_nbd needs libnbd-dev at build time (apt-get install libnbd-dev)\n";
        return 2;
    }
#endif
    benchmark::AddCustomContext("acob_objects", std::to_string(cfg.objects));
    benchmark::AddCustomContext("acob_sets", std::to_string(cfg.sets));
    benchmark::AddCustomContext("acob_queries", std::to_string(cfg.queries));
    benchmark::AddCustomContext("acob_f", std::to_string(cfg.f));
    benchmark::AddCustomContext("acob_region", std::to_string(cfg.region));
    benchmark::AddCustomContext("acob_smear", std::to_string(cfg.smear));
    benchmark::AddCustomContext("acob_seed", std::to_string(cfg.seed));
    if (!benchmain::init(argc, argv)) return 2;
    return benchmain::run("acob", g_failures, cfg.root, [] { dbs().clear(); });
}
