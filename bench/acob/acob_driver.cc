// acob_driver.cc -- one architecture of the ACOB benchmark: a p2gen-generated data manager
// of type_equations/acob/*.p2 through its public API alone. Compiled once per variant:
//
//   c++ -DP2_VARIANT=acob_pageserver -DP2_HEADER='"acob_pageserver.h"' -DP2_NAME='"PAGESERVER"'
//       -DACOB_SERVER=1 -DP2_RANK=2 -DACOB_PAGESERVER_INLINE -c acob_driver.cc
//
// ACOB_SERVER=1: the spec's memory is a server (pageserver, objserver), whose counters
// and cold buffer the API gives (<prefix>_server_stats, _server_drop).
#include <cstring>
#include <string>

#include "acob.h"

#ifndef P2_RANK
#define P2_RANK 100
#endif
#ifndef ACOB_SERVER
#define ACOB_SERVER 0
#endif

#include "../p2_variant.h"

namespace {

class Generated : public acob::Engine {
    P2(db) *db = nullptr;

    bool bad(int rc, const char *what, std::string &e) {
        e = std::string(P2_NAME ": ") + what + ": " + (db ? P2(errmsg)(db) : p2_strerror(rc)) +
            " (code " + std::to_string(rc) + ")";
        return false;
    }

    static void to_p2(const acob::Rec &r, P2(rec) *x) {
        std::memset(x, 0, sizeof *x);
        x->key = r.key;
        x->pos = r.pos;
        x->left = r.left;
        x->right = r.right;
        std::memcpy(x->filler, r.filler, sizeof x->filler);
    }

public:
    bool open(const std::string &dir, std::string &e) override {
        return p2_open(&db, dir.c_str(), [&](int rc) { bad(rc, "open", e); }) == P2_OK;
    }

    bool insert(const acob::Rec &r, uint64_t *ref, std::string &e) override {
        P2(rec) x;
        to_p2(r, &x);
        P2(ref) got = 0;
        int rc = P2(recs_insert)(db, &x, &got);
        *ref = (uint64_t)got;
        return rc == P2_OK || bad(rc, "insert", e);
    }

    bool insert_pad(uint64_t *ref, std::string &e) override {
        P2(pad) x;
        std::memset(&x, 0, sizeof x);
        P2(ref) got = 0;
        int rc = P2(pads_insert)(db, &x, &got);
        *ref = (uint64_t)got;
        return rc == P2_OK || bad(rc, "insert a pad", e);
    }

    bool read(uint64_t ref, acob::Rec *out, std::string &e) override {
        // the pointer is good until the next call into the API: copy now
        const P2(rec) *x = P2(recs_at)(db, (P2(ref))ref);
        if (!x) return bad(P2(errcode)(db), "read", e);
        out->key = x->key;
        out->pos = x->pos;
        out->left = x->left;
        out->right = x->right;
        std::memcpy(out->filler, x->filler, sizeof out->filler);
        return true;
    }

    bool rewrite(uint64_t ref, const acob::Rec &r, std::string &e) override {
        P2(rec) x;
        to_p2(r, &x);
        P2(ref) at = (P2(ref))ref;
        int rc = P2(recs_update)(db, &at, &x);
        if (rc == P2_OK && at != (P2(ref))ref) {
            e = P2_NAME ": an update moved a record: the layout is the benchmark's";
            return false;
        }
        return rc == P2_OK || bad(rc, "update", e);
    }

    bool commit(std::string &e) override {
        int rc = P2(sync)(db);
        return rc == P2_OK || bad(rc, "sync", e);
    }

    bool drop(std::string &e) override {
#if ACOB_SERVER
        int rc = P2(server_drop)(db);
        return rc == P2_OK || bad(rc, "drop the client buffer", e);
#else
        (void)e;   // local: the OS's page cache, which a process cannot empty (said in RESULTS)
        return true;
#endif
    }

    bool stats(acob::Stats *s) override {
#if ACOB_SERVER
        p2_server_stats x;
        if (P2(server_stats)(db, &x) != P2_OK) return false;
        s->reads = x.reads; s->writes = x.writes; s->flushes = x.flushes;
        s->bytes_read = x.bytes_read; s->bytes_written = x.bytes_written;
        s->misses = x.misses; s->hits = x.hits; s->evictions = x.evictions;
        s->writebacks = x.writebacks; s->rewrites = x.rewrites; s->bundled = x.bundled;
        s->inflight = x.inflight;
        return true;
#else
        (void)s;
        return false;
#endif
    }

    void reset_stats() override {
#if ACOB_SERVER
        (void)P2(server_stats_reset)(db);
#endif
    }

    void close() override {
        if (db) P2(close)(db);
        db = nullptr;
    }

    ~Generated() override { close(); }
};

acob::Engine *make() { return new Generated; }
acob::Registrar reg(P2_NAME, P2_RANK, make);

}  // namespace
