// range_driver.cc -- the range-scan driver of one p2gen-generated data manager, through the
// generated public API alone (<prefix>.h). Compiled once per variant:
//
//   c++ -DP2_VARIANT=range_btree_persistent -DP2_HEADER='"range_btree_persistent.h"'
//       -DP2_NAME='"BTREE"' -DP2_MEM='"persistent"' -DP2_LOAD=Random
//       -DRANGE_BTREE_PERSISTENT_INLINE -c range_driver.cc
//
// (-D<PREFIX>_INLINE: the API compiled into this file, as the README tells users to.)
// The spec must declare `record row { k: u32; v: u64; pad: char[88]; }` in a container
// `rows` and `cursor walk on rows where k >= $lo and k < $hi order by k`, as
// bench/range/*.p2 do.
#include <cstring>
#include <string>

#include "range.h"

#ifndef P2_RANK
#define P2_RANK 100
#endif

#include "../p2_variant.h"

namespace {   // internal linkage: every variant's object defines its own Engine

class Generated : public range::Engine {
    P2(db) *db = nullptr;

    bool bad(int rc, const char *what, std::string &e) {
        e = std::string(P2_NAME " " P2_MEM ": ") + what + ": " + (db ? P2(errmsg)(db) : "") +
            " (code " + std::to_string(rc) + ")";
        return false;
    }

    bool insert(uint32_t k, P2(ref) *ref, std::string &e) {
        P2(row) r;
        std::memset(&r, 0, sizeof r);
        r.k = k;
        r.v = range::payload_of(k);
        std::memset(r.pad, 'a' + (int)(k % 26), sizeof r.pad - 1);
        int rc = P2(rows_insert)(db, &r, ref);
        return rc == P2_OK || bad(rc, "insert", e);
    }

public:
    bool open(const std::string &dir, std::string &e) override {
        return p2_open(&db, dir.c_str(), [&](int rc) { bad(rc, "open", e); }) == P2_OK;
    }

    bool load(const std::vector<uint32_t> &order, range::Load how, std::string &e) override {
        const uint32_t n = (uint32_t)order.size();
        int rc = P2(rows_reserve)(db, n);
        if (rc != P2_OK) return bad(rc, "reserve", e);
        if (how == range::Load::Random) {
            for (uint32_t k : order)
                if (!insert(k, nullptr, e)) return false;
        } else if (how == range::Load::Sorted) {
            for (uint32_t k = 0; k < n; k++)
                if (!insert(k, nullptr, e)) return false;
        } else {
            // Scattered: fill the storage in key order (appends), free every slot in the
            // random order (the free list takes them last in, first out), then insert the
            // relation in key order into the slots so freed.
            std::vector<P2(ref)> refs(n);
            for (uint32_t k = 0; k < n; k++)
                if (!insert(k, &refs[k], e)) return false;
            for (uint32_t k : order)
                if ((rc = P2(rows_delete)(db, refs[k])) != P2_OK) return bad(rc, "delete", e);
            for (uint32_t k = 0; k < n; k++)
                if (!insert(k, nullptr, e)) return false;
        }
        if (P2(rows_count)(db) != n) {
            e = P2_NAME " " P2_MEM ": the relation holds " + std::to_string(P2(rows_count)(db)) +
                " rows after the load, expected " + std::to_string(n);
            return false;
        }
        return true;
    }

    bool walk(uint32_t lo, uint32_t hi, uint64_t *rows, uint64_t *sum, uint32_t *disorder,
              std::string &e) override {
        P2(walk_cursor) c;
        int rc = P2(walk_open)(db, &c, lo, hi);
        if (rc != P2_OK) return bad(rc, "walk_open", e);
        uint64_t n = 0, s = 0;
        uint32_t off = 0;
        while ((rc = P2(walk_next)(&c)) == P2_OK) {
            const P2(row) *x = P2(walk_get)(&c);
            s += x->v;
            off |= x->k ^ (lo + (uint32_t)n);
            n++;
        }
        if (rc != P2_END) return bad(rc, "walk_next", e);
        *rows = n;
        *sum = s;
        *disorder = off;
        return true;
    }

    bool close(std::string &e) override {
        int rc = P2(close)(db);
        db = nullptr;
        return rc == P2_OK || bad(rc, "close", e);
    }
};

range::Registrar reg(range::System{P2_NAME, P2_MEM, true, range::Load::P2_LOAD, P2_RANK,
                                   [] { return std::unique_ptr<range::Engine>(new Generated()); }});

}  // namespace
