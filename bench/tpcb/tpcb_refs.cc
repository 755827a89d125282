// tpcb_refs.cc -- the reference systems the generated data managers run against, on the
// same random stream and through the same benchmark loop (tpcb.h):
//   BASELINE          the transaction loop with every data operation removed
//   HANDC transient   plain C arrays indexed by id (the floor), on the heap
//   HANDC persistent  the same arrays in one mmap'd file
//   SQLITE transient  SQLite ":memory:"
//   SQLITE persistent SQLite file, journal_mode=OFF, synchronous=OFF
//   LMDB persistent   LMDB, MDB_WRITEMAP | MDB_NOSYNC
// SQLite and LMDB use prepared statements / integer primary keys (B-trees keyed by id)
// and, like the P2 managers, provide no atomicity or durability: by default the whole
// run is one write transaction (committed inside the timed region); --tpcb_commit_every=K
// commits every K TPC-B transactions instead.
//
// The durable references (registered by --tpcb_durable=1 only, beside the journalled
// generated variants; --tpcb_commit_every does not apply to them):
//   SQLITE-WAL        SQLite file, journal_mode=WAL, synchronous=FULL (the WAL is fsync'd
//                     at every commit), one SQLite transaction per TPC-B transaction
//   SQLITE-WAL100     the same, one SQLite transaction per 100 TPC-B transactions
//   LMDB-SYNC         LMDB with its default, durable flags (no MDB_NOSYNC,
//                     MDB_NOMETASYNC, MDB_WRITEMAP: data pages and meta page are synced at
//                     every commit), one write transaction per TPC-B transaction
//   LMDB-SYNC100      the same, one write transaction per 100 TPC-B transactions
#include <fcntl.h>
#include <lmdb.h>
#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "tpcb.h"

namespace {

using tpcb::Account;
using tpcb::Branch;
using tpcb::History;
using tpcb::Teller;

// ---------------------------------------------------------------------------------------
// BASELINE: random numbers, loop, timing; no data.
struct Baseline {
    static constexpr bool kData = false;
    static constexpr bool kPersistent = false;
    bool failed = false;
    std::string err;
    bool open(const std::string &, const tpcb::Run &, bool, std::string &) { return true; }
    bool load(const tpcb::Run &, std::string &) { return true; }
    inline int64_t txn(const tpcb::Txn &t) {
        benchmark::DoNotOptimize(t);
        return t.delta;
    }
    bool finish(std::string &) { return true; }
    bool sums(tpcb::Sums &, std::string &) { return true; }
    void close() {}
};

// ---------------------------------------------------------------------------------------
// HANDC: arrays indexed by id, history preallocated for N records (plus one, so that
// --tpcb_inject_fault's extra transaction stays in bounds): the floor. Memory as a C
// programmer would get it, like the generated transient layer: calloc (pages faulted in on
// first touch), or a file extended with ftruncate and mapped MAP_SHARED.
struct HandHeader {
    uint64_t magic, sf, accounts, hcap, nhist;
};
const uint64_t kHandMagic = 0x43444e4148425054ull;  // "TPBHANDC"

template <bool Persistent>
struct HandC {
    static constexpr bool kData = true;
    static constexpr bool kPersistent = Persistent;
    bool failed = false;
    std::string err;
    Branch *br = nullptr;
    Teller *te = nullptr;
    Account *ac = nullptr;
    History *hi = nullptr;
    HandHeader *hdr = nullptr;
    HandHeader heap_hdr{};
    void *map = nullptr;
    size_t map_len = 0;
    int fd = -1;

    static size_t layout(uint64_t sf, uint64_t A, uint64_t hcap, size_t off[4]) {
        size_t o = 64;
        off[0] = o; o += sf * sizeof(Branch);
        off[1] = o; o += 10 * sf * sizeof(Teller);
        off[2] = o; o += A * sf * sizeof(Account);
        o = (o + 63) & ~(size_t)63;
        off[3] = o; o += hcap * sizeof(History);
        return o;
    }

