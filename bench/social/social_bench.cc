// social_bench.cc -- the feed of a social graph under Google Benchmark: p2gen's
// ordered role and its merge (bench/social/feed.p2, built as the README tells users to, the
// API inlined: FEED_INLINE) against SQLite (:memory:, the same rows) answering
//   SELECT p.id, p.time FROM follows f JOIN posts p ON p.user = f.followee
//   WHERE f.follower = ? ORDER BY p.time DESC LIMIT ?
// over an index on posts(user, time), in one process, side by side.
//
// Options (besides Google Benchmark's own --benchmark_*):
//   --social_users=10000   users (ids 0 .. users-1)
//   --social_follows=50    followees per user (distinct, random)
//   --social_posts=50      posts per user on average (each post by a random user, times
//                          increasing in insertion order: distinct, newest inserted last)
//   --social_k=10,50       feed lengths
//   --social_seed=1
// Benchmarks: social/feed/<SYSTEM>/k:<k> (one feed of a random user per iteration: the k
// newest posts of the users it follows, newest first) and social/posts/<SYSTEM>/k:<k> (the
// k newest posts of one random user). Counter ns_per_op. Before any timing, the answers of
// both systems for 500 users are compared row by row (ids and times): a difference exits 3.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "feed.h"
#include "../bench_main.h"
#include "../splitmix64.h"
#include "../sqlite_util.h"

