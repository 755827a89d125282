// range_refs.cc -- the reference systems of the range-scan benchmark, each holding the same
// relation and walking the same ranges as the generated data managers:
//
//   SQLITE persistent  a file, journal_mode=OFF, synchronous=OFF, a page cache that holds the
//                      whole database; the rows in a rowid table keyed by k (INTEGER PRIMARY
//                      KEY: SQLite's B-tree is ordered by k), inserted in the random order
//   SQLITE transient   the same in :memory:
//   LMDB persistent    one file, MDB_WRITEMAP | MDB_NOSYNC, integer keys; a walk is a read
//                      transaction (renewed), a cursor at MDB_SET_RANGE lo, then MDB_NEXT
//                      while k < hi
//
// A walk through SQLite runs a statement prepared once at open:
//   SELECT k, v FROM t WHERE k BETWEEN ?1 AND ?2 ORDER BY k
// bound to lo and hi - 1, stepped to its end, reading both columns of every row.
#include <sqlite3.h>
#include <lmdb.h>

#include <cstring>
#include <string>

#include "range.h"

namespace {

struct Payload {   // LMDB's value: the row without its key (the key is LMDB's)
    uint64_t v;
    char pad[88];
};

template <bool Persistent>
class Sqlite : public range::Engine {
    sqlite3 *db = nullptr;
    sqlite3_stmt *sel = nullptr;

    bool fail(const std::string &what, std::string &e) {
        e = std::string("SQLITE: ") + what + ": " + (db ? sqlite3_errmsg(db) : "?");
        return false;
    }
    bool exec(const std::string &sql, std::string &e) {
        char *msg = nullptr;
        if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
            e = "SQLITE: " + sql + ": " + (msg ? msg : "?");
            sqlite3_free(msg);
            return false;
        }
        return true;
    }

public:
    bool open(const std::string &dir, std::string &e) override {
        std::string path = Persistent ? dir + "/range.sqlite" : ":memory:";
        if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
            return fail("open " + path, e);
        // a page cache big enough for the whole database: main-memory operation
        uint64_t kib = range::config().rows * 200 / 1024 + 65536;
        return exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
                    "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-" + std::to_string(kib) + ";"
                    "CREATE TABLE t(k INTEGER PRIMARY KEY, v INTEGER NOT NULL, pad BLOB);", e);
    }

    bool load(const std::vector<uint32_t> &order, range::Load, std::string &e) override {
        sqlite3_stmt *ins = nullptr;
        if (!exec("BEGIN", e)) return false;
        if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?1, ?2, ?3)", -1, &ins, nullptr) != SQLITE_OK)
            return fail("prepare insert", e);
        char pad[88];
        for (uint32_t k : order) {
            std::memset(pad, 'a' + (int)(k % 26), sizeof pad);
            sqlite3_bind_int64(ins, 1, k);
            sqlite3_bind_int64(ins, 2, (sqlite3_int64)range::payload_of(k));
            sqlite3_bind_blob(ins, 3, pad, sizeof pad - 1, SQLITE_STATIC);
            if (sqlite3_step(ins) != SQLITE_DONE) {
                sqlite3_finalize(ins);
                return fail("insert", e);
            }
            sqlite3_reset(ins);
        }
        sqlite3_finalize(ins);
        if (!exec("COMMIT", e)) return false;
        if (sqlite3_prepare_v3(db, "SELECT k, v FROM t WHERE k BETWEEN ?1 AND ?2 ORDER BY k", -1,
                               SQLITE_PREPARE_PERSISTENT, &sel, nullptr) != SQLITE_OK)
            return fail("prepare select", e);
        return true;
    }

    bool walk(uint32_t lo, uint32_t hi, uint64_t *rows, uint64_t *sum, uint32_t *disorder,
              std::string &e) override {
        sqlite3_bind_int64(sel, 1, lo);
        sqlite3_bind_int64(sel, 2, (sqlite3_int64)hi - 1);
        uint64_t n = 0, s = 0;
        uint32_t off = 0;
        int rc;
        while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
            off |= (uint32_t)sqlite3_column_int64(sel, 0) ^ (lo + (uint32_t)n);
            s += (uint64_t)sqlite3_column_int64(sel, 1);
            n++;
        }
        sqlite3_reset(sel);
        if (rc != SQLITE_DONE) return fail("select", e);
        *rows = n;
        *sum = s;
        *disorder = off;
        return true;
    }

    bool close(std::string &e) override {
        sqlite3_finalize(sel);
        sel = nullptr;
        int rc = sqlite3_close(db);
        db = nullptr;
        if (rc != SQLITE_OK) {
            e = "SQLITE: close failed";
            return false;
        }
        return true;
    }
};