    bool open(const std::string &dir, const tpcb::Run &r, bool fresh, std::string &e) {
        size_t off[4];
        if (!Persistent) {
            hdr = &heap_hdr;
            *hdr = HandHeader{kHandMagic, r.sf, r.accounts, r.txns + 1, 0};
            size_t len = layout(r.sf, r.accounts, r.txns + 1, off);
            map = calloc(1, len);
            if (!map) { e = "out of memory"; return false; }
        } else {
            std::string path = dir + "/handc.db";
            fd = ::open(path.c_str(), fresh ? (O_RDWR | O_CREAT | O_TRUNC) : O_RDWR, 0644);
            if (fd < 0) { e = "cannot open " + path; return false; }
            size_t len;
            if (fresh) {
                len = layout(r.sf, r.accounts, r.txns + 1, off);
                if (ftruncate(fd, (off_t)len) != 0) { e = "ftruncate"; return false; }
            } else {
                struct stat sb;
                fstat(fd, &sb);
                len = (size_t)sb.st_size;
            }
            map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (map == MAP_FAILED) { map = nullptr; e = "mmap"; return false; }
            map_len = len;
            hdr = (HandHeader *)map;
            if (fresh) *hdr = HandHeader{kHandMagic, r.sf, r.accounts, r.txns + 1, 0};
            else if (hdr->magic != kHandMagic) { e = "bad file"; return false; }
            if (layout(hdr->sf, hdr->accounts, hdr->hcap, off) != len) { e = "bad file size"; return false; }
        }
        layout(hdr->sf, hdr->accounts, hdr->hcap, off);
        char *base = (char *)map;
        br = (Branch *)(base + off[0]);
        te = (Teller *)(base + off[1]);
        ac = (Account *)(base + off[2]);
        hi = (History *)(base + off[3]);
        return true;
    }

    bool load(const tpcb::Run &r, std::string &) {
        for (uint32_t i = 0; i < r.sf; i++) br[i] = Branch{i, 0, {}};
        for (uint32_t i = 0; i < r.tellers(); i++) te[i] = Teller{i, i / 10, 0, {}};
        for (uint64_t i = 0, n = r.naccounts(); i < n; i++)
            ac[i] = Account{(uint32_t)i, (uint32_t)(i / r.accounts), 0, {}};
        return true;
    }

    inline int64_t txn(const tpcb::Txn &t) {
        Account &a = ac[t.aid];
        a.balance += t.delta;
        te[t.tid].balance += t.delta;
        br[t.bid].balance += t.delta;
        History &h = hi[hdr->nhist++];
        h = History{t.aid, t.tid, t.bid, t.delta, t.time, {}};
        return a.balance;
    }

    bool finish(std::string &) { return true; }

    bool sums(tpcb::Sums &s, std::string &) {
        for (uint64_t i = 0; i < hdr->sf; i++) s.branch += br[i].balance, s.nbranch++;
        for (uint64_t i = 0; i < 10 * hdr->sf; i++) s.teller += te[i].balance, s.nteller++;
        for (uint64_t i = 0, n = hdr->sf * hdr->accounts; i < n; i++) s.account += ac[i].balance, s.naccount++;
        for (uint64_t i = 0; i < hdr->nhist; i++) s.delta += hi[i].delta, s.nhistory++;
        return true;
    }

    void close() {
        if (!Persistent) {
            free(map);
        } else {
            if (map) munmap(map, map_len);
            if (fd >= 0) ::close(fd);
        }
        map = nullptr;
        fd = -1;
        hdr = nullptr;
    }
    ~HandC() { close(); }
};

// ---------------------------------------------------------------------------------------
// SQLite. Group = 0: no durability (journal_mode=OFF, synchronous=OFF), commits as
// --tpcb_commit_every says; Group = G > 0: durable (journal_mode=WAL, synchronous=FULL), a
// commit every G TPC-B transactions.
template <bool Persistent, int Group = 0>
struct Sqlite {
    static_assert(Group == 0 || Persistent, "a durable SQLite is a file");
    static constexpr bool kData = true;
    static constexpr bool kPersistent = Persistent;
    bool failed = false;
    std::string err;
    sqlite3 *db = nullptr;
    sqlite3_stmt *upd_a = nullptr, *upd_t = nullptr, *upd_b = nullptr, *ins_h = nullptr;
    sqlite3_stmt *begin = nullptr, *commit = nullptr;
    bool in_txn = false;
    uint64_t every = 0, since = 0;

