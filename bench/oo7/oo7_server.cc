// oo7_server.cc -- main() of `p2gen bench oo7 --server`: one OO7 equation over a local file
// (persistent) and over a page server (pageserver) or an object server (objserver), with
// the server's counters. Linked with oo7_common.cc and one oo7_p2.cc object per variant
// (the server variants compiled with -DP2_SERVER=1), no Google Benchmark: the protocol is
// QuickStore's over the EXODUS page server, a fresh open per operation.
//
//   oo7_server --size=tiny --fanout=3 --seed=1 --dir=DIR --ops=T1,T6,Q1 --hot=3
//
// For every registered system: build the database (into DIR/<n> for a local one; into the
// server named in its spec for a server one) and close it; then for every operation open it
// again (cold: a fresh client buffer; a local file dropped from the page cache first), run
// the operation once (cold) and at once again --hot times (hot: the median time, the last
// run's counters), each with its time, its answer and the server's counters since the run
// began. One JSON object a line on stdout:
//   {"system": ..., "mem": ..., "op": ..., "phase": "cold"|"hot"|"build", "ms": ...,
//    "open_ms": ..., "count": ..., "stats": {"reads": ..., ...}}
// Exit status 3 (and an "error" line) if a system failed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "oo7.h"

namespace {

struct Config {
    std::string size = "tiny", dir = "/tmp", ops = "T1,T6,Q1";
    int fanout = 3, hot = 1;
    uint64_t seed = 1;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string quoted(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if ((unsigned char)c < 0x20) { out += ' '; continue; }
        out += c;
    }
    return out + "\"";
}

// A local system's files out of the page cache, so that its cold run reads them again
// (as the main binary's cold runs do; its mincore proof is not repeated here).
void drop_files(const oo7::System &s, const std::string &dir) {
    for (const std::string &f : s.files) {
        int fd = ::open((dir + "/" + f).c_str(), O_RDONLY);
        if (fd < 0) continue;
        (void)fdatasync(fd);
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ::close(fd);
    }
}

uint64_t run_op(oo7::Db &db, const std::string &op, const oo7::Params &p, uint64_t seed) {
    if (op == "T1") return db.t1(nullptr);
    if (op == "T6") return db.t6();
    if (op == "Q1") {
        oo7::Rng rng(seed);   // the same draws in every run and every system
        return oo7::q1(db, p, rng);
    }
    throw std::runtime_error("--server measures T1, T6 and Q1, not " + op);
}

void emit(const oo7::System &s, const std::string &op, const char *phase, double ms, double open_ms,
          uint64_t count, oo7::Db *db) {
    std::ostringstream o;
    o << "{\"system\": " << quoted(s.name) << ", \"mem\": " << quoted(s.mem) << ", \"op\": "
      << quoted(op) << ", \"phase\": \"" << phase << "\", \"ms\": " << ms << ", \"open_ms\": "
      << open_ms << ", \"count\": " << count;
    std::vector<std::pair<std::string, uint64_t>> st;
    if (db && db->server_stats(&st)) {
        o << ", \"stats\": {";
        for (size_t i = 0; i < st.size(); i++)
            o << (i ? ", " : "") << quoted(st[i].first) << ": " << st[i].second;
        o << "}";
    }
    std::cout << o.str() << "}\n" << std::flush;
}

// the whole protocol for one system; throws on a failure
void measure(const oo7::System &s, const Config &c, const oo7::Params &p, const std::string &dir) {
    const std::string where = s.files.empty() ? std::string() : dir;
    if (!where.empty()) mkdir(where.c_str(), 0700);
    {
        auto t0 = std::chrono::steady_clock::now();
        std::unique_ptr<oo7::Db> db = s.open(where);
        oo7::build_database(*db, p, c.seed);
        db->end_build();
        uint64_t atoms = db->counts().atomic_parts;
        db.reset();   // close: write back every dirty page
        emit(s, "build", "build", ms_since(t0), 0, atoms, nullptr);
    }
    std::stringstream ops(c.ops);
    for (std::string op; std::getline(ops, op, ',');) {
        if (!where.empty()) drop_files(s, where);
        auto t0 = std::chrono::steady_clock::now();
        std::unique_ptr<oo7::Db> db = s.open(where);
        double open_ms = ms_since(t0);
        db->server_stats_reset();
        t0 = std::chrono::steady_clock::now();
        uint64_t n = run_op(*db, op, p, c.seed);
        emit(s, op, "cold", ms_since(t0), open_ms, n, db.get());
        std::vector<double> hot;
        for (int i = 0; i < c.hot; i++) {
            db->server_stats_reset();
            t0 = std::chrono::steady_clock::now();
            uint64_t again = run_op(*db, op, p, c.seed);
            hot.push_back(ms_since(t0));
            if (again != n)
                throw std::runtime_error(op + ": a hot run answered " + std::to_string(again) +
                                         ", the cold one " + std::to_string(n));
        }
        std::sort(hot.begin(), hot.end());
        emit(s, op, "hot", hot[hot.size() / 2], open_ms, n, db.get());
    }
}

}  // namespace

int main(int argc, char **argv) {
    Config c;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&](const char *name) -> const char * {
            size_t n = std::strlen(name);
            return a.compare(0, n, name) == 0 ? a.c_str() + n : nullptr;
        };
        if (const char *v = val("--size=")) c.size = v;
        else if (const char *v = val("--fanout=")) c.fanout = std::atoi(v);
        else if (const char *v = val("--seed=")) c.seed = std::strtoull(v, nullptr, 10);
        else if (const char *v = val("--dir=")) c.dir = v;
        else if (const char *v = val("--ops=")) c.ops = v;
        else if (const char *v = val("--hot=")) c.hot = std::max(1, std::atoi(v));
        else { std::cerr << "oo7_server: unknown option " << a << "\n"; return 2; }
    }
    oo7::Params p;
    if (!oo7::Params::by_name(c.size, c.fanout, p)) {
        std::cerr << "oo7_server: no size " << c.size << " with fanout " << c.fanout << "\n";
        return 2;
    }
    int rc = 0, n = 0;
    for (const oo7::System &s : oo7::systems()) {
        try {
            measure(s, c, p, c.dir + "/" + std::to_string(n++));
        } catch (const std::exception &e) {
            std::cout << "{\"system\": " << quoted(s.name) << ", \"error\": " << quoted(e.what()) << "}\n";
            rc = 3;
        }
    }
    return rc;
}