class Lmdb : public range::Engine {
    MDB_env *env = nullptr;
    MDB_dbi dbi = 0;
    MDB_txn *rtxn = nullptr;   // the read transaction, reset between walks
    MDB_cursor *cur = nullptr;

    static bool bad(int rc, const char *what, std::string &e) {
        e = std::string("LMDB: ") + what + ": " + mdb_strerror(rc);
        return false;
    }

public:
    bool open(const std::string &dir, std::string &e) override {
        int rc;
        if ((rc = mdb_env_create(&env)) != 0) return bad(rc, "mdb_env_create", e);
        size_t map = (size_t)range::config().rows * 256 + ((size_t)64 << 20);
        if ((rc = mdb_env_set_mapsize(env, map)) != 0) return bad(rc, "mdb_env_set_mapsize", e);
        std::string path = dir + "/range.lmdb";
        if ((rc = mdb_env_open(env, path.c_str(), MDB_NOSUBDIR | MDB_WRITEMAP | MDB_NOSYNC, 0644)) != 0)
            return bad(rc, "mdb_env_open", e);
        MDB_txn *t;
        if ((rc = mdb_txn_begin(env, nullptr, 0, &t)) != 0) return bad(rc, "mdb_txn_begin", e);
        if ((rc = mdb_dbi_open(t, nullptr, MDB_INTEGERKEY, &dbi)) != 0) {
            mdb_txn_abort(t);
            return bad(rc, "mdb_dbi_open", e);
        }
        if ((rc = mdb_txn_commit(t)) != 0) return bad(rc, "mdb_txn_commit", e);
        return true;
    }

    bool load(const std::vector<uint32_t> &order, range::Load, std::string &e) override {
        MDB_txn *t;
        int rc;
        if ((rc = mdb_txn_begin(env, nullptr, 0, &t)) != 0) return bad(rc, "mdb_txn_begin", e);
        Payload p;
        for (uint32_t k : order) {
            p.v = range::payload_of(k);
            std::memset(p.pad, 'a' + (int)(k % 26), sizeof p.pad);
            p.pad[sizeof p.pad - 1] = 0;
            MDB_val key{sizeof k, &k}, val{sizeof p, &p};
            if ((rc = mdb_put(t, dbi, &key, &val, 0)) != 0) {
                mdb_txn_abort(t);
                return bad(rc, "mdb_put", e);
            }
        }
        if ((rc = mdb_txn_commit(t)) != 0) return bad(rc, "mdb_txn_commit", e);
        if ((rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &rtxn)) != 0) return bad(rc, "mdb_txn_begin (read)", e);
        if ((rc = mdb_cursor_open(rtxn, dbi, &cur)) != 0) return bad(rc, "mdb_cursor_open", e);
        mdb_txn_reset(rtxn);
        return true;
    }

    bool walk(uint32_t lo, uint32_t hi, uint64_t *rows, uint64_t *sum, uint32_t *disorder,
              std::string &e) override {
        int rc;
        if ((rc = mdb_txn_renew(rtxn)) != 0) return bad(rc, "mdb_txn_renew", e);
        if ((rc = mdb_cursor_renew(rtxn, cur)) != 0) return bad(rc, "mdb_cursor_renew", e);
        uint32_t k0 = lo;
        MDB_val key{sizeof k0, &k0}, val;
        uint64_t n = 0, s = 0;
        uint32_t off = 0;
        rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
        while (rc == 0) {
            uint32_t k;
            std::memcpy(&k, key.mv_data, sizeof k);
            if (k >= hi) break;
            uint64_t v;
            std::memcpy(&v, val.mv_data, sizeof v);   // Payload::v, at the value's start
            s += v;
            off |= k ^ (lo + (uint32_t)n);
            n++;
            rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT);
        }
        mdb_txn_reset(rtxn);
        if (rc != 0 && rc != MDB_NOTFOUND) return bad(rc, "mdb_cursor_get", e);
        *rows = n;
        *sum = s;
        *disorder = off;
        return true;
    }

    bool close(std::string &) override {
        if (cur) mdb_cursor_close(cur);
        if (rtxn) mdb_txn_abort(rtxn);
        cur = nullptr;
        rtxn = nullptr;
        if (env) mdb_env_close(env);
        env = nullptr;
        return true;
    }
};

range::Registrar sqlite_p(range::System{"SQLITE", "persistent", false, range::Load::Random, 1000,
                                        [] { return std::unique_ptr<range::Engine>(new Sqlite<true>()); }});
range::Registrar sqlite_t(range::System{"SQLITE", "transient", false, range::Load::Random, 1001,
                                        [] { return std::unique_ptr<range::Engine>(new Sqlite<false>()); }});
range::Registrar lmdb_p(range::System{"LMDB", "persistent", false, range::Load::Random, 1002,
                                      [] { return std::unique_ptr<range::Engine>(new Lmdb()); }});

}  // namespace