    bool fail_db(const char *what, std::string &e) {
        e = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : "no database");
        return false;
    }
    bool exec(const std::string &sql, std::string &e) {
        char *msg = nullptr;
        if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
            e = sql + ": " + (msg ? msg : "?");
            sqlite3_free(msg);
            return false;
        }
        return true;
    }
    bool prep(const char *sql, sqlite3_stmt **st, std::string &e) {
        if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, nullptr) != SQLITE_OK)
            return fail_db(sql, e);
        return true;
    }

    bool open(const std::string &dir, const tpcb::Run &r, bool fresh, std::string &e) {
        std::string path = Persistent ? dir + "/tpcb.sqlite" : ":memory:";
        if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
            return fail_db("open", e);
        // a page cache big enough for the whole database: main-memory operation
        uint64_t kib = (((uint64_t)r.sf * 11 + r.naccounts()) * 160 + r.txns * 100) / 1024 * 2 + 65536;
        // (locking_mode before journal_mode: an exclusive WAL keeps its index in heap memory)
        const char *mode = Group ? "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                                 : "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;";
        if (!exec(std::string(mode) + "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-" + std::to_string(kib) + ";", e))
            return false;
        if (Group && !check_wal(e)) return false;
        if (fresh &&
            !exec("CREATE TABLE branch(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, filler BLOB);"
                  "CREATE TABLE teller(id INTEGER PRIMARY KEY, branch_id INTEGER NOT NULL,"
                  " balance INTEGER NOT NULL, filler BLOB);"
                  "CREATE TABLE account(id INTEGER PRIMARY KEY, branch_id INTEGER NOT NULL,"
                  " balance INTEGER NOT NULL, filler BLOB);"
                  "CREATE TABLE history(account_id INTEGER, teller_id INTEGER, branch_id INTEGER,"
                  " delta INTEGER, time INTEGER, filler BLOB);", e))
            return false;
        every = Group ? (uint64_t)Group : r.commit_every;
        return prep("UPDATE account SET balance = balance + ?1 WHERE id = ?2 RETURNING balance", &upd_a, e) &&
               prep("UPDATE teller SET balance = balance + ?1 WHERE id = ?2", &upd_t, e) &&
               prep("UPDATE branch SET balance = balance + ?1 WHERE id = ?2", &upd_b, e) &&
               prep("INSERT INTO history VALUES (?1, ?2, ?3, ?4, ?5, zeroblob(30))", &ins_h, e) &&
               prep("BEGIN", &begin, e) && prep("COMMIT", &commit, e);
    }

    // the journal mode really is WAL (journal_mode=WAL answers the mode it got)
    bool check_wal(std::string &e) {
        sqlite3_stmt *st = nullptr;
        if (!prep("PRAGMA journal_mode", &st, e)) return false;
        bool ok = sqlite3_step(st) == SQLITE_ROW &&
                  std::strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
        sqlite3_finalize(st);
        if (!ok) e = "journal_mode=WAL was refused";
        return ok;
    }

    bool load(const tpcb::Run &r, std::string &e) {
        sqlite3_stmt *ib = nullptr, *it = nullptr, *ia = nullptr;
        bool ok = exec("BEGIN", e) &&
                  prep("INSERT INTO branch VALUES (?1, 0, zeroblob(88))", &ib, e) &&
                  prep("INSERT INTO teller VALUES (?1, ?2, 0, zeroblob(84))", &it, e) &&
                  prep("INSERT INTO account VALUES (?1, ?2, 0, zeroblob(84))", &ia, e);
        for (uint32_t i = 0; ok && i < r.sf; i++) {
            sqlite3_bind_int64(ib, 1, i);
            ok = sqlite3_step(ib) == SQLITE_DONE || fail_db("insert branch", e);
            sqlite3_reset(ib);
        }
        for (uint32_t i = 0; ok && i < r.tellers(); i++) {
            sqlite3_bind_int64(it, 1, i);
            sqlite3_bind_int64(it, 2, i / 10);
            ok = sqlite3_step(it) == SQLITE_DONE || fail_db("insert teller", e);
            sqlite3_reset(it);
        }
        for (uint64_t i = 0, n = r.naccounts(); ok && i < n; i++) {
            sqlite3_bind_int64(ia, 1, (sqlite3_int64)i);
            sqlite3_bind_int64(ia, 2, (sqlite3_int64)(i / r.accounts));
            ok = sqlite3_step(ia) == SQLITE_DONE || fail_db("insert account", e);
            sqlite3_reset(ia);
        }
        sqlite3_finalize(ib);
        sqlite3_finalize(it);
        sqlite3_finalize(ia);
        return ok && exec("COMMIT", e);
    }

    inline bool step_done(sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            if (!failed) failed = !fail_db(what, err);
            return false;
        }
        return true;
    }

    inline int64_t txn(const tpcb::Txn &t) {
        if (!in_txn) {
            if (!step_done(begin, "BEGIN")) return 0;
            in_txn = true;
        }
        int64_t bal = 0;
        sqlite3_bind_int64(upd_a, 1, t.delta);
        sqlite3_bind_int64(upd_a, 2, t.aid);
        if (sqlite3_step(upd_a) == SQLITE_ROW) {
            bal = sqlite3_column_int64(upd_a, 0);
            if (sqlite3_step(upd_a) != SQLITE_DONE && !failed) failed = !fail_db("update account", err);
        } else if (!failed) {
            failed = !fail_db("update account (no row)", err);
        }
        sqlite3_reset(upd_a);
        sqlite3_bind_int64(upd_t, 1, t.delta);
        sqlite3_bind_int64(upd_t, 2, t.tid);
        step_done(upd_t, "update teller");
        sqlite3_bind_int64(upd_b, 1, t.delta);
        sqlite3_bind_int64(upd_b, 2, t.bid);
        step_done(upd_b, "update branch");
        sqlite3_bind_int64(ins_h, 1, t.aid);
        sqlite3_bind_int64(ins_h, 2, t.tid);
        sqlite3_bind_int64(ins_h, 3, t.bid);
        sqlite3_bind_int64(ins_h, 4, t.delta);
        sqlite3_bind_int64(ins_h, 5, t.time);
        step_done(ins_h, "insert history");
        if (every && ++since == every) {
            since = 0;
            in_txn = false;
            step_done(commit, "COMMIT");
        }
        return bal;
    }

    bool finish(std::string &e) {
        if (in_txn) {
            in_txn = false;
            if (!step_done(commit, "COMMIT")) { e = err; return false; }
        }
        return true;
    }

    bool query2(const char *sql, int64_t *a, uint64_t *n, std::string &e) {
        sqlite3_stmt *st = nullptr;
        if (!prep(sql, &st, e)) return false;
        bool ok = sqlite3_step(st) == SQLITE_ROW;
        if (ok) {
            *a = sqlite3_column_int64(st, 0);
            *n = (uint64_t)sqlite3_column_int64(st, 1);
        } else {
            fail_db(sql, e);
        }
        sqlite3_finalize(st);
        return ok;
    }

    bool sums(tpcb::Sums &s, std::string &e) {
        return query2("SELECT sum(balance), count(*) FROM branch", &s.branch, &s.nbranch, e) &&
               query2("SELECT sum(balance), count(*) FROM teller", &s.teller, &s.nteller, e) &&
               query2("SELECT sum(balance), count(*) FROM account", &s.account, &s.naccount, e) &&
               query2("SELECT sum(delta), count(*) FROM history", &s.delta, &s.nhistory, e);
    }

    void close() {
        for (sqlite3_stmt **st : {&upd_a, &upd_t, &upd_b, &ins_h, &begin, &commit}) {
            sqlite3_finalize(*st);
            *st = nullptr;
        }
        if (db && sqlite3_close(db) != SQLITE_OK && !failed) {
            failed = true;
            err = "sqlite3_close failed";
        }
        db = nullptr;
        in_txn = false;
    }
    ~Sqlite() { close(); }
};

