// lmdb_util.h -- what the LMDB reference systems of the benchmarks share (OO7's
// oo7_lmdb.cc, LabFlow-1's labflow_lmdb.cc): an error thrown with LMDB's message and one
// cursor for the length of one operation.
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace benchlmdb {

// rc != 0: throw "LMDB <what>: <LMDB's message>" (map_full, if given, in place of the
// message for MDB_MAP_FULL)
inline void check(int rc, const std::string &what, const char *map_full = nullptr) {
    if (rc == MDB_MAP_FULL && map_full) throw std::runtime_error("LMDB " + what + ": " + map_full);
    if (rc != 0) throw std::runtime_error("LMDB " + what + ": " + mdb_strerror(rc));
}

// One cursor for the length of one operation.
class Cursor {
public:
    Cursor(MDB_txn *t, MDB_dbi d) { check(mdb_cursor_open(t, d, &c_), "mdb_cursor_open"); }
    ~Cursor() { mdb_cursor_close(c_); }
    Cursor(const Cursor &) = delete;
    Cursor &operator=(const Cursor &) = delete;
    // positioned at `key`: false if absent
    bool find(uint32_t key, MDB_val *v) {
        MDB_val k{sizeof key, &key};
        return get(&k, v, MDB_SET_KEY);
    }
    // the next entry in key order (op MDB_FIRST / MDB_NEXT / ...): false at the end
    bool get(MDB_val *k, MDB_val *v, MDB_cursor_op op) {
        int rc = mdb_cursor_get(c_, k, v, op);
        if (rc == MDB_NOTFOUND) return false;
        check(rc, "mdb_cursor_get");
        return true;
    }
    // overwrite the value at the cursor (same key)
    void replace(uint32_t key, const std::string &val) {
        MDB_val k{sizeof key, &key}, v{val.size(), const_cast<char *>(val.data())};
        check(mdb_cursor_put(c_, &k, &v, MDB_CURRENT), "mdb_cursor_put");
    }

private:
    MDB_cursor *c_ = nullptr;
};

}  // namespace benchlmdb