namespace {

struct Config {
    uint64_t users = 10000, follows = 50, posts = 50, seed = 1;
    std::vector<uint64_t> ks{10, 50};
} cfg;

typedef benchmain::SplitMix64 Rng;

typedef std::vector<std::pair<uint32_t, int64_t>> Rows;   // (post id, time)

// ---- the data, the same for both systems ----
struct Data {
    std::vector<std::vector<uint32_t>> followees;   // per user
    std::vector<uint32_t> author;                   // per post (post id = index; time = 1000 + id)
};

Data make_data() {
    Data d;
    Rng r(cfg.seed * 7919 + 3);
    d.followees.resize(cfg.users);
    uint64_t f = std::min(cfg.follows, cfg.users - 1);
    for (uint64_t u = 0; u < cfg.users; u++) {
        auto &v = d.followees[u];
        while (v.size() < f) {
            uint32_t x = (uint32_t)(r.next() % cfg.users);
            if (x != u && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
        }
    }
    d.author.resize(cfg.users * cfg.posts);
    for (auto &a : d.author) a = (uint32_t)(r.next() % cfg.users);
    return d;
}

// ---- p2gen ----
struct P2 {
    feed_db *db = nullptr;
    std::vector<feed_ref> urefs;

    void load(const Data &d) {
        if (feed_open(&db, ".") != P2_OK) { std::fprintf(stderr, "feed_open failed\n"); std::exit(2); }
        urefs.resize(cfg.users);
        for (uint64_t u = 0; u < cfg.users; u++) {
            feed_user rec{};
            rec.id = (uint32_t)u;
            feed_users_insert(db, &rec, &urefs[u]);
        }
        for (uint64_t u = 0; u < cfg.users; u++)
            for (uint32_t x : d.followees[u]) feed_users_followees_add(db, urefs[u], urefs[x]);
        for (uint64_t i = 0; i < d.author.size(); i++) {
            feed_post p{};
            p.id = (uint32_t)i;
            p.time = 1000 + (int64_t)i;
            feed_ref ref;
            feed_posts_insert(db, &p, &ref);
            feed_posts_set_author(db, ref, urefs[d.author[i]]);
        }
    }

    // the k newest posts of the users u follows: find u, collect its followees, merge
    uint64_t feed(uint32_t uid, uint64_t k, feed_ref *refs, feed_post *recs) {
        feed_ref u, owners[4096], y;
        uint64_t n = 0, got = 0;
        if (feed_users_find_id(db, uid, &u) != P2_OK) return 0;
        feed_users_followees_iter it;
        feed_users_followees_open(db, &it, u);
        while (n < 4096 && feed_users_followees_next(&it, &y) == P2_OK) owners[n++] = y;
        feed_users_posts_top(db, owners, n, 0, nullptr, nullptr, k, refs, recs, &got);
        return got;
    }

    uint64_t posts(uint32_t uid, uint64_t k, feed_ref *refs, feed_post *recs) {
        feed_ref u;
        uint64_t n = 0;
        if (feed_users_find_id(db, uid, &u) != P2_OK) return 0;
        feed_users_posts_iter it;
        feed_users_posts_open(db, &it, u);
        const feed_post *p;
        while (n < k && (p = feed_users_posts_next_rec(&it, &refs[n]))) recs[n++] = *p;
        return n;
    }
};

// ---- SQLite ----
struct Sql {
    sqlite3 *db = nullptr;
    benchsql::Stmt feed_st, posts_st;

    void exec(const char *sql) {
        char *err = nullptr;
        if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
            std::fprintf(stderr, "SQLite: %s: %s\n", sql, err);
            std::exit(2);
        }
    }

    void load(const Data &d) {
        if (sqlite3_open(":memory:", &db) != SQLITE_OK) std::exit(2);
        exec("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)");
        exec("CREATE TABLE follows(follower INTEGER, followee INTEGER, PRIMARY KEY(follower, followee)) WITHOUT ROWID");
        exec("CREATE TABLE posts(id INTEGER PRIMARY KEY, user INTEGER, time INTEGER, likes INTEGER)");
        exec("CREATE INDEX posts_user_time ON posts(user, time)");
        exec("BEGIN");
        benchsql::Stmt iu, ifo, ip;
        iu.prepare(db, "INSERT INTO users VALUES(?, '')");
        ifo.prepare(db, "INSERT INTO follows VALUES(?, ?)");
        ip.prepare(db, "INSERT INTO posts VALUES(?, ?, ?, 0)");
        for (uint64_t u = 0; u < cfg.users; u++) {
            sqlite3_bind_int64(iu.get(), 1, (int64_t)u);
            sqlite3_step(iu.get());
            sqlite3_reset(iu.get());
            for (uint32_t x : d.followees[u]) {
                sqlite3_bind_int64(ifo.get(), 1, (int64_t)u);
                sqlite3_bind_int64(ifo.get(), 2, x);
                sqlite3_step(ifo.get());
                sqlite3_reset(ifo.get());
            }
        }
        for (uint64_t i = 0; i < d.author.size(); i++) {
            sqlite3_bind_int64(ip.get(), 1, (int64_t)i);
            sqlite3_bind_int64(ip.get(), 2, d.author[i]);
            sqlite3_bind_int64(ip.get(), 3, 1000 + (int64_t)i);
            if (sqlite3_step(ip.get()) != SQLITE_DONE) benchsql::fail(db, "insert");
            sqlite3_reset(ip.get());
        }
        exec("COMMIT");
        exec("ANALYZE");
        feed_st.prepare(db, "SELECT p.id, p.time FROM follows f JOIN posts p ON p.user = f.followee "
                            "WHERE f.follower = ? ORDER BY p.time DESC LIMIT ?");
        posts_st.prepare(db, "SELECT id, time FROM posts WHERE user = ? ORDER BY time DESC LIMIT ?");
    }

    uint64_t run(benchsql::Stmt &s, uint32_t uid, uint64_t k, Rows &out) {
        sqlite3_stmt *st = s.get();
        sqlite3_bind_int64(st, 1, uid);
        sqlite3_bind_int64(st, 2, (int64_t)k);
        uint64_t n = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (n < out.size()) out[n] = {(uint32_t)sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
            n++;
        }
        sqlite3_reset(st);
        return n;
    }
};

P2 g_p2;
Sql g_sql;

// Both systems give the same rows (ids and times, newest first) for 500 users
bool cross_check() {
    Rng r(cfg.seed * 31 + 5);
    uint64_t kmax = *std::max_element(cfg.ks.begin(), cfg.ks.end());
    std::vector<feed_ref> refs(kmax);
    std::vector<feed_post> recs(kmax);
    Rows want(kmax);
    for (int i = 0; i < 500; i++) {
        uint32_t u = (uint32_t)(r.next() % cfg.users);
        for (int which = 0; which < 2; which++) {
            uint64_t n = which ? g_p2.posts(u, kmax, refs.data(), recs.data())
                               : g_p2.feed(u, kmax, refs.data(), recs.data());
            uint64_t m = g_sql.run(which ? g_sql.posts_st : g_sql.feed_st, u, kmax, want);
            bool same = n == m;
            for (uint64_t j = 0; same && j < n; j++)
                same = recs[j].id == want[j].first && recs[j].time == want[j].second;
            if (!same) {
                std::fprintf(stderr, "FAILED: %s of user %u: p2gen gives %llu rows, SQLite %llu, or other rows\n",
                             which ? "posts" : "feed", u, (unsigned long long)n, (unsigned long long)m);
                return false;
            }
        }
    }
    return true;
}

void bench_one(benchmark::State &state, int system, int which, uint64_t k) {
    Rng r(cfg.seed * 1009 + k * 2 + (uint64_t)which);   // both systems: the same users
    std::vector<feed_ref> refs(k);
    std::vector<feed_post> recs(k);
    Rows rows(k);
    uint64_t total = 0;
    for (auto _ : state) {
        uint32_t u = (uint32_t)(r.next() % cfg.users);
        uint64_t n;
        if (system == 0)
            n = which ? g_p2.posts(u, k, refs.data(), recs.data()) : g_p2.feed(u, k, refs.data(), recs.data());
        else
            n = g_sql.run(which ? g_sql.posts_st : g_sql.feed_st, u, k, rows);
        total += n;
        benchmark::DoNotOptimize(n);
    }
    state.counters["rows_per_op"] = benchmark::Counter((double)total / (double)state.iterations());
    state.counters["ns_per_op"] = benchmark::Counter((double)state.iterations(),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

int main(int argc, char **argv) {
    benchflags::take(argc, argv, argv[0], "social_", [](const std::string &flag, const std::string &v) {
        std::string key = flag.substr(7);   // after "social_"
        if (key == "users") cfg.users = std::max<uint64_t>(2, benchflags::to_u64("social_bench", key, v));
        else if (key == "follows") cfg.follows = benchflags::to_u64("social_bench", key, v);
        else if (key == "posts") cfg.posts = benchflags::to_u64("social_bench", key, v);
        else if (key == "seed") cfg.seed = benchflags::to_u64("social_bench", key, v);
        else if (key == "k") {
            cfg.ks.clear();
            for (auto &s : benchflags::split(v)) cfg.ks.push_back(std::max<uint64_t>(1, benchflags::to_u64("social_bench", key, s)));
        } else return false;
        return true;
    });
    if (!benchmain::init(argc, argv)) return 2;
    Data d = make_data();
    g_p2.load(d);
    g_sql.load(d);
    if (!cross_check()) return 3;
    const char *sys[] = {"P2GEN", "SQLITE"}, *what[] = {"feed", "posts"};
    for (int which = 0; which < 2; which++)
        for (uint64_t k : cfg.ks)
            for (int s = 0; s < 2; s++) {
                std::string name = std::string("social/") + what[which] + "/" + sys[s] + "/k:" + std::to_string(k);
                benchmark::RegisterBenchmark(name.c_str(), [s, which, k](benchmark::State &st) { bench_one(st, s, which, k); })
                    ->Arg((int64_t)(k * 2 + (uint64_t)s))->ArgName("run")->Unit(benchmark::kMicrosecond);
            }
    benchmark::AddCustomContext("social_users", std::to_string(cfg.users));
    benchmark::AddCustomContext("social_follows", std::to_string(cfg.follows));
    benchmark::AddCustomContext("social_posts", std::to_string(cfg.posts));
    return benchmain::run("social_bench", 0, "", [] {
        feed_close(g_p2.db);
        sqlite3_close(g_sql.db);
    });
}