// ---------------------------------------------------------------------------------------
// LMDB: one B+tree per relation, integer keys (ids; the history key is the sequence number).
// Group = 0: no durability (MDB_WRITEMAP | MDB_NOSYNC), commits as --tpcb_commit_every
// says; Group = G > 0: LMDB's durable default flags, a commit every G TPC-B transactions.
template <int Group = 0>
struct Lmdb {
    static constexpr bool kData = true;
    static constexpr bool kPersistent = true;
    bool failed = false;
    std::string err;
    MDB_env *env = nullptr;
    MDB_txn *txn_ = nullptr;
    MDB_dbi dbi[4] = {0, 0, 0, 0};   // branch, teller, account, history
    MDB_cursor *cur_[3] = {nullptr, nullptr, nullptr};   // write cursors of the open transaction
    uint64_t every = 0, since = 0;

    bool bad(int rc, const char *what, std::string &e) {
        e = std::string(what) + ": " + mdb_strerror(rc);
        return false;
    }

    bool open(const std::string &dir, const tpcb::Run &r, bool fresh, std::string &e) {
        int rc;
        std::string path = dir + "/tpcb.lmdb";
        size_t map = (size_t)((((uint64_t)r.sf * 11 + r.naccounts()) * 140 + r.txns * 90) * 3) + (64u << 20);
        if ((rc = mdb_env_create(&env)) != 0) return bad(rc, "mdb_env_create", e);
        mdb_env_set_maxdbs(env, 4);
        if ((rc = mdb_env_set_mapsize(env, map)) != 0) return bad(rc, "mdb_env_set_mapsize", e);
        const unsigned flags = Group ? 0u : (unsigned)(MDB_WRITEMAP | MDB_NOSYNC);
        if ((rc = mdb_env_open(env, path.c_str(), MDB_NOSUBDIR | flags, 0644)) != 0)
            return bad(rc, "mdb_env_open", e);
        MDB_txn *t;
        if ((rc = mdb_txn_begin(env, nullptr, 0, &t)) != 0) return bad(rc, "mdb_txn_begin", e);
        const char *names[4] = {"branch", "teller", "account", "history"};
        for (int i = 0; i < 4; i++)
            if ((rc = mdb_dbi_open(t, names[i], MDB_INTEGERKEY | (fresh ? MDB_CREATE : 0), &dbi[i])) != 0) {
                mdb_txn_abort(t);
                return bad(rc, "mdb_dbi_open", e);
            }
        if ((rc = mdb_txn_commit(t)) != 0) return bad(rc, "mdb_txn_commit", e);
        every = Group ? (uint64_t)Group : r.commit_every;
        return true;
    }

    template <class Rec>
    bool append(MDB_txn *t, MDB_dbi d, uint32_t key, const Rec &rec, std::string &e) {
        MDB_val k{sizeof key, &key}, v{sizeof rec, (void *)&rec};
        int rc = mdb_put(t, d, &k, &v, MDB_APPEND);
        return rc == 0 || bad(rc, "mdb_put (load)", e);
    }

    bool load(const tpcb::Run &r, std::string &e) {
        MDB_txn *t;
        int rc;
        if ((rc = mdb_txn_begin(env, nullptr, 0, &t)) != 0) return bad(rc, "mdb_txn_begin", e);
        bool ok = true;
        for (uint32_t i = 0; ok && i < r.sf; i++) ok = append(t, dbi[0], i, Branch{i, 0, {}}, e);
        for (uint32_t i = 0; ok && i < r.tellers(); i++) ok = append(t, dbi[1], i, Teller{i, i / 10, 0, {}}, e);
        for (uint64_t i = 0, n = r.naccounts(); ok && i < n; i++) {
            ok = append(t, dbi[2], (uint32_t)i, Account{(uint32_t)i, (uint32_t)(i / r.accounts), 0, {}}, e);
            if (ok && i % 100000 == 99999) {   // keep the write transaction's dirty set bounded
                if ((rc = mdb_txn_commit(t)) != 0) return bad(rc, "mdb_txn_commit (load)", e);
                if ((rc = mdb_txn_begin(env, nullptr, 0, &t)) != 0) return bad(rc, "mdb_txn_begin", e);
            }
        }
        if (!ok) {
            mdb_txn_abort(t);
            return false;
        }
        if ((rc = mdb_txn_commit(t)) != 0) return bad(rc, "mdb_txn_commit (load)", e);
        return true;
    }

    inline void fail(int rc, const char *what) {
        if (!failed) failed = !bad(rc, what, err);
    }

    // find by key with a cursor, overwrite the value in place (one descent per update)
    template <class Rec>
    inline bool add(int i, uint32_t id, int32_t delta, int64_t *out, const char *what) {
        MDB_val k{sizeof id, &id}, v;
        int rc = mdb_cursor_get(cur_[i], &k, &v, MDB_SET_KEY);
        if (rc != 0) { fail(rc, what); return false; }
        Rec rec;
        std::memcpy(&rec, v.mv_data, sizeof rec);
        rec.balance += delta;
        if (out) *out = rec.balance;
        v.mv_size = sizeof rec;
        v.mv_data = &rec;
        if ((rc = mdb_cursor_put(cur_[i], &k, &v, MDB_CURRENT)) != 0) { fail(rc, what); return false; }
        return true;
    }

    bool begin_write() {
        int rc = mdb_txn_begin(env, nullptr, 0, &txn_);
        if (rc != 0) { txn_ = nullptr; fail(rc, "mdb_txn_begin"); return false; }
        for (int i = 0; i < 3; i++)
            if ((rc = mdb_cursor_open(txn_, dbi[i], &cur_[i])) != 0) { fail(rc, "mdb_cursor_open"); return false; }
        return true;
    }

    inline int64_t txn(const tpcb::Txn &t) {
        int rc;
        if (!txn_ && !begin_write()) return 0;
        int64_t bal = 0;
        add<Account>(2, t.aid, t.delta, &bal, "update account");
        add<Teller>(1, t.tid, t.delta, nullptr, "update teller");
        add<Branch>(0, t.bid, t.delta, nullptr, "update branch");
        History h{t.aid, t.tid, t.bid, t.delta, t.time, {}};
        uint32_t key = t.time;
        MDB_val k{sizeof key, &key}, v{sizeof h, &h};
        if ((rc = mdb_put(txn_, dbi[3], &k, &v, MDB_APPEND)) != 0) fail(rc, "append history");
        if (every && ++since == every) {
            since = 0;
            rc = mdb_txn_commit(txn_);   // closes the write cursors
            txn_ = nullptr;
            if (rc != 0) fail(rc, "mdb_txn_commit");
        }
        return bal;
    }

    bool finish(std::string &e) {
        if (txn_) {
            int rc = mdb_txn_commit(txn_);
            txn_ = nullptr;
            if (rc != 0) return bad(rc, "mdb_txn_commit", e);
        }
        return true;
    }

    template <class Rec>
    bool walk(MDB_txn *t, MDB_dbi d, int64_t *sum, uint64_t *n, std::string &e) {
        MDB_cursor *c;
        MDB_val k, v;
        int rc = mdb_cursor_open(t, d, &c);
        if (rc != 0) return bad(rc, "mdb_cursor_open", e);
        while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
            Rec rec;
            std::memcpy(&rec, v.mv_data, sizeof rec);
            if constexpr (sizeof(Rec) == sizeof(History)) *sum += ((const History &)rec).delta;
            else *sum += rec.balance;
            (*n)++;
        }
        mdb_cursor_close(c);
        return rc == MDB_NOTFOUND || bad(rc, "mdb_cursor_get", e);
    }

    bool sums(tpcb::Sums &s, std::string &e) {
        MDB_txn *t;
        int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &t);
        if (rc != 0) return bad(rc, "mdb_txn_begin", e);
        bool ok = walk<Branch>(t, dbi[0], &s.branch, &s.nbranch, e) &&
                  walk<Teller>(t, dbi[1], &s.teller, &s.nteller, e) &&
                  walk<Account>(t, dbi[2], &s.account, &s.naccount, e) &&
                  walk<History>(t, dbi[3], &s.delta, &s.nhistory, e);
        mdb_txn_abort(t);
        return ok;
    }

    void close() {
        if (txn_) mdb_txn_abort(txn_);
        txn_ = nullptr;
        if (env) mdb_env_close(env);
        env = nullptr;
    }
    ~Lmdb() { close(); }
};

using tpcb::Registrar;
using tpcb::run_bench;
Registrar r0({"BASELINE", "none", "reference", 0, &run_bench<Baseline>, false});
Registrar r1({"HANDC", "persistent", "reference", 1, &run_bench<HandC<true>>, false});
Registrar r2({"HANDC", "transient", "reference", 2, &run_bench<HandC<false>>, false});
Registrar r3({"SQLITE", "persistent", "reference", 200, &run_bench<Sqlite<true>>, false});
Registrar r4({"SQLITE", "transient", "reference", 201, &run_bench<Sqlite<false>>, false});
Registrar r5({"LMDB", "persistent", "reference", 202, &run_bench<Lmdb<>>, false});
// durable (--tpcb_durable=1)
Registrar r6({"SQLITE-WAL", "persistent", "reference", 210, &run_bench<Sqlite<true, 1>>, true});
Registrar r7({"SQLITE-WAL100", "persistent", "reference", 211, &run_bench<Sqlite<true, 100>>, true});
Registrar r8({"LMDB-SYNC", "persistent", "reference", 212, &run_bench<Lmdb<1>>, true});
Registrar r9({"LMDB-SYNC100", "persistent", "reference", 213, &run_bench<Lmdb<100>>, true});

}  // namespace
